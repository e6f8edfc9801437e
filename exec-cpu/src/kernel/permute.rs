//! Permute lanes: each thread combines its share of the elements into a partial result,
//! and the partials are merged into a copy of the destination with the operator.

use super::comb::Comb;
use super::{at_element, block_len, check_ret, first_error, full, run_block, unflatten, Ctx};
use crate::col::{with_type, Col, Elem};
use crate::compile::compile;
use crate::internal;
use crate::num::{self, OpKind};
use crate::program::Program;
use crate::store::{check_alloc, StoreRef};
use crate::vm::{fmt_i64s, fmt_shape, Vm};
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::plan::{Func, Kernel, Lane, PermuteDest};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use rayon::prelude::*;

/// Where a permute drops an element.
const DROP: usize = usize::MAX;

/// Formats indices as `5` or `[3, 7]`.
fn fmt_indices(ix: &[i64]) -> String {
    match ix {
        [i] => i.to_string(),
        _ => fmt_i64s(ix),
    }
}

/// What a permute needs to know of its destination.
struct Dest<'a> {
    shape: &'a [usize],
    name: String,
}

impl Dest<'_> {
    /// The flat target of `t` (`DROP` for `-1` into a rank-1 destination), or the
    /// interpreter's error.
    fn flat(&self, t: &[i64], src_shape: &[usize], flat_src: usize) -> Result<usize> {
        if self.shape.len() == 1 && t == [-1] {
            return Ok(DROP);
        }
        crate::vm::flat_index(self.shape, t).ok_or_else(|| {
            Error::index(
                Span::default(),
                format!(
                    "permute: target {} out of bounds for `{}` of shape {} (from element {} of the source)",
                    fmt_indices(t),
                    self.name,
                    fmt_shape(self.shape),
                    fmt_shape(&unflatten(src_shape, flat_src))
                ),
            )
        })
    }
}

/// A permute lane: a copy of `dest` into which every element is combined at its target.
#[allow(clippy::too_many_arguments)]
pub(super) fn permute(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    lane: &Lane,
    op: &Func,
    dest: &PermuteDest,
    target: &Func,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<(Vec<usize>, Col)> {
    let kind = k.kind.as_str();
    let ty = env.0.elem(lane.dst)?;
    let (dshape, mut out) = crate::store::permute_start(env.0, kind, ty, dest, ctx.max_bytes)?;
    let dlen = out.len();
    let dst = Dest { shape: &dshape, name: env.0.name(lane.dst) };
    let prog = compile(&k.elem, env, Some(shape))?;
    check_ret(&prog, 0, ty, kind)?;
    let tprog = compile(target, env, Some(shape))?;
    if tprog.nparams != shape.len()
        || tprog.ret.len() != dshape.len()
        || tprog.ret.iter().any(|&r| tprog.types.get(r) != Some(&ElemType::I64))
    {
        return Err(internal(format!(
            "a permute target of {} results into `{}` of rank {}",
            tprog.ret.len(),
            dst.name,
            dshape.len()
        )));
    }
    let comb = Comb::new(op, ty, env)?;
    if total == 0 {
        return Ok((dshape.clone(), out));
    }
    let bs = block_len(ctx.block, prog.live + tprog.live);
    let nblocks = total.div_ceil(bs);
    let tasks = if ctx.threads > 1 && nblocks > 1 && dlen <= total { ctx.threads.min(nblocks) } else { 1 };
    let w = PermWork { prog: &prog, tprog: &tprog, comb: &comb, dst: &dst, shape, kind, bs, total };
    if tasks == 1 {
        let mut st = PermState::new(&w);
        for b in 0..nblocks {
            ctx.cancel.check()?;
            st.block(&w, b, &mut out, None)?;
        }
        return Ok((dshape.clone(), out));
    }
    for _ in 0..tasks {
        check_alloc(kind, ty, dlen, ctx.max_bytes)?;
    }
    let per = nblocks.div_ceil(tasks);
    let partials: Vec<Result<(Col, Vec<bool>)>> = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let mut st = PermState::new(&w);
            let blocks = t * per..((t + 1) * per).min(nblocks);
            if let Some(id) = identity(&comb, ty) {
                // a partial starting at the operator's identity needs no first touches
                let mut partial = with_type!(ty, T => {
                    T::wrap(vec![T::of_scalar(id).ok_or_else(|| internal("an identity of another type"))?; dlen])
                });
                for b in blocks {
                    ctx.cancel.check()?;
                    st.block(&w, b, &mut partial, None)?;
                }
                return Ok((partial, vec![true; dlen]));
            }
            let mut partial = Col::zeros(ty, dlen);
            let mut touched = vec![false; dlen];
            for b in blocks {
                ctx.cancel.check()?;
                st.block(&w, b, &mut partial, Some(&mut touched))?;
            }
            Ok((partial, touched))
        })
        .collect();
    let mut vm = None;
    for r in partials {
        let (partial, touched) = r?;
        merge(&comb, &mut vm, &mut out, &partial, &touched)?;
    }
    Ok((dshape.clone(), out))
}

