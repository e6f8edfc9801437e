//! Reductions and scans over groups (a head lane and its [`LaneOp::Part`]s, `w` components
//! folded together by an operator of `2w` parameters and `w` results): the operator through
//! the VM, one element at a time and in order (associative, not necessarily commutative),
//! and a group scan by the two passes the scan of one lane uses ([`two_pass`], generic over
//! the carry: here one scalar per component).
//!
//! [`LaneOp::Part`]: eqfuse_ir::plan::LaneOp::Part

use super::scan::{two_pass, ScanComb};
use super::{check_ret, full, Ctx};
use crate::col::{Col, ColMut};
use crate::compile::compile;
use crate::internal;
use crate::program::Program;
use crate::store::{check_alloc, Results, StoreRef};
use crate::vm::Vm;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Func, Kernel};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::borrow::Cow;
use std::ops::Range;

/// A group's operator: `2w` parameters (the accumulator's components, then the element's),
/// `w` results.
pub(super) struct GroupComb<'s> {
    p: Box<Program<'s>>,
    w: usize,
}

impl<'s> GroupComb<'s> {
    /// The operator and the neutral element of a group of component types `tys` (an
    /// internal error when their widths or types disagree).
    pub(super) fn new(
        op: &Func,
        ne: &Func,
        tys: &[ElemType],
        env: &StoreRef<'s, '_>,
    ) -> Result<(GroupComb<'s>, Vec<Scalar>)> {
        let w = tys.len();
        let p = compile(op, env, None)?;
        let bad_params =
            op.params.len() != 2 * w || op.params.iter().zip(tys.iter().chain(tys)).any(|(a, b)| a != b);
        if p.nparams != 2 * w || p.ret.len() != w || bad_params {
            return Err(internal(format!(
                "a group of {w} components ({tys:?}) with an operator of parameters {:?} and {} results",
                op.params,
                op.ret.len()
            )));
        }
        let np = compile(ne, env, None)?;
        if np.nparams != 0 || np.ret.len() != w {
            return Err(internal(format!(
                "a group of {w} components with a neutral element of {} results",
                np.ret.len()
            )));
        }
        let mut vm = Vm::new(&np);
        vm.call(&np, &[]).map_err(|e| e.err)?;
        let mut nes = Vec::with_capacity(w);
        for (k, &t) in tys.iter().enumerate() {
            let s = vm.result_at(&np, k, 0).map_err(|e| e.err)?;
            if s.elem_type() != t {
                return Err(internal(format!(
                    "component {k} of a neutral element is {}, not {t}",
                    s.elem_type()
                )));
            }
            nes.push(s);
        }
        Ok((GroupComb { p: Box::new(p), w }, nes))
    }

