//! The CPU skeletons: exported C entry points around a kernel's element function. See the
//! table in [`super::abi`], which declares each entry point's parameters.

use super::{abi, accumulators, Entries, FilterCode, KernelCode, Order, PermuteCode, ScanCode, Shared};
use crate::scalar::{emit, emit_medium_trig, FnCtx, InSpace};
use crate::{cty, known_op, Dialect, KnownOp, Layout};
use eqfuse_ir::plan::{Func, Inst, Kernel, LaneOp, PermuteDest, Plan, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use std::collections::HashSet;
use std::fmt::Write as _;

/// Appends a formatted line to a `String` (writing to a `String` cannot fail).
macro_rules! w {
    ($dst:expr, $($arg:tt)*) => {{
        let _ = writeln!($dst, $($arg)*);
    }};
}

mod buffered;
mod columns;
mod lockstep;
mod scan;
mod staged;
mod tiles;
mod two_version;

pub use columns::COLUMNS;
pub use tiles::{TILE_COLUMNS, TILE_ROWS};

/// Which skeleton a kernel's lanes take, with what it needs of them.
enum Kind<'k> {
    /// Generate and reduce lanes.
    Lanes,
    /// One scan: a lane, or a group of `w` lanes (the kernel's only lanes).
    Scan { op: &'k Func, ne: &'k Func, exclusive: bool, w: usize },
    /// One filter lane over a 1-d space.
    Filter { pred: &'k Func, t: ElemType },
    /// One permute lane.
    Permute { op: &'k Func, dest: &'k PermuteDest, target: &'k Func, t: ElemType },
}

/// A kernel's text as the skeletons build it: the argument block's layout, the functions
/// emitted so far, and what the host must check before a launch.
struct Unit<'a> {
    plan: &'a Plan,
    host: &'a HashSet<ValueId>,
    k: &'a Kernel,
    index: usize,
    /// The argument block's type, `EqArgs_k<i>`.
    name: String,
    /// What the kernel's symbols start with, `eq_k<i>`.
    prefix: String,
    layout: Layout,
    funcs: String,
    in_space: Vec<InSpace>,
    /// Per lane: its element type.
    types: Vec<ElemType>,
    /// Per lane: `Some(t)` for a reduce lane.
    reduce: Vec<Option<ElemType>>,
    /// While the interior of an edge split is emitted: its margins ([`FnCtx::margins`]).
    margins: Vec<(usize, usize)>,
    /// Whether `<prefix>_elem_m` was emitted: the `run` entry walks its rows in two
    /// versions ([`two_version`]).
    medium: bool,
    /// The element function split at its loop: the `run` entry walks its points in lockstep
    /// ([`lockstep`]).
    lockstep: Option<lockstep::Split>,
}

impl Unit<'_> {
    /// Emits `f` as the function `<prefix>_<suffix>`, under a comment saying `what` it is;
    /// `elem`: an element function, whose reads at the space's indices go unchecked
    /// ([`FnCtx::in_space`]).
    fn func(&mut self, suffix: &str, f: &Func, what: &str, elem: bool) -> Result<(), String> {
        let fname = format!("{}_{suffix}", self.prefix);
        let in_space = if elem { Some(&mut self.in_space) } else { None };
        let mut cx = FnCtx {
            plan: self.plan,
            host: self.host,
            layout: &mut self.layout,
            in_space,
            tile: &[],
            margins: &self.margins,
            space: &self.k.space,
        };
        let text = emit(&mut cx, &fname, f)?;
        w!(self.funcs, "// {what}");
        self.funcs.push_str(&text);
        Ok(())
    }

    /// Emits `f` as `<prefix>_<suffix>_m`, its `f32` `sin`, `cos`, `tan` by their medium
    /// path ([`emit_medium_trig`]); `elem`: the element function, whose unchecked reads are
    /// listed already.
    fn medium(&mut self, suffix: &str, f: &Func, elem: bool) -> Result<(), String> {
        let fname = format!("{}_{suffix}_m", self.prefix);
        let mut reads = Vec::new();
        let mut cx = FnCtx {
            plan: self.plan,
            host: self.host,
            layout: &mut self.layout,
            in_space: elem.then_some(&mut reads),
            tile: &[],
            margins: &[],
            space: &self.k.space,
        };
        let text = emit_medium_trig(&mut cx, &fname, f)?;
        w!(self.funcs, "// {suffix} with the medium path of sin, cos, tan");
        self.funcs.push_str(&text);
        self.medium = true;
        Ok(())
    }

    /// Emits the element function split at its loop for the lockstep walk (with `medium`,
    /// also with the medium path of `sin`, `cos`, `tan`).
    fn lockstep(&mut self, split: lockstep::Split, medium: bool) -> Result<(), String> {
        for (suffix, f) in [("pre", &split.pre), ("step", &split.step), ("post", &split.post)] {
            self.func(suffix, f, &format!("the element function's {suffix} its loop (lockstep)"), false)?;
            if medium {
                self.medium(suffix, f, false)?;
            }
        }
        self.lockstep = Some(split);
        Ok(())
    }

    /// The space's extents, as C expressions.
    fn exts(&mut self) -> Vec<String> {
        (0..self.k.space.len()).map(|d| self.layout.extent(d)).collect()
    }

    /// The kernel's code with entry points `entries`, and its text: the argument block, the
    /// functions, then the entry points' text `e`.
    fn finish(self, entries: Entries, e: &str) -> (KernelCode, String) {
        let mut text = self.layout.declaration();
        text.push_str(&self.funcs);
        text.push_str(e);
        let code = KernelCode {
            index: self.index,
            entries,
            slots: self.layout.slots(),
            reduce: self.reduce,
            in_space: self.in_space,
        };
        (code, text)
    }
}

