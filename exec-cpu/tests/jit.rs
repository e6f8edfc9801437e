//! Loops compiled to machine code (`RunOptions::jit`) give the lane groups' results bit for
//! bit (NaNs match NaNs whatever their payload), and the plan interpreter's: mandelbrot,
//! hand-written loops over special float values (NaN, infinities, -0.0), per-element counts
//! (0 and negative among them), `f32`, `i32` and `bool` state, calls of every kind, and
//! random programs with `iterate`. Straight-line code (no loop) compiled on its own:
//! contiguous reads, broadcast scalars, every type, special values, next to loops.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{jit_compiled, run, Codegen, RunOptions};
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
        let on = RunOptions { block_size, threads, codegen: Codegen::Vm, ..RunOptions::default() };
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
        assert!(jit_compiled().regions > 0, "no loop was compiled");
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

/// Straight-line regions: `src` gives the VM's bits with the JIT on; `first` (the first
/// run of this program in the process, when it has code that runs on vectors: compiled
/// regions are reused): it compiles at least one straight-line region (other tests
/// compile too, so the count only grows).
fn agree_straight(src: &str, inputs: &IndexMap<String, Value>, first: bool) {
    let before = jit_compiled().straight;
    agree(src, inputs);
    if cfg!(feature = "jit") && first {
        assert!(jit_compiled().straight > before, "no straight-line region was compiled\n{src}");
    }
}

#[test]
fn straight_line_map_chain_is_compiled() {
    let src = include_str!("../../examples/map_chain.eqf");
    let xs: Vec<f32> =
        SPECIAL_F64.iter().map(|&x| x as f32).chain((0..50).map(|k| k as f32 * 0.37 - 9.0)).collect();
    agree_straight(src, &inputs(vec![("xs", Value::F32(arr(&[xs.len()], &xs)))]), true);
}

#[test]
fn straight_line_floats_with_special_values_and_broadcasts() {
    let f64_src = "input xs : f64[n]\ninput ys : f64[n]\ninput a : f64\n\
        output d = map (\\x y -> sqrt (abs ((x + 1.0) * a - y)) + x / y - (-x) * 0.5) xs ys\n\
        output e = map (\\x y -> if x < y then min x y * a else max (x % 0.7) y - a) xs ys\n\
        output f = map (\\x y -> a * x + y) xs ys\n\
        output g = map (\\x -> floor (x * 3.0) + tanh x - exp (x * 0.01) + pow (abs x) 0.5 + atan2 x a) xs\n\
        output h = map (\\x y -> x == y || x != x && !(y >= 0.0)) xs ys\n\
        output k = map (\\x -> i64 (x * 1e10) + i64 (i32 x) * 3) xs";
    let ys: Vec<f64> = SPECIAL_F64.iter().rev().copied().collect();
    for n in [1usize, 12, 37, 200] {
        agree_straight(
            f64_src,
            &inputs(vec![
                ("xs", Value::F64(arr(&[n], &SPECIAL_F64))),
                ("ys", Value::F64(arr(&[n], &ys))),
                ("a", Value::scalar(Scalar::F64(-1.5))),
            ]),
            // mixed types in one kernel: left to the VM
            false,
        );
        let f32_src = f64_src.replace("f64", "f32").replace("1e10", "1e6");
        let (xs32, ys32): (Vec<f32>, Vec<f32>) =
            (SPECIAL_F64.iter().map(|&x| x as f32).collect(), ys.iter().map(|&x| x as f32).collect());
        agree_straight(
            &f32_src,
            &inputs(vec![
                ("xs", Value::F32(arr(&[n], &xs32))),
                ("ys", Value::F32(arr(&[n], &ys32))),
                ("a", Value::scalar(Scalar::F32(f32::NAN))),
            ]),
            false,
        );
    }
}

#[test]
fn straight_line_vectors_of_one_float_type() {
    // one float type and `+ - * /`, negation, `abs`, `sqrt`, multiply-adds: vectors, then
    // the scalar loop for the last elements (lengths not a multiple of the lanes)
    let f64_src = "input xs : f64[n]\ninput ys : f64[n]\ninput a : f64\n\
        output d = map (\\x y -> sqrt (abs ((x + 1.0) * a - y)) + x / y - (-x) * 0.5 + a * x + y * y) xs ys";
    let ys: Vec<f64> = SPECIAL_F64.iter().rev().copied().collect();
    let xs32: Vec<f32> = SPECIAL_F64.iter().map(|&x| x as f32).collect();
    let ys32: Vec<f32> = ys.iter().map(|&x| x as f32).collect();
    for (k, n) in [1usize, 3, 12, 37, 203].into_iter().enumerate() {
        let before = jit_compiled().vector;
        agree_straight(
            f64_src,
            &inputs(vec![
                ("xs", Value::F64(arr(&[n], &SPECIAL_F64))),
                ("ys", Value::F64(arr(&[n], &ys))),
                ("a", Value::scalar(Scalar::F64(-1.5))),
            ]),
            k == 0,
        );
        agree_straight(
            &f64_src.replace("f64", "f32"),
            &inputs(vec![
                ("xs", Value::F32(arr(&[n], &xs32))),
                ("ys", Value::F32(arr(&[n], &ys32))),
                ("a", Value::scalar(Scalar::F32(f32::INFINITY))),
            ]),
            k == 0,
        );
        if cfg!(feature = "jit") && k == 0 {
            assert!(jit_compiled().vector >= before + 2, "no region runs on vectors");
        }
    }
}

