//! Plan structure (Futhark-style structure tests): how many kernels, what each reads and
//! writes, what was materialised, checked as assertions and as `explain` snapshots.

mod common;

use eqfuse::{optimize, OptimizeOptions, Optimized};
use std::path::Path;

fn optimized(name: &str) -> Optimized {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance").join(name).join("program.eqf");
    let src = std::fs::read_to_string(&path).expect("program");
    let prog = eqfuse::parse(&src).expect("parses");
    optimize(&prog, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `explain` without timings (stable from run to run).
fn explain(o: &Optimized) -> String {
    o.explain_with(false)
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
    let j = o.explain_json();
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
    // where each value written comes from in the program (issue 26: added, nothing removed)
    let origin = &j["kernels"][0]["origins"][0];
    assert_eq!(origin["value"], "dot", "{j}");
    assert!(origin["expr"].as_str().is_some_and(|e| e.starts_with("reduce (+) 0")), "{j}");
    assert!(origin["line"].as_u64().is_some_and(|l| l > 0), "{j}");
    // the model's counted work (added, nothing removed): the plan's, each kernel's and the
    // unfused plan's; one reduction reading two arrays of 2^20 f32, one multiply-add each
    for w in [&j["work"], &j["kernels"][0]["work"]] {
        assert_eq!(w["launches"], 1.0, "{j}");
        assert!(w["bytes"].as_f64().is_some_and(|b| b >= 8.0 * f64::from(1 << 20)), "{j}");
        assert_eq!(w["flop"], 2.0 * f64::from(1 << 20), "{j}");
        assert_eq!(w["gather"], 0.0, "{j}");
    }
    assert_eq!(j["unfused"]["work"]["launches"], 2.0, "{j}");
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

fn optimized_src(src: &str) -> Optimized {
    let prog = eqfuse::parse(src).expect("parses");
    optimize(&prog, &OptimizeOptions::default()).expect("optimises")
}

/// How many `exp` calls the plan's element functions make.
fn exps(o: &Optimized) -> usize {
    format!("{}", o.result.plan).matches("exp(").count()
}

/// `exp` is dear: it is computed once per element. The cheapest plan is neither to
/// materialise `e` nor to duplicate it, but the third choice of decision 4 (docs/design-decisions.md): one
/// multi-output pass computing `exp` once and writing both consumers.
#[test]
fn shared_producer_computes_the_dear_exp_once() {
    let o = optimized("shared_producer");
    assert_eq!(exps(&o), 1, "{}", explain(&o));
    assert!(o.kernels.kernels.len() <= 2, "{}", explain(&o));
    insta::assert_snapshot!("shared_producer", explain(&o));
}

/// Where the consumers cannot share one pass (they read `e` at different places), a dear
/// producer is materialised and a cheap one is fused into both.
#[test]
fn a_shared_producer_is_materialised_when_dear_and_fused_when_cheap() {
    let program = |f: &str| {
        format!(
            "input xs : f32[n]\nlet e = map (\\v -> {f}) xs\noutput y = map (\\v -> v + 1) e\n\
             output z = generate [n] (\\i -> e[n - 1 - i] * 2)"
        )
    };
    let dear = optimized_src(&program("exp v"));
    assert_eq!(dear.kernels.materialized, ["e"], "{}", explain(&dear));
    assert_eq!(exps(&dear), 1, "{}", explain(&dear));
    let cheap = optimized_src(&program("v * 3.0"));
    assert!(cheap.kernels.materialized.is_empty(), "{}", explain(&cheap));
    assert!(cheap.kernels.kernels.iter().all(|k| k.reads == ["xs"]), "{}", explain(&cheap));
    insta::assert_snapshot!("shared_producer_dear", explain(&dear));
    insta::assert_snapshot!("shared_producer_cheap", explain(&cheap));
}

#[test]
fn stencil_twice_materialises_the_first_stencil() {
    let o = optimized("stencil_twice");
    assert_eq!(o.kernels.materialized, ["b"], "{}", explain(&o));
    assert_eq!(o.kernels.kernels.len(), 2);
    insta::assert_snapshot!("stencil_twice", explain(&o));
}

#[test]
fn mandelbrot_is_one_kernel() {
    let o = one_kernel("mandelbrot");
    assert_eq!(o.kernels.kernels[0].writes, ["count"]);
}

#[test]
fn variance_is_at_most_two_kernels() {
    let o = optimized("variance");
    assert!(o.kernels.kernels.len() <= 2, "{}", explain(&o));
    insta::assert_snapshot!("variance", explain(&o));
}

#[test]
fn softmax_rows_is_one_kernel() {
    let o = optimized("softmax_rows");
    assert!(o.kernels.kernels.len() <= 3, "{}", explain(&o));
    // one row block: the matrix crosses memory once, and `exp (m - max)` not at all
    assert_eq!(o.kernels.passes, 1, "{}", explain(&o));
    assert!(o.kernels.kernels.iter().all(|k| k.pass == 0));
    assert!(explain(&o).contains("kernels: 3 in 1 pass (a row block is one pass)"), "{}", explain(&o));
    assert_eq!(o.kernels.kept, ["e"], "{}", explain(&o));
    insta::assert_snapshot!("softmax_rows", explain(&o));
}

fn conformance_programs() -> Vec<(String, eqfuse::Program)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root).expect("conformance").filter_map(|e| e.ok()).collect();
    dirs.sort_by_key(|e| e.path());
    for d in dirs {
        let Ok(src) = std::fs::read_to_string(d.path().join("program.eqf")) else { continue };
        let Ok(prog) = eqfuse::parse(&src) else { continue };
        if eqfuse::check(&prog).is_err() {
            continue;
        }
        out.push((d.file_name().to_string_lossy().to_string(), prog));
    }
    out
}

/// The chosen plan never predicts more time than the unfused one, nor than the best plan
/// exhaustive search over every materialisation choice finds.
#[test]
fn chosen_plans_beat_the_unfused_plan_and_match_exhaustive_search() {
    let mut enumerated = 0;
    for (name, prog) in conformance_programs() {
        let o = optimize(&prog, &OptimizeOptions::default()).expect("optimises");
        let (chosen, unfused) = (o.kernels.predicted_s, o.unfused.predicted_s);
        assert!(chosen <= unfused * (1.0 + 1e-9), "{name}: {chosen} > unfused {unfused}\n{}", explain(&o));
        let exact_opts = OptimizeOptions {
            cost: eqfuse::CostContext { search: eqfuse::Search::Exact(12), ..Default::default() },
            ..Default::default()
        };
        let e = optimize(&prog, &exact_opts).expect("optimises");
        let best = e.kernels.predicted_s;
        assert!(chosen <= best * (1.0 + 1e-9), "{name}: greedy {chosen} > exhaustive {best}");
        enumerated += 1;
    }
    assert!(enumerated >= 20);
}

/// Loop recovery: the iterated map, the iterate builtin and mandelbrot's joint recurrence
/// (three arrays per step, rolled into one loop with tuple state) are one kernel with a
/// loop each.
#[test]
fn recurrences_are_one_kernel_with_a_loop() {
    for name in ["iterated_map", "iterate_builtin", "mandelbrot"] {
        let o = one_kernel(name);
        let j = o.explain_json();
        assert!(j["kernels"][0]["loops"].as_u64().is_some_and(|l| l >= 1), "{name}: {j}");
    }
}

/// A joint recurrence of three arrays (two coordinates and an escape count, as in
/// mandelbrot, with other arithmetic): rolled into a loop with tuple state, and computing
/// exactly what the reference interpreter computes.
#[test]
fn a_joint_recurrence_rolls_and_stays_exact() {
    let mut src =
        String::from("input x : f64[n]\nlet u0 = x\nlet v0 = map (\\a -> a * 0.5) x\nlet n0 = fill [n] 0\n");
    for k in 0..8 {
        let j = k + 1;
        src.push_str(&format!(
            "let e{k} = map (\\u v -> u * u + v * v > 50.0) u{k} v{k}\n\
             let u{j} = map (\\e u v -> if e then u else u * 0.5 + v) e{k} u{k} v{k}\n\
             let v{j} = map (\\e u v -> if e then v else v * 0.5 - u) e{k} u{k} v{k}\n\
             let n{j} = map (\\e m -> if e then m else m + 1) e{k} n{k}\n"
        ));
    }
    src.push_str("output r = n8\n");
    let o = optimized_src(&src);
    assert_eq!(o.kernels.kernels.len(), 1, "{}", explain(&o));
    assert!(o.kernels.kernels[0].loops >= 1, "{}", explain(&o));
    let prog = eqfuse::parse(&src).expect("parses");
    let checked = eqfuse::check(&prog).expect("checks");
    let mut inputs = eqfuse::Arrays::new();
    let xs: Vec<f64> = (0..64).map(|i| (i as f64 - 20.0) * 1.7).collect();
    inputs.insert("x".into(), eqfuse::Value::F64(ndarray::Array1::from(xs).into_dyn()));
    let want = eqfuse::run(&checked, eqfuse::Backend::Reference, &inputs).expect("runs");
    for backend in [eqfuse::Backend::Reference, eqfuse::Backend::Cpu] {
        let got = eqfuse::backend::run_plan(&o.result.plan, &checked, backend, &inputs).expect("runs");
        assert_eq!(got["r"], want["r"], "{backend}");
    }
}

/// A generated chain of 1000 identical maps is one kernel with a loop (docs/design-decisions.md's loop
/// recovery at scale; how long it takes is for `eqfuse explain` to print, not to assert).
#[test]
fn a_thousand_chained_maps_become_one_loop() {
    let mut src = String::from("input x0 : f32[n]\n");
    for i in 1..=1000 {
        src.push_str(&format!("let x{i} = map (\\x -> 0.5 * x + 0.25 * sin x) x{}\n", i - 1));
    }
    src.push_str("output y = x1000\n");
    let o = optimized_src(&src);
    assert_eq!(o.result.stop_reason, "saturated", "{}", explain(&o));
    assert_eq!(o.kernels.kernels.len(), 1, "{}", explain(&o));
    assert_eq!(o.kernels.kernels[0].loops, 1, "{}", explain(&o));
    assert!(format!("{}", o.result.plan).contains("loop r"), "{}", o.result.plan);
}

#[test]
fn a_matrix_product_is_one_contraction() {
    let o = one_kernel("matmul");
    let k = &o.kernels.kernels[0];
    assert_eq!(k.kind, "contract");
    assert_eq!(k.reads, ["a", "b"]);
    assert!(explain(&o).contains("as GEMM: c[i, j] = Σp a[i, p] · b[p, j]"), "{}", explain(&o));
    insta::assert_snapshot!("matmul", explain(&o));
}

#[test]
fn attention_runs_its_two_products_as_contractions() {
    let o = optimized("attention");
    let kinds: Vec<&str> = o.kernels.kernels.iter().map(|k| k.kind).collect();
    assert_eq!(kinds, ["contract", "reduce", "reduce", "generate", "contract"], "{}", explain(&o));
    // the softmax weights are materialised: a product of a fused producer would not be a GEMM
    assert!(o.kernels.materialized.iter().any(|m| m == "w"), "{}", explain(&o));
    let text = explain(&o);
    assert!(text.contains("as GEMM: s[i, j] = Σp q[i, p] · k[j, p]"), "{text}");
    assert!(text.contains("as GEMM: o[i, j] = Σp w[i, p] · v[p, j]"), "{text}");
    insta::assert_snapshot!("attention", text);
}

#[test]
fn compaction_is_a_reduction_and_a_scan_block() {
    let o = optimized("compaction");
    // `total`, then the scan and the permute segment by segment: neither the flags nor the
    // positions are written to memory
    assert_eq!(o.kernels.passes, 2, "{}", explain(&o));
    assert!(o.kernels.materialized.is_empty(), "{}", explain(&o));
    assert_eq!(o.kernels.kept, ["pos"], "{}", explain(&o));
    insta::assert_snapshot!("compaction", explain(&o));
}

#[test]
fn a_filter_and_the_reductions_of_its_input_are_one_pass() {
    let o = optimized("filter_sums");
    assert_eq!(o.kernels.passes, 1, "{}", explain(&o));
    assert!(explain(&o).contains("in 1 pass (a filter block is one pass)"), "{}", explain(&o));
    insta::assert_snapshot!("filter_sums", explain(&o));
}

#[test]
fn a_layer_normalisation_and_a_log_sum_exp_are_each_one_row_block() {
    for (name, src) in [("layernorm", common::LAYERNORM), ("logsumexp", common::LOGSUMEXP)] {
        let o = optimized_src(src);
        assert_eq!(o.kernels.passes, 1, "{name}:\n{}", explain(&o));
        insta::assert_snapshot!(name, explain(&o));
    }
}
