//! One deadline for the whole optimisation (`OptimizeOptions::time_limit`): past it the
//! optimiser returns the best plan it has — at worst the unfused plan — and says which
//! stage the deadline stopped. Checked with generous slack (the machine may be loaded):
//! this is not a test of speed, but that a long optimisation stops near its deadline with
//! a valid plan.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::value::Value;
use eqfuse_optimize::{optimize, OptimizeOptions, Stage};
use std::time::{Duration, Instant};

/// `let a{k} = map (\x -> x + 1.0) a{k-1}`, `n` of them: rolled into a loop before
/// saturation (`preroll.rs`).
fn chain(n: usize) -> String {
    let mut s = String::from("input a0 : f32[n]\n");
    for k in 1..=n {
        s += &format!("let a{k} = map (\\x -> x + 1.0) a{}\n", k - 1);
    }
    s + &format!("output y = a{n}\n")
}

/// `let a{k} = map (\x -> x * 1.0001 + c_k) a{k-1}` with `c_k` cycling through 7 values: no
/// two neighbours alike, so nothing is rolled before saturation, which has to fuse it all.
fn mixed_chain(n: usize) -> String {
    let mut s = String::from("input a0 : f32[n]\n");
    for k in 1..=n {
        s += &format!("let a{k} = map (\\x -> x * 1.0001 + {}.5) a{}\n", k % 7, k - 1);
    }
    s + &format!("output y = a{n}\n")
}

/// `n` independent outputs `o{k} = map (\x -> x * k) a0`, and one reduction of each
/// pair of neighbours (a wide program: many kernels that horizontal fusion groups).
fn wide(n: usize) -> String {
    let mut s = String::from("input a0 : f32[n]\n");
    for k in 1..=n {
        s += &format!("output o{k} = map (\\x -> x * {k}.0) a0\n");
    }
    s + "output y = reduce (+) 0.0 a0\n"
}

/// Optimises `src` under `limit`; checks the plan against the reference interpreter.
fn stops_by(src: &str, limit: Duration, slack: Duration) -> eqfuse_optimize::Optimized {
    stops_by_with(src, OptimizeOptions { time_limit: limit, ..OptimizeOptions::default() }, slack)
}

/// [`stops_by`] with other options too.
fn stops_by_with(src: &str, opts: OptimizeOptions, slack: Duration) -> eqfuse_optimize::Optimized {
    let limit = opts.time_limit;
    let checked = check(&parse(src).unwrap()).unwrap();
    let started = Instant::now();
    let opt = optimize(&checked, &opts).unwrap();
    let took = started.elapsed();
    assert!(took <= limit + slack, "took {took:?} under a limit of {limit:?}");
    let mut inputs = indexmap::IndexMap::new();
    inputs.insert("a0".to_string(), Value::from(ndarray::arr1(&[0.5f32, 1.0, -2.0]).into_dyn()));
    let want = interpret(&checked, &inputs).unwrap();
    let b = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default()).unwrap();
    for plan in [&opt.plan, &opt.unfused_plan] {
        let got = eqfuse_ir::plan::eval::eval(plan, &inputs, &b.sizes).unwrap();
        assert!(identical(&want["y"], &got["y"]), "{:?} vs {:?}", want["y"], got["y"]);
    }
    opt
}

#[test]
fn a_deadline_already_passed_gives_the_unfused_plan() {
    let opt = stops_by(&mixed_chain(1500), Duration::from_millis(1), Duration::from_secs(20));
    assert_eq!(opt.stop_reason, "time limit");
    assert_eq!(opt.stop_reason.stage(), Some(Stage::Saturation));
    assert_eq!(opt.plan.kernels().len(), opt.unfused_plan.kernels().len());
}

#[test]
fn a_long_optimisation_stops_near_its_deadline_with_a_plan() {
    let opt = stops_by(&mixed_chain(1500), Duration::from_millis(300), Duration::from_secs(20));
    assert_eq!(
        opt.stop_reason,
        "time limit",
        "{:?}",
        opt.phases.iter().map(|p| (p.name, p.seconds)).collect::<Vec<_>>()
    );
}

