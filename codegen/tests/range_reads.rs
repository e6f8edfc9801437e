//! Reads proven in bounds by the range analysis (`codegen/src/scalar/range.rs`): the
//! element functions of a clamped stencil, a torus and a guarded stencil as the C emitter
//! writes them (snapshots), and reads that must stay checked.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_optimize::{optimize, OptimizeOptions};

/// The C of `src`'s optimised plan, from its first kernel on (no prelude).
fn kernels_c(src: &str) -> String {
    let checked = check(&parse(src).unwrap()).unwrap();
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let code = eqfuse_codegen::c::generate(&plan);
    let at = code.source.find("\n// ---- kernel k").unwrap();
    code.source[at..].to_string()
}

/// The element function's text (`static inline ... eq_k<i>_elem(...) { ... }`).
fn elem_c(src: &str) -> String {
    let text = kernels_c(src);
    let start = text.find("// the element function\n").unwrap();
    let rest = &text[start..];
    let end = rest.find("\n}\n").unwrap();
    rest[..end + 3].to_string()
}

const STENCIL: &str = "input a : f32[h, w]
output o = generate [h, w] (\\i j ->
  let c = a[i, j] in
  let n = a[clamp (i - 1) 0 (h - 1), j] in
  let s = a[clamp (i + 1) 0 (h - 1), j] in
  let e = a[i, clamp (j + 1) 0 (w - 1)] in
  let ww = a[i, clamp (j - 1) 0 (w - 1)] in
  log (1.0 + c + 0.25 * (n + s + e + ww)))
";

const LIFE: &str = "input g : i32[h, w]
output o = generate [h, w] (\\i j ->
  let up = (i + h - 1) % h in
  let dn = (i + 1) % h in
  let lf = (j + w - 1) % w in
  let rt = (j + 1) % w in
  let s = g[up, lf] + g[up, j] + g[up, rt] + g[i, lf] + g[i, rt] + g[dn, lf] + g[dn, j] + g[dn, rt] in
  if s == 3 || (s == 2 && g[i, j] == 1) then i32 1 else i32 0)
";

/// The clamped stencil with `min`/`max`, and the torus with selects: unchecked reads in
/// the edge split's interior (the selects' intervals join their arms').
#[test]
fn other_phrasings_read_unchecked() {
    let minmax = "input a : f32[h, w]
output o = generate [h, w] (\\i j ->
  a[i, j] + 0.25 * (a[max (i - 1) 0, j] + a[min (i + 1) (h - 1), j] + a[i, min (w - 1) (j + 1)] + a[i, max 0 (j - 1)]))
";
    let selects = "input g : i32[h, w]
output o = generate [h, w] (\\i j ->
  let up = if i == 0 then h - 1 else i - 1 in
  let dn = if i == h - 1 then 0 else i + 1 in
  g[up, j] + g[dn, j])
";
    // (at the edges they stay checked: `max (i - 1) 0 <= h - 1` needs `h >= 1`, which the
    // analysis does not know, and the arm of a select is not narrowed by its guard)
    let nested = "input a : f32[h, w]
output o = generate [h, w] (\\i j ->
  a[min (max (i - 1) 0) (h - 1), j] + a[max (min (i + 1) (h - 1)) 0, j] + a[i, min (w - 1) (max 0 (j + 1))])
";
    for src in [minmax, selects, nested] {
        // the interior of the edge split
        let all = kernels_c(src);
        assert!(all.contains("_elem_in("), "no edge split: {all}");
        let interior = &all[all.find("_elem_in(").unwrap()..];
        let interior = &interior[..interior.find("\n}\n").unwrap()];
        assert!(!interior.contains("eq_ok = false"), "{interior}");
        // every clamp of an index is the index moved there: the margins cover each end
        assert!(!interior.contains("eq_min_i64") && !interior.contains("eq_max_i64"), "{interior}");
    }
}

#[test]
fn clamped_stencil_reads_unchecked() {
    let c = elem_c(STENCIL);
    assert!(!c.contains("eq_ok = false"), "{c}");
    insta::assert_snapshot!(c);
}

#[test]
fn torus_wraps_by_selects() {
    let c = elem_c(LIFE);
    assert!(!c.contains("eq_ok = false"), "{c}");
    assert!(!c.contains("eq_rem_i64"), "{c}");
    insta::assert_snapshot!(c);
}
/// A guarded stencil: its arms become a select, the guarded reads masked loads.
const GUARDED: &str = "input a : f32[n]
output o = generate [n] (\\i -> if i > 0 && i < n - 1 then a[i - 1] + a[i + 1] else 0.0)
";

#[test]
fn guarded_reads_are_selected() {
    let c = elem_c(GUARDED);
    assert!(!c.contains("if ("), "{c}");
    assert!(!c.contains("eq_ok = false"), "{c}");
    insta::assert_snapshot!(c);
}

/// Reads that are not proven keep their checks: `clamp (i + 1) 0 n` reaches `n`,
/// `(i + 1) % (n + 1)` too, `i - 1` under `i >= 0` is -1 at 0, and `(i - 1) % n` as well.
#[test]
fn unproven_reads_stay_checked() {
    for index in ["clamp (i + 1) 0 n", "(i + 1) % (n + 1)", "if i >= 0 then i - 1 else 0", "(i - 1) % n"] {
        let src = format!("input a : f32[n]\noutput o = generate [n] (\\i -> a[{index}])\n");
        let c = elem_c(&src);
        assert!(c.contains("if (!eq_in"), "`a[{index}]` unchecked:\n{c}");
    }
    // ... and `%` by what may be zero keeps its check
    let c = elem_c("input a : i64[n]\noutput o = generate [n] (\\i -> i % a[i])\n");
    assert!(c.contains("== 0) eq_ok = false"), "{c}");
}
