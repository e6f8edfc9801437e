//! Lazy code runs only where the program runs it: programs with host `if`s, `&&` and `||`
//! whose arm not taken runs a kernel that fails (a read out of bounds, an integer division
//! by zero), used on the host, inside element functions, under conditions on lambda
//! parameters and inside reductions. The optimised plan and the unfused plan, on the plan
//! interpreter and on the CPU executor, must compute what the reference interpreter
//! computes: where it runs, the same outputs (bit for bit on the plan interpreter, within
//! float-fold rounding on the CPU); where it fails, a run-time error or, as elsewhere
//! (rules/README.md policy 2), a result.
//!
//! The programs come from a small generator of their own (choices read one at a time, so
//! that proptest shrinks them to small programs); the conditions depend on the sizes and on
//! a scalar input, so both arms are taken across cases. `EQFUSE_PROPTEST_CASES=N` sets the
//! case count (CI: [`CASES`]).
#![allow(clippy::unwrap_used)]

use eqfuse::{Backend, OptimizeOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::value::{compare, Tolerance, Value};
use indexmap::IndexMap;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const CASES: u32 = 64;

fn config() -> ProptestConfig {
    let cases = std::env::var("EQFUSE_PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(CASES);
    let rng_seed = match std::env::var("EQFUSE_PROPTEST_SEED").ok().as_deref() {
        Some("random") => proptest::test_runner::RngSeed::Random,
        Some(n) => {
            n.parse().map_or(proptest::test_runner::RngSeed::Random, proptest::test_runner::RngSeed::Fixed)
        }
        None => proptest::test_runner::RngSeed::Fixed(0x5EED_0020),
    };
    ProptestConfig { cases, rng_seed, max_shrink_time: 60_000, ..ProptestConfig::default() }
}

/// Reads choices one at a time (0 past the end: the simplest option).
struct Choices<'a> {
    c: &'a [u32],
    pos: usize,
}

impl Choices<'_> {
    fn pick(&mut self, k: u32) -> u32 {
        let c = self.c.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        c % k.max(1)
    }
}

/// A scalar `f32` kernel that fails whenever it runs (the first two), or when `a` is not
/// empty (the third).
fn failing(ch: &mut Choices<'_>) -> String {
    match ch.pick(4) {
        0 => format!("reduce (+) 0.0 (generate [1] (\\i -> b[n + {}]))", ch.pick(3)),
        1 => "f32 (reduce (+) 0 (generate [1] (\\i -> 7 / (i - i))))".into(),
        2 => "reduce max 0.0 (map (\\v -> v + b[n]) a)".into(),
        _ => format!("reduce (+) 0.0 (map (\\v -> b[{}]) b)", 5 + ch.pick(3)),
    }
}

/// A scalar `f32` that does not fail.
fn safe(ch: &mut Choices<'_>) -> String {
    match ch.pick(4) {
        0 => "1.5".into(),
        1 => "reduce (+) 0.0 a".into(),
        2 => "f32 n".into(),
        _ => "reduce min 10.0 (map (\\v -> v * 2.0) b)".into(),
    }
}

/// A closed condition: on sizes, on the scalar input, on a kernel's result, or one that
/// may itself fail (a read of `b` at a constant index).
fn cond(ch: &mut Choices<'_>) -> String {
    match ch.pick(7) {
        0 => format!("n > {}", ch.pick(6)),
        1 => format!("k > {}", ch.pick(8) as i64 - 2),
        2 => format!("n > {} && k < {}", ch.pick(6), ch.pick(8)),
        3 => format!("reduce (+) 0.0 a > {}.5", ch.pick(3)),
        4 => format!("!(n > {})", ch.pick(6)),
        5 => format!("b[{}] > 0.5", ch.pick(5)),
        _ => format!("f32 k > reduce max 0.0 b + {}.0", ch.pick(3)),
    }
}

/// A scalar `f32` whose code holds a failing kernel in some arm: `if` nests.
fn value(ch: &mut Choices<'_>, depth: u32) -> String {
    let arm = |ch: &mut Choices<'_>| match ch.pick(if depth > 0 { 3 } else { 2 }) {
        0 => failing(ch),
        1 => safe(ch),
        _ => value(ch, depth - 1),
    };
    match ch.pick(3) {
        0 => safe(ch),
        _ => {
            let c = cond(ch);
            let (t, e) = if ch.pick(2) == 0 { (arm(ch), safe(ch)) } else { (safe(ch), arm(ch)) };
            format!("(if {c} then {t} else {e})")
        }
    }
}

