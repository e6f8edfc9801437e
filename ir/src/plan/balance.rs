//! Kernels whose points cost unequal work: a `generate` over the segments of CSR offsets
//! whose element loops over its segment (a segmented reduction: `reduce_segments`). An
//! executor that splits such a kernel into calls of equal point counts can leave one thread
//! with a giant segment while the others idle; [`Kernel::segment_offsets`] finds the
//! offsets, so that it splits by the work instead ([`balanced_bounds`]).

use super::{Inst, Kernel, LaneOp, Reg, ValueId};
use crate::ast::BinOp;
use crate::value::Scalar;

impl Kernel {
    /// The offsets array `off` when every point `s` of this 1-d kernel (all lanes
    /// `Generate`) loops `off[s + 1] - off[s]` times: its work is then `off[s + 1] - off[s]`
    /// iterations, plus the point itself.
    ///
    /// ```
    /// let plan = eqfuse_ir::plan::fixtures::segment_sum();
    /// let eqfuse_ir::plan::Step::Kernel(k) = &plan.steps[0] else { unreachable!() };
    /// assert_eq!(k.segment_offsets(), Some(0));
    /// ```
    pub fn segment_offsets(&self) -> Option<ValueId> {
        if self.space.len() != 1 || !self.lanes.iter().all(|l| matches!(l.op, LaneOp::Generate)) {
            return None;
        }
        let insts = &self.elem.body.insts;
        insts.iter().find_map(|i| match i {
            Inst::Loop { count, .. } => segment_length(insts, *count),
            _ => None,
        })
    }
}

/// The definition of register `r` among `insts` (the top-level block).
fn def(insts: &[Inst], r: Reg) -> Option<&Inst> {
    insts.iter().find(|i| i.dsts().contains(&r))
}

/// `off` when `count = off[s + 1] - off[s]`, `s` the kernel's index (register 0).
fn segment_length(insts: &[Inst], count: Reg) -> Option<ValueId> {
    let Some(Inst::Binary { op: BinOp::Sub, a, b, .. }) = def(insts, count) else { return None };
    let read = |r: Reg| match def(insts, r) {
        Some(Inst::Read { array, index, .. }) if index.len() == 1 => Some((*array, index[0])),
        _ => None,
    };
    let ((hi, at_hi), (lo, at_lo)) = (read(*a)?, read(*b)?);
    let is_one = |r: Reg| matches!(def(insts, r), Some(Inst::Const { value: Scalar::I64(1), .. }));
    let next = match def(insts, at_hi) {
        Some(Inst::Binary { op: BinOp::Add, a, b, .. }) => (*a == 0 && is_one(*b)) || (*b == 0 && is_one(*a)),
        _ => false,
    };
    (hi == lo && at_lo == 0 && next).then_some(hi)
}

/// Bounds `0 = b0 < b1 < .. < bk = m` that cut the `m` points of a segment kernel over
/// `offsets` (`m + 1` of them, checked) into calls of about `work` units each, a point
/// counting one unit plus its segment's length: a giant segment is a call of its own, and
/// the points around it share calls. Offsets that do not hold `m + 1` elements give `None`.
///
/// ```
/// use eqfuse_ir::plan::balanced_bounds;
/// // one segment of 100 elements among ten of 1: it gets a call of its own
/// let off = [0, 1, 2, 3, 4, 5, 105, 106, 107, 108, 109, 110];
/// assert_eq!(balanced_bounds(&off, 11, 20), Some(vec![0, 5, 6, 11]));
/// ```
pub fn balanced_bounds(offsets: &[i64], m: usize, work: usize) -> Option<Vec<usize>> {
    if offsets.len() != m + 1 {
        return None;
    }
    let work = work.max(1) as i64;
    let base = offsets[0];
    // the work before point s: s + off[s] - off[0] (non-decreasing)
    let before = |s: usize| s as i64 + offsets[s] - base;
    let mut bounds = vec![0];
    let mut at = 0;
    while at < m {
        let goal = before(at) + work;
        // the first bound past `at` where the work before it exceeds the goal (`m + 1`:
        // none); the call ends one point before it, so that a heavy point starts a call of
        // its own, but takes one point at least
        let (mut lo, mut hi) = (at + 1, m + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) > goal {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        at = (lo - 1).clamp(at + 1, m);
        bounds.push(at);
    }
    Some(bounds)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_over_a_segment_is_recognised_and_nothing_else() {
        let plan = crate::plan::fixtures::segment_sum();
        let crate::plan::Step::Kernel(k) = &plan.steps[0] else { panic!("{plan}") };
        assert_eq!(k.segment_offsets(), Some(0));
        // off[s] - off[s + 1], off[s + 2] - off[s]: not a segment's length
        for (hi_at, swap) in [(1, true), (2, false)] {
            let mut k = k.clone();
            for i in &mut k.elem.body.insts {
                match i {
                    Inst::Const { value: Scalar::I64(v), .. } if *v == 1 => *v = hi_at,
                    Inst::Binary { op: BinOp::Sub, a, b, .. } if swap => std::mem::swap(a, b),
                    _ => {}
                }
            }
            assert_eq!(k.segment_offsets(), None, "{hi_at} {swap}");
        }
    }

    #[test]
    fn bounds_cover_every_point_once_and_split_by_work() {
        let off: Vec<i64> = (0..=1000).map(|s| s * 3).collect();
        let b = balanced_bounds(&off, 1000, 400).unwrap();
        assert_eq!((b[0], *b.last().unwrap()), (0, 1000));
        assert!(b.windows(2).all(|w| w[0] < w[1]));
        // 4 units a point: 100 points a call
        assert_eq!(b.len(), 11, "{b:?}");
        assert_eq!(balanced_bounds(&[0], 0, 10), Some(vec![0]));
        assert_eq!(balanced_bounds(&[0, 5], 2, 10), None);
    }
}
