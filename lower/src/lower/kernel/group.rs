//! Reductions and scans over groups (`greduce`, `gscan`): one kernel whose head lane folds
//! all the components with the group's operator, and a [`LaneOp::Part`] lane per further
//! component; each component a value of its own (a tuple never reaches memory as a struct).

use super::super::elem::FuncBuilder;
use super::super::{internal, Lowerer};
use egg::Id;
use eqfuse_egraph::analysis::Kind;
use eqfuse_egraph::lang::ArrayLang as L;
use eqfuse_egraph::lang::Literal;
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::error::{Code, Result};
use eqfuse_ir::plan::{Kernel, KernelKind, Lane, LaneOp, Origin, Step};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

impl Lowerer<'_> {
    /// `greduce op ne sh f check` (`scan`: `gscan op ne sh f exclusive`) of node `i`: one
    /// kernel over `sh` writing every component.
    pub(super) fn group(&mut self, i: usize, [op, ne, sh, f, flag]: [Id; 5], scan: bool) -> Result<()> {
        let space = self.shape_extents(sh)?;
        let r = space.len();
        let elem = self.index_func(f, r)?;
        let op = self.func(op)?;
        let mut fb = FuncBuilder::new(Vec::new());
        let rs = self.result(&mut fb, usize::from(ne), &[])?;
        let ne = fb.finish(rs);
        let w = ne.ret.len();
        if w < 2 || op.ret.len() != w || op.params.len() != 2 * w || elem.ret.len() != w {
            return Err(internal(format!(
                "a group of {w} components with an operator of {} results",
                op.ret.len()
            )));
        }
        let Kind::Multi(kinds) = self.kinds[i].clone() else {
            return Err(internal("a group operation without results"));
        };
        let flag = match self.nodes[usize::from(flag)] {
            L::Lit(l) => l,
            _ => return Err(internal("a group operation's flag is not a literal")),
        };
        let exclusive = flag == Literal::Bool(true);
        // the result nodes: proj k i, named after the first projection of each component
        let mut results: Vec<Option<usize>> = vec![None; w];
        for (j, n) in self.nodes.iter().enumerate() {
            if let L::Proj([k, m]) = n {
                if usize::from(*m) == i {
                    if let L::Lit(Literal::I64(k)) = self.nodes[usize::from(*k)] {
                        if let Some(slot @ None) = usize::try_from(k).ok().and_then(|k| results.get_mut(k)) {
                            *slot = Some(j);
                        }
                    }
                }
            }
        }
        // where the operation is in the program text: its own position, else its results'
        let span =
            self.spans.get(&i).or_else(|| results.iter().flatten().find_map(|j| self.spans.get(j))).copied();
        if let (false, Literal::I64(which @ (1 | 2))) = (scan, flag) {
            self.assert_nonempty(span, &space, which == 2)?;
        }
        let mut lanes = Vec::with_capacity(w);
        let mut head =
            Some(if scan { LaneOp::Scan { op, ne, exclusive } } else { LaneOp::Reduce { op, ne } });
        for (k, kind) in kinds.iter().enumerate() {
            let (e, rank) = match kind {
                Kind::Array { elem, shape } => (*elem, shape.len()),
                Kind::Scalar(e) => (*e, 0),
                other => return Err(internal(format!("a group component of kind {other:?}"))),
            };
            let name = match results[k] {
                Some(j) => self.name_for(j),
                None => self.name_for(i),
            };
            let dst = self.new_value(name, e, rank, Origin::Computed);
            if let Some(j) = results[k] {
                self.plan.values[dst].span = self.spans.get(&j).copied();
                self.value_of.insert(j, dst);
            }
            if k == 0 {
                self.value_of.insert(i, dst);
            }
            lanes.push(Lane { dst, op: head.take().unwrap_or(LaneOp::Part) });
        }
        let kind = if scan { KernelKind::Scan } else { KernelKind::Reduce };
        self.plan.steps.push(Step::Kernel(Kernel {
            kind,
            space,
            elem,
            lanes,
            span,
            contraction: None,
            view_of: None,
        }));
        Ok(())
    }

    /// `argmin`/`argmax` (`max`, at `span`) over `space`: `E-SHAPE` when its innermost
    /// extent is 0, as the reference interpreter says.
    fn assert_nonempty(
        &mut self,
        span: Option<eqfuse_ir::error::Span>,
        space: &[eqfuse_ir::plan::Arg],
        max: bool,
    ) -> Result<()> {
        let last = *space.last().ok_or_else(|| internal("an argmin over an empty space"))?;
        let mut fb = FuncBuilder::new(Vec::new());
        let n = Self::load_arg(&mut fb, last);
        let zero = fb.konst(Scalar::I64(0));
        let ok = fb.emit(ElemType::Bool, |dst| eqfuse_ir::plan::Inst::Binary {
            dst,
            op: BinOp::Gt,
            a: n,
            b: zero,
        });
        let cond = fb.finish(vec![ok]);
        let (name, what) = if max { ("argmax", "largest") } else { ("argmin", "smallest") };
        self.plan.steps.push(Step::Assert {
            cond,
            code: Code::Shape,
            message: format!(
                "`{name}` of an array of shape {{0}}: its innermost dimension is empty, so there is no {what} element"
            ),
            shown: vec![space.to_vec()],
            span,
        });
        Ok(())
    }
}
