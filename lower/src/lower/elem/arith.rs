//! Operators and builtin calls in element functions: binary operators (`&&` and `||`
//! lazy, as nested blocks), unary `-` and `!`, and the builtin functions.

use super::super::Lowerer;
use super::builder::FuncBuilder;
use egg::{Id, Language};
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::Result;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Inst, Reg};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

impl Lowerer<'_> {
    /// Binary operator `op` of node `i` on `a` and `b` (`&&` / `||`: [`Self::logic`]); in a
    /// guard's test an integer division cannot fail ([`FuncBuilder::nonzero`]).
    pub(super) fn binary(
        &mut self,
        fb: &mut FuncBuilder,
        i: usize,
        op: BinOp,
        [a, b]: [Id; 2],
        env: &[Reg],
    ) -> Result<Reg> {
        if matches!(op, BinOp::And | BinOp::Or) {
            return self.logic(fb, op, a, b, env);
        }
        let (ra, mut rb) = (self.scalar(fb, usize::from(a), env)?, self.scalar(fb, usize::from(b), env)?);
        let t = self.ty(i)?;
        if fb.safe && matches!(op, BinOp::Div | BinOp::Rem) && t.is_int() {
            rb = fb.nonzero(t, rb);
        }
        Ok(fb.emit(t, |dst| Inst::Binary { dst, op, a: ra, b: rb }))
    }

    /// `a && b` / `a || b`: `b` computed in a nested block, only when it decides.
    fn logic(&mut self, fb: &mut FuncBuilder, op: BinOp, a: Id, b: Id, env: &[Reg]) -> Result<Reg> {
        let kid = |c: Id| usize::from(c);
        let ra = self.scalar(fb, kid(a), env)?;
        self.hoist(fb, &[kid(b)], env)?;
        let (then_block, then_ret, else_block, else_ret);
        if op == BinOp::And {
            (then_block, then_ret) = fb.try_block(|fb| self.scalar(fb, kid(b), env))?;
            (else_block, else_ret) = fb.block(|fb| fb.konst(Scalar::Bool(false)));
        } else {
            (then_block, then_ret) = fb.block(|fb| fb.konst(Scalar::Bool(true)));
            (else_block, else_ret) = fb.try_block(|fb| self.scalar(fb, kid(b), env))?;
        }
        Ok(fb.emit(ElemType::Bool, |dst| Inst::If {
            dst,
            cond: ra,
            then_block,
            then_ret,
            else_block,
            else_ret,
        }))
    }

    /// Unary operator `op` of node `i` on `a`.
    pub(super) fn unary(
        &mut self,
        fb: &mut FuncBuilder,
        i: usize,
        op: UnOp,
        a: Id,
        env: &[Reg],
    ) -> Result<Reg> {
        let ra = self.scalar(fb, usize::from(a), env)?;
        let t = self.ty(i)?;
        Ok(fb.emit(t, |dst| Inst::Unary { dst, op, a: ra }))
    }

    /// Builtin `f` of node `i` (`node`) on its children, in order.
    pub(super) fn call(
        &mut self,
        fb: &mut FuncBuilder,
        i: usize,
        f: ScalarFn,
        node: &ArrayLang,
        env: &[Reg],
    ) -> Result<Reg> {
        let mut args = Vec::new();
        for c in node.children() {
            args.push(self.scalar(fb, usize::from(*c), env)?);
        }
        let t = self.ty(i)?;
        Ok(fb.emit(t, |dst| Inst::Call { dst, f, args }))
    }
}

/// The builtin function node `node` calls, if it is a call of one.
pub(super) fn builtin(node: &ArrayLang) -> Option<ScalarFn> {
    use ArrayLang as L;
    Some(match node {
        L::Min(_) => ScalarFn::Min,
        L::Max(_) => ScalarFn::Max,
        L::Abs(_) => ScalarFn::Abs,
        L::Sqrt(_) => ScalarFn::Sqrt,
        L::Exp(_) => ScalarFn::Exp,
        L::Log(_) => ScalarFn::Log,
        L::Sin(_) => ScalarFn::Sin,
        L::Cos(_) => ScalarFn::Cos,
        L::Tan(_) => ScalarFn::Tan,
        L::Tanh(_) => ScalarFn::Tanh,
        L::Floor(_) => ScalarFn::Floor,
        L::Ceil(_) => ScalarFn::Ceil,
        L::Round(_) => ScalarFn::Round,
        L::Pow(_) => ScalarFn::Pow,
        L::Atan2(_) => ScalarFn::Atan2,
        L::Clamp(_) => ScalarFn::Clamp,
        L::ToI32(_) => ScalarFn::Convert(ElemType::I32),
        L::ToI64(_) => ScalarFn::Convert(ElemType::I64),
        L::ToF32(_) => ScalarFn::Convert(ElemType::F32),
        L::ToF64(_) => ScalarFn::Convert(ElemType::F64),
        // the builtins of version 2 (`u8`, `popcount`, `log2`, ...), by name
        n => return n.scalar_builtin().and_then(ScalarFn::from_name),
    })
}