/// Generates kernel `index`: its entry points and its text (argument block, functions,
/// entry points), or why it is left to the VM.
pub(crate) fn generate(
    plan: &Plan,
    k: &Kernel,
    index: usize,
    host: &HashSet<ValueId>,
) -> Result<(KernelCode, String), String> {
    let types = crate::lane_types(plan, k, index)?;
    let (kind, reduce) = classify(plan, k, index, &types)?;
    let name = format!("EqArgs_k{index}");
    let mut layout = Layout::named(Dialect::C, &name);
    for d in 0..k.space.len() {
        layout.extent(d);
    }
    let prefix = format!("eq_k{index}");
    let mut u = Unit {
        plan,
        host,
        k,
        index,
        name,
        prefix,
        layout,
        funcs: String::new(),
        in_space: Vec::new(),
        types,
        reduce,
        margins: Vec::new(),
        medium: false,
        lockstep: None,
    };
    u.func("elem", &k.elem, "the element function", true)?;
    match kind {
        Kind::Filter { pred, t } => filter_kernel(u, pred, t),
        Kind::Permute { op, dest, target, t } => permute_kernel(u, op, dest, target, t),
        Kind::Scan { op, ne, exclusive, w } => scan_kernel(u, op, ne, exclusive, w),
        Kind::Lanes => lanes_kernel(u),
    }
}

/// The skeleton kernel `index`'s lanes (of element types `types`) take, and per lane
/// `Some(t)` for a reduce lane; an error says why the kernel runs on the VM.
fn classify<'k>(
    plan: &Plan,
    k: &'k Kernel,
    index: usize,
    types: &[ElemType],
) -> Result<(Kind<'k>, Vec<Option<ElemType>>), String> {
    let mut reduce = Vec::new();
    let mut kind = Kind::Lanes;
    let groups =
        k.groups().ok_or_else(|| format!("kernel k{index}: a part lane that does not follow its head"))?;
    for (h, w) in groups {
        let (lane, t) = (&k.lanes[h], types[h]);
        match &lane.op {
            LaneOp::Reduce { op, ne } if w > 1 => {
                crate::check_group_op(op, ne, &types[h..h + w])
                    .map_err(|e| format!("kernel k{index}: {e}"))?;
                reduce.extend(types[h..h + w].iter().map(|&t| Some(t)));
            }
            LaneOp::Generate => reduce.push(None),
            LaneOp::Reduce { op, ne } => {
                crate::check_op(op, ne, t).map_err(|e| format!("kernel k{index}: {e}"))?;
                reduce.push(Some(t));
            }
            LaneOp::Scan { op, ne, exclusive } if k.lanes.len() == w => {
                let checked = if w > 1 {
                    crate::check_group_op(op, ne, &types[h..h + w])
                } else {
                    crate::check_op(op, ne, t)
                };
                checked.map_err(|e| format!("kernel k{index}: {e}"))?;
                reduce.extend((0..w).map(|_| None));
                kind = Kind::Scan { op, ne, exclusive: *exclusive, w };
            }
            LaneOp::Scan { .. } => return Err("a scan beside other lanes runs on the VM".into()),
            LaneOp::Filter { pred } if k.lanes.len() == 1 && k.space.len() == 1 => {
                if pred.params != [t]
                    || pred.ret.len() != 1
                    || pred.reg_types.get(pred.ret[0] as usize) != Some(&ElemType::Bool)
                {
                    return Err(format!("kernel k{index}: a predicate that is not {t} -> bool"));
                }
                reduce.push(None);
                kind = Kind::Filter { pred, t };
            }
            LaneOp::Filter { .. } => return Err("a filter of this shape runs on the VM".into()),
            LaneOp::Permute { op, dest, target } if k.lanes.len() == 1 => {
                check_permute(plan, op, dest, target, t, k.space.len())
                    .map_err(|e| format!("kernel k{index}: {e}"))?;
                reduce.push(None);
                kind = Kind::Permute { op, dest, target, t };
            }
            LaneOp::Permute { .. } => return Err("a permute beside other lanes runs on the VM".into()),
            LaneOp::Part => {
                return Err(format!("kernel k{index}: a part lane that does not follow its head"))
            }
        }
    }
    Ok((kind, reduce))
}

/// A filter kernel: its predicate, then [`filter_entries`].
fn filter_kernel(mut u: Unit<'_>, pred: &Func, t: ElemType) -> Result<(KernelCode, String), String> {
    u.func("pred", pred, "the filter's predicate", false)?;
    let e = filter_entries(&u.prefix, &u.name, cty(t));
    let entries = Entries::Filter(FilterCode {
        count: abi::COUNT.symbol(&u.prefix),
        write: abi::WRITE.symbol(&u.prefix),
        ty: t,
    });
    Ok(u.finish(entries, &e))
}

