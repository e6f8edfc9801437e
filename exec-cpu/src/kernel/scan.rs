//! Scan lanes along the innermost dimension: rows in parallel, or for long rows a scan per
//! chunk, a scan of the chunks' totals (the carries) and a parallel fix-up. The two passes
//! are written once ([`two_pass`]), generic over the carry ([`ScanComb`]): one scalar for a
//! scan of one lane ([`Comb`]), one per component for a scan over a group
//! (`super::grouped`). Carries combine in order, earlier on the left: the operator need
//! not commute.

use super::comb::Comb;
use super::{block_len, blocks, check_ret, count, first_error, full, min_len, neutral, run_block, Ctx};
use crate::col::{Col, ColMut};
use crate::compile::compile;
use crate::internal;
use crate::program::Program;
use crate::store::{check_alloc, StoreRef};
use crate::vm::Vm;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Func, Kernel, Lane};
use eqfuse_ir::value::Scalar;
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;

/// What [`two_pass`] needs of a scan's operator.
pub(super) trait ScanComb: Sync {
    /// The accumulator: one scalar, or one per component of a group.
    type Carry: Clone + Send + Sync;
    /// The scan's outputs.
    type Outs: ?Sized;
    /// A block's part of the outputs.
    type Dst<'a>: Send;
    /// A block's element columns.
    type Cols<'v>;
    /// The element columns of the block of `len` elements that `vm` just ran.
    fn block_cols<'v>(&self, vm: &'v Vm, prog: &Program<'_>, len: usize) -> Result<Self::Cols<'v>>;
    /// Scans `cols[range]` from `acc` into `dst[range]`, leaving the total in `acc`.
    fn scan_range(
        &self,
        vm: &mut Option<Vm>,
        acc: &mut Self::Carry,
        cols: &Self::Cols<'_>,
        range: Range<usize>,
        dst: &mut Self::Dst<'_>,
        exclusive: bool,
    ) -> Result<()>;
    /// `carry = carry op total` (the carry on the left).
    fn carry_op(&self, vm: &mut Option<Vm>, carry: &mut Self::Carry, total: &Self::Carry) -> Result<()>;
    /// `dst[i] = carry op dst[i]` for every element of a block's part.
    fn fix_block(&self, vm: &mut Option<Vm>, carry: &Self::Carry, dst: &mut Self::Dst<'_>) -> Result<()>;
    /// The outputs cut into the blocks' parts, of lengths `lens`.
    fn split_outs<'a>(outs: &'a mut Self::Outs, lens: &[usize]) -> Result<Vec<Self::Dst<'a>>>;
}

impl ScanComb for Comb<'_> {
    type Carry = Scalar;
    type Outs = Col;
    type Dst<'a> = ColMut<'a>;
    type Cols<'v> = Cow<'v, Col>;

    fn block_cols<'v>(&self, vm: &'v Vm, prog: &Program<'_>, len: usize) -> Result<Cow<'v, Col>> {
        let r = *prog.ret.first().ok_or_else(|| internal("no result register"))?;
        let (col, uni) = vm.reg(prog, r).map_err(|e| e.err)?;
        full(col, uni, len)
    }

    fn scan_range(
        &self,
        vm: &mut Option<Vm>,
        acc: &mut Scalar,
        cols: &Cow<'_, Col>,
        range: Range<usize>,
        dst: &mut ColMut<'_>,
        exclusive: bool,
    ) -> Result<()> {
        *acc = self.scan(vm, *acc, cols, range, dst, exclusive)?;
        Ok(())
    }

    fn carry_op(&self, vm: &mut Option<Vm>, carry: &mut Scalar, total: &Scalar) -> Result<()> {
        *carry = self.apply(vm, *carry, *total)?;
        Ok(())
    }

    fn fix_block(&self, vm: &mut Option<Vm>, carry: &Scalar, dst: &mut ColMut<'_>) -> Result<()> {
        self.fix_up(vm, *carry, dst)
    }

    fn split_outs<'a>(outs: &'a mut Col, lens: &[usize]) -> Result<Vec<ColMut<'a>>> {
        outs.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past the output"))
    }
}

