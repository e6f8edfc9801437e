//! Reductions and scans over groups, `argmin`/`argmax` and `iterate` over tuples compiled:
//! the plan's structure (one pass: one kernel whose head lane folds the group and whose
//! other lanes are its parts; what makes the group fused into it), and results equal to the
//! reference interpreter's on the CPU and the plan interpreter, optimised and unfused, on
//! inputs drawn at random (the seed is printed).

#![allow(clippy::unwrap_used)]

mod common;

use common::{kernels, optimise, rng};

use eqfuse::ir::plan::{LaneOp, Step};
use eqfuse::{Arrays, Backend, OptimizeOptions, Value};

/// Runs `src` on `inputs` on the reference interpreter, the CPU (optimised) and the plan
/// interpreter and the CPU over the optimised and unfused plans: all must agree exactly.
fn agree(src: &str, inputs: &Arrays, seed: u64) {
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let want = eqfuse::run(&checked, Backend::Reference, inputs).unwrap();
    let opt = eqfuse::optimize_checked(checked.clone(), &OptimizeOptions::default()).unwrap();
    for (what, plan) in [("optimised", &opt.result.plan), ("unfused", &opt.result.unfused_plan)] {
        for backend in [Backend::Cpu, Backend::Reference] {
            let got = eqfuse::backend::run_plan(plan, opt.source(), backend, inputs)
                .unwrap_or_else(|e| panic!("seed {seed}: {what} on {backend}: {e}\n{plan}"));
            for (name, w) in &want {
                let tol = eqfuse::ir::value::Tolerance { rtol: 1e-12, atol: 0.0, mismatch_fraction: 0.0 };
                eqfuse::ir::value::compare(&got[name], w, &tol)
                    .unwrap_or_else(|m| panic!("seed {seed}: {what} on {backend}: {name}: {m}\n{plan}"));
            }
        }
    }
}

fn f32s(v: Vec<f32>, shape: &[usize]) -> Value {
    Value::from(ndarray::Array::from_shape_vec(shape.to_vec(), v).unwrap().into_dyn())
}

const ARGMIN: &str = "input xs : f32[n]
input m : f32[r, c]
output i = argmin xs
output j = argmax m
";

#[test]
fn an_argmin_is_one_pass_whose_lanes_are_the_group() {
    let opt = optimise(ARGMIN);
    let plan = &opt.result.plan;
    let ks = kernels(&plan.steps);
    // one kernel per argmin, each reading its input once: the index is the loop's own
    assert_eq!(ks.len(), 2, "{plan}");
    for k in ks {
        assert!(matches!(k.lanes[0].op, LaneOp::Reduce { .. }), "{plan}");
        assert!(matches!(k.lanes[1].op, LaneOp::Part), "{plan}");
        assert_eq!(k.lanes.len(), 2, "{plan}");
    }
    // an empty row is E-SHAPE, checked before the pass
    assert!(plan.steps.iter().any(|s| matches!(s, Step::Assert { code: eqfuse::Code::Shape, .. })), "{plan}");
}

#[test]
fn argmin_and_argmax_agree_with_the_reference_on_random_inputs_with_nans_and_ties() {
    let (seed, mut next) = rng();
    for _ in 0..6 {
        let n = 1 + (next() % 3000) as usize;
        let (r, c) = (1 + (next() % 5) as usize, 1 + (next() % 700) as usize);
        // few distinct values: many ties; some NaNs and -0.0
        let mut draw = |_| match next() % 17 {
            0 => f32::NAN,
            1 => -0.0,
            k => (k % 5) as f32 - 2.0,
        };
        let mut inputs = Arrays::new();
        inputs.insert("xs".into(), f32s((0..n).map(&mut draw).collect(), &[n]));
        inputs.insert("m".into(), f32s((0..r * c).map(&mut draw).collect(), &[r, c]));
        agree(ARGMIN, &inputs, seed);
    }
}

#[test]
fn an_empty_argmin_is_e_shape_on_every_backend() {
    let checked = eqfuse::check(&eqfuse::parse(ARGMIN).unwrap()).unwrap();
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), f32s(vec![], &[0]));
    inputs.insert("m".into(), f32s(vec![1.0], &[1, 1]));
    for backend in [Backend::Reference, Backend::Cpu] {
        let e = eqfuse::run(&checked, backend, &inputs).unwrap_err();
        assert_eq!(e.code, eqfuse::Code::Shape, "{backend}: {e}");
        assert!(e.message.contains("argmin"), "{backend}: {e}");
    }
}

