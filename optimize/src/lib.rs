//! # eqfuse-optimize
//!
//! The optimiser's driver: [`optimize`] encodes a checked program into an e-graph
//! (`eqfuse-egraph`), runs the phases of rules on it (`eqfuse-rules`: simplify, fuse until
//! the term settles, loops, horizontal), between phases extracts what to materialise and
//! lowers and prices the candidates (`eqfuse-lower`), keeps the cheapest plan, and decodes
//! it back to a program; everything under one deadline ([`OptimizeOptions::time_limit`]),
//! past which it returns the best plan it has and [`StopReason`] names the stage that
//! stopped.
//!
//! ```
//! let p = eqfuse_ir::parse::parse("input xs : f32[n]\noutput s = reduce (+) 0 (map (\\x -> x * x) xs)").unwrap();
//! let c = eqfuse_ir::check::check(&p).unwrap();
//! let opt = eqfuse_optimize::optimize(&c, &eqfuse_optimize::OptimizeOptions::default()).unwrap();
//! assert!(opt.rules_fired.contains_key("fuse-reduce"));
//! assert_eq!(opt.term.to_string().matches("redomap").count(), 1);
//! ```

pub mod driver;
pub mod preroll;
pub mod stop;
mod trace;

pub use driver::{optimize, OptimizeOptions, Optimized, PhaseReport, Variant};

/// An extracted term with the source `let` names and the source positions of its nodes, by
/// node index (what the driver and the preroll pass it between them).
pub(crate) type Named = (
    egg::RecExpr<eqfuse_egraph::ArrayLang>,
    std::collections::HashMap<usize, String>,
    std::collections::HashMap<usize, eqfuse_ir::error::Span>,
);
pub use stop::{Stage, StopReason};
