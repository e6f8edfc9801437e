//! [`FuncBuilder`]: the registers, blocks and memo of one element function being written.

use eqfuse_egraph::lang::{ArrayLang, Literal};
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::error::{Result, Span};
use eqfuse_ir::plan::{Block, Func, Inst, Reg};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::collections::{HashMap, HashSet};

/// The argument (node, environment) of parameter node `n` under `env` when it is not
/// computed yet.
pub(super) fn lazy_arg(
    nodes: &[ArrayLang],
    lazy: &HashMap<Reg, (usize, Vec<Reg>)>,
    n: usize,
    env: &[Reg],
) -> Option<(usize, Vec<Reg>)> {
    let ArrayLang::Param(p) = &nodes[n] else { return None };
    let r = env.get(env.len().checked_sub(1 + p.index as usize)?)?;
    lazy.get(r).cloned()
}

/// A node and the registers of its free parameters: what [`FuncBuilder`] memoises.
pub(in crate::lower) type MemoKey = (usize, Vec<Reg>);

/// The memo key of node `i` under `env`: the node and the registers of its free
/// parameters (`None`: a parameter out of scope).
pub(super) fn key_of(free: &[Vec<u32>], i: usize, env: &[Reg]) -> Option<MemoKey> {
    let mut regs = Vec::with_capacity(free[i].len());
    for &p in &free[i] {
        regs.push(env[env.len().checked_sub(1 + p as usize)?]);
    }
    Some((i, regs))
}

/// Builds one [`Func`]: registers, the block being written, and the registers each
/// (node, environment) already has in the enclosing blocks.
pub(in crate::lower) struct FuncBuilder {
    params: Vec<ElemType>,
    reg_types: Vec<ElemType>,
    blocks: Vec<Block>,
    /// Per block: the register each (node, environment) has there.
    pub(in crate::lower) memo: Vec<HashMap<MemoKey, Reg>>,
    consts: HashMap<String, Reg>,
    /// Per block: the (node, environment) pairs it computes on every path.
    pub(in crate::lower) strict: Vec<HashSet<MemoKey>>,
    /// The arguments of applications not computed yet: a parameter's placeholder register
    /// (counting down from `Reg::MAX`, never an instruction's) -> the argument and its
    /// environment. A parameter is computed where it is first used, as if substituted.
    pub(in crate::lower) lazy: HashMap<Reg, (usize, Vec<Reg>)>,
    /// The placeholder of each argument (node, environment): one per value, so that two
    /// applications of one function to one value share their work.
    placeholders: HashMap<MemoKey, Reg>,
    /// A guard's test: reads out of bounds and integer divisions by zero give some value
    /// instead of failing.
    pub(in crate::lower) safe: bool,
    /// Source positions of the registers written by instructions that can fail.
    spans: Vec<(Reg, Span)>,
}

impl FuncBuilder {
    pub(in crate::lower) fn new(params: Vec<ElemType>) -> FuncBuilder {
        FuncBuilder {
            reg_types: params.clone(),
            params,
            blocks: vec![Block::default()],
            memo: vec![HashMap::new()],
            consts: HashMap::new(),
            strict: vec![HashSet::new()],
            lazy: HashMap::new(),
            placeholders: HashMap::new(),
            safe: false,
            spans: Vec::new(),
        }
    }

    /// Notes that register `r` (written by an instruction that can fail) comes from the
    /// program text at `span`, unless it has a position already (an inner node's).
    pub(in crate::lower) fn mark(&mut self, r: Reg, span: Span) {
        if (r as usize) >= self.params.len()
            && (r as usize) < self.reg_types.len()
            && !self.spans.iter().any(|(x, _)| *x == r)
        {
            self.spans.push((r, span));
        }
    }

