//! Chains of one map rolled into a loop before saturation (`preroll.rs`): which chains are
//! rolled, and that the rolled plan computes what the program does, errors included.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::Inst;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::value::Value;
use eqfuse_optimize::preroll::MIN_CHAIN;
use eqfuse_optimize::{optimize, OptimizeOptions, Optimized};
use indexmap::IndexMap;

/// `n` maps of `f` over `a0 : t[n]`, the last one the output `y`, and `extra` lines after.
fn chain(t: &str, f: &str, n: usize, extra: &str) -> String {
    let mut s = format!("input a0 : {t}[n]\n");
    for k in 1..=n {
        s += &format!("let a{k} = map ({f}) a{}\n", k - 1);
    }
    s + &format!("output y = a{n}\n{extra}")
}

/// Optimises `src`; runs the plan and the unfused plan on `a0` against the reference
/// interpreter (the same outputs bit for bit, or an error with the same code).
fn check_run(src: &str, a0: Value) -> Optimized {
    let checked = check(&parse(src).unwrap()).unwrap();
    let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
    let mut inputs = IndexMap::new();
    inputs.insert("a0".to_string(), a0);
    let want = interpret(&checked, &inputs);
    let b = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default()).unwrap();
    for plan in [&opt.plan, &opt.unfused_plan] {
        let got = eqfuse_ir::plan::eval::eval(plan, &inputs, &b.sizes);
        match (&want, &got) {
            (Ok(w), Ok(g)) => {
                for (k, v) in w {
                    assert!(identical(v, &g[k]), "`{k}`: {v:?} vs {:?}\n{plan}", g[k]);
                }
            }
            (Err(a), Err(b)) => assert_eq!(a.code, b.code, "{a} vs {b}"),
            _ => panic!("reference {want:?}, plan {got:?}\n{plan}"),
        }
    }
    opt
}

fn rolled(o: &Optimized) -> bool {
    o.phases.first().is_some_and(|p| p.name == "preroll")
}

fn loops(o: &Optimized) -> usize {
    let mut n = 0;
    for k in o.plan.kernels() {
        k.elem.body.visit(&mut |i| n += usize::from(matches!(i, Inst::Loop { .. })));
    }
    n
}

fn f32s(v: &[f32]) -> Value {
    Value::from(ndarray::Array1::from(v.to_vec()).into_dyn())
}

#[test]
fn a_long_chain_is_one_kernel_with_a_loop() {
    let o = check_run(&chain("f32", "\\x -> x * 0.75 + sin x", 300, ""), f32s(&[0.5, -1.0, 3.0, 0.0]));
    assert!(rolled(&o));
    assert_eq!(o.plan.kernels().len(), 1, "{}", o.plan);
    assert_eq!(loops(&o), 1, "{}", o.plan);
    assert_eq!(o.phases[0].rules_fired.get("loop-chain"), Some(&299));
}

#[test]
fn chains_shorter_than_the_threshold_are_left_to_the_rules() {
    let f = "\\x -> x * 0.75 + 1.0";
    let short = check_run(&chain("f32", f, MIN_CHAIN - 1, ""), f32s(&[0.5, -1.0]));
    assert!(!rolled(&short));
    let long = check_run(&chain("f32", f, MIN_CHAIN, ""), f32s(&[0.5, -1.0]));
    assert!(rolled(&long));
    // the rules fuse the short chain all the same
    assert_eq!(short.plan.kernels().len(), 1);
    assert_eq!(loops(&long), 1, "{}", long.plan);
}

#[test]
fn two_chains_count_their_applications_apart() {
    // two chains of 70 maps: 69 applications folded each, as `loop-chain` counts them
    let mut src = String::from("input a0 : f32[n]\ninput b0 : f32[n]\n");
    for k in 1..=70 {
        src += &format!("let a{k} = map (\\x -> x + 1.0) a{}\n", k - 1);
        src += &format!("let b{k} = map (\\x -> x * 0.5) b{}\n", k - 1);
    }
    src += "output y = a70\noutput z = b70\n";
    let o = optimize(&check(&parse(&src).unwrap()).unwrap(), &OptimizeOptions::default()).unwrap();
    assert!(rolled(&o));
    assert_eq!(o.phases[0].rules_fired.get("loop-chain"), Some(&138));
}

#[test]
fn a_map_read_twice_is_not_rolled_past() {
    // a map in the middle is also an output: rolling over it would compute its maps twice;
    // the two halves are each shorter than the threshold
    let mid = format!("output mid = a{}\n", MIN_CHAIN - 1);
    let src = chain("f32", "\\x -> x + 1.0", 2 * (MIN_CHAIN - 1), &mid);
    let o = check_run(&src, f32s(&[0.5, -1.0]));
    assert!(!rolled(&o));
    // a longer chain: the part above the shared map is rolled
    let src = chain("f32", "\\x -> x + 1.0", 200, "output mid = a60\n");
    let o = check_run(&src, f32s(&[0.5, -1.0]));
    assert!(rolled(&o));
    assert_eq!(o.phases[0].rules_fired.get("loop-chain"), Some(&139));
}

#[test]
fn maps_of_different_functions_or_arrays_are_not_one_chain() {
    let mut src = String::from("input a0 : f32[n]\ninput b : f32[n]\n");
    for k in 1..=100 {
        let f = if k % 2 == 0 { "\\x -> x + 1.0" } else { "\\x -> x * 2.0" };
        src += &format!("let a{k} = map ({f}) a{}\n", k - 1);
    }
    for k in 101..=200 {
        src += &format!("let a{k} = map (\\x y -> x + y) a{} b\n", k - 1);
    }
    src += "output y = a200\n";
    let checked = check(&parse(&src).unwrap()).unwrap();
    let o = optimize(&checked, &OptimizeOptions::default()).unwrap();
    assert!(!rolled(&o));
}

#[test]
fn a_rolled_chain_fails_as_the_program_does() {
    // an integer division by zero once the value reaches 0, and the wrap-around of i64
    let f = "\\x -> 1000000 / (x - 3) + x * 3";
    let i64s = |v: &[i64]| Value::from(ndarray::Array1::from(v.to_vec()).into_dyn());
    let src = chain("i64", f, 100, "");
    let o = check_run(&src, i64s(&[0, 5, 7, -11]));
    assert!(rolled(&o));
    check_run(&src, i64s(&[1, 3, 2]));
    let o = check_run(&chain("i64", "\\x -> x * 3 + 1", 100, ""), i64s(&[1, -1, i64::MAX]));
    assert!(rolled(&o));
}
