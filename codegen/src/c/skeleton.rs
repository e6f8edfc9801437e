//! The CPU skeletons: exported C entry points around a kernel's element function. See the
//! table in [`super`].

use super::{accumulators, Entries, KernelCode, Shared};
use crate::scalar::{emit, FnCtx};
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

/// Generates kernel `index`: its entry points and its text (argument block, functions,
/// entry points), or why it is left to the VM.
pub(crate) fn generate(
    plan: &Plan,
    k: &Kernel,
    index: usize,
    host: &HashSet<ValueId>,
) -> Result<(KernelCode, String), String> {
    let types = crate::lane_types(plan, k, index)?;
    let mut reduce = Vec::new();
    let mut scan = None;
    let mut filter = None;
    let mut permute = None;
    for (lane, &t) in k.lanes.iter().zip(&types) {
        match &lane.op {
            LaneOp::Generate => reduce.push(None),
            LaneOp::Reduce { op, ne } => {
                crate::check_op(op, ne, t).map_err(|e| format!("kernel k{index}: {e}"))?;
                reduce.push(Some(t));
            }
            LaneOp::Scan { op, ne, exclusive } if k.lanes.len() == 1 => {
                crate::check_op(op, ne, t).map_err(|e| format!("kernel k{index}: {e}"))?;
                reduce.push(None);
                scan = Some((op, ne, *exclusive, t));
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
                filter = Some((pred, t));
            }
            LaneOp::Filter { .. } => return Err("a filter of this shape runs on the VM".into()),
            LaneOp::Permute { op, dest, target } if k.lanes.len() == 1 => {
                check_permute(plan, op, dest, target, t, k.space.len())
                    .map_err(|e| format!("kernel k{index}: {e}"))?;
                reduce.push(None);
                permute = Some((op, dest, target, t));
            }
            LaneOp::Permute { .. } => return Err("a permute beside other lanes runs on the VM".into()),
        }
    }
    let name = format!("EqArgs_k{index}");
    let mut layout = Layout::named(Dialect::C, &name);
    let rank = k.space.len();
    for d in 0..rank {
        layout.extent(d);
    }
    let mut funcs = String::new();
    let prefix = format!("eq_k{index}");
    let mut in_space = Vec::new();
    let mut func = |layout: &mut Layout,
                    fname: &str,
                    f: &Func,
                    what: &str,
                    elem: bool|
     -> Result<(), String> {
        let mut cx =
            FnCtx { plan, host, layout, in_space: if elem { Some(&mut in_space) } else { None }, tile: &[] };
        let text = emit(&mut cx, fname, f)?;
        w!(funcs, "// {what}");
        funcs.push_str(&text);
        Ok(())
    };
    func(&mut layout, &format!("{prefix}_elem"), &k.elem, "the element function", true)?;
    if let Some((pred, t)) = filter {
        func(&mut layout, &format!("{prefix}_pred"), pred, "the filter's predicate", false)?;
        let e = filter_entries(&prefix, &name, cty(t));
        let mut text = layout.declaration();
        text.push_str(&funcs);
        text.push_str(&e);
        let code = KernelCode {
            index,
            entries: Entries::Filter(super::FilterCode {
                count: format!("{prefix}_count"),
                write: format!("{prefix}_write"),
                ty: t,
            }),
            slots: layout.slots(),
            reduce,
            in_space,
        };
        return Ok((code, text));
    }
    if let Some((op, dest, target, t)) = permute {
        func(&mut layout, &format!("{prefix}_target"), target, "the permute's target", true)?;
        func(&mut layout, &format!("{prefix}_op0"), op, "the permute's operator", false)?;
        let exts: Vec<String> = (0..rank).map(|d| layout.extent(d)).collect();
        let dims = crate::dest_dims(&mut layout, plan, dest);
        let shared = shared_write(op, t);
        let fetch_add = known_op(op) == Some(KnownOp::Add) && matches!(t, ElemType::I32 | ElemType::I64);
        let e = permute_entries(&prefix, &name, &exts, &dims, t, shared, fetch_add);
        let mut text = layout.declaration();
        text.push_str(&funcs);
        text.push_str(&e);
        let code = KernelCode {
            index,
            entries: Entries::Permute(super::PermuteCode {
                permute: format!("{prefix}_permute"),
                merge: format!("{prefix}_merge"),
                shared: shared.map(|s| (format!("{prefix}_shared"), s)),
                ty: t,
                dest: dest.clone(),
            }),
            slots: layout.slots(),
            reduce,
            in_space,
        };
        return Ok((code, text));
    }
    if let Some((op, ne, exclusive, t)) = scan {
        func(&mut layout, &format!("{prefix}_op0"), op, "the scan's operator", false)?;
        func(&mut layout, &format!("{prefix}_ne0"), ne, "the scan's neutral element", false)?;
        let out = layout.out(0, t, &crate::value_name(plan, k.lanes[0].dst));
        let exts: Vec<String> = (0..rank).map(|d| layout.extent(d)).collect();
        let e = scan_entries(&prefix, &name, &exts, &out, cty(t), exclusive);
        let mut text = layout.declaration();
        text.push_str(&funcs);
        text.push_str(&e);
        let code = KernelCode {
            index,
            entries: Entries::Scan(super::ScanCode {
                scan: format!("{prefix}_scan"),
                fold: format!("{prefix}_fold"),
                prefix: format!("{prefix}_prefix"),
                ty: t,
            }),
            slots: layout.slots(),
            reduce,
            in_space,
        };
        return Ok((code, text));
    }
    let mut commutative = true;
    for (i, lane) in k.lanes.iter().enumerate() {
        if let LaneOp::Reduce { op, ne } = &lane.op {
            func(&mut layout, &format!("{prefix}_op{i}"), op, &format!("lane {i}: the operator"), false)?;
            func(
                &mut layout,
                &format!("{prefix}_ne{i}"),
                ne,
                &format!("lane {i}: the neutral element"),
                false,
            )?;
            commutative &= known_op(op).is_some();
        }
    }
    let outs: Vec<Option<String>> = k
        .lanes
        .iter()
        .enumerate()
        .map(|(i, lane)| match lane.op {
            LaneOp::Generate => Some(layout.out(i, types[i], &crate::value_name(plan, lane.dst))),
            _ => None,
        })
        .collect();
    let exts: Vec<String> = (0..rank).map(|d| layout.extent(d)).collect();

    let mut e = String::new();
    let run = format!("{prefix}_run");
    w!(
        e,
        "EQ_EXPORT int {run}(const {name}* restrict A, long long r0, long long r1, long long j0, long long j1, void* const* red) {{"
    );
    w!(e, "  int ok = 1;");
    w!(e, "  const long long L = {};", exts[rank - 1]);
    w!(e, "  for (long long row = r0; row < r1; ++row) {{");
    outer_indices(&mut e, &exts, "    ");
    w!(e, "    const long long base = row * L;");
    let reds: Vec<usize> = (0..k.lanes.len()).filter(|&i| reduce[i].is_some()).collect();
    for &i in &reds {
        let t = cty(types[i]);
        w!(e, "    {t} ne{i};");
        w!(e, "    ok &= {prefix}_ne{i}(A, -1, &ne{i});");
    }
    let inner = rank - 1;
    // One element at inner index `iL`: compute, write the generate lanes, fold with `fold`.
    let body = |ind: &str, fold: &dyn Fn(usize) -> String| -> String {
        let mut s = String::new();
        for (i, t) in types.iter().enumerate() {
            w!(s, "{ind}{} x{i};", cty(*t));
        }
        let mut call = format!("{prefix}_elem(A, base + iL");
        for d in 0..inner {
            let _ = write!(call, ", i{d}");
        }
        call.push_str(", iL");
        for i in 0..types.len() {
            let _ = write!(call, ", &x{i}");
        }
        w!(s, "{ind}ok &= {call});");
        for (i, o) in outs.iter().enumerate() {
            match o {
                Some(o) => w!(s, "{ind}{o}[base + iL] = x{i};"),
                None => w!(s, "{ind}{}", fold(i)),
            }
        }
        s
    };
    w!(e, "    long long j = j0;");
    if !reds.is_empty() && commutative {
        // independent accumulators: element j into accumulator j mod W
        let wn = reds.iter().map(|&i| accumulators(types[i].size_bytes())).max().unwrap_or(16);
        for &i in &reds {
            w!(e, "    {} acc{i}[{wn}];", cty(types[i]));
            w!(e, "    for (int w = 0; w < {wn}; ++w) acc{i}[w] = ne{i};");
        }
        w!(e, "    for (; j + {wn} <= j1; j += {wn}) {{");
        w!(e, "      for (int w = 0; w < {wn}; ++w) {{");
        w!(e, "        const long long iL = j + w;");
        e.push_str(&body("        ", &|i| {
            format!("ok &= {prefix}_op{i}(A, -1, acc{i}[w], x{i}, &acc{i}[w]);")
        }));
        w!(e, "      }}");
        w!(e, "    }}");
        for &i in &reds {
            w!(e, "    {} s{i} = acc{i}[0];", cty(types[i]));
            w!(e, "    for (int w = 1; w < {wn}; ++w) ok &= {prefix}_op{i}(A, -1, s{i}, acc{i}[w], &s{i});");
        }
    } else {
        for &i in &reds {
            w!(e, "    {} s{i} = ne{i};", cty(types[i]));
        }
    }
    w!(e, "    for (; j < j1; ++j) {{");
    w!(e, "      const long long iL = j;");
    e.push_str(&body("      ", &|i| format!("ok &= {prefix}_op{i}(A, -1, s{i}, x{i}, &s{i});")));
    w!(e, "    }}");
    for &i in &reds {
        w!(e, "    (({}*)red[{i}])[row - r0] = s{i};", cty(types[i]));
    }
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");

    let combine = if reds.is_empty() {
        None
    } else {
        let c = format!("{prefix}_combine");
        w!(
            e,
            "EQ_EXPORT int {c}(const {name}* restrict A, long long lane, const void* parts, long long n, void* dst) {{"
        );
        w!(e, "  int ok = 1;");
        w!(e, "  switch (lane) {{");
        for &i in &reds {
            let t = cty(types[i]);
            w!(e, "  case {i}: {{");
            w!(e, "    const {t}* p = (const {t}*)parts;");
            w!(e, "    {t} s = p[0];");
            w!(e, "    for (long long q = 1; q < n; ++q) ok &= {prefix}_op{i}(A, -1, s, p[q], &s);");
            w!(e, "    *({t}*)dst = s;");
            w!(e, "    break;");
            w!(e, "  }}");
        }
        w!(e, "  default: ok = 0;");
        w!(e, "  }}");
        w!(e, "  return ok;");
        w!(e, "}}");
        Some(c)
    };

    let mut text = layout.declaration();
    text.push_str(&funcs);
    text.push_str(&e);
    let code = KernelCode {
        index,
        entries: Entries::Lanes { run, combine },
        slots: layout.slots(),
        reduce,
        in_space,
    };
    Ok((code, text))
}

