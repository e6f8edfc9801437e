//! The lowering pass that groups a scan or a filter with the kernels that ride along its
//! passes into segment blocks ([`Step::SegmentBlock`]). A scan and a filter each make two
//! passes over their space (a segment's total or count first, then the scan from its carry,
//! or the kept elements at their offsets); kernels over the same 1-d space (consecutive, or
//! moved up to be: [`crate::rowblock::take_movable`]) can run over each segment in one of
//! those passes, while the segment is in cache:
//!
//! - a **scan block**: after the scan, kernels that read what the block computed only at
//!   their own point. The scan's result stays in cache: a stream compaction's exclusive scan
//!   of flags and the permute that reads `pos[i]` are one pass, and `pos` never crosses main
//!   memory (Futhark's scan–scatter fusion);
//! - a **filter block**: after the filter, kernels that read nothing the block made (the
//!   filter's sibling reductions of the same input: a sum of the kept elements, their
//!   count) run in the filter's counting pass, so the input crosses memory once for all of
//!   them (horizontal fusion of a filter with reductions).
//!
//! This file is the legality; the cost model prices a segment block (`crate::model`), and
//! the executors run it (the CPU backend segment by segment, the others phase by phase).
//!
//! A scan block starts with a kernel whose one lane is a scan (inclusive or exclusive) over
//! one dimension. A later kernel joins when it is over the same extent and is a `generate`
//! kernel (a map over the scan's result: the scan's epilogue) or a one-lane `permute` (a
//! scatter to the scanned positions), and it reads what the group made only as `v[i]`, at
//! exactly its own index, in its element function or its permute target (not in an
//! operator, a neutral element or a permute's destination).
//!
//! A filter block starts with a kernel whose one lane is a filter over one dimension. A later
//! kernel joins when it is over the same extent, its lanes are `generate`s and `reduce`s, and
//! it reads nothing the group made.
//!
//! Anything else ends the group.

use eqfuse_ir::plan::{Inst, Kernel, LaneOp, Plan, Step, ValueId};
use std::collections::{HashSet, VecDeque};

/// Groups the segment blocks of `plan`, the steps of `if` branches included, and marks what
/// each keeps per segment ([`Step::SegmentBlock`]'s `local`).
pub(crate) fn group(plan: &mut Plan) {
    let steps = std::mem::take(&mut plan.steps);
    plan.steps = walk(steps);
    let mut read: HashSet<ValueId> = plan.outputs.iter().map(|(_, v)| *v).collect();
    crate::rowblock::read_anywhere(&plan.steps, &mut read);
    mark_local(&mut plan.steps, &read);
}

/// Sets each scan block's `local`: the scan and generate lanes that nothing outside the
/// block reads (`read`). The grouping allows a later phase to read them only at its own
/// point, so a segment's points of them are all that is ever read. (A filter block's later
/// phases read nothing of the block: it keeps nothing.)
fn mark_local(steps: &mut [Step], read: &HashSet<ValueId>) {
    for st in steps {
        match st {
            Step::SegmentBlock { kernels, local } if kernels.first().is_some_and(scans) => {
                *local = crate::rowblock::unread_point_lanes(kernels.iter(), read);
            }
            Step::If { then_steps, else_steps, .. } => {
                mark_local(then_steps, read);
                mark_local(else_steps, read);
            }
            _ => {}
        }
    }
}

/// Whether `k`'s one lane is a scan.
fn scans(k: &Kernel) -> bool {
    matches!(k.lanes[..], [ref l] if matches!(l.op, LaneOp::Scan { .. }))
}

/// A kernel that can start a segment block: one scan or filter lane over one dimension.
fn starts(k: &Kernel) -> bool {
    k.space.len() == 1
        && k.contraction.is_none()
        && matches!(k.lanes[..], [ref l] if matches!(l.op, LaneOp::Scan { .. } | LaneOp::Filter { .. }))
}

