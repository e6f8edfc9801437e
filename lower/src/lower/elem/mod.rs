//! Element functions: straight-line code over registers, one register per term node and
//! distinct environment of its free parameters ([`FuncBuilder`]). [`Lowerer::scalar`]
//! memoises; [`Lowerer::scalar_uncached`] dispatches on the node to one function per
//! family: `arith.rs` (operators, builtin calls), `control.rs` (`if`, `iterate`),
//! `access.rs` (parameters, inputs, sizes, reads, applications, projections); `hoist.rs`
//! computes before a conditional what every path of the block computes anyway.

mod access;
mod arith;
mod builder;
mod control;
mod hoist;

pub(in crate::lower) use builder::FuncBuilder;

use super::{internal, Lowerer};
use builder::key_of;
use egg::Id;
use eqfuse_egraph::analysis::Kind;
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Arg, Inst, Reg, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// The memo of component `k` of a tuple `iterate` is its node's key with the register
/// `TUPLE_PART - k` appended (no register is numbered so high: placeholders count down from
/// `Reg::MAX`, one per argument).
const TUPLE_PART: Reg = Reg::MAX / 2;

impl Lowerer<'_> {
    /// The registers of node `i`'s result (several for a tuple), under environment `env`
    /// (`env[len-1-k]` holds `$k`).
    pub(in crate::lower) fn result(
        &mut self,
        fb: &mut FuncBuilder,
        i: usize,
        env: &[Reg],
    ) -> Result<Vec<Reg>> {
        match &self.nodes[i] {
            ArrayLang::Tuple(es) => {
                let es: Vec<usize> = es.iter().map(|e| usize::from(*e)).collect();
                es.into_iter().map(|e| self.scalar(fb, e, env)).collect()
            }
            // an application whose body is a tuple (an index function's, substituted)
            ArrayLang::App(c) if matches!(self.kinds[i], Kind::Tuple(_)) => {
                let (body, inner) = self.app_env(fb, &c.clone(), env)?;
                self.result(fb, body, &inner)
            }
            // `iterate` over a tuple: one loop, whichever component is asked for first
            ArrayLang::Iterate(c) if matches!(self.kinds[i], Kind::Tuple(_)) => {
                let c = *c;
                let key =
                    key_of(&self.free, i, env).ok_or_else(|| internal("a free parameter out of scope"))?;
                let part = |k: usize| {
                    let mut kk = key.clone();
                    kk.1.push(TUPLE_PART - k as Reg);
                    kk
                };
                let w = match &self.kinds[i] {
                    Kind::Tuple(ts) => ts.len(),
                    _ => 0,
                };
                let known: Option<Vec<Reg>> = (0..w).map(|k| fb.lookup(&part(k))).collect();
                if let Some(rs) = known {
                    return Ok(rs);
                }
                let rs = self.iterate_all(fb, c, env)?;
                for (k, r) in rs.iter().enumerate() {
                    fb.remember(part(k), *r);
                }
                Ok(rs)
            }
            _ => Ok(vec![self.scalar(fb, i, env)?]),
        }
    }

    /// The body of application `c` (`(\.. -> body) args`) and the environment it runs in.
    /// Argument `j` is parameter `k - 1 - j` of the body. One used inside a lambda of the
    /// body (an `iterate`'s) is computed now, once; the others where the body first uses
    /// them (not at all if it does not), as if substituted: an application and its
    /// beta-reduced form lower alike.
    pub(in crate::lower) fn app_env(
        &mut self,
        fb: &mut FuncBuilder,
        c: &[Id],
        env: &[Reg],
    ) -> Result<(usize, Vec<Reg>)> {
        let (f, args) = c.split_first().ok_or_else(|| internal("app without a function"))?;
        let (tys, body) = self.lam(*f)?;
        if tys.len() != args.len() {
            return Err(internal("an application of the wrong arity"));
        }
        let mut inner = env.to_vec();
        for (j, a) in args.iter().enumerate() {
            let p = (args.len() - 1 - j) as u32;
            let a = usize::from(*a);
            if self.deep[body].contains(&p) {
                inner.push(self.scalar(fb, a, env)?);
            } else {
                let key =
                    key_of(&self.free, a, env).ok_or_else(|| internal("a free parameter out of scope"))?;
                inner.push(fb.placeholder(key, env));
            }
        }
        Ok((body, inner))
    }

    /// The register holding scalar node `i` under `env` (computed once per block and
    /// environment of its free parameters).
    pub(in crate::lower) fn scalar(&mut self, fb: &mut FuncBuilder, i: usize, env: &[Reg]) -> Result<Reg> {
        let key = key_of(&self.free, i, env).ok_or_else(|| internal("a free parameter out of scope"))?;
        if let Some(r) = fb.lookup(&key) {
            return Ok(r);
        }
        self.note_strict(fb, i, env);
        let r = self.scalar_uncached(fb, i, env)?;
        fb.remember(key, r);
        if let Some(&span) = self.spans.get(&i) {
            let fails = match &self.nodes[i] {
                ArrayLang::Index(_) | ArrayLang::Length(_) | ArrayLang::Dim(_) => true,
                n => matches!(n.bin_op(), Some((BinOp::Div | BinOp::Rem, _))),
            };
            if fails {
                fb.mark(r, span);
            }
        }
        Ok(r)
    }

    /// The register of scalar node `i` under `env`, computed now (no memo): one function
    /// per family.
    fn scalar_uncached(&mut self, fb: &mut FuncBuilder, i: usize, env: &[Reg]) -> Result<Reg> {
        use ArrayLang as L;
        if self.branching.contains(&i) {
            return self.load_result(fb, i);
        }
        let node = self.nodes[i].clone();
        if let Some((op, ab)) = node.bin_op() {
            return self.binary(fb, i, op, ab, env);
        }
        if let Some(f) = arith::builtin(&node) {
            return self.call(fb, i, f, &node, env);
        }
        // `length a`, `size a k` (constant `k`): the one value of that extent
        if let Some((a, k)) = self.constant_axis(&node) {
            if let Some(e) = self.axis_extent(a, k, None)? {
                return Ok(Self::load_arg(fb, e));
            }
        }
        match node {
            L::Lit(l) => Ok(fb.konst(l.to_scalar())),
            L::Param(p) => self.param(fb, p.index as usize, env),
            L::Size(s) => self.size(fb, s.as_str()),
            L::Input(s) if !self.kinds[i].is_array() => self.scalar_input(fb, i, s.as_str()),
            L::Neg([a]) => self.unary(fb, i, UnOp::Neg, a, env),
            L::Not([a]) => self.unary(fb, i, UnOp::Not, a, env),
            L::If(c) => self.cond(fb, i, c, env),
            L::Iterate(c) => self.iterate(fb, c, env),
            L::Index(c) => self.index(fb, &c, env),
            L::Length([a]) => self.length(fb, a),
            L::Dim([a, k]) => self.dim(fb, a, k, env),
            L::App(c) => self.app(fb, &c, env),
            // a scalar lane of a multi-output kernel (a reduction grouped with others)
            L::Proj([_, m]) if self.nodes[usize::from(m)].has_results() => self.load_result(fb, i),
            L::Proj([k, t]) => self.proj(fb, k, t, env),
            // a kernel's scalar result (a reduction to a scalar) read inside another kernel
            _ if self.is_kernel(i) => self.load_result(fb, i),
            n => Err(internal(format!("not a scalar: {n:?}"))),
        }
    }

    /// Loads the host value of node `i` (a host `if`, a kernel's scalar result).
    fn load_result(&mut self, fb: &mut FuncBuilder, i: usize) -> Result<Reg> {
        let v = self.array(Id::from(i))?;
        let t = self.ty(i)?;
        Ok(fb.emit(t, |dst| Inst::Load { dst, value: v }))
    }

    fn ty(&self, i: usize) -> Result<ElemType> {
        match &self.kinds[i] {
            Kind::Scalar(e) => Ok(*e),
            k => Err(internal(format!("node {i} is {k:?}, not a scalar"))),
        }
    }

    pub(in crate::lower) fn read(&self, fb: &mut FuncBuilder, v: ValueId, ix: Vec<Reg>) -> Reg {
        let elem = self.plan.values[v].elem;
        fb.emit(elem, |dst| Inst::Read { dst, array: v, index: ix })
    }

    /// Loads extent `a` into a register.
    pub(in crate::lower) fn load_arg(fb: &mut FuncBuilder, a: Arg) -> Reg {
        match a {
            Arg::Const(c) => fb.konst(Scalar::I64(c)),
            Arg::Value(v) => fb.emit(ElemType::I64, |dst| Inst::Load { dst, value: v }),
        }
    }
}