/// The identity of a known operator on an integer or boolean type (`x op id == x` for
/// every `x`, exactly); none for floats (`0.0 + -0.0` is `0.0`) and other operators.
fn identity(comb: &Comb<'_>, ty: ElemType) -> Option<Scalar> {
    let Comb::Known(k) = comb else {
        return None;
    };
    Some(match (ty, k) {
        (ElemType::I32, OpKind::Add) => Scalar::I32(0),
        (ElemType::I32, OpKind::Mul) => Scalar::I32(1),
        (ElemType::I32, OpKind::Min) => Scalar::I32(i32::MAX),
        (ElemType::I32, OpKind::Max) => Scalar::I32(i32::MIN),
        (ElemType::I64, OpKind::Add) => Scalar::I64(0),
        (ElemType::I64, OpKind::Mul) => Scalar::I64(1),
        (ElemType::I64, OpKind::Min) => Scalar::I64(i64::MAX),
        (ElemType::I64, OpKind::Max) => Scalar::I64(i64::MIN),
        (ElemType::Bool, OpKind::Min | OpKind::And) => Scalar::Bool(true),
        (ElemType::Bool, OpKind::Max | OpKind::Or) => Scalar::Bool(false),
        _ => return None,
    })
}

/// `out[i] = out[i] op partial[i]` where `touched[i]`.
fn merge(comb: &Comb<'_>, vm: &mut Option<Vm>, out: &mut Col, partial: &Col, touched: &[bool]) -> Result<()> {
    if let Comb::Known(k) = comb {
        return with_type!(out.ty(), T => {
            let o = T::vec_mut(out).ok_or_else(|| internal("a permute output of another type"))?;
            let p = T::vec(partial).ok_or_else(|| internal("a partial of another type"))?;
            for ((o, &p), &t) in o.iter_mut().zip(p).zip(touched) {
                if t {
                    *o = <T as num::Comb>::comb(*k, *o, p);
                }
            }
            Ok(())
        });
    }
    let mut o = out.as_mut();
    for (i, &t) in touched.iter().enumerate() {
        if t {
            let (a, b) = match (o.get(i), partial.get(i)) {
                (Some(a), Some(b)) => (a, b),
                _ => return Err(internal("a partial of another length")),
            };
            let v = comb.apply(vm, a, b)?;
            o.set(i, v);
        }
    }
    Ok(())
}

/// What every block of a permute shares.
struct PermWork<'w, 's> {
    prog: &'w Program<'s>,
    tprog: &'w Program<'s>,
    comb: &'w Comb<'s>,
    dst: &'w Dest<'w>,
    shape: &'w [usize],
    kind: &'w str,
    bs: usize,
    total: usize,
}

/// One thread's registers for a permute.
struct PermState {
    vm: Vm,
    tvm: Vm,
    cvm: Option<Vm>,
    flats: Vec<usize>,
}

impl PermState {
    fn new(w: &PermWork<'_, '_>) -> PermState {
        PermState { vm: Vm::new(w.prog), tvm: Vm::new(w.tprog), cvm: None, flats: Vec::new() }
    }

