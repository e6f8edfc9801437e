//! Lazy kernels under their guard: a `Step::If` on a host test of the guard that cannot
//! fail, computing the kernel only when the guard holds ([`crate::place`]), and the reads
//! such a test makes without failing (out of bounds gives some value instead of an error).

use super::elem::FuncBuilder;
use super::{zero_of, Lowerer};
use crate::place::{Guard, Lit, Place};
use egg::Language;
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Arg, Block, Inst, Kernel, KernelKind, Lane, LaneOp, Origin, Reg, Step, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::collections::HashSet;

impl Lowerer<'_> {
    /// Whether node `to` is in the term of node `from`.
    pub(super) fn reaches(&self, from: usize, to: usize) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            if n == to {
                return true;
            }
            // a node's children come before it in the term
            if n < to || !seen.insert(n) {
                continue;
            }
            stack.extend(self.nodes[n].children().iter().map(|c| usize::from(*c)));
        }
        false
    }

    /// Whether node `i` is needed wherever the steps being written run: it is strict, or
    /// its guard is implied by what they know.
    pub(super) fn needed_here(&self, i: usize) -> bool {
        match self.placement.place(i) {
            Place::HostStrict => true,
            Place::HostLazy(g) => {
                self.context.iter().any(|c| g.implied_by_guard(c)) || g.implied_by(&self.context_lits())
            }
            Place::Element | Place::Unused => false,
        }
    }

    /// The literals the steps being written know to hold.
    pub(super) fn context_lits(&self) -> Vec<Lit> {
        self.context
            .iter()
            .filter_map(|g| match g.conjunctions() {
                [c] => Some(c.clone()),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// Lazy node `i` under guard `g`: a `Step::If` on a test of `g` that computes it when
    /// `g` holds (and a placeholder of its type otherwise, which nothing reads: every use
    /// of `i` is under `g`).
    pub(super) fn guarded(&mut self, i: usize, g: &Guard) -> Result<ValueId> {
        let cond = self.guard_test(g)?;
        let (saved_values, saved_dims) = (self.value_of.clone(), self.dim_memo.clone());
        let outer = std::mem::take(&mut self.plan.steps);
        self.context.push(g.clone());
        let v = self.array_here(i);
        self.context.pop();
        let then_steps = std::mem::take(&mut self.plan.steps);
        self.value_of = saved_values;
        self.dim_memo = saved_dims;
        let then_value = v?;
        let (elem, rank) = self.elem_rank(i)?;
        let else_value = self.new_value(format!("u{}", self.plan.values.len()), elem, rank, Origin::Computed);
        let mut fb = FuncBuilder::new(vec![ElemType::I64; rank]);
        let r = fb.konst(zero_of(elem));
        let body = fb.finish(vec![r]);
        let else_step = if rank == 0 {
            Step::Scalar { dst: else_value, body }
        } else {
            // an empty array of its rank
            Step::Kernel(Kernel {
                kind: KernelKind::Generate,
                space: vec![Arg::Const(0); rank],
                elem: body,
                lanes: vec![Lane { dst: else_value, op: LaneOp::Generate }],
                span: None,
                contraction: None,
                view_of: None,
            })
        };
        self.plan.steps = outer;
        let name = format!("{}_if", self.plan.values[then_value].name);
        let dst = self.new_value(name, elem, rank, Origin::Computed);
        self.plan.steps.push(Step::If {
            cond,
            then_steps,
            then_value,
            else_steps: vec![else_step],
            else_value,
            dst,
        });
        self.value_of.insert(i, dst);
        Ok(dst)
    }

    /// A host `bool` that holds when guard `g` does, computed without failing: a read out
    /// of bounds or an integer division by zero in a condition gives some value instead of
    /// an error. (Where a condition fails, the program fails when it tests it, or computes
    /// what the guard protects anyway: a kernel under a lambda is a `let`'s.)
    pub(super) fn guard_test(&mut self, g: &Guard) -> Result<ValueId> {
        let mut fb = FuncBuilder::new(Vec::new());
        fb.safe = true;
        let r = self.any_of(&mut fb, g.conjunctions())?;
        let body = fb.finish(vec![r]);
        let dst = self.new_value(format!("g{}", self.plan.values.len()), ElemType::Bool, 0, Origin::Computed);
        self.plan.steps.push(Step::Scalar { dst, body });
        Ok(dst)
    }

    /// `c0 || c1 || ..` of conjunctions, each tested only when the ones before fail.
    pub(super) fn any_of(&mut self, fb: &mut FuncBuilder, cs: &[Vec<Lit>]) -> Result<Reg> {
        let Some((first, rest)) = cs.split_first() else { return Ok(fb.konst(Scalar::Bool(false))) };
        let a = self.all_of(fb, first)?;
        if rest.is_empty() {
            return Ok(a);
        }
        let (then_block, then_ret) = fb.block(|fb| fb.konst(Scalar::Bool(true)));
        let (else_block, else_ret) = fb.try_block(|fb| self.any_of(fb, rest))?;
        Ok(fb.emit(ElemType::Bool, |dst| Inst::If {
            dst,
            cond: a,
            then_block,
            then_ret,
            else_block,
            else_ret,
        }))
    }

    /// `l0 && l1 && ..`, each literal tested only when the ones before hold.
    pub(super) fn all_of(&mut self, fb: &mut FuncBuilder, ls: &[Lit]) -> Result<Reg> {
        let Some((first, rest)) = ls.split_first() else { return Ok(fb.konst(Scalar::Bool(true))) };
        let mut c = self.scalar(fb, first.cond, &[])?;
        if !first.holds {
            c = fb.emit(ElemType::Bool, |dst| Inst::Unary { dst, op: UnOp::Not, a: c });
        }
        if rest.is_empty() {
            return Ok(c);
        }
        let (then_block, then_ret) = fb.try_block(|fb| self.all_of(fb, rest))?;
        let (else_block, else_ret) = fb.block(|fb| fb.konst(Scalar::Bool(false)));
        Ok(fb.emit(ElemType::Bool, |dst| Inst::If {
            dst,
            cond: c,
            then_block,
            then_ret,
            else_block,
            else_ret,
        }))
    }

    /// A read of `v` at `regs` in a guard's test: out of bounds it gives the zero of the
    /// element type instead of failing.
    pub(super) fn safe_read(&self, fb: &mut FuncBuilder, v: ValueId, regs: Vec<Reg>) -> Reg {
        let elem = self.plan.values[v].elem;
        let zero = fb.konst(Scalar::I64(0));
        let mut inside = fb.konst(Scalar::Bool(true));
        for (k, &r) in regs.iter().enumerate() {
            let ax = fb.konst(Scalar::I64(k as i64));
            let d = fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax });
            let lo = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Ge, a: r, b: zero });
            let hi = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Lt, a: r, b: d });
            inside = fb.and(inside, lo);
            inside = fb.and(inside, hi);
        }
        let (then_block, then_ret) = fb.block(|fb| self.read(fb, v, regs));
        let nothing = fb.konst(zero_of(elem));
        fb.emit(elem, |dst| Inst::If {
            dst,
            cond: inside,
            then_block,
            then_ret,
            else_block: Block::default(),
            else_ret: nothing,
        })
    }

    /// Axis register `ax` of `v` in a guard's test: an axis out of range is axis 0.
    pub(super) fn safe_axis(&self, fb: &mut FuncBuilder, v: ValueId, ax: Reg) -> Reg {
        let rank = fb.konst(Scalar::I64(self.plan.values[v].rank as i64));
        let zero = fb.konst(Scalar::I64(0));
        let lo = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Ge, a: ax, b: zero });
        let hi = fb.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Lt, a: ax, b: rank });
        let ok = fb.and(lo, hi);
        fb.emit(ElemType::I64, |dst| Inst::If {
            dst,
            cond: ok,
            then_block: Block::default(),
            then_ret: ax,
            else_block: Block::default(),
            else_ret: zero,
        })
    }
}