/// A permute kernel: its target and operator, then [`permute_entries`].
fn permute_kernel(
    mut u: Unit<'_>,
    op: &Func,
    dest: &PermuteDest,
    target: &Func,
    t: ElemType,
) -> Result<(KernelCode, String), String> {
    u.func("target", target, "the permute's target", true)?;
    u.func("op0", op, "the permute's operator", false)?;
    let exts = u.exts();
    let dims = crate::dest_dims(&mut u.layout, u.plan, dest);
    let shared = shared_write(op, t);
    let fetch_add = known_op(op) == Some(KnownOp::Add) && matches!(t, ElemType::I32 | ElemType::I64);
    let e = permute_entries(&u.prefix, &u.name, &exts, &dims, t, shared, fetch_add);
    let entries = Entries::Permute(PermuteCode {
        permute: abi::PERMUTE.symbol(&u.prefix),
        merge: abi::MERGE.symbol(&u.prefix),
        shared: shared.map(|s| (abi::SHARED.symbol(&u.prefix), s)),
        ty: t,
        dest: dest.clone(),
    });
    Ok(u.finish(entries, &e))
}

/// A scan kernel of `w` lanes (one, or a group): its operator and neutral element, then
/// [`scan::scan_entries`].
fn scan_kernel(
    mut u: Unit<'_>,
    op: &Func,
    ne: &Func,
    exclusive: bool,
    w: usize,
) -> Result<(KernelCode, String), String> {
    u.func("op0", &super::eager::eager_bools(op), "the scan's operator", false)?;
    u.func("ne0", ne, "the scan's neutral element", false)?;
    let tys = u.types[..w].to_vec();
    let outs: Vec<String> =
        (0..w).map(|l| u.layout.out(l, tys[l], &crate::value_name(u.plan, u.k.lanes[l].dst))).collect();
    let exts = u.exts();
    let e = scan::scan_entries(&u.prefix, &u.name, &exts, &outs, &tys, exclusive);
    let entries = Entries::Scan(ScanCode {
        scan: abi::SCAN.symbol(&u.prefix),
        fold: abi::FOLD.symbol(&u.prefix),
        prefix: abi::PREFIX.symbol(&u.prefix),
        tys,
    });
    Ok(u.finish(entries, &e))
}

/// A kernel of generate and reduce lanes: each reduce lane's operator and neutral element,
/// then [`run_entry`] and, with reduce lanes, [`combine_entry`].
fn lanes_kernel(mut u: Unit<'_>) -> Result<(KernelCode, String), String> {
    let k = u.k;
    let mut commutative = true;
    // per lane: the width of the reduction it heads (0: a part, or a generate lane)
    let mut widths = vec![0; k.lanes.len()];
    for (i, lane) in k.lanes.iter().enumerate() {
        if let LaneOp::Reduce { op, ne } = &lane.op {
            let eager = super::eager::eager_bools(op);
            u.func(&format!("op{i}"), &eager, &format!("lane {i}: the operator"), false)?;
            u.func(&format!("ne{i}"), ne, &format!("lane {i}: the neutral element"), false)?;
            widths[i] = lane.op.width();
            commutative &= match widths[i] {
                1 => known_op(op).is_some(),
                2 => super::interleave::keyed_selection(op, ne, &k.elem, i),
                _ => false,
            };
        }
    }
    let outs: Vec<Option<String>> = k
        .lanes
        .iter()
        .enumerate()
        .map(|(i, lane)| match lane.op {
            LaneOp::Generate => Some(u.layout.out(i, u.types[i], &crate::value_name(u.plan, lane.dst))),
            _ => None,
        })
        .collect();
    let exts = u.exts();
    let reds: Vec<usize> = (0..k.lanes.len()).filter(|&i| u.reduce[i].is_some()).collect();
    // a kernel of generate lanes whose element tests the innermost index against the edges
    // (a stencil's boundary) runs the interior with those tests answered: straight-line code
    let edges = if reds.is_empty() { k.elem.edge_split(&k.space) } else { None };
    if let Some(s) = &edges {
        u.margins = s.margins.clone();
        u.func("elem_in", &s.interior, "the element function inside the edges of the space", true)?;
        u.margins.clear();
    }
    let edges = edges.map(|s| s.margins);
    // reductions of a space of two or more dimensions reading across rows fold several rows
    // side by side
    let columns =
        k.space.len() >= 2 && !reds.is_empty() && widths.iter().all(|&w| w == 1) && k.elem.walks_columns();
    // generate lanes over a 2-d space reading across rows (a transposition) walk tiles
    let tiles = k.space.len() == 2 && reds.is_empty() && edges.is_none() && k.elem.walks_columns();
    // generate lanes around one loop walk a block of points through each step together
    let split = if reds.is_empty() && edges.is_none() && !tiles { lockstep::split(&k.elem) } else { None };
    let fast = if columns {
        Fast::Whole(columns::columns_path(&u.prefix, &u.types, &exts))
    } else if tiles {
        let outs: Vec<String> = outs.iter().flatten().cloned().collect();
        Fast::Whole(tiles::tiles_path(&u.prefix, &u.types, &outs))
    } else if reds.is_empty() && edges.is_none() && split.is_none() {
        flat_condition(&mut u, &exts).map_or(Fast::None, Fast::Flat)
    } else {
        Fast::None
    };
    let trig = edges.is_none() && !columns && !tiles && two_version::calls_f32_trig(&k.elem);
    if let Some(split) = split {
        u.lockstep(split, trig)?;
    } else if trig {
        u.medium("elem", &k.elem, true)?;
    }
    let mut e = run_entry(&u, &exts, &outs, &widths, commutative, edges, fast);
    let combine = (!reds.is_empty()).then(|| combine_entry(&mut e, &u, &widths));
    let order = match (columns, tiles) {
        (true, _) => Order::Columns,
        (_, true) => Order::Tiles,
        _ => Order::Rows,
    };
    let entries = Entries::Lanes { run: abi::RUN.symbol(&u.prefix), combine, order };
    Ok(u.finish(entries, &e))
}

