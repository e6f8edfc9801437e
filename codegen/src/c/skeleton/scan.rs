//! The scan skeleton: a scan of one lane, or over a group (its head lane and its
//! [`eqfuse_ir::plan::LaneOp::Part`]s), whose accumulator has a component per lane, each in
//! a variable of its own (`s<l>`), folded by the group's operator in order (earlier on the
//! left: the operator need not commute).

use super::staged::staged;
use super::{group_call, outer_indices};
use crate::cty;
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

/// A scan's entry points (see [`crate::c::abi`]): `fold` (a segment's total), `prefix` (the
/// segments' carries, in order) and `scan` (rows or segments from a carry), for a scan whose
/// components have element types `tys` and output arrays `outs` (C expressions).
pub(super) fn scan_entries(
    prefix: &str,
    name: &str,
    exts: &[String],
    outs: &[String],
    tys: &[ElemType],
    exclusive: bool,
) -> String {
    let rank = exts.len();
    let w = tys.len();
    let ts: Vec<&str> = tys.iter().map(|&t| cty(t)).collect();
    let mut call = format!("{prefix}_elem(A, base + j");
    for d in 0..rank - 1 {
        let _ = write!(call, ", i{d}");
    }
    call.push_str(", j");
    for l in 0..w {
        let _ = write!(call, ", &x{l}");
    }
    call.push(')');
    let decl = |e: &mut String, ind: &str, v: &str| {
        for (l, t) in ts.iter().enumerate() {
            w!(e, "{ind}{t} {v}{l};");
        }
    };
    let ne = group_call(prefix, "ne", 0, w, &[], "s@");
    let op = |x: &str| group_call(prefix, "op", 0, w, &["s@", x], "s@");
    let mut e = String::new();
    w!(e, "{}", super::abi::FOLD.header(prefix, name));
    w!(e, "  int ok = 1;");
    w!(e, "  const long long L = {};", exts[rank - 1]);
    outer_indices(&mut e, exts, "  ");
    w!(e, "  const long long base = row * L;");
    decl(&mut e, "  ", "s");
    w!(e, "  {ne}");
    let xs: Vec<(&str, String)> = ts.iter().enumerate().map(|(l, t)| (*t, format!("x{l}"))).collect();
    // kept for the scan of the same segment, which then need not compute them again
    let keep: Vec<String> =
        outs.iter().enumerate().map(|(l, o)| format!("if (keep) {o}[base + j] = x{l};")).collect();
    let body: Vec<String> = keep.into_iter().chain([op("x@")]).collect();
    staged(&mut e, "  ", &xs, &[format!("ok &= {call};")], &body);
    for (l, t) in ts.iter().enumerate() {
        w!(e, "  *({t}*)part[{l}] = s{l};");
    }
    w!(e, "  return ok;");
    w!(e, "}}");
    w!(e, "{}", super::abi::PREFIX.header(prefix, name));
    w!(e, "  int ok = 1;");
    decl(&mut e, "  ", "s");
    w!(e, "  {ne}");
    for (l, t) in ts.iter().enumerate() {
        w!(e, "  const {t}* p{l} = (const {t}*)parts[{l}];");
        w!(e, "  {t}* c{l} = ({t}*)carries[{l}];");
    }
    w!(e, "  for (long long q = 0; q < n; ++q) {{");
    for l in 0..w {
        w!(e, "    c{l}[q] = s{l};");
    }
    w!(e, "    {}", op("p@[q]"));
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    w!(e, "{}", super::abi::SCAN.header(prefix, name));
    w!(e, "  int ok = 1;");
    w!(e, "  const long long L = {};", exts[rank - 1]);
    w!(e, "  for (long long row = r0; row < r1; ++row) {{");
    outer_indices(&mut e, exts, "    ");
    w!(e, "    const long long base = row * L;");
    decl(&mut e, "    ", "s");
    w!(e, "    if (carry) {{");
    for (l, t) in ts.iter().enumerate() {
        w!(e, "      s{l} = *(const {t}*)carry[{l}];");
    }
    w!(e, "    }} else {{");
    w!(e, "      {ne}");
    w!(e, "    }}");
    let puts: Vec<String> = outs.iter().enumerate().map(|(l, o)| format!("{o}[base + j] = s{l};")).collect();
    let body: Vec<String> = if exclusive {
        puts.into_iter().chain([op("x@")]).collect()
    } else {
        std::iter::once(op("x@")).chain(puts).collect()
    };
    // the elements a fold kept in the outputs (each read before its place is written)
    w!(e, "    if (stored) {{");
    w!(e, "      for (long long j = j0; j < j1; ++j) {{");
    for (l, (t, o)) in ts.iter().zip(outs).enumerate() {
        w!(e, "        const {t} x{l} = {o}[base + j];");
    }
    for b in &body {
        w!(e, "        {b}");
    }
    w!(e, "      }}");
    w!(e, "      continue;");
    w!(e, "    }}");
    staged(&mut e, "    ", &xs, &[format!("ok &= {call};")], &body);
    w!(e, "  }}");
    w!(e, "  return ok;");
    w!(e, "}}");
    e
}
