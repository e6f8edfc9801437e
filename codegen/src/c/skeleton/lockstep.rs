//! The lockstep walk of a `run` entry whose element function is straight code around one loop
//! that stays a loop in C (`examples/iterated_map.eqf`: 40 steps of `0.5 * x + 0.25 * sin x`).
//!
//! Walked point by point, that loop runs inside the loop over points: gcc vectorises the
//! points, and each vector then runs the whole chain of the loop's dependent steps, one step's
//! latency after another, with nothing to overlap them. The lockstep walk splits the element
//! function at the loop into three functions ([`split`]): the code before it (which also
//! gives the loop's count, its initial state and the values the rest reads), one step of the
//! body, and the code after. A block of [`LOCKSTEP_BLOCK`] points goes through each in turn:
//! the code before for every point, then each step for every point, then the code after. A
//! step over a block of independent points keeps the pipelines full.
//!
//! Legality ([`split`]): one loop at the top level of the element function, whose count is a
//! constant or a value of the plan (the same for every point) and is not unrolled anyway
//! ([`crate::scalar::unroll_count`]); the body writes no register the code before defines and
//! the code after reads nothing the body defines but the loop's result. Each point runs the
//! same operations in the same order as the element function, so the results are its own, bit
//! for bit. With `f32` `sin`, `cos` or `tan` the walk runs in two versions as
//! [`super::two_version`] does: the three functions with the medium path first, and the block
//! again by the exact ones where an argument needed them.

use crate::cty;
use eqfuse_ir::plan::{Block, Func, Inst, Reg};
use eqfuse_ir::types::ElemType;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The points of a block of the lockstep walk.
pub const LOCKSTEP_BLOCK: usize = 256;

/// An element function split at its loop.
#[derive(Debug)]
pub(super) struct Split {
    /// The code before the loop: returns the count (`i64`), the initial state, then the
    /// registers it defines that the rest reads (`extra`).
    pub pre: Func,
    /// One step: parameters the indices, the state, `extra`; returns the next state.
    pub step: Func,
    /// The code after: parameters the indices, the final state, `extra`; returns the element
    /// function's results.
    pub post: Func,
    /// The state's types.
    pub state: Vec<ElemType>,
    /// The types of the values the code before passes on besides the state (its constants
    /// are defined again where they are read).
    pub extra: Vec<ElemType>,
}

/// Every register `insts` write, their nested blocks' (and loops' state) included.
fn written(insts: &[Inst]) -> BTreeSet<Reg> {
    let mut out = BTreeSet::new();
    for inst in insts {
        out.extend(inst.dsts());
        match inst {
            Inst::If { then_block, else_block, .. } => {
                out.extend(written(&then_block.insts));
                out.extend(written(&else_block.insts));
            }
            Inst::Loop { vars, body, .. } => {
                out.extend(vars.iter().copied());
                out.extend(written(&body.insts));
            }
            _ => {}
        }
    }
    out
}

/// Every register `insts` read (a superset: see [`Inst::uses`]), and `also`.
fn read(insts: &[Inst], also: &[Reg]) -> BTreeSet<Reg> {
    let mut v = also.to_vec();
    for inst in insts {
        inst.uses(&mut v);
    }
    v.into_iter().collect()
}

/// `f`'s parameters followed by `live` (registers of `f`, renumbered to follow them), and
/// `insts` returning `ret`, as a function: every other register moves up past the new
/// parameters.
fn with_live(f: &Func, live: &[Reg], insts: &[Inst], ret: &[Reg]) -> Func {
    let p = f.params.len() as Reg;
    let m = live.len() as Reg;
    let map = |r: Reg| match live.iter().position(|&l| l == r) {
        _ if r < p => r,
        Some(k) => p + k as Reg,
        None => r + m,
    };
    let mut reg_types: Vec<ElemType> = f.reg_types[..p as usize].to_vec();
    reg_types.extend(live.iter().map(|&l| f.reg_types[l as usize]));
    reg_types.extend(&f.reg_types[p as usize..]);
    let mut body = Block { insts: insts.to_vec() };
    for inst in &mut body.insts {
        inst.map_regs(&map);
    }
    Func {
        params: reg_types[..(p + m) as usize].to_vec(),
        reg_types,
        body,
        ret: ret.iter().map(|&r| map(r)).collect(),
        spans: f.spans.iter().map(|&(r, s)| (map(r), s)).collect(),
    }
}

