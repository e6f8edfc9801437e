//! `reduce_segments` and `scan_segments` compiled: the plan's structure (a CSR product is
//! one pass over the values after one check of the offsets; nothing materialised between
//! them), `E-INDEX` at the first bad offset as the reference interpreter names it, and
//! results equal to the reference interpreter's on the CPU and the plan interpreter,
//! optimised and unfused, on offsets drawn at random (empty segments, one giant segment,
//! zero segments; the seed is printed).

#![allow(clippy::unwrap_used)]

mod common;

use common::{kernels, optimise, rng};

use eqfuse::ir::plan::{KernelKind, Step};
use eqfuse::{Arrays, Backend, OptimizeOptions, Value};

/// Runs `src` on the reference interpreter, and on the CPU and the plan interpreter over
/// the optimised and the unfused plans: every output within `rtol` of the reference's (0:
/// exactly), or the same error code.
fn agree(src: &str, inputs: &Arrays, seed: u64, rtol: f64) {
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let want = eqfuse::run(&checked, Backend::Reference, inputs);
    let opt = eqfuse::optimize_checked(checked.clone(), &OptimizeOptions::default()).unwrap();
    for (what, plan) in [("optimised", &opt.result.plan), ("unfused", &opt.result.unfused_plan)] {
        for backend in [Backend::Cpu, Backend::Reference] {
            let got = eqfuse::backend::run_plan(plan, opt.source(), backend, inputs);
            match (&want, got) {
                (Ok(want), Ok(got)) => {
                    for (name, w) in want {
                        let tol = eqfuse::ir::value::Tolerance { rtol, atol: 0.0, mismatch_fraction: 0.0 };
                        eqfuse::ir::value::compare(&got[name], w, &tol).unwrap_or_else(|m| {
                            panic!("seed {seed}: {what} on {backend}: {name}: {m}\n{plan}")
                        });
                    }
                }
                (Err(w), Err(g)) => {
                    assert_eq!(w.code, g.code, "seed {seed}: {what} on {backend}: {g} (the reference: {w})")
                }
                (w, g) => panic!("seed {seed}: {what} on {backend}: {g:?}, the reference {w:?}\n{plan}"),
            }
        }
    }
}

fn i64s(v: Vec<i64>) -> Value {
    let n = v.len();
    Value::from(ndarray::Array::from_shape_vec(vec![n], v).unwrap().into_dyn())
}

fn f32s(v: Vec<f32>) -> Value {
    let n = v.len();
    Value::from(ndarray::Array::from_shape_vec(vec![n], v).unwrap().into_dyn())
}

fn f64s(v: Vec<f64>) -> Value {
    let n = v.len();
    Value::from(ndarray::Array::from_shape_vec(vec![n], v).unwrap().into_dyn())
}

const CSR: &str = "input offsets : i64[m + 1]
input cols : i64[nnz]
input vals : f32[nnz]
input x : f32[k]
output y = reduce_segments (+) 0 offsets (map (\\v j -> v * x[j]) vals cols)
";

#[test]
fn a_csr_product_is_one_pass_over_the_values_after_one_check_of_the_offsets() {
    let opt = optimise(CSR);
    let plan = &opt.result.plan;
    let ks = kernels(&plan.steps);
    // the check of the offsets (a reduction to the first bad position), then one kernel over
    // the rows reading the values, the columns and x in place: no product materialised
    assert_eq!(ks.len(), 2, "{plan}");
    assert_eq!(ks[0].kind, KernelKind::Reduce, "{plan}");
    assert!(plan.steps.iter().any(|s| matches!(s, Step::Assert { code: eqfuse::Code::Index, .. })), "{plan}");
    let writes: Vec<&str> = ks[1].lanes.iter().map(|l| plan.values[l.dst].name.as_str()).collect();
    assert_eq!(writes, ["y"], "{plan}");
    assert_eq!(
        plan.values.iter().filter(|v| v.origin == eqfuse::ir::plan::Origin::Computed).count(),
        3,
        "{plan}"
    );
}

/// Offsets of `m` segments over `n` values: lengths drawn small, some empty, one giant.
fn offsets(next: &mut impl FnMut() -> u64, m: usize) -> Vec<i64> {
    let mut o = vec![0i64];
    let giant = (next() % (m as u64 + 1)) as usize;
    for s in 0..m {
        let len = match next() % 4 {
            _ if s == giant => 200 + (next() % 2000) as i64,
            0 => 0,
            1 => 1,
            _ => (next() % 9) as i64,
        };
        o.push(o[s] + len);
    }
    o
}

