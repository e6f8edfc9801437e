//! Long unrolled scalar recurrences rolled into a loop before saturation
//! (`preroll_scalar.rs`): which chains are rolled, and that the rolled plan computes what
//! the program does, bit for bit, errors included.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check_with;
use eqfuse_ir::interp::interpret_with;
use eqfuse_ir::parse::parse_with;
use eqfuse_ir::plan::Inst;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::value::Value;
use eqfuse_ir::Limits;
use eqfuse_optimize::preroll::MIN_CHAIN;
use eqfuse_optimize::{optimize, OptimizeOptions, Optimized};
use indexmap::IndexMap;

/// Deep enough for the 1000-step chains.
fn limits() -> Limits {
    Limits { max_depth: 2000, ..Limits::default() }
}

/// A `k`-step escape-time recurrence over `(x, y, k)` inside one `map`, the bound of step
/// `i` given by `bound(i)`, the lambda's result `result` (default: the last count).
fn escape(k: usize, bound: impl Fn(usize) -> &'static str, result: Option<&str>) -> String {
    let mut s = String::from("input cr : f64[n]\ninput ci : f64[n]\noutput k = map (\\a b ->\n");
    s += "  let (x0, y0, k0) = (0.0, 0.0, 0) in\n";
    for i in 0..k {
        let j = i + 1;
        s += &format!(
            "  let (x{j}, y{j}, k{j}) = if x{i} * x{i} + y{i} * y{i} > {} then (x{i}, y{i}, k{i}) \
             else (x{i} * x{i} - y{i} * y{i} + a, 2.0 * x{i} * y{i} + b, k{i} + 1) in\n",
            bound(i)
        );
    }
    s + &format!("  {}) cr ci\n", result.map_or(format!("k{k}"), str::to_string))
}

/// A fresh seed, printed so that a failure can be replayed.
fn seed() -> u64 {
    let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    eprintln!("seed {s}");
    s
}