/// A `bool` with a failing kernel right of `&&` or `||`.
fn boolean(ch: &mut Choices<'_>) -> String {
    let c = cond(ch);
    let f = failing(ch);
    match ch.pick(3) {
        0 => format!("({c} && {f} > 0.0)"),
        1 => format!("({c} || {f} > 0.0)"),
        _ => format!("(({c} && {f} > 0.0) || {})", cond(ch)),
    }
}

/// A whole program: a few `let`s of guarded values and `bool`s, and outputs that use them
/// on the host, inside maps (under open conditions too) and inside reductions.
fn program(choices: &[u32]) -> String {
    let mut ch = Choices { c: choices, pos: 0 };
    let mut src = String::from("input a : f32[n]\ninput b : f32[n]\ninput k : i64\n");
    let s = value(&mut ch, 2);
    src += &format!("let s = {s}\n");
    let p = boolean(&mut ch);
    src += &format!("let p = {p}\n");
    let outs = 1 + ch.pick(3);
    for o in 0..outs {
        // (arrays are never made inside lambdas: what a lambda reads of a kernel is a `let`)
        let use_ = match ch.pick(10) {
            0 => "s".into(),
            1 => "map (\\x -> x + s) a".into(),
            2 => "map (\\x -> if x > 0.5 then x + s else x) a".into(),
            3 => "map (\\x -> if p then x else 0.0) a".into(),
            4 => "if p then 1.0 else 2.0".into(),
            5 => "reduce (+) 0.0 (map (\\x -> x * s) a)".into(),
            6 => {
                src += &format!("let v{o} = {}\n", value(&mut ch, 1));
                format!("map (\\x -> x + v{o}) a")
            }
            7 => format!("if {} then map (\\v -> v + b[n]) a else a", cond(&mut ch)),
            8 => {
                src += &format!("let c{o} = {}\nlet q{o} = {}\n", cond(&mut ch), boolean_value(&mut ch));
                format!("map (\\x -> if c{o} then x + q{o} else x) b")
            }
            _ => {
                // the `if` inside the lambda, over a failing `let` the program computes
                src += &format!("let c{o} = {}\nlet r{o} = {}\n", cond(&mut ch), failing(&mut ch));
                format!("map (\\x -> if c{o} then x + r{o} else x) a")
            }
        };
        src += &format!("output o{o} = {use_}\n");
    }
    src
}

/// A `bool` made an `f32`.
fn boolean_value(ch: &mut Choices<'_>) -> String {
    format!("(if {} then 1.0 else 0.0)", boolean(ch))
}

/// Inputs for size `n` and scalar `k`: `a` in `[0, 1)`, `b` in `[0, 1)` (other values).
fn inputs(n: usize, k: i64) -> IndexMap<String, Value> {
    let a: Vec<f32> = (0..n).map(|i| ((i * 37 + 11) % 100) as f32 / 100.0).collect();
    let b: Vec<f32> = (0..n).map(|i| ((i * 53 + 29) % 100) as f32 / 100.0).collect();
    let mut m = IndexMap::new();
    m.insert("a".to_string(), Value::from(ndarray::Array1::from(a).into_dyn()));
    m.insert("b".to_string(), Value::from(ndarray::Array1::from(b).into_dyn()));
    m.insert("k".to_string(), Value::from(ndarray::arr0(k).into_dyn()));
    m
}

/// Whether `got` agrees with the reference's `want` (`exact`: bit for bit).
fn agree(
    want: &eqfuse::Result<IndexMap<String, Value>>,
    got: eqfuse::Result<IndexMap<String, Value>>,
    exact: bool,
    what: &str,
) -> Result<(), TestCaseError> {
    match (want, got) {
        (Ok(w), Ok(g)) => {
            for (name, a) in w {
                let b =
                    g.get(name).ok_or_else(|| TestCaseError::fail(format!("{what}: no output {name}")))?;
                let tol = Tolerance { rtol: 1e-5, atol: 1e-6, ..Tolerance::EXACT };
                let ok = identical(a, b) || (!exact && compare(b, a, &tol).is_ok());
                prop_assert!(ok, "{}: output {} differs: reference {:?}, got {:?}", what, name, a, b);
            }
            Ok(())
        }
        (Ok(_), Err(e)) => Err(TestCaseError::fail(format!("{what}: the reference runs, this fails: {e}"))),
        (Err(_), Ok(_)) => Ok(()),
        (Err(a), Err(b)) => {
            prop_assert!(
                matches!(b.code, eqfuse::Code::Index | eqfuse::Code::DivZero | eqfuse::Code::Shape),
                "{}: the reference fails with {}, this with {}",
                what,
                a,
                b
            );
            Ok(())
        }
    }
}