/// The element function `f` split at its loop, where the lockstep walk may take it.
pub(super) fn split(f: &Func) -> Option<Split> {
    let insts = &f.body.insts;
    let mut loops = insts.iter().enumerate().filter(|(_, i)| matches!(i, Inst::Loop { .. }));
    let (at, inst) = loops.next()?;
    if loops.next().is_some() {
        return None;
    }
    let Inst::Loop { dsts, count, inits, vars, body, nexts } = inst else { return None };
    let (pre, post) = (&insts[..at], &insts[at + 1..]);
    // the count: one constant or plan value, before the loop, that C does not unroll
    let defining: Vec<&Inst> = pre.iter().filter(|i| i.dsts().contains(count)).collect();
    let uniform = matches!(defining.as_slice(), [Inst::Const { .. } | Inst::Load { .. }]);
    if !uniform || f.reg_types.get(*count as usize) != Some(&ElemType::I64) {
        return None;
    }
    if crate::scalar::unroll_count(f, *count, body).is_some() {
        return None;
    }
    let p = f.params.len() as Reg;
    let (before, in_body, after) = (written(pre), written(&body.insts), written(post));
    let body_reads = read(&body.insts, nexts);
    let post_reads = read(post, &f.ret);
    let needed: Vec<Reg> = body_reads.union(&post_reads).copied().filter(|r| before.contains(r)).collect();
    // constants the code before defines are defined again where read, not passed on
    let constant = |r: Reg| pre.iter().find(|i| matches!(i, Inst::Const { dst, .. } if *dst == r)).cloned();
    let consts: Vec<Inst> = needed.iter().filter_map(|&r| constant(r)).collect();
    let extra: Vec<Reg> = needed.iter().copied().filter(|&r| constant(r).is_none()).collect();
    let fixed = |r: &Reg| *r < p || needed.contains(r);
    // no register is written in two pieces, and the code after reads of the loop only its result
    let legal = !in_body.iter().any(|r| fixed(r) || vars.contains(r))
        && !after.iter().any(|r| fixed(r) || dsts.contains(r) || in_body.contains(r))
        && !post_reads.iter().any(|r| (in_body.contains(r) && !dsts.contains(r)) || vars.contains(r))
        && vars.iter().chain(dsts).all(|r| !before.contains(r));
    if !legal {
        return None;
    }
    let mut pre_ret = vec![*count];
    pre_ret.extend(inits);
    pre_ret.extend(&extra);
    let pre = Func {
        params: f.params.clone(),
        reg_types: f.reg_types.clone(),
        body: Block { insts: pre.to_vec() },
        ret: pre_ret,
        spans: f.spans.clone(),
    };
    let live_step: Vec<Reg> = vars.iter().chain(&extra).copied().collect();
    let step_insts: Vec<Inst> = consts.iter().chain(&body.insts).cloned().collect();
    let step = with_live(f, &live_step, &step_insts, nexts);
    let live_post: Vec<Reg> = dsts.iter().chain(&extra).copied().collect();
    let post_insts: Vec<Inst> = consts.iter().chain(post).cloned().collect();
    let post = with_live(f, &live_post, &post_insts, &f.ret);
    let ty = |r: &Reg| f.reg_types[*r as usize];
    Some(Split {
        pre,
        step,
        post,
        state: vars.iter().map(ty).collect(),
        extra: extra.iter().map(ty).collect(),
    })
}

/// The kernel's names the walk needs: its prefix, the indices before the inner one (`i0`,
/// ...), and each lane's output array (`None`: none).
pub(super) struct Names<'a> {
    pub prefix: &'a str,
    pub inner: usize,
    pub outs: &'a [Option<String>],
    pub lanes: &'a [ElemType],
}