/// Whether `k` may join the group `g` (not empty): over its extent; after a scan, a generate
/// kernel or a one-lane permute reading what the group made only at its own index; after a
/// filter, a kernel of generate and reduce lanes reading nothing the group made.
fn accepts(g: &[Kernel], k: &Kernel) -> bool {
    let Some(first) = g.first() else { return false };
    if k.space != first.space || k.contraction.is_some() {
        return false;
    }
    let made: HashSet<ValueId> = g.iter().flat_map(Kernel::writes).collect();
    if !scans(first) {
        return !k.lanes.is_empty()
            && k.lanes.iter().all(|l| matches!(l.op, LaneOp::Generate | LaneOp::Reduce { .. }))
            && k.reads().iter().all(|v| !made.contains(v));
    }
    let at_own_point = |f: &eqfuse_ir::plan::Func| {
        let mut ok = true;
        f.body.visit(&mut |i| match i {
            Inst::Read { array, index, .. } if made.contains(array) => ok &= index[..] == [0],
            Inst::Load { value, .. } if made.contains(value) => ok = false,
            _ => {}
        });
        ok
    };
    let lanes_ok = match &k.lanes[..] {
        [l] if matches!(l.op, LaneOp::Permute { .. }) => {
            let LaneOp::Permute { op, dest, target } = &l.op else { return false };
            crate::rowblock::reads_none(op, |v| made.contains(&v))
                && at_own_point(target)
                && dest.reads().iter().all(|v| !made.contains(v))
        }
        ls => !ls.is_empty() && ls.iter().all(|l| matches!(l.op, LaneOp::Generate)),
    };
    lanes_ok && at_own_point(&k.elem)
}

/// Whether `st` reads nothing the group `g` made: it may run before the group's kernels,
/// which were emitted before it and so read nothing it makes.
fn independent(g: &[Kernel], st: &Step) -> bool {
    let made: HashSet<ValueId> = g.iter().flat_map(Kernel::writes).collect();
    st.reads().iter().all(|v| !made.contains(v))
}

/// Whether a kernel among the next [`crate::rowblock::LOOKAHEAD`] steps of `rest` may join
/// the group `g`.
fn joiner_ahead(g: &[Kernel], rest: &VecDeque<Step>) -> bool {
    rest.iter().take(crate::rowblock::LOOKAHEAD).any(|st| matches!(st, Step::Kernel(k) if accepts(g, k)))
}

/// Puts the group into `out`: a segment block, or its one kernel.
fn flush(g: &mut Vec<Kernel>, out: &mut Vec<Step>) {
    let mut ks = std::mem::take(g);
    match ks.len() {
        0 => {}
        1 => out.extend(ks.pop().map(Step::Kernel)),
        _ => out.push(Step::SegmentBlock { kernels: ks, local: Vec::new() }),
    }
}

/// Groups the segment blocks of `steps`: a kernel, host scalar or check that cannot join the
/// group being built but reads nothing it made runs before it, the group staying open (when
/// a later kernel would join); where the next kernel cannot join, a later kernel that can, and
/// that depends on none of the steps in between, joins it first; a kernel that cannot start
/// a group but could follow a later scan or filter that depends on nothing in between
/// starts the group behind it.
fn walk(steps: Vec<Step>) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len());
    let mut rest: VecDeque<Step> = steps.into();
    let mut g: Vec<Kernel> = Vec::new();
    while let Some(st) = rest.pop_front() {
        match st {
            Step::Kernel(k) if !g.is_empty() && accepts(&g, &k) => g.push(k),
            // a step that reads nothing the group made runs before it, and the group stays
            // open, when a later kernel would join (a compaction's `total`, reduced after
            // the scan, read by the permute; a slice's bounds check and the slice, read by
            // a map over the scan). Every step that came after it still does: a check still
            // precedes what it guards.
            Step::Kernel(_) | Step::Scalar { .. } | Step::Assert { .. }
                if !g.is_empty() && independent(&g, &st) && joiner_ahead(&g, &rest) =>
            {
                out.push(st)
            }
            Step::Kernel(k) => {
                if !g.is_empty() {
                    if let Some(x) = crate::rowblock::take_movable(&k, &mut rest, |x| accepts(&g, x)) {
                        g.push(x);
                        rest.push_front(Step::Kernel(k));
                        continue;
                    }
                }
                flush(&mut g, &mut out);
                // a kernel that would follow a later filter or scan, which depends on nothing
                // in between, starts the group behind it (a reduction of a filter's input
                // emitted before the filter)
                let follows = |r: &Kernel| starts(r) && accepts(std::slice::from_ref(r), &k);
                if starts(&k) {
                    g.push(k);
                } else if let Some(r) = crate::rowblock::take_movable(&k, &mut rest, follows) {
                    g.push(r);
                    g.push(k);
                } else {
                    out.push(Step::Kernel(k));
                }
            }
            st @ Step::If { .. } => {
                flush(&mut g, &mut out);
                out.push(crate::rowblock::walk_branches(st, walk));
            }
            other => {
                flush(&mut g, &mut out);
                out.push(other);
            }
        }
    }
    flush(&mut g, &mut out);
    out
}
