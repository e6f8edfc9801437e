//! The blocked VM and the kernel drivers on chosen programs, against the plan interpreter:
//! lazy `if`s whose untaken branch would fail, loops with per-element counts, reductions and
//! scans at every block boundary, empty arrays of every rank, NaN in `min`/`max`, parallel
//! permutes, filters, multi-output kernels, the memory limit, and which element an error
//! names. Each program runs through its optimised and its unfused plan, with several block
//! sizes and thread counts.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{run, Codegen, RunOptions};
use eqfuse_ir::check::{check, Checked};
use eqfuse_ir::error::Code;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::{Inst, LaneOp, Plan};
use eqfuse_ir::testgen::identical;
use eqfuse_ir::value::{compare, Tolerance, Value};
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use ndarray::{Array, ArrayD, IxDyn};

type Outputs = IndexMap<String, Value>;

fn opts(block_size: usize, threads: usize) -> RunOptions {
    RunOptions { block_size, threads, ..RunOptions::default() }
}

/// Block sizes and thread counts every program runs with, natively and on the VM.
fn settings() -> Vec<RunOptions> {
    let mut v = Vec::new();
    for b in [1, 2, 3, 7, 8, 64, 2048] {
        for t in [1, 2, 4] {
            v.push(opts(b, t));
            v.push(RunOptions { codegen: Codegen::Vm, ..opts(b, t) });
        }
    }
    v
}

fn f32s(v: &[f32]) -> Value {
    Value::F32(Array::from(v.to_vec()).into_dyn())
}
fn f64s(v: &[f64]) -> Value {
    Value::F64(Array::from(v.to_vec()).into_dyn())
}
fn i64s(v: &[i64]) -> Value {
    Value::I64(Array::from(v.to_vec()).into_dyn())
}
fn bools(v: &[bool]) -> Value {
    Value::Bool(Array::from(v.to_vec()).into_dyn())
}
fn f64s2(r: usize, c: usize, f: impl Fn(usize, usize) -> f64) -> Value {
    Value::F64(ArrayD::from_shape_fn(IxDyn(&[r, c]), |ix| f(ix[0], ix[1])))
}
fn i64s2(r: usize, c: usize, f: impl Fn(usize, usize) -> i64) -> Value {
    Value::I64(ArrayD::from_shape_fn(IxDyn(&[r, c]), |ix| f(ix[0], ix[1])))
}