/// Every plan of `src` on every backend here, against the reference interpreter.
fn runs_like_the_reference(src: &str, n: usize, k: i64) -> Result<(), TestCaseError> {
    let checked = check(&parse(src).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?)
        .map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
    let ins = inputs(n, k);
    let want = eqfuse_ir::interp::interpret(&checked, &ins);
    let opt = eqfuse::optimize_checked(checked.clone(), &OptimizeOptions::default())
        .map_err(|e| TestCaseError::fail(format!("optimize: {e}\n{src}")))?;
    for (label, plan) in [("plan", &opt.result.plan), ("unfused plan", &opt.result.unfused_plan)] {
        for (backend, exact) in [(Backend::Reference, true), (Backend::Cpu, false)] {
            let got = eqfuse::backend::run_plan(plan, &checked, backend, &ins);
            let what = format!("{label} on {backend:?} (n = {n}, k = {k})\n{src}\n{plan}");
            agree(&want, got, exact, &what)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_failing_kernel_in_the_arm_not_taken_never_runs(
        choices in prop::collection::vec(any::<u32>(), 0..48),
        n in 0usize..7,
        k in -3i64..8,
    ) {
        runs_like_the_reference(&program(&choices), n, k)?;
    }
}

/// The program of issue 20: a kernel under an `if` whose value an element function reads.
#[test]
fn the_kernel_of_a_let_under_an_if_runs_only_when_taken() {
    let src = "input a : f32[n]\ninput b : f32[n]\ninput k : i64\n\
        let s = if n > 100 then reduce (+) 0.0 (map (\\v -> b[5]) b) else 0.0\n\
        output y = map (\\x -> x + s) a\n";
    for n in [0, 3, 6] {
        runs_like_the_reference(src, n, 0).unwrap();
    }
    // and the reference does run it
    let checked = check(&parse(src).unwrap()).unwrap();
    assert!(eqfuse_ir::interp::interpret(&checked, &inputs(3, 0)).is_ok());
}

/// Nested guards, `&&` and `||` with kernels, a condition that reads out of bounds when the
/// array is short (the host tests it without failing; the element function fails where
/// the program does), and a guarded kernel whose result is an array.
#[test]
fn nested_guards_and_failing_conditions() {
    let srcs = [
        "input a : f32[n]\ninput b : f32[n]\ninput k : i64\n\
         let s = if n > 1 then (if k > 2 then reduce (+) 0.0 (generate [1] (\\i -> b[n])) else 1.0) else 2.0\n\
         output y = map (\\x -> x * s) a\n",
        "input a : f32[n]\ninput b : f32[n]\ninput k : i64\n\
         let p = n > 4 || reduce (+) 0.0 (map (\\v -> b[7]) b) > 0.0\n\
         output y = map (\\x -> if p then x else 0.0) a\n",
        "input a : f32[n]\ninput b : f32[n]\ninput k : i64\n\
         let s = if b[2] > 0.5 then reduce (+) 0.0 (map (\\v -> b[9]) b) else 0.5\n\
         output y = map (\\x -> x + s) a\n",
        "input a : f32[n]\ninput b : f32[n]\ninput k : i64\n\
         let s = if k > 3 then (map (\\v -> b[n + 1]) b)[0] else 0.5\n\
         output y = map (\\x -> x + s) a\n",
        // found by the property: horizontal fusion grouped the lazy reduction with the
        // output's map in one kernel, which ran both lanes
        "input a : f32[n]\ninput b : f32[n]\ninput k : i64\n\
         let p = (!(n > 0) && reduce (+) 0.0 (map (\\v -> b[5]) b) > 0.0)\n\
         output o0 = if p then 1.0 else 2.0\n\
         output o1 = map (\\x -> x + 1.5) a\n",
        // found by the property: a kernel under contradictory conditions (`k > 0`, then
        // `!(k > 0)`) is never needed, but the element function still has code for it
        "input a : f32[n]\ninput b : f32[n]\ninput k : i64\n\
         let s = if k > 0 then 1.5 else (if k > 0 then reduce (+) 0.0 (generate [1] (\\i -> b[n])) else 1.5)\n\
         output o0 = map (\\x -> x + s) a\n",
    ];
    for src in srcs {
        for n in [0, 1, 2, 3, 5] {
            for k in [0, 5] {
                runs_like_the_reference(src, n, k).unwrap();
            }
        }
    }
}
