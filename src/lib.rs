//! # eqfuse
//!
//! eqfuse makes array programs fast without making them ugly: you write the clear version —
//! `map`, `reduce`, `scan`, `filter`, `generate`, gathers and permutations, with
//! intermediate arrays everywhere — and eqfuse turns it into the version an expert would
//! hand-write, by equality saturation over an e-graph of the program: intermediate arrays
//! fused away, shared work computed once, unrolled recurrences turned back into loops.
//!
//! # The pipeline, and where each step is
//!
//! | step | call | result |
//! | --- | --- | --- |
//! | read `.eqf` text | [`parse`] | [`Program`] |
//! | or build it in Rust | [`Builder`] ([`builder`] module) | [`Program`] |
//! | type- and shape-check | [`check`] | [`Checked`] |
//! | optimise (rewrite, extract, lower) | [`optimize()`], [`optimize_checked`] | [`Optimized`]: the plan, its kernels, [`Optimized::explain`] |
//! | run | [`run()`] on a [`Backend`], or [`Optimized::run`] | the outputs, as [`Arrays`] of [`Value`]s (`ndarray` arrays) |
//! | `.npy` files | [`files::read_inputs`], [`files::write_outputs`] | [`Arrays`] |
//! | data to try a program on | [`random_inputs::random_inputs`] | [`Arrays`] |
//!
//! The lower layers are crates of their own, re-exported where a user needs them:
//! [`ir`] (`eqfuse-ir`: the language, the checker, the reference interpreter, `.npy`,
//! [`ir::plan::Plan`]), `eqfuse-egraph` (the e-graph, its analysis, tree extraction),
//! `eqfuse-rules` (the rewrite rules, saturation), `eqfuse-lower` (placement, lowering, the
//! cost model, what to materialise), `eqfuse-optimize` (the driver: phases, choice, one
//! deadline), `eqfuse-exec-cpu` and
//! `eqfuse-exec-cuda` (the executors). The language itself is described in `docs/language-reference.md`
//! and, by example, in `docs/language.md`.
//!
//! # Example
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
//!
//! // the reference interpreter: the program as written, the oracle
//! let out = eqfuse::run(&checked, Backend::Reference, &inputs)?;
//! assert_eq!(out["dot"], Value::from(ndarray::arr0(32.0f32).into_dyn()));
//!
//! // optimised: the map is fused into the reduction, one kernel, run on the CPU
//! let opt = eqfuse::optimize(&prog, &eqfuse::OptimizeOptions::default())?;
//! assert_eq!(opt.kernels.kernels.len(), 1);
//! let fast = opt.run(Backend::Cpu, &inputs)?;
//! assert_eq!(fast["dot"], out["dot"]);
//! # Ok::<(), eqfuse::Error>(())
//! ```
//!
//! The same program from Rust, without text:
//!
//! ```
//! use eqfuse::builder::{map2, reduce, Op};
//! use eqfuse::{Builder, ElemType};
//!
//! let mut b = Builder::new();
//! let xs = b.input_array("xs", ElemType::F32, &["n"]);
//! let ys = b.input_array("ys", ElemType::F32, &["n"]);
//! b.output("dot", &reduce(Op::Add, 0, &map2(|x, y| x * y, &xs, &ys)));
//! let prog = b.build()?;
//! assert_eq!(prog, eqfuse::parse("input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x0 x1 -> x0 * x1) xs ys)")?);
//! # Ok::<(), eqfuse::Error>(())
//! ```
//!
//! Errors are [`Error`]s with a stable [`Code`] (`E-PARSE`, `E-TYPE`, `E-SHAPE`, `E-INPUT`,
//! `E-INDEX`, `E-DIV-ZERO`, `E-LIMIT`, `E-DEVICE`), the same whatever the backend.

#![warn(missing_docs)]

pub mod backend;
pub mod bench;
pub mod calibrate;
pub mod chunks;
pub mod files;
pub mod optimize;
pub mod origins;
pub mod random_inputs;

pub use backend::{run, Backend};
pub use eqfuse_ir as ir;
pub use eqfuse_ir::builder::{self, Builder};
pub use eqfuse_ir::check::Checked;
pub use eqfuse_ir::value::ValueView;
pub use eqfuse_ir::{Code, Dim, ElemType, Error, Limits, Program, Result, Scalar, Type, Value, Warning};
pub use eqfuse_lower::dag::{CostContext, Search};
pub use eqfuse_lower::model::CostParams;
pub use eqfuse_rules::catalogue;
pub use optimize::{
    cpu_cost_params, kernel_count, optimize, optimize_checked, plan_digest, plan_options, OptimizeOptions,
    Optimized, Variant,
};

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

/// Type- and shape-checks a program (`E-TYPE`, `E-SHAPE`, `E-LIMIT` on failure), as the
/// command line does: a built-in operator's constant neutral element is checked too, and
/// [`Checked::warnings`] lists what looks wrong but is not an error
/// ([`eqfuse_ir::check::check_source`]).
///
/// ```
/// let p = eqfuse::parse("input xs : f32[n]\noutput y = map (\\x -> x && true) xs")?;
/// let err = eqfuse::check(&p).unwrap_err();
/// assert_eq!(err.code, eqfuse::Code::Type);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn check(program: &Program) -> Result<Checked> {
    eqfuse_ir::check::check_source(program, &Limits::default())
}
