//! The two-version walk of a `run` entry whose element function calls `sin`, `cos` or `tan`
//! on `f32` (issue 43). Those functions select between a cheap reduction, right for
//! `|x| < 2^28 π/2`, and an exact one that costs most of the loop
//! (`eqfuse_ir::math`, `docs/math.md`). The entry walks its points in blocks of
//! [`TRIG_BLOCK`]: first the element function emitted with the cheap path only
//! (`<prefix>_elem_m`, [`crate::scalar::emit_medium_trig`]), which also tells whether any
//! argument of the block needs the exact path; only then is the block computed again by the
//! element function itself, whose results and failures (`ok`) replace the first pass's. So
//! the results are the element function's, bit for bit, and a block of ordinary arguments
//! costs the cheap path alone. Kernels of generate lanes whose points are walked as rows or as
//! one flat loop take it, and so do reductions along rows: a block's elements are kept in a
//! buffer of [`TRIG_BLOCK`] per reduction and folded from there, into the same accumulators in
//! the same order as the one-version walk (the block is a multiple of every accumulator
//! count), so the results do not change. Scans, tiles, column walks and edge splits keep one
//! version.

use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Func, Inst};
use eqfuse_ir::types::ElemType;
use std::fmt::Write as _;

/// The points of a block of the two-version walk.
pub const TRIG_BLOCK: usize = 256;

/// Whether `f` (nested blocks included) calls `sin`, `cos` or `tan` on `f32`.
pub(super) fn calls_f32_trig(f: &Func) -> bool {
    f.body.all_insts().into_iter().any(|inst| match inst {
        Inst::Call { f: ScalarFn::Sin | ScalarFn::Cos | ScalarFn::Tan, args, .. } => {
            args.first().and_then(|&a| f.reg_types.get(a as usize)) == Some(&ElemType::F32)
        }
        _ => false,
    })
}

/// One point's code at inner index `iL`, given its indentation, the element function's
/// suffix, the variable its success is ANDed into, and the arguments after its outputs.
pub(super) type Point<'a> = dyn Fn(&str, &str, &str, &str) -> String + 'a;

/// Appends the walk of inner indices `[start, end)` (C expressions; `start` is read once) in
/// blocks `[jb, je)`: each block by `<prefix>_elem_m` into `okb`, then, if it flagged an
/// argument, again by `<prefix>_elem` into `ok`; else `okb` into `ok`; then `after` (given its
/// indentation), which may read the block's elements where `point` kept them (a reduction
/// folds them there, in the order of the points).
pub(super) fn blocks(
    e: &mut String,
    ind: &str,
    start: &str,
    end: &str,
    point: &Point<'_>,
    after: &dyn Fn(&str) -> String,
) {
    let b = TRIG_BLOCK;
    w!(e, "{ind}for (long long jb = {start}; jb < {end}; jb += {b}) {{");
    w!(e, "{ind}  const long long je = {end} - jb < {b} ? {end} : jb + {b};");
    w!(e, "{ind}  int big = 0, okb = 1;");
    w!(e, "{ind}  for (long long iL = jb; iL < je; ++iL) {{");
    e.push_str(&point(&format!("{ind}    "), "elem_m", "okb", ", &big"));
    w!(e, "{ind}  }}");
    w!(e, "{ind}  if (big) {{");
    w!(e, "{ind}    for (long long iL = jb; iL < je; ++iL) {{");
    e.push_str(&point(&format!("{ind}      "), "elem", "ok", ""));
    w!(e, "{ind}    }}");
    w!(e, "{ind}  }} else {{");
    w!(e, "{ind}    ok &= okb;");
    w!(e, "{ind}  }}");
    e.push_str(&after(&format!("{ind}  ")));
    w!(e, "{ind}}}");
}
