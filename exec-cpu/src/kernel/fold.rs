//! Generate and reduce lanes, in one pass over a kernel's space: blocks of whole rows, or
//! chunks of long rows whose partial results are combined in order.

use super::comb::Comb;
use super::{
    block_len, blocks, check_ret, count, first_error, full, min_len, neutral, run_block, write, Ctx,
};
use crate::col::{Col, ColMut};
use crate::compile::compile;
use crate::internal;
use crate::program::Program;
use crate::store::{check_alloc, Results, StoreRef};
use crate::vm::Vm;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Kernel, LaneOp};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use rayon::prelude::*;

/// One block's work in a generate/reduce pass.
struct FoldItem<'o> {
    start: usize,
    len: usize,
    rows: usize,
    gens: Vec<ColMut<'o>>,
    reds: Vec<ColMut<'o>>,
}

/// Generate and reduce lanes, in one pass over the space.
pub(super) fn folds(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    kidx: usize,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<Results> {
    let kind = k.kind.as_str();
    let (&inner, outer) =
        shape.split_last().ok_or_else(|| internal(format!("kernel k{kidx} over an empty space")))?;
    let rows = count(kind, outer)?;
    let prog = compile(&k.elem, env, Some(shape))?;
    // per lane: its type and, for a reduction, its operator and neutral element
    let mut lanes: Vec<(ElemType, Option<(Comb<'_>, Scalar)>)> = Vec::with_capacity(k.lanes.len());
    for (li, lane) in k.lanes.iter().enumerate() {
        let ty = env.0.elem(lane.dst)?;
        check_ret(&prog, li, ty, kind)?;
        match &lane.op {
            LaneOp::Generate => {
                check_alloc(kind, ty, total, ctx.max_bytes)?;
                lanes.push((ty, None));
            }
            LaneOp::Reduce { op, ne } => {
                let ne = neutral(env, ne, ty)?;
                check_alloc(kind, ty, rows, ctx.max_bytes)?;
                lanes.push((ty, Some((Comb::new(op, ty, env)?, ne))));
            }
            _ => {
                return Err(internal(format!(
                    "kernel k{kidx} has several lanes that are not all generate or reduce"
                )))
            }
        }
    }
    let mut gen_cols: Vec<Col> = Vec::new();
    let mut red_cols: Vec<Col> = Vec::new();
    for (ty, red) in &lanes {
        match red {
            None => gen_cols.push(Col::zeros(*ty, total)),
            Some((_, ne)) => {
                let mut c = Col::new(*ty);
                for _ in 0..rows {
                    c.push(*ne);
                }
                red_cols.push(c);
            }
        }
    }
    if total > 0 {
        let bs = block_len(ctx.block, prog.live);
        let b = blocks(rows, inner, bs)?;
        let lens: Vec<usize> = b.list.iter().map(|x| x.1).collect();
        let mut gen_parts = Vec::with_capacity(gen_cols.len());
        for c in &mut gen_cols {
            let parts =
                c.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past an output"))?;
            gen_parts.push(parts.into_iter());
        }
        let mut red_parts = Vec::with_capacity(red_cols.len());
        if b.chunks_per_row == 0 {
            for c in &mut red_cols {
                let parts = c
                    .as_mut()
                    .split(b.list.iter().map(|x| x.3))
                    .ok_or_else(|| internal("blocks past a reduction's output"))?;
                red_parts.push(parts.into_iter());
            }
        }
        let mut items = Vec::with_capacity(b.list.len());
        for &(start, len, _, nrows) in &b.list {
            let gens = gen_parts.iter_mut().map(Iterator::next).collect::<Option<Vec<_>>>();
            let reds = red_parts.iter_mut().map(Iterator::next).collect::<Option<Vec<_>>>();
            match (gens, reds) {
                (Some(gens), Some(reds)) => items.push(FoldItem { start, len, rows: nrows, gens, reds }),
                _ => return Err(internal("fewer output parts than blocks")),
            }
        }
        let chunked = b.chunks_per_row > 0;
        let min = min_len(items.len(), ctx.threads);
        let results: Vec<Result<Vec<Scalar>>> = items
            .into_par_iter()
            .with_min_len(min)
            .map_init(
                || (Vm::new(&prog), lanes.iter().map(|_| None).collect::<Vec<Option<Vm>>>()),
                |(vm, cvms), item| {
                    ctx.cancel.check()?;
                    fold_block(&prog, &lanes, shape, kind, inner, chunked, vm, cvms, item)
                },
            )
            .collect();
        let mut partials = Vec::with_capacity(results.len());
        for r in results {
            partials.push(r?);
        }
        if chunked {
            // combine each row's partials, in order
            let cpr = b.chunks_per_row;
            let mut vm = None;
            let mut j = 0;
            for (_, red) in &lanes {
                let Some((comb, _)) = red else { continue };
                let out = red_cols.get_mut(j).ok_or_else(|| internal("no reduction output"))?;
                let mut out = out.as_mut();
                for r in 0..rows {
                    let mut acc: Option<Scalar> = None;
                    for c in 0..cpr {
                        let p = partials
                            .get(r * cpr + c)
                            .and_then(|v| v.get(j))
                            .copied()
                            .ok_or_else(|| internal("a missing partial result"))?;
                        acc = Some(match acc {
                            None => p,
                            Some(a) => comb.apply(&mut vm, a, p)?,
                        });
                    }
                    if let Some(a) = acc {
                        out.set(r, a);
                    }
                }
                j += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(lanes.len());
    let (mut gi, mut ri) = (gen_cols.into_iter(), red_cols.into_iter());
    for (_, red) in &lanes {
        let next = if red.is_some() {
            ri.next().map(|c| (outer.to_vec(), c))
        } else {
            gi.next().map(|c| (shape.to_vec(), c))
        };
        out.push(next.ok_or_else(|| internal("a lane without its output"))?);
    }
    Ok(out)
}

/// One block of a generate/reduce pass: returns the partial result of each reduction when
/// the block is a chunk of a row (`chunked`), else writes the block's rows.
#[allow(clippy::too_many_arguments)]
fn fold_block(
    prog: &Program<'_>,
    lanes: &[(ElemType, Option<(Comb<'_>, Scalar)>)],
    shape: &[usize],
    kind: &str,
    inner: usize,
    chunked: bool,
    vm: &mut Vm,
    cvms: &mut [Option<Vm>],
    mut item: FoldItem<'_>,
) -> Result<Vec<Scalar>> {
    if let Err(e) = run_block(vm, prog, shape, item.start, item.len) {
        return Err(first_error(vm, prog, shape, kind, item.start, item.len, e, &mut |_, _| Ok(())));
    }
    let mut partials = Vec::new();
    let (mut gi, mut ri) = (0, 0);
    for (li, ((_, red), cvm)) in lanes.iter().zip(cvms.iter_mut()).enumerate() {
        let r = *prog.ret.get(li).ok_or_else(|| internal("no result register"))?;
        let (col, uni) = vm.reg(prog, r).map_err(|e| e.err)?;
        let col = full(col, uni, item.len)?;
        match red {
            None => {
                let dst = item.gens.get_mut(gi).ok_or_else(|| internal("no generate output"))?;
                write(dst, &col)?;
                gi += 1;
            }
            Some((comb, ne)) => {
                if chunked {
                    partials.push(comb.fold(cvm, *ne, &col, 0..item.len)?);
                } else {
                    let dst = item.reds.get_mut(ri).ok_or_else(|| internal("no reduction output"))?;
                    if dst.len() != item.rows {
                        return Err(internal("a reduction output of another length than its rows"));
                    }
                    comb.fold_rows(cvm, *ne, &col, inner, dst)?;
                    ri += 1;
                }
            }
        }
    }
    Ok(partials)
}
