//! What each lane of a kernel does ([`LaneOp`]'s queries), and how a kernel's lanes form
//! groups: a reduction or scan over a group heads its [`LaneOp::Part`]s.

use super::{Func, Kernel, LaneOp};

impl LaneOp {
    /// How many lanes this lane heads: a reduction or scan over a group of `w` components
    /// heads `w` (itself and `w - 1` [`LaneOp::Part`]s); every other lane 1.
    pub fn width(&self) -> usize {
        match self {
            LaneOp::Reduce { op, .. } | LaneOp::Scan { op, .. } => op.ret.len().max(1),
            _ => 1,
        }
    }

    /// The lane's own functions: a reduction's or scan's operator and neutral element, a
    /// filter's predicate, a permute's operator and target (none for a generate).
    pub fn funcs(&self) -> Vec<&Func> {
        match self {
            LaneOp::Generate | LaneOp::Part => Vec::new(),
            LaneOp::Reduce { op, ne } | LaneOp::Scan { op, ne, .. } => vec![op, ne],
            LaneOp::Filter { pred } => vec![pred],
            LaneOp::Permute { op, target, .. } => vec![op, target],
        }
    }

    /// What the lane does, in one word: `generate`, `reduce`, `scan`, `scan_exclusive`,
    /// `part`, `filter` or `permute`.
    pub fn name(&self) -> &'static str {
        match self {
            LaneOp::Generate => "generate",
            LaneOp::Part => "part",
            LaneOp::Reduce { .. } => "reduce",
            LaneOp::Scan { exclusive: false, .. } => "scan",
            LaneOp::Scan { exclusive: true, .. } => "scan_exclusive",
            LaneOp::Filter { .. } => "filter",
            LaneOp::Permute { .. } => "permute",
        }
    }
}

impl Kernel {
    /// The lanes of the kernel as groups: `(head, w)` per lane that is not a
    /// [`LaneOp::Part`], in order (`w` = [`LaneOp::width`]). `None` when the parts do not
    /// follow their heads exactly (a plan no optimiser makes).
    ///
    /// A kernel whose lanes are a generate, a reduction over a group of two (its head and
    /// its part) and a reduction has groups `(0, 1)`, `(1, 2)` and `(3, 1)`.
    pub fn groups(&self) -> Option<Vec<(usize, usize)>> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.lanes.len() {
            let w = self.lanes[i].op.width();
            if matches!(self.lanes[i].op, LaneOp::Part) || i + w > self.lanes.len() {
                return None;
            }
            if !self.lanes[i + 1..i + w].iter().all(|l| matches!(l.op, LaneOp::Part)) {
                return None;
            }
            out.push((i, w));
            i += w;
        }
        Some(out)
    }
}
