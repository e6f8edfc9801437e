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
//! assert_eq!(opt.term.expr.to_string().matches("redomap").count(), 1);
//! ```

pub mod core;
pub mod driver;
mod loops;
pub mod preroll;
mod preroll_scalar;
pub mod stop;
mod trace;

pub use driver::{OptimizeOptions, Optimized, PhaseReport, Variant};

pub use core::{is_unsupported, UNSUPPORTED};

/// Optimises a checked program: its plan, the plan of its source (nothing fused), and the
/// optimiser's report (`driver.rs`). A program with loops over arrays is optimised piece by
/// piece, its pieces' plans put together with a loop step per loop (`loops/`).
pub fn optimize(checked: &eqfuse_ir::check::Checked, opts: &OptimizeOptions) -> eqfuse_ir::Result<Optimized> {
    if loops::has_loop_items(&checked.program) {
        return loops::optimize(checked, opts);
    }
    driver::optimize(checked, opts)
}
pub use stop::{Stage, StopReason};
