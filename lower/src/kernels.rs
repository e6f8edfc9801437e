//! The kernels of a plan as `explain` reports them.
//!
//! One entry per kernel of the [`Plan`]: its kind, the values it reads (program inputs and
//! other kernels' results, by name; sizes and host scalars are not listed), the values it
//! writes, the loops of its element functions, its index space and its predicted time.
//! `materialized` lists the arrays written by one kernel for another that are neither
//! inputs nor outputs; `kept`, those a row block keeps per block of rows (or a scan block
//! per segment) instead.

use crate::model::PlanCost;
use eqfuse_egraph::lang::ArrayLang;
use eqfuse_ir::plan::{Arg, Func, Inst, KernelKind, Origin, Plan, Step};

/// One kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelInfo {
    /// `map`, `generate`, `reduce`, `scan`, `filter`, `permute`, `gather`, `copy` or
    /// `contract`.
    pub kind: &'static str,
    /// Names of the arrays and kernel results it reads, sorted.
    pub reads: Vec<String>,
    /// Names of its results, program outputs first in program order.
    pub writes: Vec<String>,
    /// `iterate` loops in its element functions.
    pub loops: usize,
    /// The index space as a product of its extents (`n*m`; `?` for one computed at run
    /// time).
    pub space: String,
    /// Predicted seconds.
    pub predicted_s: f64,
    /// The pass over memory it runs in: kernels of one row block share a pass.
    pub pass: usize,
}

/// The kernels of a plan, in execution order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelSummary {
    /// The kernels.
    pub kernels: Vec<KernelInfo>,
    /// Intermediate arrays written to memory (neither inputs nor outputs).
    pub materialized: Vec<String>,
    /// Intermediate arrays a row block keeps per block of rows, never written to memory
    /// ([`Step::RowBlock`]'s `local`).
    pub kept: Vec<String>,
    /// Predicted seconds for the whole plan.
    pub predicted_s: f64,
    /// Passes over memory: kernels, a row block or a scan block counting once.
    pub passes: usize,
    /// Which kinds of block group kernels into one pass: `row`, `scan`, `filter` (in that
    /// order).
    pub blocks: Vec<&'static str>,
}

/// The pass of each kernel of `steps` in [`Plan::kernels`] order, numbering from `next`,
/// and what row blocks keep per block (`kept`).
fn passes(
    steps: &[Step],
    next: &mut usize,
    out: &mut Vec<usize>,
    kept: &mut Vec<usize>,
    blocks: &mut Vec<&'static str>,
) {
    for st in steps {
        match st {
            Step::Kernel(_) => {
                out.push(*next);
                *next += 1;
            }
            Step::RowBlock { kernels, local } | Step::SegmentBlock { kernels, local } => {
                let kind = st.block_kind().unwrap_or("row");
                if !blocks.contains(&kind) {
                    blocks.push(kind);
                    blocks.sort_by_key(|b| ["row", "scan", "filter"].iter().position(|x| x == b));
                }
                out.extend(std::iter::repeat_n(*next, kernels.len()));
                kept.extend(local);
                *next += 1;
            }
            Step::If { then_steps, else_steps, .. } => {
                passes(then_steps, next, out, kept, blocks);
                passes(else_steps, next, out, kept, blocks);
            }
            Step::Loop(l) => {
                for steps in l.step_lists() {
                    passes(steps, next, out, kept, blocks);
                }
            }
            Step::Scalar { .. } | Step::Assert { .. } => {}
        }
    }
}

/// The kernel kind of an array operation node.
pub fn kernel_kind(n: &ArrayLang, lanes_reduce: bool) -> Option<KernelKind> {
    use ArrayLang as L;
    Some(match n {
        L::Map(_) => KernelKind::Map,
        L::Generate(_) | L::Iota(_) | L::Fill(_) => KernelKind::Generate,
        L::Reduce(_) | L::Redomap(_) => KernelKind::Reduce,
        L::Scan(_) | L::ScanEx(_) | L::Scanomap(_) | L::Scanexomap(_) => KernelKind::Scan,
        L::Filter(_) | L::Filtermap(_) => KernelKind::Filter,
        L::Permute(_) | L::Permutemap(_) => KernelKind::Permute,
        L::Gather(_) | L::Backpermute(_) | L::Transpose(_) | L::Reverse(_) | L::Slice(_) | L::Concat(_) => {
            KernelKind::Gather
        }
        L::Reshape(_) => KernelKind::Copy,
        L::GReduce(_) | L::SegCheck(_) => KernelKind::Reduce,
        L::GScan(_) => KernelKind::Scan,
        L::Multi(_) if lanes_reduce => KernelKind::Reduce,
        L::Multi(_) => KernelKind::Generate,
        _ => return None,
    })
}

fn loops_in(f: &Func) -> usize {
    let mut n = 0;
    f.body.visit(&mut |i| {
        if matches!(i, Inst::Loop { .. }) {
            n += 1;
        }
    });
    n
}

/// Summarises `plan` with its predicted cost.
pub fn summarize(plan: &Plan, cost: &PlanCost) -> KernelSummary {
    let name = |v: usize| plan.values.get(v).map_or_else(|| format!("v{v}"), |x| x.name.clone());
    let outputs: Vec<usize> = plan.outputs.iter().map(|(_, v)| *v).collect();
    let mut out = KernelSummary { predicted_s: cost.total, ..KernelSummary::default() };
    let mut pass_of = Vec::new();
    let mut kept = Vec::new();
    passes(&plan.steps, &mut out.passes, &mut pass_of, &mut kept, &mut out.blocks);
    out.kept = kept.iter().map(|v| name(*v)).collect();
    for (i, k) in plan.kernels().into_iter().enumerate() {
        let mut reads: Vec<String> = k
            .reads()
            .into_iter()
            .filter(|v| {
                plan.values.get(*v).is_some_and(|x| x.origin != Origin::Size)
                    && plan.values.get(*v).is_some_and(|x| x.rank > 0 || is_kernel_result(plan, *v))
            })
            .map(name)
            .collect();
        reads.sort();
        reads.dedup();
        let mut writes: Vec<usize> = k.writes();
        writes.sort_by_key(|w| outputs.iter().position(|o| o == w).unwrap_or(usize::MAX));
        for w in &writes {
            if !outputs.contains(w) && !kept.contains(w) && plan.values.get(*w).is_some_and(|x| x.rank > 0) {
                out.materialized.push(name(*w));
            }
        }
        let loops =
            loops_in(&k.elem) + k.lanes.iter().flat_map(|l| l.op.funcs()).map(loops_in).sum::<usize>();
        let space: Vec<String> = k
            .space
            .iter()
            .map(|a| match a {
                Arg::Const(c) => c.to_string(),
                Arg::Value(v) => match plan.values.get(*v) {
                    Some(x) if x.origin == Origin::Size => x.name.clone(),
                    _ => "?".to_string(),
                },
            })
            .collect();
        out.kernels.push(KernelInfo {
            kind: k.kind.as_str(),
            reads,
            writes: writes.into_iter().map(name).collect(),
            loops,
            space: space.join("*"),
            predicted_s: cost.kernels.get(i).map_or(0.0, |c| c.seconds),
            pass: pass_of.get(i).copied().unwrap_or(i),
        });
    }
    out
}

/// Whether `v` is written by a kernel (a reduction's scalar result counts as a read).
fn is_kernel_result(plan: &Plan, v: usize) -> bool {
    plan.kernels().iter().any(|k| k.writes().contains(&v))
        || plan.values.get(v).is_some_and(|x| x.origin == Origin::Input)
}