    /// `acc = acc op x` (both of `w` components).
    pub(super) fn apply(&self, vm: &mut Option<Vm>, acc: &mut [Scalar], x: &[Scalar]) -> Result<()> {
        let vm = vm.get_or_insert_with(|| Vm::new(&self.p));
        let mut args = [Scalar::I64(0); 16];
        let args: Cow<'_, [Scalar]> = if 2 * self.w <= args.len() {
            args[..self.w].copy_from_slice(acc);
            args[self.w..2 * self.w].copy_from_slice(x);
            Cow::Borrowed(&args[..2 * self.w])
        } else {
            Cow::Owned(acc.iter().chain(x).copied().collect())
        };
        vm.call(&self.p, &args).map_err(|e| e.err)?;
        for (k, a) in acc.iter_mut().enumerate() {
            *a = vm.result_at(&self.p, k, 0).map_err(|e| e.err)?;
        }
        Ok(())
    }

    /// The element at `i` of the `w` columns.
    fn elem(cols: &[Cow<'_, Col>], i: usize, x: &mut [Scalar]) -> Result<()> {
        for (slot, c) in x.iter_mut().zip(cols) {
            *slot = c.get(i).ok_or_else(|| internal("a fold past its column"))?;
        }
        Ok(())
    }

    /// `acc = acc op cols[range]...`, in order.
    pub(super) fn fold(
        &self,
        vm: &mut Option<Vm>,
        acc: &mut [Scalar],
        cols: &[Cow<'_, Col>],
        range: Range<usize>,
    ) -> Result<()> {
        let mut x = acc.to_vec();
        for i in range {
            Self::elem(cols, i, &mut x)?;
            self.apply(vm, acc, &x)?;
        }
        Ok(())
    }

    /// `outs[*][r] = ne op row r` for the rows of length `inner` of `cols`.
    pub(super) fn fold_rows(
        &self,
        vm: &mut Option<Vm>,
        ne: &[Scalar],
        cols: &[Cow<'_, Col>],
        inner: usize,
        outs: &mut [ColMut<'_>],
    ) -> Result<()> {
        let rows = outs.first().map_or(0, |o| o.len());
        if inner == 0 || outs.len() != self.w || cols.iter().any(|c| rows.checked_mul(inner) != Some(c.len()))
        {
            return Err(internal("group rows that do not fill their block"));
        }
        let mut acc = ne.to_vec();
        for r in 0..rows {
            acc.copy_from_slice(ne);
            self.fold(vm, &mut acc, cols, r * inner..(r + 1) * inner)?;
            for (o, a) in outs.iter_mut().zip(&acc) {
                if !o.set(r, *a) {
                    return Err(internal("a row result of another type"));
                }
            }
        }
        Ok(())
    }

    /// Scans `cols[range]` from `acc` into `outs[*][range]`; leaves the total
    /// in `acc`.
    fn scan(
        &self,
        vm: &mut Option<Vm>,
        acc: &mut [Scalar],
        cols: &[Cow<'_, Col>],
        range: Range<usize>,
        outs: &mut [ColMut<'_>],
        exclusive: bool,
    ) -> Result<()> {
        let mut x = acc.to_vec();
        let put = |outs: &mut [ColMut<'_>], i: usize, acc: &[Scalar]| -> Result<()> {
            for (o, a) in outs.iter_mut().zip(acc) {
                if !o.set(i, *a) {
                    return Err(internal("a scan past its output"));
                }
            }
            Ok(())
        };
        for i in range {
            Self::elem(cols, i, &mut x)?;
            if exclusive {
                put(outs, i, acc)?;
            }
            self.apply(vm, acc, &x)?;
            if !exclusive {
                put(outs, i, acc)?;
            }
        }
        Ok(())
    }

    /// `outs[*][i] = carry op outs[*][i]`.
    fn fix_up(&self, vm: &mut Option<Vm>, carry: &[Scalar], outs: &mut [ColMut<'_>]) -> Result<()> {
        let n = outs.first().map_or(0, |o| o.len());
        let (mut acc, mut x) = (carry.to_vec(), carry.to_vec());
        for i in 0..n {
            for (slot, o) in x.iter_mut().zip(outs.iter()) {
                *slot = o.get(i).ok_or_else(|| internal("a fix-up past its output"))?;
            }
            acc.copy_from_slice(carry);
            self.apply(vm, &mut acc, &x)?;
            for (o, a) in outs.iter_mut().zip(&acc) {
                o.set(i, *a);
            }
        }
        Ok(())
    }
}

/// The `w` result columns of the group at lanes `head ..` after a block of `len` elements.
pub(super) fn group_cols<'v>(
    vm: &'v Vm,
    prog: &Program<'_>,
    head: usize,
    w: usize,
    len: usize,
) -> Result<Vec<Cow<'v, Col>>> {
    let mut cols = Vec::with_capacity(w);
    for li in head..head + w {
        let r = *prog.ret.get(li).ok_or_else(|| internal("no result register"))?;
        let (col, uni) = vm.reg(prog, r).map_err(|e| e.err)?;
        cols.push(full(col, uni, len)?);
    }
    Ok(cols)
}

/// The element types of a kernel's lanes `head .. head + w`, each checked against the
/// element function's result for it.
pub(super) fn lane_types(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    prog: &Program<'_>,
    head: usize,
    w: usize,
) -> Result<Vec<ElemType>> {
    let kind = k.kind.as_str();
    let mut tys = Vec::with_capacity(w);
    for li in head..head + w {
        let lane = k.lanes.get(li).ok_or_else(|| internal("a group past the kernel's lanes"))?;
        let ty = env.0.elem(lane.dst)?;
        check_ret(prog, li, ty, kind)?;
        tys.push(ty);
    }
    Ok(tys)
}

/// Splits each of `outs` by `lens` and regroups the parts by block: block `b` gets part `b`
/// of every output.
fn split_by_block<'a>(outs: &'a mut [Col], lens: &[usize]) -> Result<Vec<Vec<ColMut<'a>>>> {
    let mut per_block: Vec<Vec<ColMut<'a>>> = lens.iter().map(|_| Vec::with_capacity(outs.len())).collect();
    for c in outs.iter_mut() {
        let parts =
            c.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past the output"))?;
        if parts.len() != per_block.len() {
            return Err(internal("fewer output parts than blocks"));
        }
        for (b, p) in per_block.iter_mut().zip(parts) {
            b.push(p);
        }
    }
    Ok(per_block)
}

/// A scan over a group (the kernel's only lanes: its head and its parts), along the
/// innermost dimension, by the two passes of [`two_pass`].
#[allow(clippy::too_many_arguments)]
pub(super) fn group_scan(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    op: &Func,
    ne: &Func,
    exclusive: bool,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<Results> {
    let kind = k.kind.as_str();
    let prog = compile(&k.elem, env, Some(shape))?;
    let w = k.lanes.len();
    let tys = lane_types(env, k, &prog, 0, w)?;
    let (comb, ne) = GroupComb::new(op, ne, &tys, env)?;
    let mut outs = Vec::with_capacity(w);
    for &ty in &tys {
        check_alloc(kind, ty, total, ctx.max_bytes)?;
        outs.push(Col::zeros(ty, total));
    }
    if total > 0 {
        two_pass(&comb, &ne, &prog, shape, outs.as_mut_slice(), exclusive, kind, ctx)?;
    }
    Ok(outs.into_iter().map(|c| (shape.to_vec(), c)).collect())
}

impl ScanComb for GroupComb<'_> {
    type Carry = Vec<Scalar>;
    type Outs = [Col];
    type Dst<'a> = Vec<ColMut<'a>>;
    type Cols<'v> = Vec<Cow<'v, Col>>;

    fn block_cols<'v>(&self, vm: &'v Vm, prog: &Program<'_>, len: usize) -> Result<Vec<Cow<'v, Col>>> {
        group_cols(vm, prog, 0, self.w, len)
    }

    fn scan_range(
        &self,
        vm: &mut Option<Vm>,
        acc: &mut Vec<Scalar>,
        cols: &Vec<Cow<'_, Col>>,
        range: Range<usize>,
        dst: &mut Vec<ColMut<'_>>,
        exclusive: bool,
    ) -> Result<()> {
        self.scan(vm, acc, cols, range, dst, exclusive)
    }

    fn carry_op(&self, vm: &mut Option<Vm>, carry: &mut Vec<Scalar>, total: &Vec<Scalar>) -> Result<()> {
        self.apply(vm, carry, total)
    }

    fn fix_block(&self, vm: &mut Option<Vm>, carry: &Vec<Scalar>, dst: &mut Vec<ColMut<'_>>) -> Result<()> {
        self.fix_up(vm, carry, dst)
    }

    fn split_outs<'a>(outs: &'a mut [Col], lens: &[usize]) -> Result<Vec<Vec<ColMut<'a>>>> {
        split_by_block(outs, lens)
    }
}
