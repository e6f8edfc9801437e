//! The physical cost model (DESIGN.md decision 5): a plan's predicted run time in seconds.
//!
//! A kernel costs
//!
//! ```text
//! launch
//!   + bytes through main memory / bandwidth
//!   + Σ over operation classes (evaluations of that class / its throughput)
//!   + index arithmetic of non-contiguous reads (per element)
//! ```
//!
//! - **Bytes.** Every result element written once. Reads are counted per *read site* (a
//!   distinct `Read` of the element function, after common subexpressions are shared): a
//!   site touches `min(evaluations, elements of the array)` elements — an array of `n`
//!   read inside an `n × n` space (a broadcast) costs `n`, not `n²`, while a stencil's
//!   three sites cost three reads of the array. A materialised intermediate is therefore
//!   paid once when written, and once per kernel (per site) that reads it.
//! - **Operations** are counted per evaluation of the element function (the space's point
//!   count; the operator of a reduction or scan once more per point), each class at its own
//!   throughput: add/mul, divide, sqrt, transcendental, integer, compare/select. A loop's
//!   body counts its iteration count times (a count not known before the run counts
//!   [`UNKNOWN_TRIPS`]); both branches of an `if` count (the worst case).
//! - **Sizes** are those of the run when known, else each size name's entry in the
//!   `sizes` map, else [`DEFAULT_SIZE`]; a length known only at run time (a filter's)
//!   counts as the size of the array filtered.
//!
//! Two parameter sets: [`CostParams::cpu_default`] (a few cores, tens of GB/s) and
//! [`CostParams::gpu_default`] (an H100-class device). `eqfuse calibrate` measures the CPU
//! set on the machine at hand.

use serde::{Deserialize, Serialize};

/// The size every size name is given when nothing says otherwise.
pub const DEFAULT_SIZE: u64 = 1 << 20;

/// Iterations counted for a loop whose count is not a constant.
pub const UNKNOWN_TRIPS: f64 = 16.0;

/// The parameters of the model for one backend. Throughputs are operations per second over
/// the whole device (all cores).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostParams {
    /// What these parameters describe (`cpu default`, `gpu default`, `calibrated on HOST`).
    pub name: String,
    /// Main-memory bandwidth, bytes per second.
    pub bandwidth: f64,
    /// Fixed cost of one kernel launch (or one parallel pass), seconds.
    pub launch: f64,
    /// Float add, subtract, multiply, negate, min/max, abs, conversions: per second.
    pub flop: f64,
    /// Float divide and remainder: per second.
    pub div: f64,
    /// `sqrt`: per second.
    pub sqrt: f64,
    /// `exp log sin cos tan tanh pow atan2`: per second.
    pub transcendental: f64,
    /// Integer arithmetic (including integer divide) and index arithmetic: per second.
    pub int: f64,
    /// Comparisons, logical operations, selects and branches: per second.
    pub compare: f64,
    /// Extra cost per element read through a computed (non-contiguous) index: index
    /// arithmetic and a cache line touched for a few bytes. Per second.
    pub gather: f64,
}

impl CostParams {
    /// A CPU of a few cores: ~20 GB/s, ~20 µs per parallel pass, a few Gop/s of scalar
    /// arithmetic, libm-speed transcendentals.
    pub fn cpu_default() -> CostParams {
        CostParams {
            name: "cpu default".into(),
            bandwidth: 20e9,
            launch: 20e-6,
            flop: 8e9,
            div: 2e9,
            sqrt: 2e9,
            transcendental: 2.5e8,
            int: 8e9,
            compare: 8e9,
            gather: 2e9,
        }
    }

    /// An H100-class GPU: ~3 TB/s, ~5 µs per launch, tens of Tflop/s.
    pub fn gpu_default() -> CostParams {
        CostParams {
            name: "gpu default (H100-class)".into(),
            bandwidth: 3.0e12,
            launch: 5e-6,
            flop: 3.0e13,
            div: 4.0e12,
            sqrt: 4.0e12,
            transcendental: 2.0e12,
            int: 1.5e13,
            compare: 1.5e13,
            gather: 2.0e11,
        }
    }
}