    /// Block `b`: every element combined into `out` at its target (with `touched`: a
    /// partial result, whose first element at a target is stored as it is).
    fn block(
        &mut self,
        w: &PermWork<'_, '_>,
        b: usize,
        out: &mut Col,
        touched: Option<&mut [bool]>,
    ) -> Result<()> {
        let start = b * w.bs;
        let len = w.bs.min(w.total - start);
        let failed = match run_block(&mut self.vm, w.prog, w.shape, start, len) {
            Err(e) => Some(e),
            Ok(()) => run_block(&mut self.tvm, w.tprog, w.shape, start, len).err(),
        };
        if let Some(failed) = failed {
            let (tvm, tprog, dst, shape, kind) = (&mut self.tvm, w.tprog, w.dst, w.shape, w.kind);
            let mut more = |_: &mut Vm, f: usize| -> Result<()> {
                run_block(tvm, tprog, shape, f, 1).map_err(|e| at_element(e.err, kind, shape, f))?;
                let t = (0..tprog.ret.len())
                    .map(|k| match tvm.result_at(tprog, k, 0).map_err(|e| e.err)? {
                        Scalar::I64(v) => Ok(v),
                        _ => Err(internal("a target that is not i64")),
                    })
                    .collect::<Result<Vec<i64>>>()?;
                dst.flat(&t, shape, f).map(|_| ())
            };
            return Err(first_error(&mut self.vm, w.prog, w.shape, w.kind, start, len, failed, &mut more));
        }
        if let (Comb::Known(k), [tr], [_]) = (w.comb, w.tprog.ret.as_slice(), w.dst.shape) {
            let r = *w.prog.ret.first().ok_or_else(|| internal("no result register"))?;
            let (tcol, tuni) = self.tvm.reg(w.tprog, *tr).map_err(|e| e.err)?;
            let (xcol, xuni) = self.vm.reg(w.prog, r).map_err(|e| e.err)?;
            let ts = i64::vec(tcol).ok_or_else(|| internal("a target that is not i64"))?;
            if !tuni && ts.len() == len {
                let done = with_type!(out.ty(), T => {
                    let o = T::vec_mut(out).ok_or_else(|| internal("a permute output of another type"))?;
                    if touched.as_ref().is_some_and(|t| t.len() != o.len()) {
                        return Err(internal("a permute's first touches of another length"));
                    }
                    let xs = T::vec(xcol).ok_or_else(|| internal("elements of another type"))?;
                    match (xuni, xs.as_slice()) {
                        (true, &[x]) => combine_at(*k, o, touched, ts, |_| x),
                        (false, xs) if xs.len() == len => combine_at(*k, o, touched, ts, |pos| xs[pos]),
                        _ => return Err(internal("a permute's elements of another length than its block")),
                    }
                });
                return done.map_err(|pos| {
                    let t = ts.get(pos).copied().unwrap_or(0);
                    w.dst.flat(&[t], w.shape, start + pos).err().unwrap_or_else(|| internal("a target"))
                });
            }
        }
        // the targets, checked in order
        self.flats.clear();
        let mut cols = Vec::with_capacity(w.tprog.ret.len());
        for &r in &w.tprog.ret {
            let (col, uni) = self.tvm.reg(w.tprog, r).map_err(|e| e.err)?;
            cols.push(full(col, uni, len)?);
        }
        let cols: Vec<&[i64]> = cols
            .iter()
            .map(|c| i64::vec(c).map(Vec::as_slice))
            .collect::<Option<_>>()
            .ok_or_else(|| internal("a target that is not i64"))?;
        if let ([t0], [dlen]) = (cols.as_slice(), w.dst.shape) {
            // a rank-1 destination: -1 drops, anything else out of range fails
            for (pos, &t) in t0.iter().enumerate() {
                let f = match usize::try_from(t) {
                    Ok(f) if f < *dlen => f,
                    _ if t == -1 => DROP,
                    _ => {
                        return Err(w
                            .dst
                            .flat(&[t], w.shape, start + pos)
                            .err()
                            .unwrap_or_else(|| internal("a target")))
                    }
                };
                self.flats.push(f);
            }
        } else {
            let mut t = vec![0i64; cols.len()];
            for pos in 0..len {
                for (slot, c) in t.iter_mut().zip(&cols) {
                    *slot = c.get(pos).copied().ok_or_else(|| internal("a target column too short"))?;
                }
                self.flats.push(w.dst.flat(&t, w.shape, start + pos)?);
            }
        }
        let r = *w.prog.ret.first().ok_or_else(|| internal("no result register"))?;
        let (col, uni) = self.vm.reg(w.prog, r).map_err(|e| e.err)?;
        let xs = full(col, uni, len)?;
        apply(w.comb, &mut self.cvm, out, touched, &self.flats, &xs)
    }
}