#[test]
fn straight_line_integers_and_bools() {
    let src = "input xs : i32[n]\ninput ls : i64[n]\ninput bs : bool[n]\ninput c : i32\n\
        output a = map (\\x -> (x * 1103515245 + 12345) * c - abs x) xs\n\
        output b = map (\\x l -> l * 3 - i64 x * 7 + min l (i64 c) - max l 0) xs ls\n\
        output e = map (\\x b -> (b && x > 3) || !b && x < c) xs bs\n\
        output f = map (\\x b -> if b then clamp x (-5) c else -x * 2) xs bs\n\
        output g = map (\\x l -> f64 x * 0.5 + f64 l - f64 (i32 l)) xs ls\n\
        output h = map (\\b l -> i64 b + l * l - 1) bs ls";
    let xs = [0i32, 1, -1, i32::MAX, i32::MIN, 7, -7, 12345, 3, 4, 100, -100];
    let ls = [0i64, 1, -1, i64::MAX, i64::MIN, 5, -9, 1 << 40, 77];
    let bs = [true, false, false, true, true];
    for n in [3usize, 30, 1000] {
        agree_straight(
            src,
            &inputs(vec![
                ("xs", Value::I32(arr(&[n], &xs))),
                ("ls", Value::I64(arr(&[n], &ls))),
                ("bs", Value::Bool(arr(&[n], &bs))),
                ("c", Value::scalar(Scalar::I32(9))),
            ]),
            // not on vectors: left to the VM (the results the same)
            false,
        );
    }
}

#[test]
fn straight_line_next_to_loops_and_failing_instructions() {
    // straight-line code before, between and after loops, integer division (which may
    // fail: the VM runs it) between two runs, gathers (not contiguous reads)
    let src = "input xs : f64[n]\ninput ks : i64[n]\n\
        output a = map (\\x k -> let y = (x + 1.0) * 2.0 - 3.0 in let z = iterate k (\\z -> z * 0.5 + 0.25) y in sqrt (abs z) * 3.0 + z) xs ks\n\
        output b = map (\\x k -> let q = k * 3 + 1 in let r = 100 / (if q == 0 then 1 else q) in f64 (r * 2 + k) * x - x) xs ks\n\
        output c = map (\\x k -> (x * 2.0 + 1.0) * xs[(k % n + n) % n] - x) xs ks";
    let ks = [0i64, -3, 1, 5, 100, 2, -1, 40, 7, 3];
    for n in [10usize, 64] {
        agree_straight(
            src,
            &inputs(vec![("xs", Value::F64(arr(&[n], &SPECIAL_F64))), ("ks", Value::I64(arr(&[n], &ks)))]),
            n == 10,
        );
    }
}

#[test]
fn straight_line_benchmark_programs() {
    let xs: Vec<f32> = (0..3000).map(|k| (k as f32 * 0.731).sin() * 4.0).collect();
    let ys: Vec<f32> = (0..3000).map(|k| (k as f32 * 0.311).cos() * 2.0).collect();
    // one multiply-add: left to the VM (too little for a region)
    agree(
        include_str!("../../examples/saxpy.eqf"),
        &inputs(vec![
            ("alpha", Value::scalar(Scalar::F32(1.5))),
            ("xs", Value::F32(arr(&[3000], &xs))),
            ("ys", Value::F32(arr(&[3000], &ys))),
        ]),
    );
    // uniform instructions of other types (a size converted to a float) computed once,
    // before the vectors
    let zs: Vec<f64> = SPECIAL_F64.iter().copied().filter(|x| x.is_finite()).collect();
    for (k, n) in [1usize, 7, 1001].into_iter().enumerate() {
        agree_straight(
            include_str!("../../examples/variance.eqf"),
            &inputs(vec![("xs", Value::F64(arr(&[n], &zs)))]),
            k == 0,
        );
    }
    // all pairs: straight-line code in the reductions' elements
    let m: Vec<f32> = ys.iter().map(|y| y.abs() + 0.5).collect();
    let zs: Vec<f32> = xs.iter().zip(&ys).map(|(x, y)| x * y).collect();
    for n in [1usize, 9, 130] {
        agree(
            include_str!("../../examples/nbody.eqf"),
            &inputs(vec![
                ("px", Value::F32(arr(&[n], &xs))),
                ("py", Value::F32(arr(&[n], &ys))),
                ("pz", Value::F32(arr(&[n], &zs))),
                ("mass", Value::F32(arr(&[n], &m))),
            ]),
        );
    }
    let s: Vec<f32> = xs.iter().map(|x| x.abs() * 5.0 + 5.0).collect();
    let k: Vec<f32> = ys.iter().map(|x| x.abs() * 20.0 + 1.0).collect();
    let t: Vec<f32> = xs.iter().map(|x| x.abs() + 0.25).collect();
    agree_straight(
        include_str!("../../examples/blackscholes.eqf"),
        &inputs(vec![
            ("s", Value::F32(arr(&[3000], &s))),
            ("x", Value::F32(arr(&[3000], &k))),
            ("t", Value::F32(arr(&[3000], &t))),
        ]),
        // calls: left to the VM
        false,
    );
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
                let on = RunOptions { block_size, threads: 2, codegen: Codegen::Vm, ..RunOptions::default() };
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