#[test]
fn a_small_program_saturates_well_before_its_deadline() {
    let opt = stops_by(&chain(5), Duration::from_secs(10), Duration::from_secs(20));
    assert_eq!(opt.stop_reason, "saturated");
    assert_eq!(opt.plan.kernels().len(), 1);
}

#[test]
fn a_chain_of_20000_maps_stops_near_its_deadline_with_a_valid_plan() {
    let opt = stops_by(&mixed_chain(20_000), Duration::from_millis(2000), Duration::from_secs(30));
    // the deadline stops it, or on a quiet machine the node limit comes first (then every
    // later stage still ran under the deadline): a valid plan by the deadline either way
    match opt.stop_reason.as_str() {
        "time limit" => assert!(opt.stop_reason.stage().is_some()),
        "node limit" => {}
        other => panic!("stopped by {other}"),
    }
}

#[test]
fn a_chain_of_20000_identical_maps_is_one_kernel_with_a_loop() {
    // rolled before saturation: well within the default limit (slack for a loaded machine)
    let opt = stops_by(&chain(20_000), Duration::from_secs(10), Duration::from_secs(30));
    assert_eq!(opt.stop_reason, "saturated");
    assert_eq!(opt.plan.kernels().len(), 1);
    let mut loops = 0;
    opt.plan.kernels()[0]
        .elem
        .body
        .visit(&mut |i| loops += usize::from(matches!(i, eqfuse_ir::plan::Inst::Loop { .. })));
    assert_eq!(loops, 1, "{}", opt.plan);
    assert_eq!(opt.phases.first().map(|p| p.name), Some("preroll"));
}

#[test]
fn a_rebuild_after_the_node_limit_stops_near_the_deadline() {
    // the analysis once recomputed every class above a smaller term found deep in the
    // chain, one find at a time: one rebuild of egg's, which no deadline interrupts, took
    // 25 s here (29.8 s in all under a 6 s limit, 4000 kernels); now about 4 s, one kernel
    let opts = OptimizeOptions {
        time_limit: Duration::from_secs(6),
        node_limit: 50_000,
        ..OptimizeOptions::default()
    };
    stops_by_with(&mixed_chain(4000), opts, Duration::from_secs(12));
}

#[test]
fn a_wide_program_stops_near_its_deadline_with_a_valid_plan() {
    let opt = stops_by(&wide(3000), Duration::from_millis(300), Duration::from_secs(20));
    assert_eq!(opt.stop_reason, "time limit");
}

/// Lowering and the search over what to materialise, past the deadline, give nothing (and
/// say so) rather than run on; without one they give the plan.
#[test]
fn lowering_and_extraction_past_the_deadline_stop_at_once() {
    use eqfuse_lower::dag::{extract, CostContext};
    use eqfuse_lower::lower::{lower_by, Lowered, Signature};
    let checked = check(&parse(&chain(50)).unwrap()).unwrap();
    let enc = eqfuse_egraph::encode(&checked).unwrap();
    let sig = Signature { inputs: &enc.inputs, sizes: &enc.sizes, outputs: &enc.outputs };
    let gone = Instant::now();
    let x =
        extract(&enc.egraph, enc.root, &sig, &CostContext { deadline: Some(gone), ..CostContext::default() });
    assert!(x.unwrap().is_none());
    let x = extract(&enc.egraph, enc.root, &sig, &CostContext::default()).unwrap().unwrap();
    let term = eqfuse_egraph::Term::bare(x.term);
    let late = lower_by(&term, &enc.egraph.analysis, &sig, Some(gone)).unwrap();
    assert!(matches!(late, Lowered::Late));
    let on_time = lower_by(&term, &enc.egraph.analysis, &sig, None).unwrap();
    assert!(matches!(on_time, Lowered::Plan(p) if p.kernels().len() == 50));
}
