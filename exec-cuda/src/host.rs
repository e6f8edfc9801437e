//! The host steps' functions (`Step::Scalar`, `Step::Assert`): a direct interpreter of a
//! [`Func`] with the reference scalar semantics ([`eqfuse_ir::interp::scalar`]), reading
//! values through an [`Env`] (which downloads from the device what it must).

use eqfuse_ir::error::{Code, Error, Result, Span};
use eqfuse_ir::interp::scalar::{binary, unary};
use eqfuse_ir::plan::{Block, Func, Inst, Reg, ValueId};
use eqfuse_ir::value::Scalar;

/// The values a host function reads.
pub(crate) trait Env {
    /// A 0-d value.
    fn load(&mut self, v: ValueId) -> Result<Scalar>;
    /// `v[ix]` (`E-INDEX` out of bounds).
    fn read(&mut self, v: ValueId, ix: &[i64]) -> Result<Scalar>;
    /// `size v axis` (`E-INDEX` for an axis out of range).
    fn dim(&mut self, v: ValueId, axis: i64) -> Result<Scalar>;
}

/// An internal inconsistency of the plan.
pub(crate) use eqfuse_ir::error::internal;

/// A type error of the scalar semantics is the plan's fault here.
fn scalar_err(mut e: Error) -> Error {
    if e.code == Code::Type {
        e.code = Code::Limit;
    }
    e
}

struct Regs<'f> {
    func: &'f Func,
    regs: Vec<Option<Scalar>>,
}

impl Regs<'_> {
    fn get(&self, r: Reg) -> Result<Scalar> {
        match self.regs.get(r as usize) {
            Some(Some(s)) => Ok(*s),
            Some(None) => Err(internal(format!("register r{r} read before it is written"))),
            None => Err(internal(format!("register r{r} out of range"))),
        }
    }

    fn get_i64(&self, r: Reg) -> Result<i64> {
        match self.get(r)? {
            Scalar::I64(v) => Ok(v),
            Scalar::I32(v) => Ok(i64::from(v)),
            other => Err(internal(format!("register r{r} is {}, used as an i64", other.elem_type()))),
        }
    }

    fn set(&mut self, r: Reg, s: Scalar) -> Result<()> {
        let ty = self.func.reg_types.get(r as usize).copied();
        match (ty, self.regs.get_mut(r as usize)) {
            (Some(t), Some(slot)) if t == s.elem_type() => {
                *slot = Some(s);
                Ok(())
            }
            _ => Err(internal(format!("register r{r} assigned a {}", s.elem_type()))),
        }
    }
}

/// Runs `func` on `args`; returns its results.
pub(crate) fn call(func: &Func, args: &[Scalar], env: &mut dyn Env) -> Result<Vec<Scalar>> {
    if args.len() != func.params.len() {
        return Err(internal(format!(
            "a function of {} parameters called with {} arguments",
            func.params.len(),
            args.len()
        )));
    }
    let mut regs = Regs { func, regs: vec![None; func.reg_types.len()] };
    for (k, a) in args.iter().enumerate() {
        regs.set(k as Reg, *a)?;
    }
    block(&mut regs, &func.body, env)?;
    func.ret.iter().map(|&r| regs.get(r)).collect()
}

/// Runs `func` and returns its one result.
pub(crate) fn call1(func: &Func, args: &[Scalar], env: &mut dyn Env) -> Result<Scalar> {
    match call(func, args, env)?.as_slice() {
        [s] => Ok(*s),
        other => Err(internal(format!("a function of {} results used as a scalar", other.len()))),
    }
}

fn block(regs: &mut Regs<'_>, b: &Block, env: &mut dyn Env) -> Result<()> {
    let span = Span::default();
    for inst in &b.insts {
        match inst {
            Inst::Const { dst, value } => regs.set(*dst, *value)?,
            Inst::Unary { dst, op, a } => {
                let v = unary(*op, regs.get(*a)?, span).map_err(scalar_err)?;
                regs.set(*dst, v)?;
            }
            Inst::Binary { dst, op, a, b } => {
                let v = binary(*op, regs.get(*a)?, regs.get(*b)?, span).map_err(scalar_err)?;
                regs.set(*dst, v)?;
            }
            Inst::Call { dst, f, args } => {
                let vals: Vec<Scalar> = args.iter().map(|&r| regs.get(r)).collect::<Result<_>>()?;
                let v = f.apply(&vals, span).map_err(scalar_err)?;
                regs.set(*dst, v)?;
            }
            Inst::Read { dst, array, index } => {
                let ix: Vec<i64> = index.iter().map(|&r| regs.get_i64(r)).collect::<Result<_>>()?;
                let v = env.read(*array, &ix)?;
                regs.set(*dst, v)?;
            }
            Inst::Dim { dst, array, axis } => {
                let v = env.dim(*array, regs.get_i64(*axis)?)?;
                regs.set(*dst, v)?;
            }
            Inst::Load { dst, value } => {
                let v = env.load(*value)?;
                regs.set(*dst, v)?;
            }
            Inst::If { dst, cond, then_block, then_ret, else_block, else_ret } => {
                let (b, r) = match regs.get(*cond)? {
                    Scalar::Bool(true) => (then_block, *then_ret),
                    Scalar::Bool(false) => (else_block, *else_ret),
                    other => {
                        return Err(internal(format!("an `if` condition that is {}", other.elem_type())))
                    }
                };
                block(regs, b, env)?;
                let v = regs.get(r)?;
                regs.set(*dst, v)?;
            }
            Inst::Loop { dsts, count, inits, vars, body, nexts } => {
                if inits.len() != vars.len() || nexts.len() != vars.len() || dsts.len() != vars.len() {
                    return Err(internal("a loop whose state registers do not match"));
                }
                let n = regs.get_i64(*count)?;
                let init: Vec<Scalar> = inits.iter().map(|&r| regs.get(r)).collect::<Result<_>>()?;
                for (&v, s) in vars.iter().zip(init) {
                    regs.set(v, s)?;
                }
                for _ in 0..n.max(0) {
                    block(regs, body, env)?;
                    let next: Vec<Scalar> = nexts.iter().map(|&r| regs.get(r)).collect::<Result<_>>()?;
                    for (&v, s) in vars.iter().zip(next) {
                        regs.set(v, s)?;
                    }
                }
                for (&d, &v) in dsts.iter().zip(vars) {
                    let s = regs.get(v)?;
                    regs.set(d, s)?;
                }
            }
        }
    }
    Ok(())
}
