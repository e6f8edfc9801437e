//! One kernel per array operation of the term: [`Lowerer::kernel`] dispatches on the node
//! to one function per family, each in its file (`map.rs`: `map`, `generate`, `iota`,
//! `fill`; `reduce_scan.rs`; `filter.rs`; `permute.rs`; `index_ops.rs`: gathers and the
//! index-space rearrangements; `multi.rs`: horizontally fused kernels), with the shared
//! pieces here: the element functions a kernel is built from and the step that adds it.

mod checks;
mod filter;
mod group;
mod index_ops;
mod map;
mod multi;
mod permute;
mod reduce_scan;
mod segments;

pub(super) use permute::fill_dests;

use super::elem::FuncBuilder;
use super::{internal, Lowerer};
use crate::kernels::kernel_kind;
use egg::Id;
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Arg, Func, Kernel, KernelKind, Lane, LaneOp, Origin, Reg, Step};
use eqfuse_ir::types::ElemType;
use reduce_scan::Combine;

impl Lowerer<'_> {
    /// Lowers kernel node `i` (its operands are lowered already: term order), by family.
    pub(super) fn kernel(&mut self, i: usize) -> Result<()> {
        if self.value_of.contains_key(&i) {
            return Ok(());
        }
        let node = self.nodes[i].clone();
        use ArrayLang as L;
        match node {
            L::Map(c) => self.map(i, &c),
            L::Generate([sh, f]) => self.generate(i, sh, f),
            L::Iota([n]) => self.iota(i, n),
            L::Fill([sh, x]) => self.fill(i, sh, x),
            L::Reduce(c) => self.reduce_scan(i, Combine::Reduce, c),
            L::Scan(c) => self.reduce_scan(i, Combine::Scan, c),
            L::ScanEx(c) => self.reduce_scan(i, Combine::ScanEx, c),
            L::Redomap(c) => self.reduce_scan_map(i, Combine::Reduce, c),
            L::Scanomap(c) => self.reduce_scan_map(i, Combine::Scan, c),
            L::Scanexomap(c) => self.reduce_scan_map(i, Combine::ScanEx, c),
            L::Filter([p, a]) => self.filter(i, p, a),
            L::Filtermap([p, sh, f]) => self.filter_map(i, p, sh, f),
            L::Permute(c) => self.permute(i, c),
            L::Permutemap(c) => self.permute_map(i, c),
            L::Gather([a, idx]) => self.gather(i, a, idx),
            L::Backpermute([sh, f, a]) => self.backpermute(i, sh, f, a),
            L::Transpose([a]) => self.transpose(i, a),
            L::Reverse([a]) => self.reverse(i, a),
            L::Slice([a, s, l]) => self.slice(i, a, s, l),
            L::Concat([a, b]) => self.concat(i, a, b),
            L::Reshape([sh, a]) => self.reshape(i, sh, a),
            L::Multi(c) => self.multi(i, &c),
            L::GReduce(c) => self.group(i, c, false),
            L::GScan(c) => self.group(i, c, true),
            L::SegCheck(c) => self.segcheck(i, c),
            n => Err(internal(format!("not a kernel: {n:?}"))),
        }
    }

    pub(super) fn push_kernel(&mut self, i: usize, space: Vec<Arg>, elem: Func, op: LaneOp) -> Result<()> {
        let (e, rank) = self.elem_rank(i)?;
        let name = self.name_for(i);
        let dst = self.new_value(name, e, rank, Origin::Computed);
        let kind = kernel_kind(&self.nodes[i], false).unwrap_or(KernelKind::Copy);
        let span = self.spans.get(&i).copied();
        self.plan.values[dst].span = span;
        self.plan.steps.push(Step::Kernel(Kernel {
            kind,
            space,
            elem,
            lanes: vec![Lane { dst, op }],
            span,
            contraction: None,
            view_of: None,
        }));
        self.value_of.insert(i, dst);
        Ok(())
    }

    /// A closed lambda as a function of its parameters.
    pub(super) fn func(&mut self, f: Id) -> Result<Func> {
        let (tys, body) = self.lam(f)?;
        let mut fb = FuncBuilder::new(tys.clone());
        let env: Vec<Reg> = (0..tys.len() as Reg).collect();
        let r = self.result(&mut fb, body, &env)?;
        Ok(fb.finish(r))
    }

    /// A closed scalar node as a function of no parameters.
    pub(super) fn konst_func(&mut self, ne: Id) -> Result<Func> {
        let mut fb = FuncBuilder::new(Vec::new());
        let r = self.scalar(&mut fb, usize::from(ne), &[])?;
        Ok(fb.finish(vec![r]))
    }

    /// A function of `r` index parameters: `f` applied to them.
    pub(super) fn index_func(&mut self, f: Id, r: usize) -> Result<Func> {
        let (tys, _) = self.lam(f)?;
        if tys.len() != r {
            return Err(internal("an index function of the wrong arity"));
        }
        self.func(f)
    }

    /// An element function of `r` index parameters built by `body` from the index registers.
    pub(super) fn elem_func(
        &mut self,
        r: usize,
        body: impl FnOnce(&mut Self, &mut FuncBuilder, &[Reg]) -> Result<Reg>,
    ) -> Result<Func> {
        let mut fb = FuncBuilder::new(vec![ElemType::I64; r]);
        let ix: Vec<Reg> = (0..r as Reg).collect();
        let out = body(self, &mut fb, &ix)?;
        Ok(fb.finish(vec![out]))
    }
}