/// The call `<prefix>_<f><h>(A, -1, ins.., &outs..)` of a reduction's operator or neutral
/// element headed by lane `h` of width `w`: `ins` names each input component's variable
/// (of the lane it belongs to), `outs` each result's.
fn group_call(prefix: &str, f: &str, h: usize, w: usize, ins: &[&str], out: &str) -> String {
    let mut call = format!("ok &= {prefix}_{f}{h}(A, -1");
    for i in ins {
        for l in h..h + w {
            let _ = write!(call, ", {}", i.replace('@', &l.to_string()));
        }
    }
    for l in h..h + w {
        let _ = write!(call, ", &{}", out.replace('@', &l.to_string()));
    }
    call.push_str(");");
    call
}

/// The `run` entry of a kernel of generate and reduce lanes: the generate lanes written to
/// `outs` (their output arrays), the reductions (heads of `widths[h]` lanes, over a group
/// when more than one: accumulator `s<l>` holds lane `l`'s component) folded per row (into
/// independent accumulators where every operator is `commutative`). With `edges` (per
/// dimension, the points at its start and end where the element's edge tests may hold: no
/// reductions) a row inside the outer dimensions' margins calls `<prefix>_elem_in` for its
/// points inside the innermost margins, and the element function for the rest
/// ([`eqfuse_ir::plan::EdgeSplit`]). `fast`: a path taken first where it applies.
fn run_entry(
    u: &Unit<'_>,
    exts: &[String],
    outs: &[Option<String>],
    widths: &[usize],
    commutative: bool,
    edges: Option<Vec<(usize, usize)>>,
    fast: Fast,
) -> String {
    let (prefix, types) = (&u.prefix, &u.types);
    let reds: Vec<usize> = (0..types.len()).filter(|&i| u.reduce[i].is_some()).collect();
    let heads: Vec<(usize, usize)> =
        widths.iter().enumerate().filter(|(_, &w)| w > 0).map(|(h, &w)| (h, w)).collect();
    let rank = exts.len();
    let mut e = String::new();
    w!(e, "{}", abi::RUN.header(prefix, &u.name));
    w!(e, "  int ok = 1;");
    w!(e, "  const long long L = {};", exts[rank - 1]);
    let inner = rank - 1;
    // one element at inner index `iL` ([`point`]), its success ANDed into `ok`
    let point = |ind: &str, fold: &dyn Fn(usize) -> String, elem: &str, ok: &str, extra: &str| {
        point(u, outs, ind, fold, elem, ok, extra)
    };
    let body = |ind: &str, fold: &dyn Fn(usize) -> String, elem: &str| point(ind, fold, elem, "ok", "");
    // a point of a generate-only kernel (the two-version walk's)
    let gen = |ind: &str, elem: &str, ok: &str, extra: &str| point(ind, &|_| String::new(), elem, ok, extra);
    // a point of the two-version walk of a reduction: its elements kept in the block's buffers
    let keep = |i: usize| if reds.contains(&i) { format!("xb{i}[iL - jb] = x{i};") } else { String::new() };
    let store = |ind: &str, elem: &str, ok: &str, extra: &str| point(ind, &keep, elem, ok, extra);
    if let Fast::Whole(text) = &fast {
        e.push_str(text);
    }
    if let Fast::Flat(cond) = fast {
        // the whole rows as one loop: the element function reads every array at the
        // point's offset in the flattened space, which index `(0, .., 0, f)` gives
        w!(e, "  if (j0 == 0 && j1 == L && {cond}) {{");
        w!(e, "    const long long base = 0;");
        for d in 0..inner {
            w!(e, "    const long long i{d} = 0;");
        }
        if u.medium {
            two_version::blocks(&mut e, "    ", "r0 * L", "r1 * L", &gen, &|_| String::new());
        } else {
            w!(e, "    for (long long iL = r0 * L; iL < r1 * L; ++iL) {{");
            e.push_str(&body("      ", &|_| String::new(), "elem"));
            w!(e, "    }}");
        }
        w!(e, "    return ok;");
        w!(e, "  }}");
    }
    w!(e, "  for (long long row = r0; row < r1; ++row) {{");
    outer_indices(&mut e, exts, "    ");
    w!(e, "    const long long base = row * L;");
    for &i in &reds {
        w!(e, "    {} ne{i};", cty(types[i]));
    }
    for &(h, w) in &heads {
        w!(e, "    {}", group_call(prefix, "ne", h, w, &[], "ne@"));
    }
    w!(e, "    long long j = j0;");
    if !reds.is_empty() && commutative {
        // independent accumulators: element j into accumulator j mod W (every component
        // of a group's in its own array), combined in order at the end
        let wn = reds.iter().map(|&i| accumulators(types[i].size_bytes())).max().unwrap_or(16);
        w!(e, "    const long long jstart = j;");
        for &i in &reds {
            w!(e, "    {} acc{i}[{wn}];", cty(types[i]));
            w!(e, "    for (int w = 0; w < {wn}; ++w) acc{i}[w] = ne{i};");
        }
        let to_acc = |i: usize| match widths[i] {
            0 => String::new(),
            w => group_call(prefix, "op", i, w, &["acc@[w]", "x@"], "acc@[w]"),
        };
        if u.medium {
            // blocks of both versions into buffers, whose points before `jw` (a multiple of
            // the accumulators past `j`, as the block is) are folded as the loop below folds
            // them; the last block's points from `jw` on are folded after, from its buffer
            w!(e, "    const long long jw = j + (j1 - j) / {wn} * {wn};");
            w!(e, "    long long jl = j;");
            buffers(&mut e, u, &reds, "    ", two_version::TRIG_BLOCK);
            let after = |ind: &str| {
                let mut a = String::new();
                w!(a, "{ind}jl = jb;");
                a.push_str(&fold_buffers(u, &reds, ind, "(je < jw ? je : jw) - jb", wn, &to_acc));
                a
            };
            two_version::blocks(&mut e, "    ", "j", "j1", &store, &after);
            w!(e, "    j = jw;");
        } else {
            if buffered::calls_math(&u.k.elem) {
                // blocks of points computed into buffers, then folded as the loop below
                // folds them ([`buffered`]); that loop takes the rest
                let b = buffered::FOLD_BLOCK;
                w!(e, "    for (; j + {b} <= j1; j += {b}) {{");
                w!(e, "      const long long jb = j;");
                buffers(&mut e, u, &reds, "      ", b);
                w!(e, "      for (long long iL = jb; iL < jb + {b}; ++iL) {{");
                e.push_str(&store("        ", "elem", "ok", ""));
                w!(e, "      }}");
                e.push_str(&fold_buffers(u, &reds, "      ", &b.to_string(), wn, &to_acc));
                w!(e, "    }}");
            }
            w!(e, "    for (; j + {wn} <= j1; j += {wn}) {{");
            w!(e, "      for (int w = 0; w < {wn}; ++w) {{");
            w!(e, "        const long long iL = j + w;");
            e.push_str(&body("        ", &to_acc, "elem"));
            w!(e, "      }}");
            w!(e, "    }}");
        }
        for &i in &reds {
            w!(e, "    {} s{i} = acc{i}[0];", cty(types[i]));
        }
        // a row shorter than the accumulators left them all neutral: nothing to combine (a
        // row of 20 would otherwise pay a chain of 63 folds)
        w!(e, "    if (j > jstart) {{");
        for &(h, w) in &heads {
            let call = group_call(prefix, "op", h, w, &["s@", "acc@[w]"], "s@");
            w!(e, "      for (int w = 1; w < {wn}; ++w) {call}");
        }
        w!(e, "    }}");
    } else {
        for &i in &reds {
            w!(e, "    {} s{i} = ne{i};", cty(types[i]));
        }
    }
    // a part lane's component is folded by its head's call
    let fold = |i: usize| match widths[i] {
        0 => String::new(),
        w => group_call(prefix, "op", i, w, &["s@", "x@"], "s@"),
    };
    let pieces: Vec<(&str, &str)> = match edges.as_deref() {
        Some([outer @ .., (head, tail)]) => {
            // [j, jh) and [jt, j1) at the edges, [jh, jt) between (any may be empty; all of
            // the row at the edges when the row is inside an outer dimension's margin)
            w!(e, "    long long jh = j1 < {head}LL ? j1 : {head}LL;");
            w!(e, "    if (jh < j) jh = j;");
            w!(e, "    long long jt = L - {tail}LL;");
            w!(e, "    if (jt > j1) jt = j1;");
            w!(e, "    if (jt < jh) jt = jh;");
            for (d, (h, t)) in outer.iter().enumerate().filter(|(_, m)| **m != (0, 0)) {
                w!(e, "    if (i{d} < {h}LL || i{d} >= {} - {t}LL) jh = jt = j1;", exts[d]);
            }
            vec![("jh", "elem"), ("jt", "elem_in"), ("j1", "elem")]
        }
        _ => vec![("j1", "elem")],
    };
    for (end, elem) in pieces {
        if let Some(split) = &u.lockstep {
            // (no reductions, no edges: one piece)
            let names = lockstep::Names { prefix, inner, outs, lanes: types };
            lockstep::walk(&mut e, "    ", "j", end, split, &names, u.medium);
            continue;
        }
        if u.medium && reds.is_empty() {
            // (no edges: one piece)
            two_version::blocks(&mut e, "    ", "j", end, &gen, &|_| String::new());
            continue;
        }
        if u.medium && commutative {
            // the points from `jw` on, in the last block's buffers
            w!(e, "    for (; j < {end}; ++j) {{");
            e.push_str(&from_buffers(u, &reds, "      ", "j - jl", &fold));
            w!(e, "    }}");
            continue;
        }
        if u.medium {
            // in order, a block at a time
            buffers(&mut e, u, &reds, "    ", two_version::TRIG_BLOCK);
            let after = |ind: &str| {
                let mut a = String::new();
                w!(a, "{ind}for (long long p = 0; p < je - jb; ++p) {{");
                a.push_str(&from_buffers(u, &reds, &format!("{ind}  "), "p", &fold));
                w!(a, "{ind}}}");
                a
            };
            two_version::blocks(&mut e, "    ", "j", end, &store, &after);
            continue;
        }
        w!(e, "    for (; j < {end}; ++j) {{");
        w!(e, "      const long long iL = j;");
        e.push_str(&body("      ", &fold, elem));
        w!(e, "    }}");
    }
    for &i in &reds {
        w!(e, "    (({}*)red[{i}])[row - r0] = s{i};", cty(types[i]));
    }
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    e
}