const SEGMENTS: &str = "input offsets : i64[m + 1]
input xs : f32[n]
input ks : i64[n]
input ds : f64[n]
output s_max = reduce_segments max (-inf) offsets xs
output s_sum = reduce_segments (+) 0 offsets ks
output s_dsum = reduce_segments (+) 0 offsets ds
output s_prod = reduce_segments (\\a b -> a * b) 1 offsets (map (\\k -> k % 3 + 1) ks)
output s_len = reduce_segments (+) 0 offsets (fill [n] 1)
let (mv, mi) = reduce_segments (\\(a, i) (b, j) -> if b < a || (b == a && j < i) then (b, j) else (a, i)) (inf, n) offsets (xs, iota n)
output mv
output mi
output c_max = scan_segments max (-inf) offsets xs
output c_sum = scan_segments (+) 0 offsets ks
output c_dsum = scan_segments (+) 0 offsets ds
let (gv, gi) = scan_segments (\\(a, i) (b, j) -> if b > a || (b == a && j < i) then (b, j) else (a, i)) (-inf, n) offsets (xs, iota n)
output gv
output gi
";

#[test]
fn random_segments_agree_with_the_reference() {
    let (seed, mut next) = rng();
    for round in 0..12 {
        let m = match round {
            0 => 0,
            1 => 1,
            _ => (next() % 3000) as usize,
        };
        let o = offsets(&mut next, m);
        let n = *o.last().unwrap() as usize;
        // values with ties, so that the first index of the extreme matters
        let xs: Vec<f32> = (0..n).map(|_| (next() % 50) as f32 - 25.0).collect();
        let ks: Vec<i64> = (0..n).map(|_| (next() % 1000) as i64 - 500).collect();
        let ds: Vec<f64> = (0..n).map(|_| (next() % 100_000) as f64 / 7.0).collect();
        let mut inputs = Arrays::new();
        inputs.insert("offsets".into(), i64s(o));
        inputs.insert("xs".into(), f32s(xs));
        inputs.insert("ks".into(), i64s(ks));
        inputs.insert("ds".into(), f64s(ds));
        // the f64 running sums are reassociated by a parallel scan: within 1e-12
        agree(SEGMENTS, &inputs, seed, 1e-12);
    }
}

/// Offsets that go wrong at `at`, in each way the contract names.
fn bad_offsets(next: &mut impl FnMut() -> u64, n: i64) -> (Vec<i64>, usize) {
    let m = 3 + (next() % 20) as usize;
    let mut o: Vec<i64> = (0..=m).map(|s| n * s as i64 / m as i64).collect();
    let at = (next() % (m as u64 + 1)) as usize;
    match (at, next() % 3) {
        (0, _) => o[0] = 1 + (next() % 3) as i64,
        (a, _) if a == m => o[m] = n - 1 - (next() % 3) as i64,
        (a, 0) => o[a] = o[a - 1] - 1,
        (a, _) => {
            // past the end: every later one too (non-decreasing), so `a` is the first bad
            for x in &mut o[a..] {
                *x = n + 1;
            }
        }
    }
    (o, at)
}

#[test]
fn bad_offsets_are_e_index_at_the_first_bad_position() {
    let (seed, mut next) = rng();
    for src in [
        "input offsets : i64[m + 1]\ninput xs : f32[n]\noutput s = reduce_segments (+) 0 offsets xs\n",
        "input offsets : i64[m + 1]\ninput xs : f32[n]\noutput s = scan_segments (+) 0 offsets xs\n",
    ] {
        for _ in 0..10 {
            let n = 10 + (next() % 50) as i64;
            let (o, at) = bad_offsets(&mut next, n);
            let mut inputs = Arrays::new();
            inputs.insert("offsets".into(), i64s(o.clone()));
            inputs.insert("xs".into(), f32s(vec![1.0; n as usize]));
            let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
            let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap_err();
            let opt = eqfuse::optimize_checked(checked.clone(), &OptimizeOptions::default()).unwrap();
            let got =
                eqfuse::backend::run_plan(&opt.result.plan, opt.source(), Backend::Cpu, &inputs).unwrap_err();
            assert_eq!(got.code, eqfuse::Code::Index, "seed {seed}: {o:?}: {got}");
            assert_eq!(want.code, eqfuse::Code::Index, "seed {seed}: {o:?}: {want}");
            let pos = format!("at position {at} ");
            assert!(got.message.contains(&pos), "seed {seed}: {o:?}: {got} (want {pos})");
            assert!(want.message.contains(&pos), "seed {seed}: {o:?}: {want} (want {pos})");
        }
    }
}
