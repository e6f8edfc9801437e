//! The lowering pass that groups kernels into row blocks ([`Step::RowBlock`]): kernels over
//! the same rows (consecutive, or moved up to be: [`walk`]), each reading what the earlier
//! ones computed only on its own row, run as one pass over blocks of rows. While a block's
//! rows are in cache every phase runs over them, so the data crosses main memory once:
//! softmax's row maximum, `exp` and row sum, and division are one pass instead of three.
//!
//! This file is the legality; the cost model prices a row block
//! (`crate::model`: reads of what an earlier phase touched come from cache), and the
//! executors run it (the CPU backend block by block, the others phase by phase).
//!
//! A group starts with a *row phase*: a kernel over `outer ++ [inner]` (at least two
//! dimensions) whose lanes are `generate`s and `reduce`s (a reduce lane's result has one
//! element per row), or whose one lane is a row scan (inclusive or exclusive: its result
//! has one element per point, like a generate's). Each later kernel is a row phase over the same `outer` dimensions, or,
//! when `outer` is one dimension, an *outer phase*: a `generate` over `outer` itself (a map
//! over row results, such as `mean = sums / c`). A later phase may read an earlier phase's
//! result only on its own row:
//!
//! - a row result (a reduce lane of a row phase, a generate lane of an outer phase) at
//!   exactly the outer indices, `mx[i]`;
//! - a generate or scan lane of a row phase, from a row phase with the same inner extent,
//!   at exactly its own point, `e[i, j]`.
//!
//! Anything else (another index, a read in a reduction's or scan's operator, a full scan, a
//! filter, a permute, a contraction) ends the group.

use eqfuse_ir::plan::{Arg, Func, Inst, Kernel, LaneOp, Plan, Reg, Step, ValueId};
use std::collections::{HashMap, HashSet, VecDeque};

/// Groups the row blocks of `plan`, the steps of `if` branches included, and marks what
/// each keeps per block ([`Step::RowBlock`]'s `local`).
pub(crate) fn group(plan: &mut Plan) {
    let steps = std::mem::take(&mut plan.steps);
    plan.steps = walk(steps);
    let mut read: HashSet<ValueId> = plan.outputs.iter().map(|(_, v)| *v).collect();
    read_anywhere(&plan.steps, &mut read);
    mark_local(&mut plan.steps, &read);
}

/// Every value a step of `steps` (at any depth) reads from outside itself, with the values
/// of `if` branches: a row block's own reads of its phases' results are not among them.
pub(crate) fn read_anywhere(steps: &[Step], out: &mut HashSet<ValueId>) {
    for st in steps {
        out.extend(st.reads());
        if let Step::If { then_steps, then_value, else_steps, else_value, .. } = st {
            out.extend([*then_value, *else_value]);
            read_anywhere(then_steps, out);
            read_anywhere(else_steps, out);
        }
    }
}

/// Sets each row block's `local`: the generate and scan lanes of its row phases that nothing
/// outside the block reads (`read`). The grouping already allows a later phase to read such a
/// result only at its own point, so a block's rows of it are all that is ever read.
fn mark_local(steps: &mut [Step], read: &HashSet<ValueId>) {
    for st in steps {
        match st {
            Step::RowBlock { kernels, local } => {
                let outer = kernels.first().map_or(0, |k| k.space.len().saturating_sub(1));
                *local = unread_point_lanes(kernels.iter().filter(|k| k.space.len() == outer + 1), read);
            }
            Step::If { then_steps, else_steps, .. } => {
                mark_local(then_steps, read);
                mark_local(else_steps, read);
            }
            _ => {}
        }
    }
}

/// Whether `f` reads (an element, a dimension or a host value) none of the values `made`
/// names.
pub(crate) fn reads_none(f: &Func, made: impl Fn(ValueId) -> bool) -> bool {
    let mut clean = true;
    f.body.visit(&mut |i| match i {
        Inst::Read { array: v, .. } | Inst::Dim { array: v, .. } | Inst::Load { value: v, .. } => {
            clean &= !made(*v)
        }
        _ => {}
    });
    clean
}

/// An `if` step with `walk` applied to the steps of both branches; any other step as it is.
pub(crate) fn walk_branches(st: Step, walk: fn(Vec<Step>) -> Vec<Step>) -> Step {
    match st {
        Step::If { cond, then_steps, then_value, else_steps, else_value, dst } => Step::If {
            cond,
            then_steps: walk(then_steps),
            then_value,
            else_steps: walk(else_steps),
            else_value,
            dst,
        },
        other => other,
    }
}

/// The generate and scan lanes of `kernels` (one element per point) that nothing in `read`
/// names: what a block may keep for its own rows or segment only.
pub(crate) fn unread_point_lanes<'k>(
    kernels: impl Iterator<Item = &'k Kernel>,
    read: &HashSet<ValueId>,
) -> Vec<ValueId> {
    kernels
        .flat_map(|k| &k.lanes)
        .filter(|l| matches!(l.op, LaneOp::Generate | LaneOp::Scan { .. }) && !read.contains(&l.dst))
        .map(|l| l.dst)
        .collect()
}

/// What a group's earlier phases produced, by value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Made {
    /// One element per row.
    Row,
    /// One element per point of a row phase with this inner extent.
    Point(Arg),
}

/// The group being built.
#[derive(Default)]
struct Group {
    kernels: Vec<Kernel>,
    made: HashMap<ValueId, Made>,
}

impl Group {
    fn outer(&self) -> Option<&[Arg]> {
        self.kernels.first().map(|k| &k.space[..k.space.len() - 1])
    }