/// `n` numbers in `[lo, hi)` from a splitmix64 stream.
fn uniform(state: &mut u64, n: usize, lo: f64, hi: f64) -> Value {
    let v: Vec<f64> = (0..n)
        .map(|_| {
            *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = *state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            lo + (hi - lo) * ((z >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    Value::from(ndarray::Array1::from(v).into_dyn())
}

/// Optimises `src`; runs the plan on `inputs` against the reference interpreter (the same
/// outputs bit for bit, or an error with the same code).
fn check_run(src: &str, inputs: IndexMap<String, Value>) -> Optimized {
    // the front end and the reference interpreter recurse over a 1000-step chain's depth
    let src = src.to_string();
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(move || check_here(&src, inputs))
        .unwrap()
        .join()
        .unwrap()
}

fn check_here(src: &str, inputs: IndexMap<String, Value>) -> Optimized {
    let checked = check_with(&parse_with(src, &limits()).unwrap(), &limits()).unwrap();
    let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
    let want = interpret_with(&checked, &inputs, &limits());
    let b = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &limits()).unwrap();
    let got = eqfuse_ir::plan::eval::eval(&opt.plan, &inputs, &b.sizes);
    match (&want, &got) {
        (Ok(w), Ok(g)) => {
            for (k, v) in w {
                assert!(identical(v, &g[k]), "`{k}`: {v:?} vs {:?}\n{}", g[k], opt.plan);
            }
        }
        (Err(a), Err(b)) => assert_eq!(a.code, b.code, "{a} vs {b}"),
        _ => panic!("reference {want:?}, plan {got:?}\n{}", opt.plan),
    }
    opt
}

/// Random points around the Julia set: some escape at once, some never.
fn points(state: &mut u64, n: usize) -> IndexMap<String, Value> {
    let mut inputs = IndexMap::new();
    inputs.insert("cr".to_string(), uniform(state, n, -2.0, 1.0));
    inputs.insert("ci".to_string(), uniform(state, n, -1.5, 1.5));
    inputs
}

/// The applications the preroll folded (0 where it rolled nothing).
fn folded(o: &Optimized) -> usize {
    match o.phases.first() {
        Some(p) if p.name == "preroll" => p.rules_fired.get("loop-chain").copied().unwrap_or(0),
        _ => 0,
    }
}

fn loops(o: &Optimized) -> usize {
    let mut n = 0;
    for k in o.plan.kernels() {
        k.elem.body.visit(&mut |i| n += usize::from(matches!(i, Inst::Loop { .. })));
    }
    n
}

#[test]
fn escape_chains_of_any_length_roll_into_one_loop() {
    let mut s = seed();
    for k in [MIN_CHAIN + 8, 300, 1000] {
        let o = check_run(&escape(k, |_| "4.0", None), points(&mut s, 64));
        // the first steps fold to constants: the rest is one loop
        assert!(folded(&o) + 4 >= k && folded(&o) < k, "{k} steps: {} folded", folded(&o));
        assert_eq!(o.plan.kernels().len(), 1, "{}", o.plan);
        assert_eq!(loops(&o), 1, "{}", o.plan);
    }
    // a short chain is left to the rules (and to lowering, which rolls it all the same)
    let o = check_run(&escape(MIN_CHAIN - 8, |_| "4.0", None), points(&mut s, 64));
    assert_eq!(folded(&o), 0);
    assert_eq!(o.plan.kernels().len(), 1, "{}", o.plan);
}

#[test]
fn a_state_used_outside_the_chain_is_not_rolled_past() {
    let mut s = seed();
    // `k60` is read by the result: the roll from the top stops at its step (140 steps, 139
    // folded); the 60 steps under it are too few
    let o = check_run(&escape(200, |_| "4.0", Some("k200 * 1000 + k60")), points(&mut s, 64));
    assert_eq!(folded(&o), 139);
    // both halves short: nothing rolled
    let mid = format!("k{} * 1000 + k{}", 2 * MIN_CHAIN - 2, MIN_CHAIN - 1);
    let o = check_run(&escape(2 * MIN_CHAIN - 2, |_| "4.0", Some(&mid)), points(&mut s, 64));
    assert_eq!(folded(&o), 0);
}

#[test]
fn results_of_several_components_all_read_the_loop() {
    let mut s = seed();
    // the last state's `x` and `k` both used: both are projections of the one loop
    let o = check_run(&escape(150, |_| "4.0", Some("f64 k150 + x150 * 0.5")), points(&mut s, 64));
    assert!(folded(&o) >= 140, "{} folded", folded(&o));
    assert_eq!(loops(&o), 1, "{}", o.plan);
}

#[test]
fn steps_that_differ_are_not_one_chain() {
    let mut s = seed();
    // one bound changed in the middle: each half is shorter than the threshold
    let n = 2 * MIN_CHAIN - 4;
    let o = check_run(&escape(n, |i| if i == n / 2 { "4.5" } else { "4.0" }, None), points(&mut s, 64));
    assert_eq!(folded(&o), 0);
    // longer: the part above the changed step rolls, and the part under it apart
    let o = check_run(&escape(300, |i| if i == 150 { "4.5" } else { "4.0" }, None), points(&mut s, 64));
    assert!(folded(&o) >= 280 && folded(&o) < 300, "{} folded", folded(&o));
}

/// A 100-step recurrence of type `t` whose step divides by `x - 7`.
fn dividing(t: &str, c: &str) -> String {
    let mut src = format!("input a0 : {t}[n]\noutput y = map (\\a ->\n  let x0 = a in\n");
    for i in 0..100 {
        src += &format!("  let x{} = 1000{c} / (x{i} - 7{c}) + x{i} * 3{c} in\n", i + 1);
    }
    src + "  x100) a0\n"
}

#[test]
fn a_step_that_can_fail_is_not_rolled() {
    // a float division cannot fail: rolled
    let mut inputs = IndexMap::new();
    let f64s = |v: &[f64]| Value::from(ndarray::Array1::from(v.to_vec()).into_dyn());
    inputs.insert("a0".to_string(), f64s(&[0.0, 5.0, 7.0, -11.0, 1e300]));
    let o = check_run(&dividing("f64", ".0"), inputs);
    assert!(folded(&o) >= 90, "{} folded", folded(&o));
    // an integer division can: rolling would compute the last state's unused components,
    // and the initial state eagerly
    let mut inputs = IndexMap::new();
    let i64s = |v: &[i64]| Value::from(ndarray::Array1::from(v.to_vec()).into_dyn());
    inputs.insert("a0".to_string(), i64s(&[0, 5, 7, -11, i64::MAX]));
    let o = check_run(&dividing("i64", ""), inputs.clone());
    assert_eq!(folded(&o), 0);
    inputs.insert("a0".to_string(), i64s(&[0, 5, -11, i64::MAX]));
    check_run(&dividing("i64", ""), inputs);
}
