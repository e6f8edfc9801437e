//! The reduction and scan family: `reduce`, `scan`, `scan_ex` over an array, and their
//! fused forms `redomap`, `scanomap`, `scanexomap` over an index function: a `Reduce` or
//! `Scan` lane.

use super::super::Lowerer;
use egg::Id;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Func, LaneOp};

impl Lowerer<'_> {
    /// `reduce` / `scan` / `scan_ex op ne a`: the lane combines the elements of `a`.
    pub(super) fn reduce_scan(&mut self, i: usize, combine: Combine, [op, ne, a]: [Id; 3]) -> Result<()> {
        let v = self.array(a)?;
        let space = self.dims_of_value(v, usize::from(a))?;
        let elem = self.elem_func(space.len(), |me, fb, ix| Ok(me.read(fb, v, ix.to_vec())))?;
        let (op, ne) = (self.func(op)?, self.konst_func(ne)?);
        let lane = combine.lane(op, ne);
        self.push_kernel(i, space, elem, lane)
    }

    /// `redomap` / `scanomap` / `scanexomap op ne sh f`: the lane combines `f` of each index.
    pub(super) fn reduce_scan_map(
        &mut self,
        i: usize,
        combine: Combine,
        [op, ne, sh, f]: [Id; 4],
    ) -> Result<()> {
        let space = self.shape_extents(sh)?;
        let elem = self.index_func(f, space.len())?;
        let (op, ne) = (self.func(op)?, self.konst_func(ne)?);
        let lane = combine.lane(op, ne);
        self.push_kernel(i, space, elem, lane)
    }
}

/// How a reduction-or-scan lane combines: to one value, or an inclusive or exclusive scan.
#[derive(Clone, Copy, Debug)]
pub(super) enum Combine {
    /// `reduce`, `redomap`.
    Reduce,
    /// `scan`, `scanomap`.
    Scan,
    /// `scan_ex`, `scanexomap`.
    ScanEx,
}

impl Combine {
    /// The lane of this combination with operator `op` and neutral element `ne`.
    fn lane(self, op: Func, ne: Func) -> LaneOp {
        match self {
            Combine::Reduce => LaneOp::Reduce { op, ne },
            Combine::Scan => LaneOp::Scan { op, ne, exclusive: false },
            Combine::ScanEx => LaneOp::Scan { op, ne, exclusive: true },
        }
    }
}
