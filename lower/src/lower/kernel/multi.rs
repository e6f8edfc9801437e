//! Horizontally fused kernels: a `multi` is one kernel with a lane (`Generate` or
//! `Reduce`) per result, its lanes sharing one element function.

use super::super::elem::FuncBuilder;
use super::super::{internal, Lowerer};
use egg::Id;
use eqfuse_egraph::lang::ArrayLang as L;
use eqfuse_egraph::lang::Literal;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Kernel, KernelKind, Lane, LaneOp, Origin, Reg, Step};
use eqfuse_ir::types::ElemType;
use std::collections::HashMap;

impl Lowerer<'_> {
    /// `multi sh lanes..`: the lanes wanted where this step runs, in one element function
    /// (what they share is computed once).
    pub(super) fn multi(&mut self, i: usize, c: &[Id]) -> Result<()> {
        let (sh, lanes) = c.split_first().ok_or_else(|| internal("multi without a shape"))?;
        let space = self.shape_extents(*sh)?;
        // the result nodes: proj k m
        let mut results: HashMap<i64, usize> = HashMap::new();
        for (j, n) in self.nodes.iter().enumerate() {
            if let L::Proj([k, m]) = n {
                if usize::from(*m) == i {
                    if let L::Lit(Literal::I64(k)) = self.nodes[usize::from(*k)] {
                        results.entry(k).or_insert(j);
                    }
                }
            }
        }
        // one element function for all lanes: what they share is computed once
        let r = space.len();
        let mut fb = FuncBuilder::new(vec![ElemType::I64; r]);
        let ix: Vec<Reg> = (0..r as Reg).collect();
        let mut out = Vec::new();
        let mut rets = Vec::new();
        let mut reduces = false;
        // the lanes not lowered yet that are needed here: the one asked for, and those
        // needed wherever this step runs
        let wanted: Vec<usize> = results
            .values()
            .copied()
            .filter(|j| !self.value_of.contains_key(j))
            .filter(|&j| Some(j) == self.lane_wanted || self.needed_here(j))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        for (k, lane) in lanes.iter().enumerate() {
            let Some(&j) = results.get(&(k as i64)) else { continue };
            if !wanted.contains(&j) {
                continue;
            }
            let (f, op) = match self.nodes[usize::from(*lane)].clone() {
                L::LaneGen([f]) => (f, LaneOp::Generate),
                L::LaneRed([op, ne, f]) => {
                    reduces = true;
                    (f, LaneOp::Reduce { op: self.func(op)?, ne: self.konst_func(ne)? })
                }
                n => return Err(internal(format!("a multi lane that is {n:?}"))),
            };
            let (tys, body) = self.lam(f)?;
            if tys.len() != r {
                return Err(internal("a lane function of the wrong arity"));
            }
            rets.push(self.scalar(&mut fb, body, &ix)?);
            let (e, rank) = self.elem_rank(j)?;
            let name = self.name_for(j);
            let dst = self.new_value(name, e, rank, Origin::Computed);
            self.plan.values[dst].span = self.spans.get(&j).copied();
            self.value_of.insert(j, dst);
            out.push(Lane { dst, op });
        }
        let elem = fb.finish(rets);
        let kind = if reduces { KernelKind::Reduce } else { KernelKind::Generate };
        let span = self.spans.get(&i).copied();
        self.plan.steps.push(Step::Kernel(Kernel {
            kind,
            space,
            elem,
            lanes: out,
            span,
            contraction: None,
            view_of: None,
        }));
        Ok(())
    }
}
