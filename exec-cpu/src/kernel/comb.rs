//! Combining operators of reductions, scans and permutes: a recognised one (`+`, `*`,
//! `min`, `max`, `&&`, `||`) as typed loops, any other through the VM.

use crate::col::{with_type, Col, ColMut, Elem};
use crate::compile::compile;
use crate::internal;
use crate::num::{self, OpKind};
use crate::program::{Env, Program};
use crate::vm::Vm;
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::error::Result;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Func, Inst};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::ops::Range;

/// A combining operator: a known one runs as typed loops, any other through the VM.
pub(super) enum Comb<'s> {
    Known(OpKind),
    Generic(Box<Program<'s>>),
}

/// Recognises `op(a, b) { c = a + b } -> c` and its kin (`*`, `min`, `max`, `&&`, `||`) of
/// element type `ty`.
fn recognise(op: &Func, ty: ElemType) -> Option<OpKind> {
    if op.params.len() != 2 || op.params.iter().any(|&t| t != ty) {
        return None;
    }
    let ([inst], [ret]) = (op.body.insts.as_slice(), op.ret.as_slice()) else { return None };
    if op.reg_types.get(*ret as usize) != Some(&ty) {
        return None;
    }
    let numeric = ty != ElemType::Bool;
    match inst {
        Inst::Binary { dst, op, a: 0, b: 1 } if dst == ret => match op {
            BinOp::Add if numeric => Some(OpKind::Add),
            BinOp::Mul if numeric => Some(OpKind::Mul),
            BinOp::And if !numeric => Some(OpKind::And),
            BinOp::Or if !numeric => Some(OpKind::Or),
            _ => None,
        },
        Inst::Call { dst, f, args } if dst == ret && args.as_slice() == [0, 1] => match f {
            ScalarFn::Min => Some(OpKind::Min),
            ScalarFn::Max => Some(OpKind::Max),
            _ => None,
        },
        // the sections `(&&)` and `(||)`: `if a then b else false`, `if a then true else b`
        Inst::If { dst, cond: 0, then_block, then_ret, else_block, else_ret } if dst == ret && !numeric => {
            let is_const = |b: &eqfuse_ir::plan::Block, r: u32, v: bool| matches!(b.insts.as_slice(), [Inst::Const { dst, value: Scalar::Bool(x) }] if *dst == r && *x == v);
            if then_block.insts.is_empty() && *then_ret == 1 && is_const(else_block, *else_ret, false) {
                Some(OpKind::And)
            } else if else_block.insts.is_empty() && *else_ret == 1 && is_const(then_block, *then_ret, true) {
                Some(OpKind::Or)
            } else {
                None
            }
        }
        _ => None,
    }
}

