//! The permute (scatter) family: `permute op dest g a` and its fused form `permutemap`: a
//! `Permute` lane combining each element into the destination at its target, and the
//! constant `fill` destinations a permute makes itself.

use super::super::Lowerer;
use egg::{Id, Language};
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{LaneOp, PermuteDest};
use std::collections::HashSet;

impl Lowerer<'_> {
    /// `permute op d g a`: the elements of `a` combined into `d` at targets `g`.
    pub(super) fn permute(&mut self, i: usize, [op, d, g, a]: [Id; 4]) -> Result<()> {
        let dest = self.permute_dest(d)?;
        let v = self.array(a)?;
        let space = self.dims_of_value(v, usize::from(a))?;
        let elem = self.elem_func(space.len(), |me, fb, ix| Ok(me.read(fb, v, ix.to_vec())))?;
        let (op, target) = (self.func(op)?, self.index_func(g, space.len())?);
        self.push_kernel(i, space, elem, LaneOp::Permute { op, dest, target })
    }

    /// `permutemap op d g sh f`: `f` of each index combined into `d` at targets `g`.
    pub(super) fn permute_map(&mut self, i: usize, [op, d, g, sh, f]: [Id; 5]) -> Result<()> {
        let dest = self.permute_dest(d)?;
        let space = self.shape_extents(sh)?;
        let elem = self.index_func(f, space.len())?;
        let (op, target) = (self.func(op)?, self.index_func(g, space.len())?);
        self.push_kernel(i, space, elem, LaneOp::Permute { op, dest, target })
    }

    /// A permute's destination `d`: a constant `fill` that only this permute reads is made
    /// by the permute ([`fill_dests`]); any other array is lowered and copied.
    fn permute_dest(&mut self, d: Id) -> Result<PermuteDest> {
        let i = usize::from(d);
        if self.fill_dests.contains(&i) {
            if let ArrayLang::Fill([sh, x]) = self.nodes[i] {
                if let ArrayLang::Lit(l) = self.nodes[usize::from(x)] {
                    let shape = self.shape_extents(sh)?;
                    let span = self.spans.get(&i).copied();
                    return Ok(PermuteDest::Fill { shape, value: l.to_scalar(), span });
                }
            }
        }
        Ok(PermuteDest::Array(self.array(d)?))
    }
}

/// The `fill`s of a literal whose one use in the term is a permute's destination: a
/// permute can start from such a fill without reading it from memory, so lowering gives it
/// no kernel (and no pass over memory, no copy). A fill used anywhere else, an output
/// among them, is an array like any other.
pub(in crate::lower) fn fill_dests(nodes: &[ArrayLang]) -> HashSet<usize> {
    let mut uses = vec![0usize; nodes.len()];
    for n in nodes {
        for c in n.children() {
            if let Some(u) = uses.get_mut(usize::from(*c)) {
                *u += 1;
            }
        }
    }
    let constant_fill = |d: Id| {
        let d = usize::from(d);
        matches!(nodes.get(d), Some(ArrayLang::Fill([_, x])) if matches!(nodes.get(usize::from(*x)), Some(ArrayLang::Lit(_))))
            && uses.get(d) == Some(&1)
    };
    nodes
        .iter()
        .filter_map(|n| match n {
            ArrayLang::Permute([_, d, _, _]) | ArrayLang::Permutemap([_, d, _, _, _])
                if constant_fill(*d) =>
            {
                Some(usize::from(*d))
            }
            _ => None,
        })
        .collect()
}