/// Declares a block's buffers (`n` points, indented by `ind`): one block of each reduction
/// lane's elements, `xb<i>`.
fn buffers(e: &mut String, u: &Unit<'_>, reds: &[usize], ind: &str, n: usize) {
    for &i in reds {
        w!(e, "{ind}{} xb{i}[{n}];", cty(u.types[i]));
    }
}

/// The loop, indented by `ind`, folding the first `count` (a C expression, a multiple of
/// `wn`) points of a block's buffers into the `wn` accumulators, point `p + w` into
/// accumulator `w` ([`from_buffers`] with `to_acc`).
fn fold_buffers(
    u: &Unit<'_>,
    reds: &[usize],
    ind: &str,
    count: &str,
    wn: usize,
    to_acc: &dyn Fn(usize) -> String,
) -> String {
    let mut a = String::new();
    w!(a, "{ind}for (long long p = 0; p < {count}; p += {wn}) {{");
    w!(a, "{ind}  for (int w = 0; w < {wn}; ++w) {{");
    a.push_str(&from_buffers(u, reds, &format!("{ind}    "), "p + w", to_acc));
    w!(a, "{ind}  }}");
    w!(a, "{ind}}}");
    a
}

/// The reduction lanes' elements at buffer position `at` (a C expression) as `x<i>`, then
/// `fold` of each lane.
fn from_buffers(u: &Unit<'_>, reds: &[usize], ind: &str, at: &str, fold: &dyn Fn(usize) -> String) -> String {
    let mut s = String::new();
    for &i in reds {
        w!(s, "{ind}const {} x{i} = xb{i}[{at}];", cty(u.types[i]));
    }
    for &i in reds {
        let f = fold(i);
        if !f.is_empty() {
            w!(s, "{ind}{f}");
        }
    }
    s
}

