//! Plan structure (Futhark-style structure tests): how many kernels, what each reads and
//! writes, what was materialised, checked as assertions and as `explain` snapshots.

use eqfuse::{optimize, OptimizeOptions, Optimized};
use std::collections::HashMap;
use std::path::Path;

fn optimized(name: &str) -> Optimized {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance").join(name).join("program.eqf");
    let src = std::fs::read_to_string(&path).expect("program");
    let prog = eqfuse::parse(&src).expect("parses");
    optimize(&prog, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `explain` without timings (stable from run to run).
fn explain(o: &Optimized) -> String {
    o.explain_with(&HashMap::new(), false)
}

fn one_kernel(name: &str) -> Optimized {
    let o = optimized(name);
    assert_eq!(o.kernels.kernels.len(), 1, "{name}:\n{}", explain(&o));
    assert!(o.kernels.materialized.is_empty(), "{name}:\n{}", explain(&o));
    assert_eq!(o.result.stop_reason, "saturated");
    o
}

#[test]
fn dotp_is_one_reduction() {
    let o = one_kernel("dotp");
    assert_eq!(o.kernels.kernels[0].kind, "reduce");
    assert_eq!(o.kernels.kernels[0].reads, ["xs", "ys"]);
    assert_eq!(o.unfused.kernels.len(), 2);
    insta::assert_snapshot!("dotp", explain(&o));
}

#[test]
fn sum_of_squares_is_one_kernel() {
    let o = one_kernel("sum_of_squares");
    insta::assert_snapshot!("sum_of_squares", explain(&o));
}

#[test]
fn map_chain_is_one_kernel() {
    let o = one_kernel("map_chain");
    assert_eq!(o.kernels.kernels[0].reads, ["xs"]);
    insta::assert_snapshot!("map_chain", explain(&o));
}

#[test]
fn matvec_is_one_row_reduction() {
    let o = one_kernel("matvec");
    assert_eq!(o.kernels.kernels[0].kind, "reduce");
    assert_eq!(o.kernels.kernels[0].space, "r*c");
    insta::assert_snapshot!("matvec", explain(&o));
}

#[test]
fn nbody_is_one_kernel_with_three_outputs_and_no_square_array() {
    let o = one_kernel("nbody");
    let k = &o.kernels.kernels[0];
    assert_eq!(k.writes, ["ax", "ay", "az"]);
    assert_eq!(k.reads, ["mass", "px", "py", "pz"]);
    insta::assert_snapshot!("nbody", explain(&o));
}

#[test]
fn blackscholes_is_one_kernel_with_two_outputs() {
    let o = one_kernel("blackscholes");
    assert_eq!(o.kernels.kernels[0].writes, ["call", "put"]);
    insta::assert_snapshot!("blackscholes", explain(&o));
}

#[test]
fn explain_json_has_the_designed_fields() {
    let o = optimized("dotp");
    let j = o.explain_json(&HashMap::new());
    for key in [
        "optimize_ms",
        "stop_reason",
        "egraph",
        "rules_fired",
        "kernels",
        "materialized",
        "predicted_s",
        "unfused",
    ] {
        assert!(j.get(key).is_some(), "missing {key}: {j}");
    }
    assert_eq!(j["kernels"][0]["kind"], "reduce");
    assert_eq!(j["kernels"][0]["writes"][0], "dot");
    assert_eq!(j["kernels"][0]["loops"], 0);
    assert_eq!(j["unfused"]["kernels"], 2);
    assert!(j["predicted_s"].as_f64() < j["unfused"]["predicted_s"].as_f64());
}

/// The fusion budget bisects: no gas is the unfused plan, more gas never adds kernels,
/// and every budget gives a program computing the same thing.
#[test]
fn fuse_gas_bisects() {
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/map_chain/program.eqf"),
    )
    .expect("program");
    let prog = eqfuse::parse(&src).expect("parses");
    let mut last = usize::MAX;
    let inputs_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/map_chain/inputs");
    let inputs = eqfuse::files::read_inputs(Some(&inputs_dir), &[]).expect("inputs");
    let reference = eqfuse::run(&eqfuse::check(&prog).expect("checks"), eqfuse::Backend::Reference, &inputs)
        .expect("runs");
    for gas in 0..12 {
        let o = optimize(&prog, &OptimizeOptions { fuse_gas: Some(gas), ..Default::default() })
            .expect("optimises");
        let n = o.kernels.kernels.len();
        assert!(n <= last, "gas {gas}: {n} kernels after {last}");
        if gas == 0 {
            assert_eq!(n, o.unfused.kernels.len(), "no gas fuses nothing");
            assert!(o
                .result
                .rules_fired
                .keys()
                .all(|r| !r.starts_with("fuse-read") && !r.starts_with("fuse-reduce")));
        }
        last = n;
        let out = o.run(eqfuse::Backend::Reference, &inputs).expect("runs");
        for (k, v) in &reference {
            assert_eq!(v, &out[k], "gas {gas}: {k} differs");
        }
    }
    assert_eq!(last, 1);
}
