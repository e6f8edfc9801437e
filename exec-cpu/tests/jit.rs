//! Loops compiled to machine code (`RunOptions::jit`) give the lane groups' results bit for
//! bit (NaNs match NaNs whatever their payload), and the plan interpreter's: mandelbrot,
//! hand-written loops over special float values (NaN, infinities, -0.0), per-element counts
//! (0 and negative among them), `f32`, `i32` and `bool` state, calls of every kind, and
//! random programs with `iterate`.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{jit_loops_compiled, run, RunOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::testgen::{executor_agrees, program_and_inputs, GenConfig};
use eqfuse_ir::value::{Scalar, Value};
use eqfuse_rules::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;

/// Equal bits, or both NaN.
fn same(a: &Scalar, b: &Scalar) -> bool {
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        (Scalar::F64(x), Scalar::F64(y)) => x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

fn identical(a: &IndexMap<String, Value>, b: &IndexMap<String, Value>) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("{} outputs against {}", a.len(), b.len()));
    }
    for ((na, va), (nb, vb)) in a.iter().zip(b) {
        if na != nb || va.shape() != vb.shape() || va.elem_type() != vb.elem_type() {
            return Err(format!("output `{na}` differs in name, type or shape"));
        }
        let (xs, ys) = (va.to_scalars(), vb.to_scalars());
        if let Some(k) = (0..xs.len()).find(|&k| !same(&xs[k], &ys[k])) {
            return Err(format!("output `{na}` differs at {k}: {} against {}", xs[k], ys[k]));
        }
    }
    Ok(())
}

/// Runs `src` optimised on `inputs` with the JIT on and off (default and tiny blocks,
/// several threads): the same bits, and the plan interpreter's results.
fn agree(src: &str, inputs: &IndexMap<String, Value>) {
    let checked = check(&eqfuse_ir::parse::parse(src).unwrap()).unwrap();
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let bound = eqfuse_ir::bind::bind_inputs(&checked, inputs, &Default::default()).unwrap();
    let want = eqfuse_ir::plan::eval::eval(&plan, inputs, &bound.sizes);
    for (block_size, threads) in [(8192, 0), (7, 2), (1, 3)] {
        let on = RunOptions { block_size, threads, ..RunOptions::default() };
        let off = RunOptions { jit: false, ..on.clone() };
        let got_on = run(&plan, inputs, &bound.sizes, &on).unwrap();
        let got_off = run(&plan, inputs, &bound.sizes, &off).unwrap();
        identical(&got_on, &got_off)
            .unwrap_or_else(|e| panic!("jit against lanes, block {block_size}: {e}\n{plan}"));
        executor_agrees(&want, &Ok(got_on), &plan)
            .unwrap_or_else(|e| panic!("jit against the interpreter: {e}"));
    }
}

fn arr<T: Clone>(shape: &[usize], xs: &[T]) -> ArrayD<T> {
    let n: usize = shape.iter().product();
    let v: Vec<T> = xs.iter().cycle().take(n).cloned().collect();
    ArrayD::from_shape_vec(IxDyn(shape), v).unwrap()
}

const SPECIAL_F64: [f64; 12] =
    [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0, 1e308, -1e-310, 0.25, -1.5, 0.3, -0.7, 2.0];

fn inputs(pairs: Vec<(&str, Value)>) -> IndexMap<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[test]
fn mandelbrot_matches_and_is_compiled() {
    let src = include_str!("../../examples/mandelbrot.eqf");
    let (h, w) = (37, 29);
    let cr: Vec<f64> = (0..h * w).map(|k| -2.0 + 2.5 * (k % w) as f64 / w as f64).collect();
    let ci: Vec<f64> = (0..h * w).map(|k| -1.25 + 2.5 * (k / w) as f64 / h as f64).collect();
    agree(src, &inputs(vec![("cr", Value::F64(arr(&[h, w], &cr))), ("ci", Value::F64(arr(&[h, w], &ci)))]));
    if cfg!(feature = "jit") {
        assert!(jit_loops_compiled() > 0, "no loop was compiled");
    }
    // special values, in both coordinates
    let mut cr2 = SPECIAL_F64.to_vec();
    cr2.extend([0.1, -0.1, 0.26, -0.75]);
    let ci2: Vec<f64> = cr2.iter().rev().copied().collect();
    let (h, w) = (4, 4);
    agree(src, &inputs(vec![("cr", Value::F64(arr(&[h, w], &cr2))), ("ci", Value::F64(arr(&[h, w], &ci2)))]));
}

#[test]
fn per_element_counts_zero_and_negative() {
    let src = "input x0 : f64[n]\ninput k : i64[n]\n\
               output y = map (\\x c -> iterate c (\\z -> 0.5 * z + 0.25 * sin z) x) x0 k";
    let ks = [0i64, -3, 1, 5, 100, 2, -1, 40, 7, 3, 1000, 0];
    agree(
        src,
        &inputs(vec![("x0", Value::F64(arr(&[50], &SPECIAL_F64))), ("k", Value::I64(arr(&[50], &ks)))]),
    );
    // one count for all: 0 and negative
    for c in [0, -5, 3] {
        let src =
            format!("input x0 : f64[n]\noutput y = map (\\x -> iterate ({c}) (\\z -> z * 1.5 - 0.25) x) x0");
        agree(&src, &inputs(vec![("x0", Value::F64(arr(&[20], &SPECIAL_F64)))]));
    }
}

