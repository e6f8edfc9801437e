//! # eqfuse
//!
//! eqfuse makes array programs fast without making them ugly: you write the clear version —
//! `map`, `reduce`, `scan`, `filter`, `generate`, gathers and permutations, with
//! intermediate arrays everywhere — and eqfuse is built to turn it into the version an
//! expert would hand-write, by equality saturation over an e-graph of the program.
//!
//! This version provides the front end and the oracle: the `.eqf` language (parser,
//! pretty-printer, type and shape checker), a Rust [`Builder`] for the same programs, `.npy`
//! input and output, and the reference interpreter. The optimiser and the CPU/CUDA
//! executors are built on top of these.
//!
//! ```
//! use eqfuse::{Backend, Value};
//! use indexmap::IndexMap;
//! use ndarray::arr1;
//!
//! let prog = eqfuse::parse("
//!     input xs : f32[n]
//!     input ys : f32[n]
//!     output dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)
//! ")?;
//! let checked = eqfuse::check(&prog)?;
//! let mut inputs = IndexMap::new();
//! inputs.insert("xs".to_string(), Value::from(arr1(&[1.0f32, 2.0, 3.0]).into_dyn()));
//! inputs.insert("ys".to_string(), Value::from(arr1(&[4.0f32, 5.0, 6.0]).into_dyn()));
//! let out = eqfuse::run(&checked, Backend::Reference, &inputs)?;
//! assert_eq!(out["dot"], Value::from(ndarray::arr0(32.0f32).into_dyn()));
//! # Ok::<(), eqfuse::Error>(())
//! ```

pub mod backend;
pub mod bench;
pub mod calibrate;
pub mod files;
pub mod optimize;

pub use backend::{run, Backend};
pub use eqfuse_egraph::dag::{CostContext, Search};
pub use eqfuse_egraph::model::CostParams;
pub use eqfuse_ir as ir;
pub use eqfuse_ir::builder::{self, Builder};
pub use eqfuse_ir::check::Checked;
pub use eqfuse_ir::{Code, Dim, ElemType, Error, Limits, Program, Result, Scalar, Type, Value};
pub use optimize::{cpu_cost_params, optimize, optimize_checked, OptimizeOptions, Optimized, Variant};

/// Named arrays, in order: the inputs and outputs of a run.
pub type Arrays = indexmap::IndexMap<String, Value>;

/// Parses `.eqf` text into a [`Program`] (`E-PARSE` / `E-LIMIT` on failure).
///
/// ```
/// let p = eqfuse::parse("input xs : f32[n]\noutput y = map (\\x -> x + 1) xs")?;
/// assert_eq!(p.items.len(), 2);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn parse(src: &str) -> Result<Program> {
    eqfuse_ir::parse::parse(src)
}

/// Type- and shape-checks a program (`E-TYPE`, `E-SHAPE`, `E-LIMIT` on failure).
///
/// ```
/// let p = eqfuse::parse("input xs : f32[n]\noutput y = map (\\x -> x && true) xs")?;
/// let err = eqfuse::check(&p).unwrap_err();
/// assert_eq!(err.code, eqfuse::Code::Type);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn check(program: &Program) -> Result<Checked> {
    eqfuse_ir::check::check(program)
}
