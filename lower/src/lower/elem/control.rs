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
        let rs = self.iterate_all(fb, [n, f, init], env)?;
        match rs[..] {
            [r] => Ok(r),
            _ => Err(internal("iterate of a function that is not unary")),
        }
    }

    /// `iterate n f init` over a state of one variable or a tuple of them (`init` a
    /// `tuple`, `f` a function of one parameter per component returning a `tuple`): a `Loop`
    /// of `n` rounds of `f`'s body; the registers of the final state.
    pub(super) fn iterate_all(
        &mut self,
        fb: &mut FuncBuilder,
        [n, f, init]: [Id; 3],
        env: &[Reg],
    ) -> Result<Vec<Reg>> {
        let count = self.scalar(fb, usize::from(n), env)?;
        let inits = self.result(fb, usize::from(init), env)?;
        let (tys, body) = self.lam(f)?;
        if tys.len() != inits.len() {
            return Err(internal("iterate of a function whose arity is not its state's"));
        }
        let vars: Vec<Reg> = tys.iter().map(|t| fb.new_reg(*t)).collect();
        let mut inner = env.to_vec();
        inner.extend(&vars);
        let (block, nexts) = fb.try_block(|fb| self.result(fb, body, &inner))?;
        if nexts.len() != vars.len() {
            return Err(internal("iterate of a function whose result is not its state"));
        }
        let dsts: Vec<Reg> = tys.iter().map(|t| fb.new_reg(*t)).collect();
        fb.push(Inst::Loop { dsts: dsts.clone(), count, inits, vars, body: block, nexts });
        Ok(dsts)
    }
}
