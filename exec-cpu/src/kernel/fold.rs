//! Generate and reduce lanes, in one pass over a kernel's space: blocks of whole rows, or
//! chunks of long rows whose partial results are combined in order.

use super::comb::Comb;
use super::grouped::{group_cols, lane_types, GroupComb};
use super::{block_len, blocks, count, first_error, min_len, neutral, run_block, write, Ctx};
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
    let lanes = lane_folds(env, k, kidx, &prog, rows, total, ctx)?;
    let mut gen_cols: Vec<Col> = Vec::new();
    let mut red_cols: Vec<Col> = Vec::new();
    for lane in &lanes {
        match lane {
            LaneFold::Gen(ty) => gen_cols.push(Col::zeros(*ty, total)),
            LaneFold::Red(_, nes) | LaneFold::Group(_, nes) => {
                for ne in nes {
                    red_cols.push(
                        Col::filled(ne.elem_type(), rows, *ne)
                            .ok_or_else(|| internal("a neutral element of another type"))?,
                    );
                }
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
            combine_partials(&lanes, &partials, rows, b.chunks_per_row, &mut red_cols)?;
        }
    }
    let mut out = Vec::with_capacity(k.lanes.len());
    let (mut gi, mut ri) = (gen_cols.into_iter(), red_cols.into_iter());
    for lane in &lanes {
        for _ in 0..lane.width() {
            let next = match lane {
                LaneFold::Gen(_) => gi.next().map(|c| (shape.to_vec(), c)),
                _ => ri.next().map(|c| (outer.to_vec(), c)),
            };
            out.push(next.ok_or_else(|| internal("a lane without its output"))?);
        }
    }
    Ok(out)
}

/// One block of a generate/reduce pass: returns the partial results of the reductions
/// (every component of a group's) when the block is a chunk of a row (`chunked`), else
/// writes the block's rows.
#[allow(clippy::too_many_arguments)]
fn fold_block(
    prog: &Program<'_>,
    lanes: &[LaneFold<'_>],
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
    let (mut gi, mut ri, mut li) = (0, 0, 0);
    for (lane, cvm) in lanes.iter().zip(cvms.iter_mut()) {
        let w = lane.width();
        let cols = group_cols(vm, prog, li, w, item.len)?;
        li += w;
        match lane {
            LaneFold::Gen(_) => {
                let dst = item.gens.get_mut(gi).ok_or_else(|| internal("no generate output"))?;
                write(dst, &cols[0])?;
                gi += 1;
            }
            LaneFold::Red(comb, ne) if chunked => {
                partials.push(comb.fold(cvm, ne[0], &cols[0], 0..item.len)?)
            }
            LaneFold::Group(comb, ne) if chunked => {
                let mut acc = ne.clone();
                comb.fold(cvm, &mut acc, &cols, 0..item.len)?;
                partials.extend(acc);
            }
            LaneFold::Red(comb, ne) => {
                let dsts = row_outputs(&mut item, ri, w)?;
                comb.fold_rows(cvm, ne[0], &cols[0], inner, &mut dsts[0])?;
                ri += w;
            }
            LaneFold::Group(comb, ne) => {
                let dsts = row_outputs(&mut item, ri, w)?;
                comb.fold_rows(cvm, ne, &cols, inner, dsts)?;
                ri += w;
            }
        }
    }
    Ok(partials)
}

/// The block's row outputs `ri .. ri + w` (one reduction or one group's components).
fn row_outputs<'a, 'o>(item: &'a mut FoldItem<'o>, ri: usize, w: usize) -> Result<&'a mut [ColMut<'o>]> {
    let rows = item.rows;
    let dsts = item.reds.get_mut(ri..ri + w).ok_or_else(|| internal("no reduction output"))?;
    if dsts.iter().any(|d| d.len() != rows) {
        return Err(internal("a reduction output of another length than its rows"));
    }
    Ok(dsts)
}

