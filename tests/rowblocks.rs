//! Row blocks (docs/fusion.md, "Row blocks"): which plans run their row phases in one
//! pass, and random row programs — row reductions, maps over their results, generates that
//! read both, over empty and non-empty rows — on the CPU backend (block by block) against
//! the reference interpreter.
#![allow(clippy::unwrap_used)]

mod common;

use eqfuse::{Arrays, Backend, OptimizeOptions};
use eqfuse_ir::plan::Step;
use eqfuse_ir::value::{compare, Tolerance};
use proptest::prelude::*;

/// The optimised plan's steps: row blocks as their kernel counts, other kernels as 1.
fn passes(src: &str) -> Vec<usize> {
    let prog = eqfuse::parse(src).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let o = eqfuse::optimize(&prog, &OptimizeOptions::default()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    o.result
        .plan
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Kernel(_) => Some(1),
            Step::RowBlock { kernels, .. } => Some(kernels.len()),
            _ => None,
        })
        .collect()
}

#[test]
fn row_programs_run_in_one_pass() {
    let softmax =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/softmax_rows.eqf")).unwrap();
    let cumulative = "input x : f32[r, c]\n\
        let t = reduce (+) 0 x\n\
        let s = scan (+) 0 (generate [r, c] (\\i j -> x[i, j] / t[i]))\n\
        output y = generate [r, c] (\\i j -> s[i, j] * s[i, j])\n";
    for (name, src) in [
        ("softmax_rows", softmax.as_str()),
        ("layernorm", common::LAYERNORM),
        ("logsumexp", common::LOGSUMEXP),
        ("cumulative", cumulative),
    ] {
        let p = passes(src);
        assert_eq!(p.len(), 1, "{name}: {p:?} (one kernel; a row block counts its phases here)");
        assert!(p[0] >= 2, "{name}: {p:?}");
    }
    // softmax's `exp (m - max)` is kept per block of rows, never written to memory
    let o = eqfuse::optimize(&eqfuse::parse(&softmax).unwrap(), &OptimizeOptions::default()).unwrap();
    assert_eq!(o.kernels.kept, vec!["e".to_string()]);
    assert!(!o.kernels.materialized.contains(&"e".to_string()), "{:?}", o.kernels.materialized);
    assert!(o.explain_with(false).contains("kernels: 3 in 1 pass (a row block is one pass)"));
    // a column reduction reads other rows: not a row block with its consumer
    let cols = "input x : f32[r, c]\nlet s = reduce (+) 0 (transpose x)\n\
        output y = generate [r, c] (\\i j -> x[i, j] - s[j])\n";
    assert!(passes(cols).iter().all(|&n| n == 1), "{:?}", passes(cols));
    // another row's result: not a row block
    let shifted = "input x : f32[r, c]\nlet m = reduce max (-inf) x\n\
        output y = generate [r - 1, c] (\\i j -> x[i, j] - m[i + 1])\n";
    assert!(passes(shifted).iter().all(|&n| n == 1), "{:?}", passes(shifted));
}

/// A row block is cheap, not free: its phases write and read their rows in cache. Priced as
/// free, `nbody` at 4096 bodies was planned as its 13 unfused kernels in one row block (as
/// cheap, in the model, as the fused kernel), and ran 4 times slower than the one kernel.
#[test]
fn many_cached_phases_do_not_undercut_one_fused_kernel() {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/nbody.eqf")).unwrap();
    let prog = eqfuse::parse(&src).unwrap();
    for n in [1024u64, 4096, 1 << 20] {
        let mut opts = OptimizeOptions::default();
        opts.cost.sizes.insert("n".into(), n);
        let o = eqfuse::optimize(&prog, &opts).unwrap();
        let steps: Vec<&Step> = o
            .result
            .plan
            .steps
            .iter()
            .filter(|s| matches!(s, Step::Kernel(_) | Step::RowBlock { .. }))
            .collect();
        assert!(matches!(steps.as_slice(), [Step::Kernel(_)]), "n = {n}: {}", o.explain_with(false));
    }
}

/// One random row program: a chain of row operations over `x : t[r, c]`.
#[derive(Clone, Debug)]
struct Spec {
    /// Each step: 0 a row reduction of a point expression, 1 a map over the last row
    /// result, 2 a generate of a point expression, 3 a row scan of one (inclusive or
    /// exclusive); with a choice of operator.
    steps: Vec<(u8, u8)>,
    f64: bool,
    r: usize,
    c: usize,
    seed: u64,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        proptest::collection::vec((0u8..4, 0u8..4), 1..6),
        any::<bool>(),
        prop_oneof![1 => Just(0usize), 8 => 1usize..9, 2 => 60usize..400],
        prop_oneof![1 => Just(0usize), 8 => 1usize..40],
        any::<u64>(),
    )
        .prop_map(|(steps, f64, r, c, seed)| Spec { steps, f64, r, c, seed })
}

