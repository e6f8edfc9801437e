//! Reads the C emitter leaves unchecked because the range analysis proves them in bounds
//! (clamped and wrapped stencils, guarded reads; `codegen/src/scalar/range.rs`), run
//! natively against the reference interpreter at every small size, edges included; and
//! reads out of bounds, which must still fail as the interpreter fails.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{compile_plan, run, Codegen, RunOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{Scalar, Value};
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;

type Arrays = IndexMap<String, Value>;

/// An array of `shape` and type `t` holding distinct small values.
fn array(t: ElemType, shape: &[usize], salt: i64) -> Value {
    let n: usize = shape.iter().product();
    let data: Vec<Scalar> = (0..n as i64)
        .map(|k| match t {
            ElemType::F32 => Scalar::F32(((k * 37 + salt) % 101) as f32 * 0.5),
            _ => Scalar::I32(((k * 7 + salt) % 5 == 0) as i32),
        })
        .collect();
    Value::from_scalars(t, shape, &data).unwrap()
}

/// Runs `src` on `inputs` natively (every kernel compiled) and on the interpreter: the
/// same outputs, or the same error (code and message).
fn agree(src: &str, inputs: &Arrays) {
    let checked = check(&parse(src).unwrap()).unwrap();
    let want = eqfuse_ir::interp::interpret(&checked, inputs);
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let sizes = eqfuse_ir::bind::bind_inputs(&checked, inputs, &eqfuse_ir::Limits::default()).unwrap().sizes;
    let opts = RunOptions { codegen: Codegen::C, block_size: 16, cache_dir: None, ..RunOptions::default() };
    let report = compile_plan(&plan, &opts);
    assert!(report.failure.is_none() && report.vm.is_empty(), "{:?} {:?}\n{src}", report.failure, report.vm);
    let got = run(&plan, inputs, &sizes, &opts);
    let shapes: Vec<_> = inputs.values().map(Value::shape).collect();
    match (want, got) {
        (Ok(w), Ok(g)) => {
            for (name, w) in &w {
                assert!(
                    identical(&g[name], w),
                    "`{name}` at {shapes:?}: got {:?}, want {w:?}\n{src}",
                    g[name]
                );
            }
        }
        (Err(w), Err(g)) => {
            assert_eq!((g.code, &g.message), (w.code, &w.message), "at {shapes:?}\n{src}");
        }
        (w, g) => panic!("at {shapes:?}: got {g:?}, want {w:?}\n{src}"),
    }
}

/// The clamped five-point stencil and the torus (Game of Life), at every size from 1 to 5
/// (a space of one row or one column is all edges).
#[test]
fn clamped_and_wrapped_stencils_agree_at_every_small_size() {
    let stencil = "input a : f32[h, w]
output o = generate [h, w] (\\i j ->
  let n = a[clamp (i - 1) 0 (h - 1), j] in
  let s = a[clamp (i + 1) 0 (h - 1), j] in
  let e = a[i, clamp (j + 1) 0 (w - 1)] in
  let ww = a[i, clamp (j - 1) 0 (w - 1)] in
  a[i, j] + 0.25 * (n + s + e + ww))
";
    let life = "input g : i32[h, w]
output o = generate [h, w] (\\i j ->
  let up = (i + h - 1) % h in
  let dn = (i + 1) % h in
  let lf = (j + w - 1) % w in
  let rt = (j + 1) % w in
  let s = g[up, lf] + g[up, j] + g[up, rt] + g[i, lf] + g[i, rt] + g[dn, lf] + g[dn, j] + g[dn, rt] in
  if s == 3 || (s == 2 && g[i, j] == 1) then i32 1 else i32 0)
";
    // the same written with `min`/`max`, and with selects
    let minmax = "input a : f32[h, w]
output o = generate [h, w] (\\i j ->
  a[i, j] + 0.25 * (a[max (i - 1) 0, j] + a[min (i + 1) (h - 1), j] + a[i, min (w - 1) (j + 1)] + a[i, max 0 (j - 1)]))
";
    let nested = "input a : f32[h, w]
output o = generate [h, w] (\\i j ->
  a[i, j] + 0.25 * (a[min (max (i - 1) 0) (h - 1), j] + a[max (min (i + 1) (h - 1)) 0, j] + a[i, min (w - 1) (max 0 (j + 1))]))
";
    let selects = "input g : i32[h, w]
output o = generate [h, w] (\\i j ->
  let up = if i == 0 then h - 1 else i - 1 in
  let dn = if i == h - 1 then 0 else i + 1 in
  let lf = if j == 0 then w - 1 else j - 1 in
  let rt = if j == w - 1 then 0 else j + 1 in
  g[up, lf] + g[up, j] + g[up, rt] + g[i, lf] + g[i, rt] + g[dn, lf] + g[dn, j] + g[dn, rt])
";
    for h in 1..=5 {
        for w in [1, 2, 3, 5, 19] {
            for f in [stencil, minmax, nested] {
                agree(f, &[("a".to_string(), array(ElemType::F32, &[h, w], 3))].into_iter().collect());
            }
            for f in [life, selects] {
                agree(f, &[("g".to_string(), array(ElemType::I32, &[h, w], 1))].into_iter().collect());
            }
        }
    }
}

/// Guarded reads (computed whatever the guard says, masked) at every size from 1 to 20.
#[test]
fn guarded_reads_agree_at_every_small_size() {
    let src = "input a : f32[n]
output o = generate [n] (\\i -> if i > 0 && i < n - 1 then a[i - 1] + a[i + 1] else a[i])
output p = generate [n] (\\i -> if i == 0 then 0.0 else a[i - 1])
";
    for n in 1..=20 {
        agree(src, &[("a".to_string(), array(ElemType::F32, &[n], 5))].into_iter().collect());
    }
}

/// Reads the analysis must not prove fail where the interpreter fails: a clamp that
/// reaches `n`, a remainder by `n + 1`; and a proven read of an array smaller than the
/// space (the host's check of the space against the shape falls back to checked code).
#[test]
fn reads_out_of_bounds_still_fail() {
    for index in ["clamp (i + 1) 0 n", "(i + 1) % (n + 1)", "if i >= 0 then i - 1 else 0"] {
        let src = format!("input a : f32[n]\noutput o = generate [n] (\\i -> a[{index}])\n");
        for n in 1..=4 {
            agree(&src, &[("a".to_string(), array(ElemType::F32, &[n], 0))].into_iter().collect());
        }
    }
    let src = "input a : f32[m]
input b : f32[n]
output o = generate [n] (\\i -> b[i] + a[clamp (i + 1) 0 (n - 1)] + a[(i + n - 1) % n])
";
    for (m, n) in [(3, 3), (2, 3), (5, 3), (1, 4)] {
        let ins: Arrays = [
            ("a".to_string(), array(ElemType::F32, &[m], 1)),
            ("b".to_string(), array(ElemType::F32, &[n], 2)),
        ]
        .into_iter()
        .collect();
        agree(src, &ins);
    }
}