/// Appends the lockstep walk of inner indices `[start, end)` in blocks: with `medium`, first
/// by the `_m` functions into `okb` (and `big`), and again by the exact ones where flagged.
pub(super) fn walk(
    e: &mut String,
    ind: &str,
    start: &str,
    end: &str,
    s: &Split,
    n: &Names<'_>,
    medium: bool,
) {
    let b = LOCKSTEP_BLOCK;
    w!(e, "{ind}for (long long jb = {start}; jb < {end}; jb += {b}) {{");
    w!(e, "{ind}  const long long je = {end} - jb < {b} ? {end} : jb + {b};");
    w!(e, "{ind}  const long long nq = je - jb;");
    w!(e, "{ind}  long long ls_n = 0;");
    for (k, t) in s.state.iter().enumerate() {
        w!(e, "{ind}  {} ls_s{k}[{b}];", cty(*t));
    }
    for (k, t) in s.extra.iter().enumerate() {
        w!(e, "{ind}  {} ls_e{k}[{b}];", cty(*t));
    }
    let inner = format!("{ind}  ");
    if medium {
        w!(e, "{ind}  int big = 0, okb = 1;");
        pass(e, &inner, s, n, "_m", "okb", ", &big");
        w!(e, "{ind}  if (big) {{");
        pass(e, &format!("{ind}    "), s, n, "", "ok", "");
        w!(e, "{ind}  }} else {{");
        w!(e, "{ind}    ok &= okb;");
        w!(e, "{ind}  }}");
    } else {
        pass(e, &inner, s, n, "", "ok", "");
    }
    w!(e, "{ind}}}");
}

/// One pass of a block through the three functions (suffix `sfx`), their success ANDed into
/// `ok`, `extra` after their outputs.
fn pass(e: &mut String, ind: &str, s: &Split, n: &Names<'_>, sfx: &str, ok: &str, extra: &str) {
    let prefix = n.prefix;
    let mut idx = String::from("A, base + iL");
    for d in 0..n.inner {
        let _ = write!(idx, ", i{d}");
    }
    idx.push_str(", iL");
    let state = |amp: &str| -> String { (0..s.state.len()).map(|k| format!(", {amp}ls_s{k}[q]")).collect() };
    let extras = |amp: &str| -> String { (0..s.extra.len()).map(|k| format!(", {amp}ls_e{k}[q]")).collect() };
    let b = LOCKSTEP_BLOCK;
    // before: the count, the state, the values passed on
    w!(e, "{ind}for (long long q = 0; q < nq; ++q) {{");
    w!(e, "{ind}  const long long iL = jb + q;");
    w!(e, "{ind}  {ok} &= {prefix}_pre{sfx}({idx}, &ls_n{}{}{extra});", state("&"), extras("&"));
    w!(e, "{ind}}}");
    // the steps, each over the block (a whole block by a constant count, which gcc unrolls)
    let step = format!("{ok} &= {prefix}_step{sfx}({idx}{}{}{}{extra});", state(""), extras(""), state("&"));
    let step_loop = |e: &mut String, bound: &str| {
        w!(e, "{ind}    for (long long q = 0; q < {bound}; ++q) {{");
        w!(e, "{ind}      const long long iL = jb + q;");
        w!(e, "{ind}      {step}");
        w!(e, "{ind}    }}");
    };
    w!(e, "{ind}for (long long it = 0; it < ls_n; ++it) {{");
    w!(e, "{ind}  if (nq == {b}) {{");
    step_loop(e, &b.to_string());
    w!(e, "{ind}  }} else {{");
    step_loop(e, "nq");
    w!(e, "{ind}  }}");
    w!(e, "{ind}}}");
    // after: the results, to the lanes' outputs
    w!(e, "{ind}for (long long q = 0; q < nq; ++q) {{");
    w!(e, "{ind}  const long long iL = jb + q;");
    for (i, t) in n.lanes.iter().enumerate() {
        w!(e, "{ind}  {} x{i};", cty(*t));
    }
    let outs: String = (0..n.lanes.len()).map(|i| format!(", &x{i}")).collect();
    w!(e, "{ind}  {ok} &= {prefix}_post{sfx}({idx}{}{}{outs}{extra});", state(""), extras(""));
    for (i, o) in n.outs.iter().enumerate() {
        if let Some(o) = o {
            w!(e, "{ind}  {o}[base + iL] = x{i};");
        }
    }
    w!(e, "{ind}}}");
}