#[test]
fn float_calls_and_operators() {
    let f64_src = "input x0 : f64[n]\n\
        output a = map (\\x -> iterate 30 (\\z -> tanh (z * 1.1) + 0.01 * (z % 0.7) - floor z * 0.001 + round (z * 3.0) * 0.0001 + ceil (z * 0.5) * 0.0002) x) x0\n\
        output b = map (\\x -> iterate 25 (\\z -> min (max (z * 0.9) (-3.0)) (exp (z * 0.1)) + clamp z (-0.5) 0.5 * 0.1 + sqrt (abs z) * 0.01) x) x0\n\
        output c = map (\\x -> iterate 12 (\\z -> pow (abs z + 0.5) 0.75 + atan2 z 2.0 - log (abs z + 1.0) + cos z * tan (z * 0.1) - z / 3.0 + (-z) * 0.01) x) x0\n\
        output d = map (\\x -> iterate 9 (\\z -> if z > 1.0 then z - 2.0 else if z != z then 0.5 else z * 1.7 + 0.1) x) x0";
    agree(f64_src, &inputs(vec![("x0", Value::F64(arr(&[40], &SPECIAL_F64)))]));
    let f32_src = f64_src.replace("f64", "f32");
    let xs: Vec<f32> = SPECIAL_F64.iter().map(|&x| x as f32).collect();
    agree(&f32_src, &inputs(vec![("x0", Value::F32(arr(&[40], &xs)))]));
}

#[test]
fn integer_bool_state_and_conversions() {
    let src = "input x0 : i32[n]\ninput y0 : f64[n]\n\
        output a = map (\\x -> iterate 40 (\\z -> z * 1103515245 + 12345) x) x0\n\
        output b = map (\\x -> iterate 20 (\\z -> clamp (abs (z - 7) * 3) (-100000) 100000 + min z 5 - max z (-5)) x) x0\n\
        output c = map (\\x -> iterate 10 (\\z -> i32 (f64 z * 0.7 + 3.5) + i32 (i64 z * 3)) x) x0\n\
        output d = map (\\y -> iterate 6 (\\z -> f64 (i64 (z * 1e10)) * 1e-10 + f64 (i32 z) + f64 (f32 z)) y) y0\n\
        output e = map (\\x y -> iterate 8 (\\b -> (b && y > 0.0) || !b && x > 3) (x < 0)) x0 y0\n\
        output f = map (\\y -> iterate 5 (\\z -> if z != 0.0 then z * 2.0 else z - 1.0) y) y0";
    let xs = [0i32, 1, -1, i32::MAX, i32::MIN, 7, -7, 12345, 3, 4];
    agree(
        src,
        &inputs(vec![("x0", Value::I32(arr(&[30], &xs))), ("y0", Value::F64(arr(&[30], &SPECIAL_F64)))]),
    );
}

#[test]
fn loop_whose_next_value_is_read_from_outside() {
    // found by the property tests: the state's next value is a register of the function
    // (no instruction of the body), after instructions the region runs first
    let src = "input in1 : bool[n]\n\
        let t2 = map (\\x4 x5 -> (iterate 3 (\\x6 -> x6) (length in1) * ((if x5 then n else 2) / (if n - n == 0 then 1 else n - n)) + (clamp (let v7 = n in v7) (i64 3) (if false then n else 5) + n / (if n == 0 then 1 else n) * (n / (if n == 0 then 1 else n)))) * -(iterate 2 (\\x8 -> length in1) (i64 true) + n)) (map (\\x3 -> x3) in1) in1\n\
        output t2";
    let bs = [false, true, false, true, true, false, true, false, false, false];
    agree(src, &inputs(vec![("in1", Value::Bool(arr(&[10], &bs)))]));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5117), ..ProptestConfig::default() })]

    /// Random programs (many with `iterate`): the JIT changes no bit.
    #[test]
    fn random_programs_jit_matches_lanes(case in program_and_inputs(GenConfig { allow_runtime_errors: true, max_expr_depth: 5, max_items: 10, max_size: 12, ..GenConfig::default() })) {
        let checked = check(&case.program).unwrap();
        let Ok(opt) = optimize(&checked, &OptimizeOptions::default()) else { return Err(TestCaseError::reject("no plan")) };
        let bound = eqfuse_ir::bind::bind_inputs(&checked, &case.inputs, &Default::default()).unwrap();
        for plan in [&opt.plan, &opt.unfused_plan] {
            let want = eqfuse_ir::plan::eval::eval(plan, &case.inputs, &bound.sizes);
            for block_size in [8192, 3] {
                let on = RunOptions { block_size, threads: 2, ..RunOptions::default() };
                let off = RunOptions { jit: false, ..on.clone() };
                let got_on = run(plan, &case.inputs, &bound.sizes, &on);
                let got_off = run(plan, &case.inputs, &bound.sizes, &off);
                match (&got_on, &got_off) {
                    (Ok(a), Ok(b)) => identical(a, b).map_err(|e| TestCaseError::fail(format!("{e}\n{plan}\n{}", case.text())))?,
                    (Err(a), Err(b)) => prop_assert_eq!(a.code, b.code),
                    _ => return Err(TestCaseError::fail(format!("one run failed\n{}", case.text()))),
                }
                executor_agrees(&want, &got_on, plan).map_err(|e| TestCaseError::fail(format!("{e}\n{}", case.text())))?;
            }
        }
    }
}
