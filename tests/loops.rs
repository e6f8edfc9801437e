//! Loops over arrays as plan steps: the plan's structure (one loop step, its body's
//! kernels fused, what does not depend on the state hoisted out), and results equal to the
//! reference interpreter's on every backend, on programs and inputs drawn at random (the
//! seed is printed).

#![allow(clippy::unwrap_used)]

use eqfuse::ir::plan::{LoopKind, Step};
use eqfuse::{Arrays, Backend, OptimizeOptions, Value};

fn optimise(src: &str) -> eqfuse::Optimized {
    let p = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    eqfuse::optimize(&p, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn loops(steps: &[Step]) -> Vec<&eqfuse::ir::plan::LoopStep> {
    steps.iter().filter_map(|s| if let Step::Loop(l) = s { Some(&**l) } else { None }).collect()
}

fn f32s(v: &[f32]) -> Value {
    Value::from(ndarray::arr1(v).into_dyn())
}

const HEAT: &str = "input t0 : f32[n]
input steps : i64
input w : f32[n]
let (tf, k) = loop (t, c) = (t0, 0) for s < steps do
  let wide = map (\\x -> x * 2.0) w in
  let t2 = generate [n] (\\i -> if i == 0 || i == n - 1 then t[i] else 0.25 * (t[i - 1] + 2.0 * t[i] + t[i + 1]) + wide[i]) in
  (t2, c + 1)
output tf
output k
";

#[test]
fn a_for_loop_is_one_loop_step_with_its_state_independent_work_hoisted() {
    let opt = optimise(HEAT);
    let top = loops(&opt.result.plan.steps);
    assert_eq!(top.len(), 1, "{}", opt.result.plan);
    let l = top[0];
    assert!(matches!(l.form, LoopKind::For { .. }));
    assert_eq!(l.names, vec!["t", "c"]);
    // `wide` reads no state: computed once, before the loop
    assert_eq!(l.hoisted, vec!["wide"]);
    // the body's stencil is one kernel; the counter a host step
    let body_kernels: usize =
        l.body.iter().filter(|s| matches!(s, Step::Kernel(_) | Step::RowBlock { .. })).count();
    assert_eq!(body_kernels, 1, "{}", opt.result.plan);
    let text = opt.explain_with(false);
    assert!(text.contains("loop (t, c)"), "{text}");
    assert!(text.contains("computed once, before the loop: wide"), "{text}");
}

#[test]
fn a_loop_runs_as_the_reference_interpreter_says_on_the_cpu_and_the_plan_interpreter() {
    let seed =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
    eprintln!("seed {seed}");
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let checked = eqfuse::check(&eqfuse::parse(HEAT).unwrap()).unwrap();
    for _ in 0..4 {
        let n = 3 + (next() % 40) as usize;
        let steps = (next() % 7) as i64 - 1;
        let mut inputs = Arrays::new();
        let t0: Vec<f32> = (0..n).map(|_| (next() % 1000) as f32 / 100.0).collect();
        let w: Vec<f32> = (0..n).map(|_| (next() % 100) as f32 / 1000.0).collect();
        inputs.insert("t0".into(), f32s(&t0));
        inputs.insert("w".into(), f32s(&w));
        inputs.insert("steps".into(), Value::from(ndarray::arr0(steps).into_dyn()));
        let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
        let got = eqfuse::run(&checked, Backend::Cpu, &inputs).unwrap();
        let tol = eqfuse::ir::value::Tolerance { rtol: 1e-5, atol: 1e-5, mismatch_fraction: 0.0 };
        for (name, w) in &want {
            eqfuse::ir::value::compare(&got[name], w, &tol)
                .unwrap_or_else(|m| panic!("seed {seed} n {n} steps {steps}: {name}: {m}"));
        }
        let opt = eqfuse::optimize_checked(checked.clone(), &OptimizeOptions::default()).unwrap();
        let planned =
            eqfuse::backend::run_plan(&opt.result.plan, opt.source(), Backend::Reference, &inputs).unwrap();
        let unfused =
            eqfuse::backend::run_plan(&opt.result.unfused_plan, opt.source(), Backend::Cpu, &inputs).unwrap();
        for (name, w) in &want {
            eqfuse::ir::value::compare(&planned[name], w, &tol)
                .unwrap_or_else(|m| panic!("seed {seed}: plan interpreter {name}: {m}"));
            eqfuse::ir::value::compare(&unfused[name], w, &tol)
                .unwrap_or_else(|m| panic!("seed {seed}: unfused {name}: {m}"));
        }
    }
}

#[test]
fn a_while_loop_evaluates_its_condition_before_every_iteration_and_nests() {
    let src = "input xs : f64[n]
input steps : i64
let (ys, rounds) = loop (x, k) = (xs, 0) for it < steps do
  let (z, h) = (loop (y, c) = (x, 0) while reduce max (-1.0) y > 1.0 do (map (\\v -> v * 0.5) y, c + 1)) in
  (map (\\v -> v * 3.0) z, k + h)
output ys
output rounds
";
    let opt = optimise(src);
    let outer = loops(&opt.result.plan.steps);
    assert_eq!(outer.len(), 1, "{}", opt.result.plan);
    let inner = loops(&outer[0].body);
    assert_eq!(inner.len(), 1, "{}", opt.result.plan);
    assert!(matches!(inner[0].form, LoopKind::While { .. }));
    let checked = opt.source().clone();
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), Value::from(ndarray::arr1(&[0.5, 7.0, 2.5, 100.0]).into_dyn()));
    inputs.insert("steps".into(), Value::from(ndarray::arr0(3i64).into_dyn()));
    let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
    for backend in [Backend::Cpu, Backend::Reference] {
        let got = eqfuse::backend::run_plan(&opt.result.plan, &checked, backend, &inputs).unwrap();
        assert_eq!(got, want, "{backend}");
    }
}

#[test]
fn a_state_that_changes_shape_is_an_error_naming_it() {
    let src = "input xs : f32[n]
input m : i64
output y = loop x = xs for i < 2 do generate [m] (\\j -> 1.0)
";
    let checked = eqfuse::check(&eqfuse::parse(src).unwrap()).unwrap();
    let mut inputs = Arrays::new();
    inputs.insert("xs".into(), f32s(&[1.0, 2.0, 3.0]));
    inputs.insert("m".into(), Value::from(ndarray::arr0(2i64).into_dyn()));
    for backend in [Backend::Reference, Backend::Cpu] {
        let e = eqfuse::run(&checked, backend, &inputs).unwrap_err();
        assert_eq!(e.code, eqfuse::Code::Shape, "{backend}: {e}");
    }
}