/// One element of kernel `u`'s `run` entry at inner index `iL`: the element function
/// `<prefix>_<elem>` called with `extra` after its outputs, its success ANDed into `ok`, the
/// generate lanes written to `outs`, the others folded with `fold`.
fn point(
    u: &Unit<'_>,
    outs: &[Option<String>],
    ind: &str,
    fold: &dyn Fn(usize) -> String,
    elem: &str,
    ok: &str,
    extra: &str,
) -> String {
    let (prefix, types, inner) = (&u.prefix, &u.types, u.k.space.len().saturating_sub(1));
    let mut s = String::new();
    for (i, t) in types.iter().enumerate() {
        w!(s, "{ind}{} x{i};", cty(*t));
    }
    let mut call = format!("{prefix}_{elem}(A, base + iL");
    for d in 0..inner {
        let _ = write!(call, ", i{d}");
    }
    call.push_str(", iL");
    for i in 0..types.len() {
        let _ = write!(call, ", &x{i}");
    }
    w!(s, "{ind}{ok} &= {call}{extra});");
    for (i, o) in outs.iter().enumerate() {
        match o {
            Some(o) => w!(s, "{ind}{o}[base + iL] = x{i};"),
            None => {
                let f = fold(i);
                if !f.is_empty() {
                    w!(s, "{ind}{f}");
                }
            }
        }
    }
    s
}

/// A path of a `run` entry taken before its loop over rows, where it applies.
enum Fast {
    /// None.
    None,
    /// Where this C condition holds (with whole rows), the rows as one loop over their
    /// points ([`flat_condition`]).
    Flat(String),
    /// Text that handles the whole call and returns: the rows' reductions folded side by
    /// side ([`columns::columns_path`]), or the points in tiles ([`tiles::tiles_path`]).
    Whole(String),
}

/// [`crate::flat::flat_condition`] for kernel `u`.
fn flat_condition(u: &mut Unit<'_>, exts: &[String]) -> Option<String> {
    crate::flat::flat_condition(u.plan, &mut u.layout, &u.k.elem, &u.in_space, exts)
}

/// Appends the `combine` entry of a kernel whose reductions head `widths[h]` lanes (0: not
/// a head) to `e`: `n` partial results of one reduction (every component of a group's)
/// folded in order; a part lane's call does nothing. Returns its symbol.
fn combine_entry(e: &mut String, u: &Unit<'_>, widths: &[usize]) -> String {
    let prefix = &u.prefix;
    w!(e, "{}", abi::COMBINE.header(prefix, &u.name));
    w!(e, "  int ok = 1;");
    w!(e, "  switch (lane) {{");
    for (h, &w) in widths.iter().enumerate().filter(|(_, &w)| w > 0) {
        w!(e, "  case {h}: {{");
        for l in h..h + w {
            let t = cty(u.types[l]);
            w!(e, "    const {t}* p{l} = (const {t}*)parts[{l}];");
            w!(e, "    {t} s{l} = p{l}[0];");
        }
        w!(e, "    for (long long q = 1; q < n; ++q) {{");
        w!(e, "      {}", group_call(prefix, "op", h, w, &["s@", "p@[q]"], "s@"));
        w!(e, "    }}");
        for l in h..h + w {
            w!(e, "    *({}*)dst[{l}] = s{l};", cty(u.types[l]));
        }
        w!(e, "    break;");
        w!(e, "  }}");
        for l in h + 1..h + w {
            w!(e, "  case {l}: break;");
        }
    }
    w!(e, "  default: ok = 0;");
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    abi::COMBINE.symbol(prefix)
}