/// [`apply`] for a known operator into a rank-1 destination `o`, in one pass over the
/// targets `ts` (`x(pos)`: element `pos`): `-1` drops an element; `Err(pos)`: the first
/// element whose target is out of range (the elements before it are combined already).
fn combine_at<T: num::Comb>(
    k: OpKind,
    o: &mut [T],
    touched: Option<&mut [bool]>,
    ts: &[i64],
    x: impl Fn(usize) -> T,
) -> std::result::Result<(), usize> {
    let dlen = o.len();
    match touched {
        None => {
            for (pos, &t) in ts.iter().enumerate() {
                match usize::try_from(t) {
                    Ok(f) if f < dlen => o[f] = <T as num::Comb>::comb(k, o[f], x(pos)),
                    _ if t == -1 => {}
                    _ => return Err(pos),
                }
            }
        }
        Some(seen) => {
            // (the caller checks that `seen` is as long as `o`)
            for (pos, &t) in ts.iter().enumerate() {
                match usize::try_from(t) {
                    Ok(f) if f < dlen => match seen.get_mut(f) {
                        Some(s) if *s => o[f] = <T as num::Comb>::comb(k, o[f], x(pos)),
                        Some(s) => {
                            *s = true;
                            o[f] = x(pos);
                        }
                        None => return Err(pos),
                    },
                    _ if t == -1 => {}
                    _ => return Err(pos),
                }
            }
        }
    }
    Ok(())
}

/// `out[f] = out[f] op x` for each element `x` and its flat target `f` (a first touch of a
/// partial stores `x`).
fn apply(
    comb: &Comb<'_>,
    vm: &mut Option<Vm>,
    out: &mut Col,
    mut touched: Option<&mut [bool]>,
    flats: &[usize],
    xs: &Col,
) -> Result<()> {
    if let Comb::Known(k) = comb {
        return with_type!(out.ty(), T => {
            let o = T::vec_mut(out).ok_or_else(|| internal("a permute output of another type"))?;
            let xs = T::vec(xs).ok_or_else(|| internal("elements of another type"))?;
            let k = *k;
            match touched {
                None => {
                    for (&f, &x) in flats.iter().zip(xs) {
                        if f != DROP {
                            let slot = o.get_mut(f).ok_or_else(|| internal("a target past the output"))?;
                            *slot = <T as num::Comb>::comb(k, *slot, x);
                        }
                    }
                }
                Some(seen) => {
                    for (&f, &x) in flats.iter().zip(xs) {
                        if f != DROP {
                            match (o.get_mut(f), seen.get_mut(f)) {
                                (Some(slot), Some(s)) if *s => *slot = <T as num::Comb>::comb(k, *slot, x),
                                (Some(slot), Some(s)) => {
                                    *s = true;
                                    *slot = x;
                                }
                                _ => return Err(internal("a target past the output")),
                            }
                        }
                    }
                }
            }
            Ok(())
        });
    }
    let mut o = out.as_mut();
    for (pos, &f) in flats.iter().enumerate() {
        if f == DROP {
            continue;
        }
        let x = xs.get(pos).ok_or_else(|| internal("elements too short"))?;
        let first = match touched.as_deref_mut().and_then(|t| t.get_mut(f)) {
            Some(seen) if !*seen => {
                *seen = true;
                true
            }
            _ => false,
        };
        let v = if first {
            x
        } else {
            let old = o.get(f).ok_or_else(|| internal("a target past the output"))?;
            comb.apply(vm, old, x)?
        };
        o.set(f, v);
    }
    Ok(())
}