    /// `b`, or 1 where it is 0 (a divisor that cannot fail), of integer type `t`.
    pub(in crate::lower) fn nonzero(&mut self, t: ElemType, b: Reg) -> Reg {
        let (zero, one) = (Scalar::from_i128_wrapping(t, 0), Scalar::from_i128_wrapping(t, 1));
        let (zero, one) = (self.konst(zero), self.konst(one));
        let is_zero = self.emit(ElemType::Bool, |dst| Inst::Binary { dst, op: BinOp::Eq, a: b, b: zero });
        self.emit(t, |dst| Inst::If {
            dst,
            cond: is_zero,
            then_block: Block::default(),
            then_ret: one,
            else_block: Block::default(),
            else_ret: b,
        })
    }

    /// The placeholder register of argument `key` (its node under `env`).
    pub(in crate::lower) fn placeholder(&mut self, key: MemoKey, env: &[Reg]) -> Reg {
        if let Some(&r) = self.placeholders.get(&key) {
            return r;
        }
        let r = Reg::MAX - self.placeholders.len() as Reg;
        self.lazy.insert(r, (key.0, env.to_vec()));
        self.placeholders.insert(key, r);
        r
    }

    pub(in crate::lower) fn new_reg(&mut self, t: ElemType) -> Reg {
        self.reg_types.push(t);
        (self.reg_types.len() - 1) as Reg
    }

    pub(in crate::lower) fn push(&mut self, i: Inst) {
        if let Some(b) = self.blocks.last_mut() {
            b.insts.push(i);
        }
    }

    pub(in crate::lower) fn emit(&mut self, t: ElemType, make: impl FnOnce(Reg) -> Inst) -> Reg {
        let r = self.new_reg(t);
        let i = make(r);
        self.push(i);
        r
    }

    /// A constant's register. Constants go to the function's outermost block, once each
    /// (computing one cannot fail): a constant a branch needs and the code after the
    /// branch needs too is one instruction, wherever it was first asked for.
    pub(in crate::lower) fn konst(&mut self, v: Scalar) -> Reg {
        let key = format!("{:?}", Literal::from_scalar(v));
        if let Some(r) = self.consts.get(&key) {
            return *r;
        }
        let r = self.new_reg(v.elem_type());
        if let Some(b) = self.blocks.first_mut() {
            b.insts.push(Inst::Const { dst: r, value: v });
        }
        self.consts.insert(key, r);
        r
    }

    /// `a && b` of two bools already evaluated (nothing left to be lazy about).
    pub(in crate::lower) fn and(&mut self, a: Reg, b: Reg) -> Reg {
        let f = self.konst(Scalar::Bool(false));
        self.emit(ElemType::Bool, |dst| Inst::If {
            dst,
            cond: a,
            then_block: Block::default(),
            then_ret: b,
            else_block: Block::default(),
            else_ret: f,
        })
    }

    pub(in crate::lower) fn lookup(&self, key: &MemoKey) -> Option<Reg> {
        self.memo.iter().rev().find_map(|m| m.get(key).copied())
    }

    pub(in crate::lower) fn remember(&mut self, key: MemoKey, r: Reg) {
        if let Some(m) = self.memo.last_mut() {
            m.insert(key, r);
        }
    }

    /// Runs `f` in a new nested block; the block and `f`'s result (its register, or
    /// registers).
    pub(in crate::lower) fn block<T>(&mut self, f: impl FnOnce(&mut FuncBuilder) -> T) -> (Block, T) {
        self.blocks.push(Block::default());
        self.memo.push(HashMap::new());
        self.strict.push(HashSet::new());
        let r = f(self);
        self.memo.pop();
        self.strict.pop();
        (self.blocks.pop().unwrap_or_default(), r)
    }

    pub(in crate::lower) fn try_block<T: Default>(
        &mut self,
        f: impl FnOnce(&mut FuncBuilder) -> Result<T>,
    ) -> Result<(Block, T)> {
        let mut err = None;
        let (b, r) = self.block(|fb| match f(fb) {
            Ok(r) => r,
            Err(e) => {
                err = Some(e);
                T::default()
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok((b, r)),
        }
    }

    pub(in crate::lower) fn finish(mut self, ret: Vec<Reg>) -> Func {
        let body = self.blocks.pop().unwrap_or_default();
        Func { params: self.params, reg_types: self.reg_types, body, ret, spans: self.spans }
    }
}
