//! Control in element functions: `if` (both branches nested blocks, what both need
//! hoisted before them) and `iterate` (a `Loop`: loops stay loops).

use super::super::{internal, Lowerer};
use super::builder::FuncBuilder;
use egg::Id;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Inst, Reg};

impl Lowerer<'_> {
    /// `if c then t else e` of node `i`: each branch in its own block.
    pub(super) fn cond(
        &mut self,
        fb: &mut FuncBuilder,
        i: usize,
        [c, t, e]: [Id; 3],
        env: &[Reg],
    ) -> Result<Reg> {
        let kid = |c: Id| usize::from(c);
        let rc = self.scalar(fb, kid(c), env)?;
        self.hoist(fb, &[kid(t), kid(e)], env)?;
        let (then_block, then_ret) = fb.try_block(|fb| self.scalar(fb, kid(t), env))?;
        let (else_block, else_ret) = fb.try_block(|fb| self.scalar(fb, kid(e), env))?;
        let ty = self.ty(i)?;
        Ok(fb.emit(ty, |dst| Inst::If { dst, cond: rc, then_block, then_ret, else_block, else_ret }))
    }

    /// `iterate n f init`: a `Loop` of `n` rounds of `f`'s body over one variable.
    pub(super) fn iterate(
        &mut self,
        fb: &mut FuncBuilder,
        [n, f, init]: [Id; 3],
        env: &[Reg],
    ) -> Result<Reg> {
        let count = self.scalar(fb, usize::from(n), env)?;
        let rinit = self.scalar(fb, usize::from(init), env)?;
        let (tys, body) = self.lam(f)?;
        let [t] = tys[..] else { return Err(internal("iterate of a function that is not unary")) };
        let var = fb.new_reg(t);
        let mut inner = env.to_vec();
        inner.push(var);
        let (block, next) = fb.try_block(|fb| self.scalar(fb, body, &inner))?;
        let dst = fb.new_reg(t);
        fb.push(Inst::Loop {
            dsts: vec![dst],
            count,
            inits: vec![rinit],
            vars: vec![var],
            body: block,
            nexts: vec![next],
        });
        Ok(dst)
    }
}