impl<'s> Comb<'s> {
    pub(super) fn new(op: &Func, ty: ElemType, env: &dyn Env<'s>) -> Result<Comb<'s>> {
        if let Some(k) = recognise(op, ty) {
            return Ok(Comb::Known(k));
        }
        let p = compile(op, env, None)?;
        if p.nparams != 2 || p.ret.len() != 1 {
            return Err(internal(format!(
                "an operator of {} parameters and {} results",
                p.nparams,
                p.ret.len()
            )));
        }
        Ok(Comb::Generic(Box::new(p)))
    }

    /// `a op b`.
    pub(super) fn apply(&self, vm: &mut Option<Vm>, a: Scalar, b: Scalar) -> Result<Scalar> {
        match self {
            Comb::Known(k) => with_type!(a.elem_type(), T => {
                match (T::of_scalar(a), T::of_scalar(b)) {
                    (Some(x), Some(y)) => Ok(<T as num::Comb>::comb(*k, x, y).scalar()),
                    _ => Err(internal("an operator applied to values of two types")),
                }
            }),
            Comb::Generic(p) => {
                let vm = vm.get_or_insert_with(|| Vm::new(p));
                vm.call1(p, &[a, b]).map_err(|e| e.err)
            }
        }
    }

    /// `acc op col[range]...`, folded from `acc`.
    pub(super) fn fold(
        &self,
        vm: &mut Option<Vm>,
        acc: Scalar,
        col: &Col,
        range: Range<usize>,
    ) -> Result<Scalar> {
        match self {
            Comb::Known(k) => with_type!(col.ty(), T => {
                let xs = T::vec(col).and_then(|v| v.get(range)).ok_or_else(|| internal("a fold past its column"))?;
                let acc = T::of_scalar(acc).ok_or_else(|| internal("a neutral element of another type"))?;
                Ok(num::fold(*k, acc, xs).scalar())
            }),
            Comb::Generic(_) => {
                let mut acc = acc;
                for i in range {
                    let x = col.get(i).ok_or_else(|| internal("a fold past its column"))?;
                    acc = self.apply(vm, acc, x)?;
                }
                Ok(acc)
            }
        }
    }

    /// `out[r] = ne op row r` for the rows of length `inner` of `col`.
    pub(super) fn fold_rows(
        &self,
        vm: &mut Option<Vm>,
        ne: Scalar,
        col: &Col,
        inner: usize,
        out: &mut ColMut<'_>,
    ) -> Result<()> {
        if inner == 0 || out.len().checked_mul(inner) != Some(col.len()) {
            return Err(internal("rows that do not fill their block"));
        }
        match self {
            Comb::Known(k) => with_type!(col.ty(), T => {
                let xs = T::vec(col).ok_or_else(|| internal("a column of another type"))?;
                let out = T::of_mut(out).ok_or_else(|| internal("an output of another type"))?;
                let ne = T::of_scalar(ne).ok_or_else(|| internal("a neutral element of another type"))?;
                for (o, row) in out.iter_mut().zip(xs.chunks_exact(inner)) {
                    *o = num::fold(*k, ne, row);
                }
                Ok(())
            }),
            Comb::Generic(_) => {
                for r in 0..out.len() {
                    let v = self.fold(vm, ne, col, r * inner..(r + 1) * inner)?;
                    if !out.set(r, v) {
                        return Err(internal("a row result of another type"));
                    }
                }
                Ok(())
            }
        }
    }

    /// Scans `col[range]` from `acc` into `out[range]`; returns the total.
    pub(super) fn scan(
        &self,
        vm: &mut Option<Vm>,
        acc: Scalar,
        col: &Col,
        range: Range<usize>,
        out: &mut ColMut<'_>,
        exclusive: bool,
    ) -> Result<Scalar> {
        match self {
            Comb::Known(k) => with_type!(col.ty(), T => {
                let xs = T::vec(col).and_then(|v| v.get(range.clone())).ok_or_else(|| internal("a scan past its column"))?;
                let out = T::of_mut(out).and_then(|o| o.get_mut(range)).ok_or_else(|| internal("a scan past its output"))?;
                let acc = T::of_scalar(acc).ok_or_else(|| internal("a neutral element of another type"))?;
                Ok(num::scan(*k, acc, xs, out, exclusive).scalar())
            }),
            Comb::Generic(_) => {
                let mut acc = acc;
                for i in range {
                    let x = col.get(i).ok_or_else(|| internal("a scan past its column"))?;
                    if exclusive {
                        out.set(i, acc);
                    }
                    acc = self.apply(vm, acc, x)?;
                    if !exclusive {
                        out.set(i, acc);
                    }
                }
                Ok(acc)
            }
        }
    }

    /// `out[i] = carry op out[i]`.
    pub(super) fn fix_up(&self, vm: &mut Option<Vm>, carry: Scalar, out: &mut ColMut<'_>) -> Result<()> {
        match self {
            Comb::Known(k) => with_type!(carry.elem_type(), T => {
                let out = T::of_mut(out).ok_or_else(|| internal("an output of another type"))?;
                let carry = T::of_scalar(carry).ok_or_else(|| internal("a carry of another type"))?;
                num::fix_up(*k, carry, out);
                Ok(())
            }),
            Comb::Generic(_) => {
                for i in 0..out.len() {
                    let x = out.get(i).ok_or_else(|| internal("a fix-up past its output"))?;
                    let v = self.apply(vm, carry, x)?;
                    out.set(i, v);
                }
                Ok(())
            }
        }
    }
}
