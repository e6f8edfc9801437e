//! The buffered walk of a row reduction whose element function calls the math library
//! (`exp`, `log`, `tanh`, ..). The one-version walk computes each point inside the loop
//! over the accumulators, `W` points at a time, so the vectorised math runs on `W` points
//! between two checks of where the next block starts; the softmax's `exp` with its row sum
//! ran 8% slower fused than as a map and then a sum read back from cache. Here a block of
//! [`FOLD_BLOCK`] points is computed first, in one loop whose reduction lanes go to a
//! buffer each (the generate lanes to their outputs), and then folded from the buffers into
//! the same accumulators in the same order as the one-version walk (the block is a
//! multiple of every accumulator count), so the results do not change. Measured on the
//! softmax's fused kernel (2048 rows of 2048 `f32`, one thread): blocks of 64 points (the
//! one-version walk) 3.26 ms, of 256 3.05 ms, of 1024 2.98 ms; the map and the sum apart
//! 3.01 ms.

use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Func, Inst};

/// The points of a block of the buffered walk.
pub const FOLD_BLOCK: usize = 1024;

/// Whether `f` (nested blocks included) calls a function of the math library: one whose
/// vectorised code is long enough for the walk around it to matter.
pub(super) fn calls_math(f: &Func) -> bool {
    f.body.all_insts().into_iter().any(|inst| match inst {
        Inst::Call { f, .. } => !matches!(
            f,
            ScalarFn::Min
                | ScalarFn::Max
                | ScalarFn::Abs
                | ScalarFn::Sqrt
                | ScalarFn::Floor
                | ScalarFn::Ceil
                | ScalarFn::Round
                | ScalarFn::Clamp
                | ScalarFn::Convert(_)
                | ScalarFn::Popcount
                | ScalarFn::Clz
                | ScalarFn::IsNan
                | ScalarFn::IsInf
        ),
        _ => false,
    })
}