/// A filter's entry points over a 1-d space: `count(A, j0, j1, n)` writes how many of
/// elements `[j0, j1)` are kept, `write(A, j0, j1, dst)` writes them from `dst` on, in order.
fn filter_entries(prefix: &str, name: &str, t: &str) -> String {
    let mut e = String::new();
    for entry in [abi::COUNT, abi::WRITE] {
        w!(e, "{}", entry.header(prefix, name));
        w!(e, "  int ok = 1;");
        w!(e, "  long long m = 0;");
        let compute =
            [format!("ok &= {prefix}_elem(A, j, j, &x);"), format!("ok &= {prefix}_pred(A, -1, x, &keep);")];
        if entry == abi::COUNT {
            // a sum: the compiler vectorises it as it is
            w!(e, "  for (long long j = j0; j < j1; ++j) {{");
            w!(e, "    {t} x;");
            w!(e, "    bool keep;");
            for c in &compute {
                w!(e, "    {c}");
            }
            w!(e, "    m += keep ? 1 : 0;");
            w!(e, "  }}");
        } else {
            // the compaction cannot vectorise: the elements and the tests first
            let vars = [(t, "x".to_string()), ("bool", "keep".to_string())];
            staged::staged(&mut e, "  ", &vars, &compute, &[format!("if (keep) (({t}*)dst)[m++] = x;")]);
        }
        if entry == abi::COUNT {
            w!(e, "  *n = m;");
        }
        w!(e, "  return ok;");
        w!(e, "}}");
    }
    e
}

/// Checks a permute lane's functions: `op` is `t -> t -> t`; `target` takes the space's
/// `rank` indices and returns one `i64` per dimension of `dest`.
fn check_permute(
    plan: &Plan,
    op: &Func,
    dest: &PermuteDest,
    target: &Func,
    t: ElemType,
    rank: usize,
) -> Result<(), String> {
    let ret_is = |f: &Func, k: usize, want: ElemType| {
        f.ret.get(k).and_then(|&r| f.reg_types.get(r as usize)) == Some(&want)
    };
    if op.params != [t, t] || op.ret.len() != 1 || !ret_is(op, 0, t) {
        return Err(format!("a permute operator that is not {t} -> {t} -> {t}"));
    }
    let drank = dest.rank(plan).ok_or_else(|| format!("no destination {dest:?}"))?;
    if let PermuteDest::Fill { value, .. } = dest {
        if value.elem_type() != t {
            return Err(format!("a permute of {t} into a fill of {}", value.elem_type()));
        }
    }
    if drank == 0
        || rank == 0
        || target.params.len() != rank
        || target.params.iter().any(|&p| p != ElemType::I64)
        || target.ret.len() != drank
        || (0..drank).any(|k| !ret_is(target, k, ElemType::I64))
    {
        return Err(format!("a permute target that is not {rank} indices -> {drank} indices"));
    }
    Ok(())
}

/// Whether a permute of operator `op` on `t` gets a `shared` entry, and which
/// ([`super::Shared`]): `\a b -> b`, `\a b -> a`, and the known commutative operators.
fn shared_write(op: &Func, t: ElemType) -> Option<Shared> {
    if op.params != [t, t] || op.ret.len() != 1 {
        return None;
    }
    if op.body.insts.is_empty() {
        return match op.ret[0] {
            1 => Some(Shared::KeepNew),
            0 => Some(Shared::KeepOld),
            _ => None,
        };
    }
    (known_op(op).is_some() || and_or(op)).then_some(Shared::Atomic)
}

/// Whether `op` is `(&&)` or `(||)` on `bool`: `if a then b else false`, `if a then true
/// else b` (how lowering writes the lazy operators).
fn and_or(op: &Func) -> bool {
    let ([Inst::If { dst, cond: 0, then_block, then_ret, else_block, else_ret }], [ret]) =
        (op.body.insts.as_slice(), op.ret.as_slice())
    else {
        return false;
    };
    let is_const = |b: &eqfuse_ir::plan::Block, r: u32, v: bool| matches!(b.insts.as_slice(), [Inst::Const { dst, value: Scalar::Bool(x) }] if *dst == r && *x == v);
    dst == ret
        && op.params == [ElemType::Bool, ElemType::Bool]
        && ((then_block.insts.is_empty() && *then_ret == 1 && is_const(else_block, *else_ret, false))
            || (else_block.insts.is_empty() && *else_ret == 1 && is_const(then_block, *then_ret, true)))
}

