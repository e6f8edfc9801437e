//! The filter family: `filter p a` and its fused form `filtermap p sh f`: a `Filter` lane
//! that keeps the elements where the predicate holds.

use super::super::Lowerer;
use egg::Id;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::LaneOp;

impl Lowerer<'_> {
    /// `filter p a`: the elements of `a` where `p` holds.
    pub(super) fn filter(&mut self, i: usize, p: Id, a: Id) -> Result<()> {
        let v = self.array(a)?;
        let space = self.dims_of_value(v, usize::from(a))?;
        let elem = self.elem_func(1, |me, fb, ix| Ok(me.read(fb, v, ix.to_vec())))?;
        let pred = self.func(p)?;
        self.push_kernel(i, space, elem, LaneOp::Filter { pred })
    }

    /// `filtermap p sh f`: the values `f` of each index where `p` holds of them.
    pub(super) fn filter_map(&mut self, i: usize, p: Id, sh: Id, f: Id) -> Result<()> {
        let space = self.shape_extents(sh)?;
        let elem = self.index_func(f, space.len())?;
        let pred = self.func(p)?;
        self.push_kernel(i, space, elem, LaneOp::Filter { pred })
    }
}
