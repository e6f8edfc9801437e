//! What element functions read: parameters (an application's argument computed where
//! first used), sizes, scalar inputs, array elements and extents (in a guard's test,
//! without failing: `guard.rs`), applications and tuple projections.

use super::super::{internal, Lowerer};
use super::builder::FuncBuilder;
use egg::Id;
use eqfuse_egraph::lang::{ArrayLang, Literal};
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Inst, Reg};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

impl Lowerer<'_> {
    /// Parameter `$index`: its register, or its argument computed now if it is not yet.
    pub(super) fn param(&mut self, fb: &mut FuncBuilder, index: usize, env: &[Reg]) -> Result<Reg> {
        let at = env.len().checked_sub(1 + index).ok_or_else(|| internal("a parameter out of scope"))?;
        Ok(match fb.lazy.get(&env[at]).cloned() {
            Some((a, outer)) => self.scalar(fb, a, &outer)?,
            None => env[at],
        })
    }

    /// Size `s`, loaded.
    pub(super) fn size(&mut self, fb: &mut FuncBuilder, s: &str) -> Result<Reg> {
        let v = *self.sizes.get(s).ok_or_else(|| internal(format!("unknown size {s}")))?;
        Ok(fb.emit(ElemType::I64, |dst| Inst::Load { dst, value: v }))
    }

    /// Scalar input `s` (node `i`), loaded.
    pub(super) fn scalar_input(&mut self, fb: &mut FuncBuilder, i: usize, s: &str) -> Result<Reg> {
        let v = self.input(s)?;
        let t = self.ty(i)?;
        Ok(fb.emit(t, |dst| Inst::Load { dst, value: v }))
    }

    /// `a[ix..]`: a read (in a guard's test one that cannot fail: [`Self::safe_read`]).
    pub(super) fn index(&mut self, fb: &mut FuncBuilder, c: &[Id], env: &[Reg]) -> Result<Reg> {
        let (a, ix) = c.split_first().ok_or_else(|| internal("index without an array"))?;
        let v = self.array(*a)?;
        let mut regs = Vec::with_capacity(ix.len());
        for j in ix {
            regs.push(self.scalar(fb, usize::from(*j), env)?);
        }
        if !fb.safe {
            return Ok(self.read(fb, v, regs));
        }
        Ok(self.safe_read(fb, v, regs))
    }

    /// `length a`: the extent of axis 0, read from the array (where the lowering has no
    /// value of it: [`Self::axis_extent`]).
    pub(super) fn length(&mut self, fb: &mut FuncBuilder, a: Id) -> Result<Reg> {
        let v = self.array(a)?;
        let ax = fb.konst(Scalar::I64(0));
        Ok(fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax }))
    }

    /// `size a k`: the extent of axis `k` (in a guard's test an axis out of range is 0:
    /// [`Self::safe_axis`]).
    pub(super) fn dim(&mut self, fb: &mut FuncBuilder, a: Id, k: Id, env: &[Reg]) -> Result<Reg> {
        let v = self.array(a)?;
        let mut ax = self.scalar(fb, usize::from(k), env)?;
        if fb.safe {
            ax = self.safe_axis(fb, v, ax);
        }
        Ok(fb.emit(ElemType::I64, |dst| Inst::Dim { dst, array: v, axis: ax }))
    }

    /// An application: its body under the environment [`Self::app_env`] makes.
    pub(super) fn app(&mut self, fb: &mut FuncBuilder, c: &[Id], env: &[Reg]) -> Result<Reg> {
        let (body, inner) = self.app_env(fb, c, env)?;
        self.scalar(fb, body, &inner)
    }

    /// `proj k t`: component `k` (a constant) of tuple `t`.
    pub(super) fn proj(&mut self, fb: &mut FuncBuilder, k: Id, t: Id, env: &[Reg]) -> Result<Reg> {
        let Some(Literal::I64(k)) = (match &self.nodes[usize::from(k)] {
            ArrayLang::Lit(l) => Some(*l),
            _ => None,
        }) else {
            return Err(internal("a projection by a non-constant"));
        };
        let rs = self.result(fb, usize::from(t), env)?;
        Ok(*usize::try_from(k)
            .ok()
            .and_then(|k| rs.get(k))
            .ok_or_else(|| internal("a projection out of range"))?)
    }
}
