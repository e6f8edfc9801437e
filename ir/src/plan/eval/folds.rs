//! Generate, reduce and scan lanes of one kernel in one pass (the plan interpreter's
//! [`folds`]), reductions and scans over groups included: a lane group of `w` components
//! folds `w` accumulators with an operator of `2w` parameters and `w` results.

use super::{at_element, check_alloc, count, internal, Arr, Runner, Store, Walk};
use crate::error::Result;
use crate::plan::{Kernel, LaneOp};
use crate::value::Scalar;

/// What one lane group of a [`folds`] pass does with its elements.
enum Fold<'f> {
    Generate,
    Reduce { op: Runner<'f>, ne: Vec<Scalar>, acc: Vec<Scalar> },
    Scan { op: Runner<'f>, ne: Vec<Scalar>, acc: Vec<Scalar>, exclusive: bool },
}

/// A lane group: its first lane, its width and what it does.
struct Group<'f> {
    head: usize,
    w: usize,
    fold: Fold<'f>,
}

/// The neutral element of a group of `w`: `ne`'s `w` results; `op` must take `2w`
/// parameters and return `w` (an internal error otherwise).
fn neutral(
    store: &Store<'_>,
    kidx: usize,
    op: &crate::plan::Func,
    ne: &crate::plan::Func,
    w: usize,
) -> Result<Vec<Scalar>> {
    if op.params.len() != 2 * w || op.ret.len() != w || ne.ret.len() != w || !ne.params.is_empty() {
        return Err(internal(format!(
            "kernel k{kidx}: a fold over a group of {w} with an operator of {} parameters and {} results \
             and a neutral element of {} results",
            op.params.len(),
            op.ret.len(),
            ne.ret.len()
        )));
    }
    let mut out = Vec::with_capacity(w);
    Runner::new(ne).call_all(store, &[], &mut out)?;
    Ok(out)
}

/// The lane groups of `k` (validated: parts follow their heads, a scan is alone in its
/// kernel) and one output array per lane, sized and checked against the limit.
fn groups<'f>(
    store: &Store<'_>,
    k: &'f Kernel,
    kidx: usize,
    shape: &[usize],
    (rows, total): (usize, usize),
    max_bytes: u64,
) -> Result<(Vec<Group<'f>>, Vec<Arr>)> {
    let kind = k.kind.as_str();
    let outer = &shape[..shape.len().saturating_sub(1)];
    let spans = k.groups().ok_or_else(|| {
        internal(format!("kernel k{kidx}: a part lane that does not follow its group's head"))
    })?;
    let alone = spans.len() == 1;
    let mut groups = Vec::with_capacity(spans.len());
    let mut outs = Vec::with_capacity(k.lanes.len());
    for (head, w) in spans {
        let (fold, n, out_shape) = match &k.lanes[head].op {
            LaneOp::Generate => (Fold::Generate, total, shape.to_vec()),
            LaneOp::Reduce { op, ne } => {
                let ne = neutral(store, kidx, op, ne, w)?;
                (Fold::Reduce { op: Runner::new(op), acc: ne.clone(), ne }, rows, outer.to_vec())
            }
            LaneOp::Scan { op, ne, exclusive } if alone => {
                let ne = neutral(store, kidx, op, ne, w)?;
                let fold = Fold::Scan { op: Runner::new(op), acc: ne.clone(), ne, exclusive: *exclusive };
                (fold, total, shape.to_vec())
            }
            _ => {
                return Err(internal(format!(
                    "kernel k{kidx} has several lanes that are not all generate or reduce"
                )))
            }
        };
        for lane in &k.lanes[head..head + w] {
            check_alloc(kind, store.elem(lane.dst)?, n, max_bytes)?;
            outs.push(Arr { shape: out_shape.clone(), data: Vec::with_capacity(n) });
        }
        groups.push(Group { head, w, fold });
    }
    Ok((groups, outs))
}

/// Generate, reduce and scan lanes (any number: several are a multi-output kernel; a scan
/// only alone, with its parts), in one pass over the space: the element function runs once
/// per index, each reduction or scan folds sequentially along the innermost dimension from
/// its neutral element, `w` components at a time over a group.
pub(super) fn folds(
    store: &Store<'_>,
    k: &Kernel,
    kidx: usize,
    shape: &[usize],
    total: usize,
    max_bytes: u64,
) -> Result<Vec<Arr>> {
    let kind = k.kind.as_str();
    let (outer, inner) = match shape.split_last() {
        Some((&inner, outer)) => (outer, inner),
        None => return Err(internal(format!("kernel k{kidx} over an empty space"))),
    };
    let rows = count(kind, outer)?;
    let (mut groups, mut outs) = groups(store, k, kidx, shape, (rows, total), max_bytes)?;
    let mut f = Runner::new(&k.elem);
    let mut walk = Walk::new(shape);
    let mut xs = Vec::with_capacity(k.lanes.len());
    let mut args = Vec::new();
    let mut res = Vec::new();
    let mut flat = 0usize;
    // With an empty innermost dimension only the reductions have rows to write (`ne`).
    let any_reduce = groups.iter().any(|g| matches!(g.fold, Fold::Reduce { .. }));
    let rows = if inner == 0 && !any_reduce { 0 } else { rows };
    for _ in 0..rows {
        for g in &mut groups {
            if let Fold::Reduce { ne, acc, .. } | Fold::Scan { ne, acc, .. } = &mut g.fold {
                acc.clone_from(ne);
            }
        }
        for _ in 0..inner {
            f.call_all(store, &walk.args, &mut xs).map_err(|e| at_element(e, kind, shape, flat))?;
            for g in &mut groups {
                let (h, w) = (g.head, g.w);
                let outs = &mut outs[h..h + w];
                match &mut g.fold {
                    Fold::Generate => outs[0].data.push(xs[h]),
                    Fold::Reduce { op, acc, .. } => {
                        args.clear();
                        args.extend_from_slice(acc);
                        args.extend_from_slice(&xs[h..h + w]);
                        op.call_all(store, &args, acc)?;
                    }
                    Fold::Scan { op, acc, exclusive, .. } => {
                        if *exclusive {
                            outs.iter_mut().zip(acc.iter()).for_each(|(o, a)| o.data.push(*a));
                        }
                        args.clear();
                        args.extend_from_slice(acc);
                        args.extend_from_slice(&xs[h..h + w]);
                        op.call_all(store, &args, &mut res)?;
                        std::mem::swap(acc, &mut res);
                        if !*exclusive {
                            outs.iter_mut().zip(acc.iter()).for_each(|(o, a)| o.data.push(*a));
                        }
                    }
                }
            }
            walk.advance();
            flat += 1;
        }
        for g in &groups {
            if let Fold::Reduce { acc, .. } = &g.fold {
                outs[g.head..g.head + g.w].iter_mut().zip(acc).for_each(|(o, a)| o.data.push(*a));
            }
        }
    }
    Ok(outs)
}