    /// Whether `k` may join the group (start it, when it is empty).
    fn accepts(&self, k: &Kernel) -> bool {
        let Some(outer) = self.outer() else { return is_row_phase(k) };
        let inner = if k.space.len() == outer.len() + 1 && k.space[..outer.len()] == *outer && is_row_phase(k)
        {
            Some(k.space[outer.len()])
        } else if outer.len() == 1 && k.space == outer && generates_only(k) {
            None
        } else {
            return false;
        };
        self.reads_on_own_row(k, outer.len(), inner)
    }

    fn push(&mut self, k: Kernel) {
        let row_phase = self.outer().is_none_or(|o| k.space.len() == o.len() + 1);
        for lane in &k.lanes {
            let made = match (&lane.op, row_phase) {
                (LaneOp::Reduce { .. }, true) | (LaneOp::Generate, false) => Made::Row,
                _ => Made::Point(k.space[k.space.len() - 1]),
            };
            self.made.insert(lane.dst, made);
        }
        self.kernels.push(k);
    }

    /// Whether every read of `k` of what the group made is on `k`'s own row (module docs).
    fn reads_on_own_row(&self, k: &Kernel, outer: usize, inner: Option<Arg>) -> bool {
        let params = |n: usize| (0..n as Reg).collect::<Vec<Reg>>();
        let mut ok = true;
        k.elem.body.visit(&mut |i| {
            if let Inst::Read { array, index, .. } = i {
                ok &= match self.made.get(array) {
                    None => true,
                    Some(Made::Row) => *index == params(outer),
                    Some(Made::Point(e)) => inner == Some(*e) && *index == params(outer + 1),
                };
            }
            if let Inst::Load { value, .. } = i {
                ok &= !self.made.contains_key(value);
            }
        });
        // the lanes' own functions read nothing the group made
        ok && k.lanes.iter().flat_map(|l| l.op.funcs()).all(|f| reads_none(f, |v| self.made.contains_key(&v)))
    }

    /// Puts the group into `out`: a row block, or its one kernel.
    fn flush(&mut self, out: &mut Vec<Step>) {
        self.made.clear();
        let mut ks = std::mem::take(&mut self.kernels);
        match ks.len() {
            0 => {}
            1 => out.extend(ks.pop().map(Step::Kernel)),
            _ => out.push(Step::RowBlock { kernels: ks, local: Vec::new() }),
        }
    }
}

/// A kernel that can be a row phase: two dimensions or more, `generate` and `reduce` lanes
/// or one row scan (inclusive or exclusive), not a contraction.
fn is_row_phase(k: &Kernel) -> bool {
    let scan = matches!(k.lanes[..], [ref l] if matches!(l.op, LaneOp::Scan { .. }));
    k.space.len() >= 2
        && k.contraction.is_none()
        && (scan || k.lanes.iter().all(|l| matches!(l.op, LaneOp::Generate | LaneOp::Reduce { .. })))
}

fn generates_only(k: &Kernel) -> bool {
    k.contraction.is_none() && k.lanes.iter().all(|l| matches!(l.op, LaneOp::Generate))
}

/// Takes out of `rest` the first kernel, among its next [`LOOKAHEAD`] steps, that `fits` and
/// may run before `first` and the steps of `rest` before it: it reads nothing they write,
/// and they are only kernels and host scalars (never a shape check or an `if`, which may
/// guard what it reads).
pub(crate) fn take_movable(
    first: &Kernel,
    rest: &mut VecDeque<Step>,
    fits: impl Fn(&Kernel) -> bool,
) -> Option<Kernel> {
    let mut written = first.writes();
    let mut at = None;
    for (j, st) in rest.iter().take(LOOKAHEAD).enumerate() {
        match st {
            Step::Kernel(k) if fits(k) && k.reads().iter().all(|r| !written.contains(r)) => {
                at = Some(j);
                break;
            }
            Step::Kernel(_) | Step::Scalar { .. } => written.extend(st.writes()),
            _ => return None,
        }
    }
    match rest.remove(at?) {
        Some(Step::Kernel(k)) => Some(k),
        _ => None,
    }
}

/// How many later steps the grouping looks at for a kernel to move up into a group.
pub(crate) const LOOKAHEAD: usize = 16;

/// Groups the row blocks of `steps`. The grouping does not depend on the order in which
/// lowering emitted independent kernels: where a kernel cannot join the group being built,
/// a later kernel that can, and that depends on none of the steps in between, joins it
/// first; where a kernel cannot start a group but could follow a later row phase that
/// depends on nothing in between, that row phase moves up and starts it.
fn walk(steps: Vec<Step>) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len());
    let mut rest: VecDeque<Step> = steps.into();
    let mut g = Group::default();
    while let Some(st) = rest.pop_front() {
        match st {
            // it joins the group, or starts the next one, or stands alone
            Step::Kernel(k) if g.accepts(&k) => g.push(k),
            Step::Kernel(k) => {
                if !g.kernels.is_empty() {
                    if let Some(x) = take_movable(&k, &mut rest, |x| g.accepts(x)) {
                        g.push(x);
                        rest.push_front(Step::Kernel(k));
                        continue;
                    }
                }
                g.flush(&mut out);
                let follows = |r: &Kernel| {
                    let mut t = Group::default();
                    is_row_phase(r) && {
                        t.push(r.clone());
                        t.accepts(&k)
                    }
                };
                if g.accepts(&k) {
                    g.push(k);
                } else if let Some(r) = take_movable(&k, &mut rest, follows) {
                    // `k` follows `r` (checked above)
                    g.push(r);
                    g.push(k);
                } else {
                    out.push(Step::Kernel(k));
                }
            }
            st @ Step::If { .. } => {
                g.flush(&mut out);
                out.push(walk_branches(st, walk));
            }
            other => {
                g.flush(&mut out);
                out.push(other);
            }
        }
    }
    g.flush(&mut out);
    out
}