/// What one lane group of a generate/reduce pass does: a generate of its type, a reduction
/// (its operator and neutral element), or a reduction over a group (its `w` neutral
/// components).
enum LaneFold<'s> {
    Gen(ElemType),
    Red(Comb<'s>, Vec<Scalar>),
    Group(GroupComb<'s>, Vec<Scalar>),
}

impl LaneFold<'_> {
    /// How many lanes it covers.
    fn width(&self) -> usize {
        match self {
            LaneFold::Gen(_) | LaneFold::Red(..) => 1,
            LaneFold::Group(_, ne) => ne.len(),
        }
    }
}

/// The kernel's lane groups (validated: parts follow their heads), their outputs checked
/// against the memory limit.
fn lane_folds<'s>(
    env: &StoreRef<'s, '_>,
    k: &Kernel,
    kidx: usize,
    prog: &Program<'_>,
    rows: usize,
    total: usize,
    ctx: &Ctx,
) -> Result<Vec<LaneFold<'s>>> {
    let kind = k.kind.as_str();
    let groups = k.groups().ok_or_else(|| {
        internal(format!("kernel k{kidx}: a part lane that does not follow its group's head"))
    })?;
    let mut lanes = Vec::with_capacity(groups.len());
    for (head, w) in groups {
        let tys = lane_types(env, k, prog, head, w)?;
        match &k.lanes[head].op {
            LaneOp::Generate => {
                check_alloc(kind, tys[0], total, ctx.max_bytes)?;
                lanes.push(LaneFold::Gen(tys[0]));
            }
            LaneOp::Reduce { op, ne } if w == 1 => {
                let ne = neutral(env, ne, tys[0])?;
                check_alloc(kind, tys[0], rows, ctx.max_bytes)?;
                lanes.push(LaneFold::Red(Comb::new(op, tys[0], env)?, vec![ne]));
            }
            LaneOp::Reduce { op, ne } => {
                let (comb, ne) = GroupComb::new(op, ne, &tys, env)?;
                for &t in &tys {
                    check_alloc(kind, t, rows, ctx.max_bytes)?;
                }
                lanes.push(LaneFold::Group(comb, ne));
            }
            _ => {
                return Err(internal(format!(
                    "kernel k{kidx} has several lanes that are not all generate or reduce"
                )))
            }
        }
    }
    Ok(lanes)
}

/// Combines each row's chunk partials in order into the reduction outputs `red_cols` (one
/// per reduce or part lane, in lane order): `partials[block]` holds every reduction's
/// components in that order.
fn combine_partials(
    lanes: &[LaneFold<'_>],
    partials: &[Vec<Scalar>],
    rows: usize,
    cpr: usize,
    red_cols: &mut [Col],
) -> Result<()> {
    let mut vm = None;
    let mut j = 0;
    for lane in lanes {
        let w = lane.width();
        let part = |r: usize, c: usize| -> Result<&[Scalar]> {
            partials
                .get(r * cpr + c)
                .and_then(|v| v.get(j..j + w))
                .ok_or_else(|| internal("a missing partial result"))
        };
        match lane {
            LaneFold::Gen(_) => continue,
            LaneFold::Red(comb, _) => {
                let mut out = red_cols.get_mut(j).ok_or_else(|| internal("no reduction output"))?.as_mut();
                for r in 0..rows {
                    let mut acc = part(r, 0)?[0];
                    for c in 1..cpr {
                        acc = comb.apply(&mut vm, acc, part(r, c)?[0])?;
                    }
                    out.set(r, acc);
                }
            }
            LaneFold::Group(comb, _) => {
                let outs = red_cols.get_mut(j..j + w).ok_or_else(|| internal("no reduction output"))?;
                let mut gvm = None;
                for r in 0..rows {
                    let mut acc = part(r, 0)?.to_vec();
                    for c in 1..cpr {
                        comb.apply(&mut gvm, &mut acc, part(r, c)?)?;
                    }
                    for (o, a) in outs.iter_mut().zip(&acc) {
                        o.as_mut().set(r, *a);
                    }
                }
            }
        }
        j += w;
    }
    Ok(())
}