impl Spec {
    fn program(&self) -> (String, Arrays) {
        let t = if self.f64 { "f64" } else { "f32" };
        let mut src = format!("input x : {t}[r, c]\n");
        let (mut rows, mut points) = (Vec::<String>::new(), vec!["x".to_string()]);
        let mut outputs = Vec::new();
        for (k, &(kind, op)) in self.steps.iter().enumerate() {
            let p = points.last().cloned().unwrap_or_else(|| "x".into());
            // a point expression: the last point array, combined with the last row result
            let point = match (rows.last(), op) {
                (Some(m), 0) => format!("{p}[i, j] - {m}[i]"),
                (Some(m), 1) => format!("exp ({p}[i, j] - {m}[i])"),
                (Some(m), 2) => format!("{p}[i, j] * {m}[i]"),
                _ => format!("{p}[i, j] * 0.5"),
            };
            match kind {
                0 => {
                    let (red, ne) =
                        [("(+)", "0"), ("max", "(-inf)"), ("min", "inf"), ("(+)", "0")][op as usize];
                    src.push_str(&format!(
                        "let r{k} = reduce {red} {ne} (generate [r, c] (\\i j -> {point}))\n"
                    ));
                    rows.push(format!("r{k}"));
                }
                1 if !rows.is_empty() => {
                    let m = rows.last().cloned().unwrap_or_default();
                    src.push_str(&format!("let r{k} = map (\\s -> s * 0.25 + 1.0) {m}\n"));
                    rows.push(format!("r{k}"));
                }
                3 => {
                    let (scan, op, ne) = [
                        ("scan", "(+)", "0"),
                        ("scan_exclusive", "max", "(-inf)"),
                        ("scan", "min", "inf"),
                        ("scan_exclusive", "(+)", "0"),
                    ][op as usize];
                    src.push_str(&format!(
                        "let p{k} = {scan} {op} {ne} (generate [r, c] (\\i j -> {point}))\n"
                    ));
                    points.push(format!("p{k}"));
                }
                _ => {
                    src.push_str(&format!("let p{k} = generate [r, c] (\\i j -> {point})\n"));
                    points.push(format!("p{k}"));
                }
            }
        }
        if let Some(m) = rows.last() {
            outputs.push(m.clone());
        }
        if let Some(p) = points.last().filter(|p| *p != "x") {
            outputs.push(p.clone());
        }
        if outputs.is_empty() {
            outputs.push("x".into());
        }
        for (n, o) in outputs.iter().enumerate() {
            src.push_str(&format!("output o{n} = {o}\n"));
        }
        let mut inputs = Arrays::new();
        inputs.insert("x".into(), common::uniform(&[self.r, self.c], self.f64, -0.5, self.seed));
        (src, inputs)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(0x50_B10C), ..ProptestConfig::default() })]

    /// Random row programs on the CPU backend (row blocks run block by block) agree with
    /// the reference interpreter.
    #[test]
    fn random_row_programs_agree_with_the_reference(s in spec()) {
        let (src, inputs) = s.program();
        let checked = eqfuse::check(&eqfuse::parse(&src).unwrap()).unwrap();
        let want = eqfuse::run(&checked, Backend::Reference, &inputs).unwrap();
        let got = eqfuse::run(&checked, Backend::Cpu, &inputs).unwrap();
        // and the optimised plan (its row blocks keep what only they read per block)
        let opt = eqfuse::optimize(&eqfuse::parse(&src).unwrap(), &OptimizeOptions::default()).unwrap();
        let got_opt = opt.run(Backend::Cpu, &inputs).unwrap();
        let tol = if s.f64 {
            Tolerance { rtol: 1e-9, atol: 1e-9, mismatch_fraction: 0.0 }
        } else {
            Tolerance { rtol: 1e-4, atol: 1e-4, mismatch_fraction: 0.0 }
        };
        for (k, w) in &want {
            let r = compare(&got[k], w, &tol);
            prop_assert!(r.is_ok(), "{}: `{}`: {:?} ({}x{})", src, k, r, s.r, s.c);
            let r = compare(&got_opt[k], w, &tol);
            prop_assert!(r.is_ok(), "optimised: {}: `{}`: {:?} ({}x{})", src, k, r, s.r, s.c);
        }
    }
}