/// A filter's entry points over a 1-d space: `count(A, j0, j1, n)` writes how many of
/// elements `[j0, j1)` are kept, `write(A, j0, j1, dst)` writes them from `dst` on, in order.
fn filter_entries(prefix: &str, name: &str, t: &str) -> String {
    let mut e = String::new();
    for (entry, extra) in [("count", "long long* n"), ("write", "void* dst")] {
        w!(e, "EQ_EXPORT int {prefix}_{entry}(const {name}* restrict A, long long j0, long long j1, {extra}) {{");
        w!(e, "  int ok = 1;");
        w!(e, "  long long m = 0;");
        w!(e, "  for (long long j = j0; j < j1; ++j) {{");
        w!(e, "    {t} x;");
        w!(e, "    bool keep;");
        w!(e, "    ok &= {prefix}_elem(A, j, j, &x);");
        w!(e, "    ok &= {prefix}_pred(A, -1, x, &keep);");
        if entry == "count" {
            w!(e, "    m += keep ? 1 : 0;");
        } else {
            w!(e, "    if (keep) (({t}*)dst)[m++] = x;");
        }
        w!(e, "  }}");
        if entry == "count" {
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
    w!(e, "EQ_EXPORT int {prefix}_permute(const {name}* restrict A, long long j0, long long j1, void* dst, unsigned char* touched) {{");
    w!(e, "  int ok = 1;");
    w!(e, "  {t}* restrict d = ({t}*)dst;");
    permute_loop_head(&mut e, prefix, exts, dims, t);
    w!(e, "    if (touched && !touched[f]) {{");
    w!(e, "      d[f] = x;");
    w!(e, "      touched[f] = 1;");
    w!(e, "    }} else {{");
    w!(e, "      {t} y;");
    w!(e, "      ok &= {prefix}_op0(A, -1, d[f], x, &y);");
    w!(e, "      d[f] = y;");
    w!(e, "    }}");
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    w!(e, "EQ_EXPORT int {prefix}_merge(const {name}* restrict A, void* dst, const void* part, const unsigned char* touched, long long n) {{");
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
    w!(
        e,
        "EQ_EXPORT int {prefix}_shared(const {name}* restrict A, long long j0, long long j1, void* dst) {{"
    );
    w!(e, "  int ok = 1;");
    w!(e, "  {t}* d = ({t}*)dst;");
    permute_loop_head(&mut e, prefix, exts, dims, t);
    match shared {
        Shared::KeepNew => w!(e, "    __atomic_store(&d[f], &x, __ATOMIC_RELAXED);"),
        Shared::KeepOld => w!(e, "    (void)d; (void)f; (void)x;"),
        // integers wrap (two's complement) in `__atomic_fetch_add` as in the prelude's `+`
        Shared::Atomic if fetch_add => w!(e, "    __atomic_fetch_add(&d[f], x, __ATOMIC_RELAXED);"),
        Shared::Atomic => {
            w!(e, "    {t} old, y;");
            w!(e, "    __atomic_load(&d[f], &old, __ATOMIC_RELAXED);");
            w!(e, "    do {{");
            w!(e, "      ok &= {prefix}_op0(A, -1, old, x, &y);");
            w!(e, "    }} while (!__atomic_compare_exchange(&d[f], &old, &y, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));");
        }
    }
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    e
}

/// The shared head of a permute entry's loop over elements `[j0, j1)`: the element `x`, its
/// target checked (a `-1` into a rank-1 destination skips it, one out of bounds fails the
/// call and skips it), and its flat position `f`; the loop's body goes on from there.
fn permute_loop_head(e: &mut String, prefix: &str, exts: &[String], dims: &[String], t: &str) {
    let rank = exts.len();
    let ix: Vec<String> = (0..rank).map(|d| format!("i{d}")).collect();
    let tg: Vec<String> = (0..dims.len()).map(|d| format!("t{d}")).collect();
    w!(e, "  for (long long j = j0; j < j1; ++j) {{");
    w!(e, "    long long eq_t = j;");
    for d in (0..rank).rev() {
        if d == 0 {
            w!(e, "    const long long i0 = eq_t;");
        } else {
            w!(e, "    const long long i{d} = eq_t % {};", exts[d]);
            w!(e, "    eq_t /= {};", exts[d]);
        }
    }
    w!(e, "    {t} x;");
    w!(e, "    ok &= {prefix}_elem(A, j, {}, &x);", ix.join(", "));
    w!(e, "    long long {};", tg.join(", "));
    let outs: Vec<String> = tg.iter().map(|t| format!("&{t}")).collect();
    w!(e, "    ok &= {prefix}_target(A, j, {}, {});", ix.join(", "), outs.join(", "));
    if dims.len() == 1 {
        w!(e, "    if (t0 == -1) continue;");
    }
    let inb: Vec<String> = tg
        .iter()
        .zip(dims)
        .map(|(t, d)| format!("(unsigned long long){t} < (unsigned long long){d}"))
        .collect();
    w!(e, "    if (!({})) {{ ok = 0; continue; }}", inb.join(" && "));
    let mut flat = "t0".to_string();
    for (k, d) in dims.iter().enumerate().skip(1) {
        flat = format!("({flat} * {d} + t{k})");
    }
    w!(e, "    const long long f = {flat};");
}

/// Lines declaring `i0 .. i{rank-2}`, the outer indices of `row`.
fn outer_indices(e: &mut String, exts: &[String], ind: &str) {
    let rank = exts.len();
    if rank >= 2 {
        w!(e, "{ind}long long eq_t = row;");
        for d in (0..rank - 1).rev() {
            if d == 0 {
                w!(e, "{ind}const long long i0 = eq_t;");
            } else {
                w!(e, "{ind}const long long i{d} = eq_t % {};", exts[d]);
                w!(e, "{ind}eq_t /= {};", exts[d]);
            }
        }
    }
}

/// A scan's entry points: `fold` (a segment's total), `prefix` (the segments' carries) and
/// `scan` (rows or segments from a carry).
fn scan_entries(prefix: &str, name: &str, exts: &[String], out: &str, t: &str, exclusive: bool) -> String {
    let rank = exts.len();
    let mut call = format!("{prefix}_elem(A, base + j");
    for d in 0..rank - 1 {
        let _ = write!(call, ", i{d}");
    }
    call.push_str(", j, &x)");
    let mut e = String::new();
    w!(e, "EQ_EXPORT int {prefix}_fold(const {name}* restrict A, long long row, long long j0, long long j1, void* part) {{");
    w!(e, "  int ok = 1;");
    w!(e, "  const long long L = {};", exts[rank - 1]);
    outer_indices(&mut e, exts, "  ");
    w!(e, "  const long long base = row * L;");
    w!(e, "  {t} s;");
    w!(e, "  ok &= {prefix}_ne0(A, -1, &s);");
    w!(e, "  for (long long j = j0; j < j1; ++j) {{");
    w!(e, "    {t} x;");
    w!(e, "    ok &= {call};");
    w!(e, "    ok &= {prefix}_op0(A, -1, s, x, &s);");
    w!(e, "  }}");
    w!(e, "  *({t}*)part = s;");
    w!(e, "  return ok;");
    w!(e, "}}");
    w!(e, "EQ_EXPORT int {prefix}_prefix(const {name}* restrict A, const void* parts, long long n, void* carries) {{");
    w!(e, "  int ok = 1;");
    w!(e, "  {t} s;");
    w!(e, "  ok &= {prefix}_ne0(A, -1, &s);");
    w!(e, "  for (long long q = 0; q < n; ++q) {{");
    w!(e, "    (({t}*)carries)[q] = s;");
    w!(e, "    ok &= {prefix}_op0(A, -1, s, ((const {t}*)parts)[q], &s);");
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    w!(
        e,
        "EQ_EXPORT int {prefix}_scan(const {name}* restrict A, long long r0, long long r1, long long j0, long long j1, const void* carry) {{"
    );
    w!(e, "  int ok = 1;");
    w!(e, "  const long long L = {};", exts[rank - 1]);
    w!(e, "  for (long long row = r0; row < r1; ++row) {{");
    outer_indices(&mut e, exts, "    ");
    w!(e, "    const long long base = row * L;");
    w!(e, "    {t} s;");
    w!(e, "    if (carry) s = *(const {t}*)carry; else ok &= {prefix}_ne0(A, -1, &s);");
    w!(e, "    for (long long j = j0; j < j1; ++j) {{");
    w!(e, "      {t} x;");
    w!(e, "      ok &= {call};");
    if exclusive {
        w!(e, "      {out}[base + j] = s;");
        w!(e, "      ok &= {prefix}_op0(A, -1, s, x, &s);");
    } else {
        w!(e, "      ok &= {prefix}_op0(A, -1, s, x, &s);");
        w!(e, "      {out}[base + j] = s;");
    }
    w!(e, "    }}");
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    e
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