/// A permute's entry points: `permute(A, j0, j1, dst, touched)`, `merge(A, dst, part,
/// touched, n)` and, where `shared` says so, `shared(A, j0, j1, dst)` (see
/// [`super::PermuteCode`]); `fetch_add`: the operator is an integer `+`.
fn permute_entries(
    prefix: &str,
    name: &str,
    exts: &[String],
    dims: &[String],
    ty: ElemType,
    shared: Option<Shared>,
    fetch_add: bool,
) -> String {
    let t = cty(ty);
    let mut e = String::new();
    w!(e, "{}", abi::PERMUTE.header(prefix, name));
    w!(e, "  int ok = 1;");
    w!(e, "  {t}* restrict d = ({t}*)dst;");
    let combine = format!("  ok &= {prefix}_op0(A, -1, d[f], x, &y);");
    let declare = format!("  {t} y;");
    let body = [
        "if (touched && !touched[f]) {",
        "  d[f] = x;",
        "  touched[f] = 1;",
        "} else {",
        &declare,
        &combine,
        "  d[f] = y;",
        "}",
    ];
    permute_loop(&mut e, prefix, exts, dims, t, &body);
    w!(e, "  return ok;");
    w!(e, "}}");
    w!(e, "{}", abi::MERGE.header(prefix, name));
    w!(e, "  int ok = 1;");
    w!(e, "  {t}* restrict d = ({t}*)dst;");
    w!(e, "  const {t}* restrict p = (const {t}*)part;");
    w!(e, "  for (long long q = 0; q < n; ++q) {{");
    w!(e, "    if (touched[q]) {{");
    w!(e, "      {t} y;");
    w!(e, "      ok &= {prefix}_op0(A, -1, d[q], p[q], &y);");
    w!(e, "      d[q] = y;");
    w!(e, "    }}");
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    let Some(shared) = shared else { return e };
    // `dst` is written by other calls at the same time: no `restrict`, and every access to
    // it atomic (relaxed: the calls share no other data, and the host joins them before it
    // reads the result)
    w!(e, "{}", abi::SHARED.header(prefix, name));
    w!(e, "  int ok = 1;");
    w!(e, "  {t}* d = ({t}*)dst;");
    let (declare, combine) = (format!("{t} old, y;"), format!("  ok &= {prefix}_op0(A, -1, old, x, &y);"));
    let body: Vec<&str> = match shared {
        Shared::KeepNew => vec!["__atomic_store(&d[f], &x, __ATOMIC_RELAXED);"],
        Shared::KeepOld => vec!["(void)d; (void)f; (void)x;"],
        // integers wrap (two's complement) in `__atomic_fetch_add` as in the prelude's `+`
        Shared::Atomic if fetch_add => vec!["__atomic_fetch_add(&d[f], x, __ATOMIC_RELAXED);"],
        Shared::Atomic => vec![
            &declare,
            "__atomic_load(&d[f], &old, __ATOMIC_RELAXED);",
            "do {",
            &combine,
            "} while (!__atomic_compare_exchange(&d[f], &old, &y, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));",
        ],
    };
    permute_loop(&mut e, prefix, exts, dims, t, &body);
    w!(e, "  return ok;");
    w!(e, "}}");
    e
}

/// A permute entry's loop over elements `[j0, j1)`, staged ([`staged::staged`]): each
/// block's elements and targets computed first (a loop the compiler vectorises), then, in
/// order, each target checked (a `-1` into a rank-1 destination skips it, one out of bounds
/// fails the call and skips it), its flat position `f` found and `body` run.
fn permute_loop(e: &mut String, prefix: &str, exts: &[String], dims: &[String], t: &str, body: &[&str]) {
    let rank = exts.len();
    let ix: Vec<String> = (0..rank).map(|d| format!("i{d}")).collect();
    let tg: Vec<String> = (0..dims.len()).map(|d| format!("t{d}")).collect();
    let mut compute = vec!["long long eq_t = j;".to_string()];
    for d in (0..rank).rev() {
        if d == 0 {
            compute.push("const long long i0 = eq_t;".to_string());
        } else {
            compute.push(format!("const long long i{d} = eq_t % {};", exts[d]));
            compute.push(format!("eq_t /= {};", exts[d]));
        }
    }
    compute.push(format!("ok &= {prefix}_elem(A, j, {}, &x);", ix.join(", ")));
    let outs: Vec<String> = tg.iter().map(|t| format!("&{t}")).collect();
    compute.push(format!("ok &= {prefix}_target(A, j, {}, {});", ix.join(", "), outs.join(", ")));
    let mut lines = Vec::new();
    if dims.len() == 1 {
        lines.push("if (t0 == -1) continue;".to_string());
    }
    let inb: Vec<String> = tg
        .iter()
        .zip(dims)
        .map(|(t, d)| format!("(unsigned long long){t} < (unsigned long long){d}"))
        .collect();
    lines.push(format!("if (!({})) {{ ok = 0; continue; }}", inb.join(" && ")));
    let mut flat = "t0".to_string();
    for (k, d) in dims.iter().enumerate().skip(1) {
        flat = format!("({flat} * {d} + t{k})");
    }
    lines.push(format!("const long long f = {flat};"));
    lines.extend(body.iter().map(|l| l.to_string()));
    let vars: Vec<(&str, String)> =
        std::iter::once((t, "x".to_string())).chain(tg.iter().map(|g| ("long long", g.clone()))).collect();
    staged::staged(e, "  ", &vars, &compute, &lines);
}

/// Lines declaring `i0 .. i{rank-2}`, the outer indices of `row`.
fn outer_indices(e: &mut String, exts: &[String], ind: &str) {
    outer_indices_of(e, exts, ind, "row", &|d| format!("i{d}"));
}

/// Lines declaring the outer indices of the flattened row `row` (a C expression), index
/// `d` named `name(d)`.
fn outer_indices_of(e: &mut String, exts: &[String], ind: &str, row: &str, name: &dyn Fn(usize) -> String) {
    let rank = exts.len();
    if rank >= 2 {
        w!(e, "{ind}long long eq_t = {row};");
        for d in (0..rank - 1).rev() {
            let n = name(d);
            if d == 0 {
                w!(e, "{ind}const long long {n} = eq_t;");
            } else {
                w!(e, "{ind}const long long {n} = eq_t % {};", exts[d]);
                w!(e, "{ind}eq_t /= {};", exts[d]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::ACCUMULATORS;
    use super::accumulators;

    #[test]
    fn accumulators_fill_four_vectors() {
        assert_eq!(accumulators(4), ACCUMULATORS);
        assert_eq!(accumulators(8), 32);
        assert_eq!(accumulators(1), 64);
    }
}