const WELFORD: &str = "input xs : f64[r, c]
let comb = \\(na, ma, qa) (nb, mb, qb) ->
  let nn = na + nb in
  if nn == 0.0 then (0.0, 0.0, 0.0)
  else let dd = mb - ma in (nn, ma + dd * nb / nn, qa + qb + dd * dd * na * nb / nn)
let (cnt, mean, m2) = reduce comb (0.0, 0.0, 0.0) (map (\\x -> (1.0, x, 0.0)) xs)
output mean
output var = map (\\q k -> q / k) m2 cnt
";

#[test]
fn a_reduction_over_the_group_a_map_makes_is_one_kernel_reading_the_input_once() {
    let opt = optimise(WELFORD);
    let plan = &opt.result.plan;
    let ks = kernels(&plan.steps);
    let groups: Vec<_> = ks.iter().filter(|k| k.lanes.iter().any(|l| matches!(l.op, LaneOp::Part))).collect();
    assert_eq!(groups.len(), 1, "{plan}");
    // the map is fused: the group's kernel reads `xs`, and no kernel writes the map's arrays
    let g = groups[0];
    assert_eq!(g.lanes.len(), 3, "{plan}");
    assert!(plan.to_string().contains("xs["), "{plan}");
    assert_eq!(ks.len(), 2, "the map is not fused into the reduction:\n{plan}");
}

#[test]
fn welford_agrees_with_the_reference() {
    let (seed, mut next) = rng();
    for _ in 0..4 {
        let (r, c) = (1 + (next() % 6) as usize, 1 + (next() % 500) as usize);
        let v: Vec<f64> = (0..r * c).map(|_| (next() % 10_000) as f64 / 100.0).collect();
        let mut inputs = Arrays::new();
        inputs.insert(
            "xs".into(),
            Value::from(ndarray::Array::from_shape_vec(vec![r, c], v).unwrap().into_dyn()),
        );
        let checked = eqfuse::check(&eqfuse::parse(WELFORD).unwrap()).unwrap();
        let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
        let got = eqfuse::run(&checked, Backend::Cpu, &inputs).unwrap();
        // the combination's order is free (an associative operator): rounding may differ
        let tol = eqfuse::ir::value::Tolerance { rtol: 1e-9, atol: 1e-9, mismatch_fraction: 0.0 };
        for (name, w) in &want {
            eqfuse::ir::value::compare(&got[name], w, &tol)
                .unwrap_or_else(|m| panic!("seed {seed}: {name}: {m}"));
        }
    }
}

const RUNMAX: &str = "input xs : i32[n]
input m : i32[r, c]
let runop = \\(a, i) (b, j) -> if b > a || (b == a && j < i) then (b, j) else (a, i)
let (rv, ri) = scan runop (-2000000000, -1) (xs, iota n)
output rv
output ri
let (mv, mi) = scan_exclusive runop (-2000000000, -1) (m, generate [r, c] (\\p q -> q))
output mv
output mi
";

#[test]
fn scans_over_groups_agree_with_the_reference() {
    let opt = optimise(RUNMAX);
    let plan = &opt.result.plan;
    let scans: Vec<_> = kernels(&plan.steps)
        .into_iter()
        .filter(|k| matches!(k.lanes[0].op, LaneOp::Scan { .. }) && k.lanes.len() == 2)
        .collect();
    assert_eq!(scans.len(), 2, "{plan}");
    let (seed, mut next) = rng();
    for _ in 0..4 {
        let n = 1 + (next() % 5000) as usize;
        let (r, c) = (1 + (next() % 4) as usize, 1 + (next() % 300) as usize);
        let mut ints = |k: usize| -> Vec<i32> { (0..k).map(|_| (next() % 50) as i32 - 25).collect() };
        let mut inputs = Arrays::new();
        inputs.insert("xs".into(), Value::from(ndarray::arr1(&ints(n)).into_dyn()));
        inputs.insert(
            "m".into(),
            Value::from(ndarray::Array::from_shape_vec(vec![r, c], ints(r * c)).unwrap().into_dyn()),
        );
        agree(RUNMAX, &inputs, seed);
    }
}