/// A scan lane along the innermost dimension.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    lane: &Lane,
    op: &Func,
    ne: &Func,
    exclusive: bool,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<(Vec<usize>, Col)> {
    let kind = k.kind.as_str();
    let ty = env.0.elem(lane.dst)?;
    let ne = neutral(env, ne, ty)?;
    check_alloc(kind, ty, total, ctx.max_bytes)?;
    let prog = compile(&k.elem, env, Some(shape))?;
    check_ret(&prog, 0, ty, kind)?;
    let comb = Comb::new(op, ty, env)?;
    let mut out = Col::zeros(ty, total);
    if total > 0 {
        two_pass(&comb, &ne, &prog, shape, &mut out, exclusive, kind, ctx)?;
    }
    Ok((shape.to_vec(), out))
}

/// The scan of the element function `prog` over `shape` (at least one element) into
/// `outs`, by `comb` from `ne`: blocks of whole rows scanned in parallel, or long rows cut
/// into chunks, each scanned from `ne` in parallel, then each chunk's carry (the scan of
/// its row's earlier chunks' totals, in order) combined into its elements, in parallel.
#[allow(clippy::too_many_arguments)]
pub(super) fn two_pass<S: ScanComb>(
    comb: &S,
    ne: &S::Carry,
    prog: &Program<'_>,
    shape: &[usize],
    outs: &mut S::Outs,
    exclusive: bool,
    kind: &str,
    ctx: &Ctx,
) -> Result<()> {
    let (&inner, outer) = shape.split_last().ok_or_else(|| internal("a scan over an empty space"))?;
    let rows = count(kind, outer)?;
    let bs = block_len(ctx.block, prog.live);
    let b = blocks(rows, inner, bs)?;
    let lens: Vec<usize> = b.list.iter().map(|x| x.1).collect();
    let chunked = b.chunks_per_row > 0;
    let min = min_len(b.list.len(), ctx.threads);
    let parts = S::split_outs(outs, &lens)?;
    let results: Vec<Result<S::Carry>> = b
        .list
        .par_iter()
        .zip(parts)
        .with_min_len(min)
        .map_init(
            || (Vm::new(prog), None),
            |(vm, cvm), (&(start, len, _, nrows), mut dst)| -> Result<S::Carry> {
                ctx.cancel.check()?;
                if let Err(e) = run_block(vm, prog, shape, start, len) {
                    return Err(first_error(vm, prog, shape, kind, start, len, e, &mut |_, _| Ok(())));
                }
                let cols = comb.block_cols(vm, prog, len)?;
                let mut acc = ne.clone();
                if chunked {
                    comb.scan_range(cvm, &mut acc, &cols, 0..len, &mut dst, exclusive)?;
                } else {
                    for row in 0..nrows {
                        acc.clone_from(ne);
                        comb.scan_range(
                            cvm,
                            &mut acc,
                            &cols,
                            row * inner..(row + 1) * inner,
                            &mut dst,
                            exclusive,
                        )?;
                    }
                }
                Ok(acc)
            },
        )
        .collect();
    let mut totals = Vec::with_capacity(results.len());
    for r in results {
        totals.push(r?);
    }
    if !chunked {
        return Ok(());
    }
    // carries: the scan of the chunks' totals, row by row, in order; then the fix-up
    let cpr = b.chunks_per_row;
    let mut carries = Vec::with_capacity(totals.len());
    let mut vm = None;
    for row in totals.chunks(cpr) {
        let mut carry = ne.clone();
        for (c, t) in row.iter().enumerate() {
            carries.push(carry.clone());
            if c + 1 < row.len() {
                comb.carry_op(&mut vm, &mut carry, t)?;
            }
        }
    }
    let parts = S::split_outs(outs, &lens)?;
    let fixed: Vec<Result<()>> = parts
        .into_par_iter()
        .zip(carries)
        .enumerate()
        .with_min_len(min)
        .map_init(
            || None,
            |cvm, (i, (mut dst, carry))| {
                ctx.cancel.check()?;
                if i % cpr == 0 {
                    return Ok(());
                }
                comb.fix_block(cvm, &carry, &mut dst)
            },
        )
        .collect();
    fixed.into_iter().collect()
}
