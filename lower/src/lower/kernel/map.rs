//! The `map` family: `map`, `generate`, `iota` and `fill`, each a `Generate` lane whose
//! element function computes an element from its index.

use super::super::{internal, Lowerer};
use egg::Id;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{LaneOp, Reg, ValueId};
use std::collections::HashMap;

impl Lowerer<'_> {
    /// `map f a..`: reads the operands the function uses (each array once) at the index.
    pub(super) fn map(&mut self, i: usize, c: &[Id]) -> Result<()> {
        let (f, arrays) = c.split_first().ok_or_else(|| internal("map without a function"))?;
        // an operand the function does not use, of the shape the analysis knows for
        // the first, is not computed for the map (as in the map's index form)
        let mut vs = Vec::new();
        for (j, a) in arrays.iter().enumerate() {
            if self.map_operand_needed(c, j) {
                vs.push(Some((self.array(*a)?, usize::from(*a))));
            } else {
                vs.push(None);
            }
        }
        let needed: Vec<(ValueId, usize)> = vs.iter().flatten().copied().collect();
        let &(v0, n0) = needed.first().ok_or_else(|| internal("map without arrays"))?;
        self.assert_same_shape("map", i, &needed)?;
        let space = self.dims_of_value(v0, n0)?;
        let (_, body) = self.lam(*f)?;
        let r = space.len();
        let k = vs.len();
        let elem = self.elem_func(r, |me, fb, ix| {
            // operand `j` is parameter `k - 1 - j`: one the function does not use is not
            // read (it is in bounds: no error is lost), and an array is read once
            let mut read: HashMap<ValueId, Reg> = HashMap::new();
            let mut args = Vec::with_capacity(k);
            for (j, v) in vs.iter().enumerate() {
                let Some((v, _)) = v.filter(|_| me.free[body].contains(&((k - 1 - j) as u32))) else {
                    args.push(Reg::MAX);
                    continue;
                };
                let reg = match read.get(&v) {
                    Some(&reg) => reg,
                    None => me.read(fb, v, ix.to_vec()),
                };
                read.insert(v, reg);
                args.push(reg);
            }
            me.scalar(fb, body, &args)
        })?;
        self.push_kernel(i, space, elem, LaneOp::Generate)
    }

    /// `generate sh f`: `f` of the index.
    pub(super) fn generate(&mut self, i: usize, sh: Id, f: Id) -> Result<()> {
        let space = self.shape_extents(sh)?;
        let elem = self.index_func(f, space.len())?;
        self.push_kernel(i, space, elem, LaneOp::Generate)
    }

    /// `iota n`: the index itself.
    pub(super) fn iota(&mut self, i: usize, n: Id) -> Result<()> {
        let space = vec![self.extent(usize::from(n))?];
        let elem = self.elem_func(1, |_, _, ix| Ok(ix[0]))?;
        self.push_kernel(i, space, elem, LaneOp::Generate)
    }

    /// `fill sh x`: `x` everywhere.
    pub(super) fn fill(&mut self, i: usize, sh: Id, x: Id) -> Result<()> {
        let space = self.shape_extents(sh)?;
        let elem = self.elem_func(space.len(), |me, fb, _| me.scalar(fb, usize::from(x), &[]))?;
        self.push_kernel(i, space, elem, LaneOp::Generate)
    }
}