const ESCAPE: &str = "input cr : f64[h, w]
input ci : f64[h, w]
output count = map (\\a b ->
  let (zr, zi, k) = iterate 64 (\\(x, y, j) ->
    if x * x + y * y > 4.0 then (x, y, j) else (x * x - y * y + a, 2.0 * x * y + b, j + 1)) (0.0, 0.0, 0) in
  k) cr ci
let (fa, fb) = iterate 90 (\\(p, q) -> (q, p + q)) (0, 1)
output fa
output fb
";

#[test]
fn iterate_over_a_tuple_is_one_loop_in_one_kernel() {
    let opt = optimise(ESCAPE);
    let plan = &opt.result.plan;
    let ks = kernels(&plan.steps);
    assert_eq!(ks.len(), 1, "{plan}");
    let mut loops = 0;
    ks[0].elem.body.visit(&mut |i| {
        if let eqfuse::ir::plan::Inst::Loop { dsts, .. } = i {
            assert_eq!(dsts.len(), 3, "{plan}");
            loops += 1;
        }
    });
    assert_eq!(loops, 1, "one loop for the three components:\n{plan}");
    let (seed, mut next) = rng();
    let (h, w) = (1 + (next() % 20) as usize, 1 + (next() % 20) as usize);
    let mut coord =
        |k: usize| -> Vec<f64> { (0..k).map(|_| (next() % 4000) as f64 / 1000.0 - 2.0).collect() };
    let mut inputs = Arrays::new();
    inputs.insert(
        "cr".into(),
        Value::from(ndarray::Array::from_shape_vec(vec![h, w], coord(h * w)).unwrap().into_dyn()),
    );
    inputs.insert(
        "ci".into(),
        Value::from(ndarray::Array::from_shape_vec(vec![h, w], coord(h * w)).unwrap().into_dyn()),
    );
    agree(ESCAPE, &inputs, seed);
}

const PRODUCERS: &str = "input ks : i64[n]
input ls : i64[n]
input xs : f64[n]
let (s, p) = reduce (\\(a, b) (c, d) -> (a + c, b * d)) (0, 1) (map (\\k l -> k * l) ks ls, map (\\l -> l % 7 + 1) ls)
output s
output p
let (cv, ci) = scan (\\(a, i) (b, j) -> if b > a || (b == a && j < i) then (b, j) else (a, i)) (-inf, -1) (map (\\x -> x * x) xs, iota n)
output cv
output ci
let (rv, ri) = reduce (\\(a, i) (b, j) -> if b < a || (b == a && j < i) then (b, j) else (a, i)) (inf, n) (generate [n] (\\i -> xs[n - 1 - i]), iota n)
output rv
output ri
";

/// `fuse-read` into a reduction or scan over a group (`greduce`, `gscan`): the `map`s,
/// `generate`s and `iota`s that make a group's members are computed in its one pass; the
/// fused programs agree with the reference (the soundness check of the rule there: the
/// decoder does not write these forms back, so the rule templates cannot compare programs).
#[test]
fn the_producers_of_a_group_fuse_into_its_reduction_or_scan() {
    let opt = optimise(PRODUCERS);
    let plan = &opt.result.plan;
    let ks = kernels(&plan.steps);
    assert_eq!(ks.len(), 3, "a group's producer is not fused:\n{plan}");
    assert!(ks.iter().all(|k| k.lanes.len() == 2 && matches!(k.lanes[1].op, LaneOp::Part)), "{plan}");
    let (seed, mut next) = rng();
    for _ in 0..4 {
        let n = 1 + (next() % 5000) as usize;
        let mut ints = |k: usize| -> Vec<i64> { (0..k).map(|_| (next() % 2000) as i64 - 1000).collect() };
        let mut inputs = Arrays::new();
        inputs.insert("ks".into(), Value::from(ndarray::arr1(&ints(n)).into_dyn()));
        inputs.insert("ls".into(), Value::from(ndarray::arr1(&ints(n)).into_dyn()));
        let xs: Vec<f64> = ints(n).into_iter().map(|k| (k % 40) as f64 / 4.0).collect();
        inputs.insert("xs".into(), Value::from(ndarray::arr1(&xs).into_dyn()));
        agree(PRODUCERS, &inputs, seed);
    }
}
