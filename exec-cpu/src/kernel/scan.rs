//! Scan lanes along the innermost dimension: rows in parallel, or for long rows a scan per
//! chunk, a scan of the chunks' totals (the carries) and a parallel fix-up.

use super::comb::Comb;
use super::{block_len, blocks, check_ret, count, first_error, full, min_len, neutral, run_block, Ctx};
use crate::col::Col;
use crate::compile::compile;
use crate::internal;
use crate::store::{check_alloc, StoreRef};
use crate::vm::Vm;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Func, Kernel, Lane};
use eqfuse_ir::value::Scalar;
use rayon::prelude::*;

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
    let (&inner, outer) = shape.split_last().ok_or_else(|| internal("a scan over an empty space"))?;
    let rows = count(kind, outer)?;
    let ty = env.0.elem(lane.dst)?;
    let ne = neutral(env, ne, ty)?;
    check_alloc(kind, ty, total, ctx.max_bytes)?;
    let prog = compile(&k.elem, env, Some(shape))?;
    check_ret(&prog, 0, ty, kind)?;
    let comb = Comb::new(op, ty, env)?;
    let mut out = Col::zeros(ty, total);
    if total == 0 {
        return Ok((shape.to_vec(), out));
    }
    let bs = block_len(ctx.block, prog.live);
    let b = blocks(rows, inner, bs)?;
    let lens: Vec<usize> = b.list.iter().map(|x| x.1).collect();
    let parts = out.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past the output"))?;
    let chunked = b.chunks_per_row > 0;
    let min = min_len(b.list.len(), ctx.threads);
    let results: Vec<Result<Scalar>> = b
        .list
        .par_iter()
        .zip(parts)
        .with_min_len(min)
        .map_init(
            || (Vm::new(&prog), None),
            |(vm, cvm), (&(start, len, _, nrows), mut dst)| -> Result<Scalar> {
                ctx.cancel.check()?;
                if let Err(e) = run_block(vm, &prog, shape, start, len) {
                    return Err(first_error(vm, &prog, shape, kind, start, len, e, &mut |_, _| Ok(())));
                }
                let r = *prog.ret.first().ok_or_else(|| internal("no result register"))?;
                let (col, uni) = vm.reg(&prog, r).map_err(|e| e.err)?;
                let col = full(col, uni, len)?;
                if chunked {
                    comb.scan(cvm, ne, &col, 0..len, &mut dst, exclusive)
                } else {
                    for row in 0..nrows {
                        comb.scan(cvm, ne, &col, row * inner..(row + 1) * inner, &mut dst, exclusive)?;
                    }
                    Ok(ne)
                }
            },
        )
        .collect();
    let mut totals = Vec::with_capacity(results.len());
    for r in results {
        totals.push(r?);
    }
    if chunked {
        // carries: the scan of the chunks' totals, row by row; then the fix-up
        let cpr = b.chunks_per_row;
        let mut carries = Vec::with_capacity(totals.len());
        let mut vm = None;
        for row in totals.chunks(cpr) {
            let mut carry = ne;
            for (c, &t) in row.iter().enumerate() {
                carries.push(carry);
                if c + 1 < row.len() {
                    carry = comb.apply(&mut vm, carry, t)?;
                }
            }
        }
        let parts =
            out.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past the output"))?;
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
                    comb.fix_up(cvm, carry, &mut dst)
                },
            )
            .collect();
        for r in fixed {
            r?;
        }
    }
    Ok((shape.to_vec(), out))
}