fn inputs(pairs: &[(&str, Value)]) -> Outputs {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// The program's optimised and unfused plans.
fn plans(src: &str) -> (Checked, Vec<(&'static str, Plan)>) {
    let checked = check(&parse(src).unwrap()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
    (checked, vec![("optimised", opt.plan), ("unfused", opt.unfused_plan)])
}

/// How results must agree.
#[derive(Clone, Copy, PartialEq)]
enum Agree {
    /// Bit for bit, and errors with the same code and message.
    Exact,
    /// Floats within 1e-9 relative (a different reduction order).
    Close,
}

/// Runs `src` on the plan interpreter and on the executor with every setting; asserts
/// agreement and returns the interpreter's result.
fn check_all(src: &str, ins: &Outputs, how: Agree) -> eqfuse_ir::Result<Outputs> {
    check_with(src, ins, how, &settings())
}

fn check_with(src: &str, ins: &Outputs, how: Agree, settings: &[RunOptions]) -> eqfuse_ir::Result<Outputs> {
    let (checked, plans) = plans(src);
    let bound = eqfuse_ir::bind::bind_inputs(&checked, ins, &eqfuse_ir::Limits::default()).unwrap();
    let mut first = None;
    for (label, plan) in &plans {
        let want = eqfuse_ir::plan::eval::eval(plan, ins, &bound.sizes);
        for o in settings {
            let got = run(plan, ins, &bound.sizes, o);
            let at = format!(
                "{label} plan, block {}, {} threads, {:?}\n{src}\n{plan}",
                o.block_size, o.threads, o.codegen
            );
            match (&want, &got) {
                (Ok(w), Ok(g)) => {
                    assert_eq!(w.keys().collect::<Vec<_>>(), g.keys().collect::<Vec<_>>(), "{at}");
                    for (name, a) in w {
                        let b = &g[name];
                        if how == Agree::Exact {
                            assert!(identical(a, b), "`{name}`: interpreter {a:?}, executor {b:?}\n{at}");
                        } else {
                            let tol = Tolerance { rtol: 1e-9, atol: 1e-12, mismatch_fraction: 0.0 };
                            if let Err(m) = compare(b, a, &tol) {
                                panic!("`{name}`: {m}\n{at}");
                            }
                        }
                    }
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a.code, b.code, "interpreter: {a}\nexecutor: {b}\n{at}");
                    assert_eq!(a.message, b.message, "{at}");
                }
                _ => panic!("interpreter {want:?}\nexecutor {got:?}\n{at}"),
            }
        }
        first.get_or_insert(want);
    }
    first.unwrap()
}

/// Instructions of the plan's kernels' element functions that satisfy `f`.
fn count_insts(plan: &Plan, f: impl Fn(&Inst) -> bool) -> usize {
    let mut n = 0;
    for k in plan.kernels() {
        k.elem.body.visit(&mut |i| {
            if f(i) {
                n += 1;
            }
        });
    }
    n
}

fn is_int_div_in_branch(i: &Inst) -> bool {
    match i {
        Inst::If { then_block, else_block, .. } => [then_block, else_block].iter().any(|b| {
            b.insts
                .iter()
                .any(|j| matches!(j, Inst::Binary { op: eqfuse_ir::BinOp::Div, .. } | Inst::Read { .. }))
        }),
        _ => false,
    }
}

#[test]
fn an_untaken_branch_never_fails() {
    let src = "input xs : i64[n]
input idx : i64[n]
input ys : f64[k]
output a = map (\\x -> if x == 0 then 0 else 100 / x) xs
output b = map (\\i -> if i >= 0 && i < k then ys[i] else -1.0) idx";
    let (_, ps) = plans(src);
    for (_, p) in &ps {
        assert!(count_insts(p, is_int_div_in_branch) >= 1, "no guarded division or read in\n{p}");
    }
    let n = 50;
    let xs: Vec<i64> = (0..n).map(|i| if i % 3 == 0 || i == 7 || i == 8 { 0 } else { i - 25 }).collect();
    let idx: Vec<i64> = (0..n)
        .map(|i| {
            if i % 4 == 1 {
                -5
            } else if i % 5 == 2 {
                99
            } else {
                i % 6
            }
        })
        .collect();
    let ins =
        inputs(&[("xs", i64s(&xs)), ("idx", i64s(&idx)), ("ys", f64s(&[1.5, 2.5, 3.5, 4.5, 5.5, 6.5]))]);
    let out = check_all(src, &ins, Agree::Exact).unwrap();
    let a: Vec<i64> = xs.iter().map(|&x| if x == 0 { 0 } else { 100 / x }).collect();
    assert_eq!(out["a"], i64s(&a));
    let b: Vec<f64> = idx.iter().map(|&i| if (0..6).contains(&i) { 1.5 + i as f64 } else { -1.0 }).collect();
    assert_eq!(out["b"], f64s(&b));
}

#[test]
fn a_taken_branch_fails_at_the_first_element() {
    let src = "input xs : i64[n]
output a = map (\\x -> if x > 0 then 100 / (x - 5) else 0) xs";
    let xs: Vec<i64> = (0..40).map(|i| if i == 9 || i == 20 || i == 33 { 5 } else { i % 4 - 1 }).collect();
    let err = check_all(src, &inputs(&[("xs", i64s(&xs))]), Agree::Exact).unwrap_err();
    assert_eq!(err.code, Code::DivZero);
    assert!(err.message.contains("at element [9]"), "{}", err.message);
}

#[test]
fn speculated_branches_select_per_element() {
    let src = "input fs : f64[n]
output a = map (\\x -> if x > 0.5 then x * x - 1.0 else (if x < -0.5 then x + 1.0 else 0.0 - x)) fs
output b = map (\\x -> if x > 0.0 then 1.0 else x) fs";
    let fs: Vec<f64> = (0..70).map(|i| ((i * 37) % 23) as f64 / 10.0 - 1.1).collect();
    check_all(src, &inputs(&[("fs", f64s(&fs))]), Agree::Exact).unwrap();
}

#[test]
fn loops_whose_elements_reach_fixed_points() {
    // elements stop changing at different iterations (some never): the executor drops
    // them from the loop early, and must agree bit for bit, errors included
    let src = "input ns : i64[n]
input fs : f64[n]
output a = map (\\x -> iterate 20 (\\z -> if z * z > 4.0 then z else z * z + x) 0.0) fs
output b = map (\\c -> iterate 30 (\\z -> if z > 50 then z else z * 2 + 1) c) ns
output c = map (\\c -> iterate 12 (\\z -> if z >= 8 then z else z + 10 / (z - 5)) c) ns
output d = map (\\x -> iterate 9 (\\z -> if z > 0.0 then z * 0.0 else z) x) fs
output e = map (\\c -> iterate 12 (\\z -> if z >= 30 then z else z + 3 + 10 / (z - 20) * 0) (if c == 5 then 2 else 30 - c % 9)) ns";
    let ns: Vec<i64> = (0..300).map(|i| (i * 37 % 120) - 60).filter(|&c| c != 5).collect();
    let fs: Vec<f64> = (0..ns.len()).map(|i| (i * 53 % 97) as f64 / 24.0 - 2.0).collect();
    check_all(src, &inputs(&[("ns", i64s(&ns)), ("fs", f64s(&fs))]), Agree::Exact).unwrap();
    // an element that fails late in the loop (iteration 7), after others have converged
    let mut bad = ns.clone();
    bad[250] = 5;
    let e = check_all(src, &inputs(&[("ns", i64s(&bad)), ("fs", f64s(&fs))]), Agree::Exact);
    assert!(e.is_err());
}

#[test]
fn loops_with_per_element_counts() {
    let src = "input ns : i64[n]
input fs : f64[n]
output b = map (\\c -> iterate c (\\z -> z * 3 + 1) 1) ns
output f = map (\\c -> iterate c (\\z -> if 10 / (3 - z) > -100 then z + 1 else z) 0) ns
output g = map (\\c x -> iterate (c % 4) (\\z -> 0.5 * z + x) x) ns fs
output h = map (\\x -> iterate 3 (\\z -> z * x) 1.0) fs";
    let (_, ps) = plans(src);
    for (_, p) in &ps {
        assert!(count_insts(p, |i| matches!(i, Inst::Loop { .. })) >= 3, "loops missing in\n{p}");
    }
    let ns: Vec<i64> = (0..45).map(|i| [0, 3, -2, 1, 3, 2, 0, 3, 1][i % 9]).collect();
    let fs: Vec<f64> = (0..45).map(|i| i as f64 / 7.0 - 2.0).collect();
    let out = check_all(src, &inputs(&[("ns", i64s(&ns)), ("fs", f64s(&fs))]), Agree::Exact).unwrap();
    let b: Vec<i64> = ns.iter().map(|&c| (0..c.max(0)).fold(1, |z, _| z * 3 + 1)).collect();
    assert_eq!(out["b"], i64s(&b));
    let f: Vec<i64> = ns.iter().map(|&c| c.max(0)).collect();
    assert_eq!(out["f"], i64s(&f));
    // an element whose count reaches the failing iteration fails; the others never get there
    let mut bad = ns.clone();
    bad[17] = 5;
    bad[30] = 4;
    let err = check_all(src, &inputs(&[("ns", i64s(&bad)), ("fs", f64s(&fs))]), Agree::Exact).unwrap_err();
    assert_eq!(err.code, Code::DivZero);
    assert!(err.message.contains("at element [17]"), "{}", err.message);
}

#[test]
fn full_reductions_and_scans_at_block_boundaries() {
    let src = "input xs : i64[n]
input fs : f64[n]
output s = reduce (+) 0 xs
output p = reduce (*) 1 (map (\\x -> x % 3 + 1) xs)
output lo = reduce min 1000 xs
output hi = reduce max (-1000) xs
output inc = scan (+) 0 xs
output exc = scan_exclusive (+) 0 xs
output run = scan max (-1000) xs
output fsum = reduce (+) 0 fs
output fscan = scan (+) 0 fs
output anyneg = reduce (||) false (map (\\x -> x < -8) xs)
output allsmall = reduce (&&) true (map (\\x -> x < 9) xs)";
    let small = [opts(1, 2), opts(2, 3), opts(3, 1), opts(7, 2), opts(8, 4), opts(2048, 2)];
    for n in 0..=40usize {
        let xs: Vec<i64> = (0..n).map(|i| ((i * 7919) % 21) as i64 - 10).collect();
        let fs: Vec<f64> = (0..n).map(|i| ((i * 31) % 17) as f64 / 8.0 - 1.0).collect();
        let ins = inputs(&[("xs", i64s(&xs)), ("fs", f64s(&fs))]);
        let out = check_with(src, &ins, Agree::Close, &small).unwrap();
        let scan: Vec<i64> = xs
            .iter()
            .scan(0, |a, &x| {
                *a += x;
                Some(*a)
            })
            .collect();
        assert_eq!(out["inc"], i64s(&scan));
        assert_eq!(out["s"], Value::I64(ndarray::arr0(xs.iter().sum::<i64>()).into_dyn()));
    }
}

#[test]
fn row_reductions_and_scans_at_block_boundaries() {
    let src = "input m : i64[r, c]
input g : f64[r, c]
output rows = reduce (+) 0 m
output rmax = reduce max (-1000) m
output cols = reduce (+) 0 (transpose m)
output rscan = scan (+) 0 m
output rexc = scan_exclusive min 1000 m
output frows = reduce (+) 0 g
let mx = reduce max (-inf) g
let e = generate [r, c] (\\i j -> exp (g[i, j] - mx[i]))
let s = reduce (+) 0 e
output sm = generate [r, c] (\\i j -> e[i, j] / s[i])";
    let small = [opts(1, 2), opts(3, 3), opts(4, 1), opts(7, 2), opts(2048, 2)];
    for (r, c) in [(0, 0), (0, 3), (3, 0), (1, 1), (1, 9), (2, 7), (3, 8), (5, 3), (4, 20), (9, 2)] {
        let m = i64s2(r, c, |i, j| ((i * 13 + j * 7) % 19) as i64 - 9);
        let g = f64s2(r, c, |i, j| ((i * 5 + j * 3) % 11) as f64 / 4.0 - 1.0);
        let out = check_with(src, &inputs(&[("m", m), ("g", g)]), Agree::Close, &small).unwrap();
        assert_eq!(out["rows"].shape(), &[r]);
        assert_eq!(out["cols"].shape(), &[c]);
        assert_eq!(out["rscan"].shape(), &[r, c]);
    }
}

#[test]
fn empty_arrays_of_every_rank() {
    let src = "input v : f64[n]
input m : i64[r, c]
output a = map (\\x -> x + 1.0) v
output b = reduce (+) 0 v
output sc = scan (+) 0 v
output d = filter (\\x -> x > 0.0) v
output e = map (\\x -> x * 2) m
output f = reduce (+) 0 m
output g = scan_exclusive (+) 0 m
output h = generate [r, c] (\\i j -> i + j)
output k = permute (+) (fill [4] 0.0) (\\i -> i % 4) v
output l = reduce max (-1.0) (generate [n, 0] (\\i j -> 1.0))";
    for (n, r, c) in [(0, 0, 0), (0, 0, 3), (0, 3, 0), (3, 0, 5), (2, 4, 0)] {
        let v = f64s(&(0..n).map(|i| i as f64 - 0.5).collect::<Vec<_>>());
        let m = i64s2(r, c, |i, j| (i + j) as i64);
        let out = check_all(src, &inputs(&[("v", v), ("m", m)]), Agree::Exact).unwrap();
        assert_eq!(out["e"].shape(), &[r, c]);
        assert_eq!(out["f"].shape(), &[r]);
        assert_eq!(out["f"], Value::I64(ArrayD::zeros(IxDyn(&[r]))));
        assert_eq!(out["h"].shape(), &[r, c]);
        assert_eq!(out["l"], f64s(&vec![-1.0; n]));
    }
}

#[test]
fn nan_and_signed_zeros_in_min_and_max() {
    let src = "input fs : f32[n]
input gs : f32[n]
output lo = reduce min inf fs
output hi = reduce max (-inf) fs
output runlo = scan min inf fs
output pairmin = map (\\a b -> min a b) fs gs
output pairmax = map (\\a b -> max a b) fs gs
output cl = map (\\a b -> clamp a b 1.0) fs gs";
    for n in [3usize, 9, 70, 200] {
        for nan_at in [None, Some(0), Some(n / 2), Some(n - 1)] {
            let mut fs: Vec<f32> = (0..n).map(|i| if i % 2 == 0 { 0.0 } else { -0.0 }).collect();
            if let Some(k) = nan_at {
                fs[k] = f32::NAN;
            }
            let gs: Vec<f32> = (0..n).map(|i| if i % 3 == 0 { f32::NAN } else { -0.0 }).collect();
            let out = check_all(src, &inputs(&[("fs", f32s(&fs)), ("gs", f32s(&gs))]), Agree::Exact).unwrap();
            let lo = match &out["lo"] {
                Value::F32(a) => a.iter().copied().next().unwrap(),
                other => panic!("{other:?}"),
            };
            if nan_at.is_some() {
                assert!(lo.is_nan());
            } else {
                assert!(lo == 0.0 && lo.is_sign_negative(), "min of 0.0 and -0.0 is -0.0, got {lo:?}");
            }
        }
    }
}

#[test]
fn permutes_in_parallel_and_their_errors() {
    let src = "input bins : i64[k]
input w : f64[k]
output h = permute (+) (fill [16] 0) (\\i -> bins[i]) (fill [k] 1)
output mx = permute max (fill [16] (-1.0)) (\\i -> bins[i]) w
output fh = permute (+) (fill [16] 0.0) (\\i -> bins[i]) w";
    let k = 5000;
    let bins: Vec<i64> = (0..k).map(|i| if i % 11 == 3 { -1 } else { ((i * 7) % 16) as i64 }).collect();
    let w: Vec<f64> = (0..k).map(|i| (i % 13) as f64 / 4.0).collect();
    let settings = [opts(16, 4), opts(64, 2), opts(7, 3), opts(2048, 1), opts(1000, 4)];
    let out =
        check_with(src, &inputs(&[("bins", i64s(&bins)), ("w", f64s(&w))]), Agree::Close, &settings).unwrap();
    let mut h = vec![0i64; 16];
    for &b in &bins {
        if b >= 0 {
            h[b as usize] += 1;
        }
    }
    assert_eq!(out["h"], i64s(&h));
    // an out-of-bounds target (not -1) fails, naming the first such element
    let mut bad = bins.clone();
    bad[2500] = 16;
    bad[4000] = -2;
    let err = check_with(src, &inputs(&[("bins", i64s(&bad)), ("w", f64s(&w))]), Agree::Close, &settings)
        .unwrap_err();
    assert_eq!(err.code, Code::Index);
    assert!(err.message.contains("from element [2500]"), "{}", err.message);
}

#[test]
fn permutes_run_as_native_code() {
    // a 2-d destination from a 2-d space, a lambda operator, a float max with -1 drops, on
    // one and several threads: the native skeleton, checked to have run natively
    let src = "input bins : i64[k]
input w : f64[k]
input m : i64[r, c]
output g = permute (\\a b -> a + b) (fill [3, 5] 0) (\\i j -> (m[i, j] % 3, (i + j) % 5)) m
output mx = permute max (fill [16] (-1.0)) (\\i -> bins[i]) w";
    let k = 3000;
    let bins: Vec<i64> = (0..k).map(|i| if i % 11 == 3 { -1 } else { ((i * 7) % 16) as i64 }).collect();
    let w: Vec<f64> = (0..k).map(|i| (i % 13) as f64 / 4.0).collect();
    let m = Value::I64(ArrayD::from_shape_fn(IxDyn(&[40, 70]), |ix| (ix[0] * 70 + ix[1]) as i64));
    let ins = inputs(&[("bins", i64s(&bins)), ("w", f64s(&w)), ("m", m)]);
    let before = eqfuse_exec_cpu::native_counts();
    let settings = [opts(16, 4), opts(64, 2), opts(2048, 1), opts(100_000, 3)];
    let out = check_with(src, &ins, Agree::Exact, &settings).unwrap();
    let after = eqfuse_exec_cpu::native_counts();
    assert!(after.native > before.native, "no kernel ran natively: {before:?} -> {after:?}");
    for (label, plan) in plans(src).1 {
        let report = eqfuse_exec_cpu::compile_plan(&plan, &RunOptions::default());
        assert!(report.vm.is_empty(), "{label}: kernels on the VM: {:?}\n{plan}", report.vm);
    }
    let mut mx = vec![-1.0f64; 16];
    for (&b, &x) in bins.iter().zip(&w) {
        if b >= 0 {
            mx[b as usize] = mx[b as usize].max(x);
        }
    }
    assert!(identical(&out["mx"], &f64s(&mx)), "{:?}", out["mx"]);
    let total: i64 = (0..40 * 70).sum();
    let g: i64 = out["g"].to_scalars().iter().map(|s| s.as_f64() as i64).sum();
    assert_eq!(g, total);
}

#[test]
fn the_first_failing_element_wins_across_functions() {
    // a target out of bounds at element 3 comes before a division by zero at element 10
    let src = "input bins : i64[k]
input d : i64[k]
output h = permute (+) (fill [4] 0) (\\i -> bins[i]) (map (\\x -> 100 / x) d)";
    let bins: Vec<i64> = (0..40).map(|i| if i == 3 { 9 } else { i % 4 }).collect();
    let d: Vec<i64> = (0..40).map(|i| if i == 10 { 0 } else { i + 1 }).collect();
    check_all(src, &inputs(&[("bins", i64s(&bins)), ("d", i64s(&d))]), Agree::Exact).unwrap_err();
    // a predicate failing at element 2 comes before the element function failing at 5
    let src = "input ys : i64[n]
output f = filter (\\x -> 10 / x > 1) (map (\\y -> 100 / (y - 7)) ys)";
    let ys: Vec<i64> = (0..30)
        .map(|i| {
            if i == 2 {
                200
            } else if i == 5 {
                7
            } else {
                9
            }
        })
        .collect();
    let err = check_all(src, &inputs(&[("ys", i64s(&ys))]), Agree::Exact).unwrap_err();
    assert_eq!(err.code, Code::DivZero);
}

#[test]
fn filters_keep_order_across_blocks() {
    let src = "input xs : f64[n]
input bs : bool[n]
output pos = filter (\\x -> x > 0.0) xs
output total = reduce (+) 0 (filter (\\x -> x > 0.25) xs)
output flags = filter (\\b -> b) bs";
    for n in [0usize, 1, 6, 7, 8, 50, 333] {
        let xs: Vec<f64> = (0..n).map(|i| ((i * 17) % 9) as f64 / 4.0 - 1.0).collect();
        let bs: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
        let out = check_all(src, &inputs(&[("xs", f64s(&xs)), ("bs", bools(&bs))]), Agree::Close).unwrap();
        let pos: Vec<f64> = xs.iter().copied().filter(|&x| x > 0.0).collect();
        assert_eq!(out["pos"], f64s(&pos));
    }
}

/// Softmax over the rows of `m : f64[r, c]`, output `sm`; its `e` is an intermediate.
const SOFTMAX: &str = "input m : f64[r, c]
let mx = reduce max (-inf) m
let e = generate [r, c] (\\i j -> exp (m[i, j] - mx[i]))
let s = reduce (+) 0 e
output sm = generate [r, c] (\\i j -> e[i, j] / s[i])";

#[test]
fn multi_output_kernels_mix_generate_and_reduce() {
    let src = &format!("{SOFTMAX}\noutput e");
    let (_, ps) = plans(src);
    let multi = ps[0].1.kernels().iter().any(|k| {
        k.lanes.len() > 1
            && k.lanes.iter().any(|l| matches!(l.op, LaneOp::Generate))
            && k.lanes.iter().any(|l| matches!(l.op, LaneOp::Reduce { .. }))
    });
    assert!(multi, "no generate+reduce kernel in\n{}", ps[0].1);
    for (r, c) in [(300, 5), (5, 300), (1, 5000), (2, 3)] {
        let m = f64s2(r, c, |i, j| ((i * 3 + j * 5) % 13) as f64 / 3.0);
        check_all(src, &inputs(&[("m", m)]), Agree::Close).unwrap();
    }
}

#[test]
fn the_memory_limit_is_checked_before_allocating() {
    let src = "input xs : f64[n]\noutput y = map (\\x -> x + 1.0) xs";
    let (checked, ps) = plans(src);
    let ins = inputs(&[("xs", f64s(&[0.0; 1000]))]);
    let bound = eqfuse_ir::bind::bind_inputs(&checked, &ins, &eqfuse_ir::Limits::default()).unwrap();
    for (_, p) in &ps {
        let o = RunOptions { max_array_bytes: 4000, ..RunOptions::default() };
        let err = run(p, &ins, &bound.sizes, &o).unwrap_err();
        assert_eq!(err.code, Code::Limit);
        let o = RunOptions { max_array_bytes: 8000, ..RunOptions::default() };
        assert!(run(p, &ins, &bound.sizes, &o).is_ok());
    }
}

#[test]
fn reads_out_of_bounds_name_the_array_and_the_element() {
    let src = "input xs : f32[n]
input idx : i64[k]
input m : f64[r, c]
output g = gather xs idx
output h = map (\\i -> m[i, i + 1]) idx";
    let m = f64s2(3, 3, |i, j| (i * 3 + j) as f64);
    let idx: Vec<i64> = (0..30).map(|i| if i == 12 { 7 } else { i % 2 }).collect();
    let ins = inputs(&[("xs", f32s(&[1.0, 2.0, 3.0])), ("idx", i64s(&idx)), ("m", m.clone())]);
    let err = check_all(src, &ins, Agree::Exact).unwrap_err();
    assert_eq!(err.code, Code::Index);
    let idx: Vec<i64> = (0..30).map(|i| if i == 12 { 2 } else { i % 2 }).collect();
    let ins = inputs(&[("xs", f32s(&[1.0, 2.0, 3.0])), ("idx", i64s(&idx)), ("m", m)]);
    let err = check_all(src, &ins, Agree::Exact).unwrap_err();
    assert_eq!(err.code, Code::Index);
    assert!(err.message.contains("`m`"), "{}", err.message);
}

#[test]
fn integer_semantics_wrap_and_divide_like_the_reference() {
    let src = "input xs : i64[n]
input ys : i32[n]
output a = map (\\x -> x * 4611686018427387904 + x) xs
output b = map (\\x -> x / (if x == 1 then 2 else x - 1)) xs
output c = map (\\y -> y % (if y == 0 then 1 else -1)) ys
output d = map (\\x -> i32 (f64 x * 1.0e12)) xs
output e = map (\\x -> -x) xs
output f = map (\\x -> abs x) xs";
    let xs = [i64::MIN, -3, -1, 0, 1, 2, i64::MAX, 5, 9];
    let ys = [i32::MIN, -3, -1, 0, 1, 2, i32::MAX, 5, 9];
    let ins = inputs(&[("xs", i64s(&xs)), ("ys", Value::I32(Array::from(ys.to_vec()).into_dyn()))]);
    check_all(src, &ins, Agree::Exact).unwrap();
}

/// A plan built by hand: a loop whose state is a tuple (next values that swap the state
/// around, one uniform), with per-element counts and, in its body, an `if` whose untaken
/// branch divides by zero; three generate lanes.
#[test]
fn hand_built_loop_with_tuple_state() {
    use eqfuse_ir::plan::{Arg, Block, Func, Kernel, KernelKind, Lane, Origin, Step, ValueInfo};
    use eqfuse_ir::{BinOp, ElemType::*, Scalar};
    let v = |name: &str, rank, origin, elem| ValueInfo { name: name.into(), elem, rank, origin, span: None };
    let c = |dst, x| Inst::Const { dst, value: Scalar::I64(x) };
    let body = Block {
        insts: vec![
            Inst::Binary { dst: 8, op: BinOp::Add, a: 5, b: 6 },
            c(9, 7),
            c(13, 1000),
            Inst::Binary { dst: 14, op: BinOp::Gt, a: 5, b: 13 },
            Inst::If {
                dst: 15,
                cond: 14,
                then_block: Block { insts: vec![Inst::Binary { dst: 16, op: BinOp::Div, a: 3, b: 4 }] },
                then_ret: 16,
                else_block: Block { insts: vec![Inst::Binary { dst: 17, op: BinOp::Add, a: 8, b: 7 }] },
                else_ret: 17,
            },
        ],
    };
    let elem = Func {
        params: vec![I64],
        reg_types: vec![
            I64, I64, I64, I64, I64, I64, I64, I64, I64, I64, I64, I64, I64, I64, Bool, I64, I64, I64,
        ],
        body: Block {
            insts: vec![
                Inst::Read { dst: 1, array: 0, index: vec![0] },
                c(3, 1),
                c(4, 0),
                Inst::Loop {
                    dsts: vec![10, 11, 12],
                    count: 1,
                    inits: vec![3, 4, 3],
                    vars: vec![5, 6, 7],
                    body,
                    nexts: vec![6, 15, 9],
                },
            ],
        },
        ret: vec![10, 11, 12],
        spans: Vec::new(),
    };
    let plan = Plan {
        values: vec![
            v("xs", 1, Origin::Input, I64),
            v("n", 0, Origin::Size, I64),
            v("a", 1, Origin::Computed, I64),
            v("b", 1, Origin::Computed, I64),
            v("c", 1, Origin::Computed, I64),
        ],
        steps: vec![Step::Kernel(Kernel {
            kind: KernelKind::Map,
            space: vec![Arg::Value(1)],
            elem,
            lanes: (2..5).map(|dst| Lane { dst, op: LaneOp::Generate }).collect(),
            span: None,
            contraction: None,
            view_of: None,
        })],
        outputs: vec![("a".into(), 2), ("b".into(), 3), ("c".into(), 4)],
    };
    let xs: Vec<i64> = (0..53).map(|i| [0, 6, 2, -1, 6, 3, 1][i % 7]).collect();
    let ins = inputs(&[("xs", i64s(&xs))]);
    let sizes: IndexMap<String, i64> = [("n".to_string(), 53)].into_iter().collect();
    let want = eqfuse_ir::plan::eval::eval(&plan, &ins, &sizes).unwrap();
    for o in settings() {
        let got = run(&plan, &ins, &sizes, &o).unwrap();
        for (k, a) in &want {
            assert!(identical(a, &got[k]), "`{k}`: {a:?} vs {:?} (block {})", got[k], o.block_size);
        }
    }
    // (a, b, c) = (b, a + b + c, 7): from (1, 0, 1), six steps
    let step = |(a, b, c): (i64, i64, i64)| (b, a + b + c, 7);
    let mut s = (1, 0, 1);
    for _ in 0..6 {
        s = step(s);
    }
    assert_eq!(
        want["a"],
        i64s(&xs.iter().map(|&n| if n == 6 { s.0 } else { want_a(n) }).collect::<Vec<_>>())
    );

    fn want_a(n: i64) -> i64 {
        let mut s = (1i64, 0i64, 1i64);
        for _ in 0..n.max(0) {
            s = (s.1, s.0 + s.1 + s.2, 7);
        }
        s.0
    }
}

/// Reads indexed by the space's own indices (runs along the innermost dimension: slices,
/// strided runs, repeats), in spaces of rank 1 to 3, and their bounds checked per run.
#[test]
fn reads_by_the_spaces_indices() {
    let src = "input v : f64[c]
input m : f64[c, r]
input w : i64[r, c]
output a = generate [r, c] (\\i j -> v[j] + m[j, i] * 2.0)
output b = generate [r, c] (\\i j -> v[j] * f64 (w[i, j] + w[i, 0]))
output d = generate [r, c, 3] (\\i j k -> m[j, i] + f64 (k + w[i, j]))
output e = generate [c, r] (\\j i -> m[j, i] + v[j])";
    for (r, c) in [(1, 1), (3, 5), (7, 2), (2, 9), (13, 11)] {
        let v = f64s(&(0..c).map(|j| j as f64 * 0.5 - 1.0).collect::<Vec<_>>());
        let m = f64s2(c, r, |j, i| (j * 10 + i) as f64);
        let w = i64s2(r, c, |i, j| (i * 3 + j) as i64 - 4);
        check_all(src, &inputs(&[("v", v), ("m", m), ("w", w)]), Agree::Exact).unwrap();
    }
    // out of bounds at the end of every row: the first element of the first row fails
    let src = "input v : f64[k]
input z : f64[r, c]
output a = generate [r, c] (\\i j -> v[j] + z[i, j])";
    let v = f64s(&[1.0, 2.0, 3.0]);
    let z = f64s2(5, 4, |i, j| (i + j) as f64);
    let err = check_all(src, &inputs(&[("v", v), ("z", z)]), Agree::Exact).unwrap_err();
    assert_eq!(err.code, Code::Index);
    assert!(err.message.contains("index 3 out of bounds for `v`"), "{}", err.message);
    assert!(err.message.contains("at element [0, 3]"), "{}", err.message);
}

/// A hand-built loop whose body cannot fail (so it runs on small groups of elements): a
/// tuple state of four types whose next values swap two state registers, calls, a lazy `if`
/// run as a select, per-element counts (some negative, some long enough for the state to reach a
/// fixed point), NaN and `-0.0` in the state; frames of every length around the group size.
#[test]
fn hand_built_pure_loop_with_swapped_state() {
    use eqfuse_ir::interp::scalar::ScalarFn;
    use eqfuse_ir::plan::{Arg, Block, Func, Kernel, KernelKind, Lane, Origin, Step, ValueInfo};
    use eqfuse_ir::{BinOp, ElemType::*, Scalar};
    let v = |name: &str, rank, origin, elem| ValueInfo { name: name.into(), elem, rank, origin, span: None };
    // state: r6 a f64, r7 b f64, r8 k i32, r9 flag bool
    // next: (b, if flag then a else sqrt(|a|) * 0.5 - b, min(k + 1, 9), flag || a > b)
    let body = Block {
        insts: vec![
            Inst::Call { dst: 10, f: ScalarFn::Abs, args: vec![6] },
            Inst::Call { dst: 11, f: ScalarFn::Sqrt, args: vec![10] },
            Inst::Const { dst: 12, value: Scalar::F64(0.5) },
            Inst::If {
                dst: 13,
                cond: 9,
                then_block: Block { insts: vec![] },
                then_ret: 6,
                else_block: Block {
                    insts: vec![
                        Inst::Binary { dst: 14, op: BinOp::Mul, a: 11, b: 12 },
                        Inst::Binary { dst: 15, op: BinOp::Sub, a: 14, b: 7 },
                    ],
                },
                else_ret: 15,
            },
            Inst::Const { dst: 16, value: Scalar::I32(1) },
            Inst::Binary { dst: 17, op: BinOp::Add, a: 8, b: 16 },
            Inst::Const { dst: 18, value: Scalar::I32(9) },
            Inst::Call { dst: 19, f: ScalarFn::Min, args: vec![17, 18] },
            Inst::Binary { dst: 20, op: BinOp::Gt, a: 6, b: 7 },
            Inst::Binary { dst: 21, op: BinOp::Or, a: 9, b: 20 },
        ],
    };
    let elem = Func {
        params: vec![I64],
        reg_types: vec![
            I64, F64, I64, I32, Bool, F64, F64, F64, I32, Bool, F64, F64, F64, F64, F64, F64, I32, I32, I32,
            I32, Bool, Bool, F64, F64, I32, Bool, F64,
        ],
        body: Block {
            insts: vec![
                Inst::Read { dst: 1, array: 0, index: vec![0] },
                Inst::Read { dst: 2, array: 2, index: vec![0] },
                Inst::Const { dst: 3, value: Scalar::I32(0) },
                Inst::Const { dst: 4, value: Scalar::Bool(false) },
                Inst::Call { dst: 5, f: ScalarFn::Convert(F64), args: vec![2] },
                Inst::Loop {
                    dsts: vec![22, 23, 24, 25],
                    count: 2,
                    inits: vec![1, 5, 3, 4],
                    vars: vec![6, 7, 8, 9],
                    body,
                    nexts: vec![7, 13, 19, 21],
                },
                Inst::Binary { dst: 26, op: BinOp::Add, a: 22, b: 23 },
            ],
        },
        ret: vec![26, 24, 25],
        spans: Vec::new(),
    };
    let p = Plan {
        values: vec![
            v("xs", 1, Origin::Input, F64),
            v("n", 0, Origin::Size, I64),
            v("cs", 1, Origin::Input, I64),
            v("s", 1, Origin::Computed, F64),
            v("k", 1, Origin::Computed, I32),
            v("f", 1, Origin::Computed, Bool),
        ],
        steps: vec![Step::Kernel(Kernel {
            kind: KernelKind::Map,
            space: vec![Arg::Value(1)],
            elem,
            lanes: (3..6).map(|dst| Lane { dst, op: LaneOp::Generate }).collect(),
            span: None,
            contraction: None,
            view_of: None,
        })],
        outputs: vec![("s".into(), 3), ("k".into(), 4), ("f".into(), 5)],
    };
    for n in [1usize, 7, 31, 32, 33, 64, 65, 100] {
        let xs: Vec<f64> = (0..n)
            .map(|i| match i % 11 {
                3 => f64::NAN,
                5 => -0.0,
                7 => 0.0,
                _ => (i * 37 % 29) as f64 / 3.0 - 4.0,
            })
            .collect();
        let cs: Vec<i64> = (0..n).map(|i| [0, 1, 5, -3, 40, 2, 300, 3, 7, 12][(i * 7) % 10] as i64).collect();
        let ins = inputs(&[("xs", f64s(&xs)), ("cs", i64s(&cs))]);
        let sizes: IndexMap<String, i64> = [("n".to_string(), n as i64)].into_iter().collect();
        let want = eqfuse_ir::plan::eval::eval(&p, &ins, &sizes).unwrap();
        for o in settings() {
            let got = run(&p, &ins, &sizes, &o).unwrap();
            for (k, a) in &want {
                assert!(
                    identical(a, &got[k]),
                    "n {n}, `{k}`: {a:?} vs {:?} (block {})",
                    got[k],
                    o.block_size
                );
            }
        }
        // one count for all (a uniform count register)
        let same = inputs(&[("xs", f64s(&xs)), ("cs", i64s(&vec![6; n]))]);
        let want = eqfuse_ir::plan::eval::eval(&p, &same, &sizes).unwrap();
        let got = run(&p, &same, &sizes, &RunOptions::default()).unwrap();
        for (k, a) in &want {
            assert!(identical(a, &got[k]), "n {n}, `{k}` (one count)");
        }
    }
}

#[test]
fn a_conversion_through_an_integer_drops_the_sign_of_zero() {
    // gcc's -fno-trapping-math turns `(double)(long long)x` into `trunc(x)`, which keeps
    // the sign of -0.0 (and gives -0.0 for -0.25): the prelude's conversions undo it
    let out = check_all(
        "input y : f64[n]\ninput x : f32[n]\n\
         output d = map (\\z -> f64 (i64 z) + f64 (i32 (z * 2.0))) y\n\
         output e = map (\\z -> f64 (i64 z)) y\n\
         output f = map (\\z -> f64 (i32 z)) y\n\
         output g = map (\\z -> f32 (i32 z)) x\n\
         output h = map (\\z -> f32 (i64 z)) x",
        &inputs(&[
            ("y", f64s(&[-0.0, -0.5, 0.25, -1.5, -0.25])),
            ("x", f32s(&[-0.0, -0.5, 0.25, -1.5, -0.25])),
        ]),
        Agree::Exact,
    )
    .unwrap();
    assert!(identical(&out["d"], &f64s(&[0.0, -1.0, 0.0, -4.0, 0.0])), "{:?}", out["d"]);
    for name in ["e", "f"] {
        assert!(identical(&out[name], &f64s(&[0.0, 0.0, 0.0, -1.0, 0.0])), "{name}: {:?}", out[name]);
    }
    for name in ["g", "h"] {
        assert!(identical(&out[name], &f32s(&[0.0, 0.0, 0.0, -1.0, 0.0])), "{name}: {:?}", out[name]);
    }
}

#[test]
fn row_blocks_keep_their_intermediates_per_block() {
    // softmax keeps `exp (m - max)` per block of rows; where it is also an output it is
    // written whole. Rows from one to several blocks, 1–3 threads, against the interpreter.
    let kept = SOFTMAX;
    let written = format!("{kept}\noutput e2 = e");
    let locals = |src: &str| -> Vec<String> {
        let (_, ps) = plans(src);
        let p = &ps[0].1;
        p.steps
            .iter()
            .flat_map(|s| match s {
                eqfuse_ir::plan::Step::RowBlock { local, .. } => local.clone(),
                _ => Vec::new(),
            })
            .map(|v| p.values[v].name.clone())
            .collect()
    };
    assert_eq!(locals(kept), vec!["e".to_string()]);
    assert!(locals(&written).is_empty(), "{:?}", locals(&written));
    let settings = [opts(2048, 1), opts(2048, 2), opts(2048, 3)];
    for src in [kept, written.as_str()] {
        for (r, c) in [(1, 1), (3, 33), (37, 5), (600, 17), (2000, 300)] {
            let g = f64s2(r, c, |i, j| ((i * 5 + j * 3) % 11) as f64 / 4.0 - 1.0);
            let before = eqfuse_exec_cpu::native_counts();
            let out = check_with(src, &inputs(&[("m", g)]), Agree::Close, &settings).unwrap();
            let after = eqfuse_exec_cpu::native_counts();
            assert!(after.native > before.native, "no row block ran natively ({r}x{c})");
            assert_eq!(out["sm"].shape(), &[r, c]);
        }
    }
}
