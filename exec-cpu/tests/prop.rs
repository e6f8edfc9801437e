//! The CPU executor agrees with the plan interpreter on random well-typed programs
//! (`eqfuse_ir::testgen`), for the optimised and the unfused plan of each:
//!
//! * with the default options (native kernels), with tiny blocks (7 elements, and 1) on
//!   several threads, and on the VM alone,
//!   so that block boundaries fall everywhere, the outputs are **bit-identical** — unless
//!   the plan folds floats (a float reduction, scan or permute), whose order is free: then
//!   float outputs agree up to rounding (`rtol = atol = 1e-4` for `f32`, `1e-9` for `f64`)
//!   and values computed from them (a comparison, a conversion) may differ. With the default
//!   options every testgen array of fewer than 64 elements fits in one block and folds in the
//!   interpreter's order, so most float folds are bit-identical too;
//!   NaNs match NaNs whatever their bits (which NaN `a * b` returns when both are NaN is the
//!   compiler's choice: it may commute the operands);
//! * when one fails, the other fails with the same code (the executor re-runs a failing
//!   block element by element, so it reports the interpreter's first failing element).
//!
//! Cases: [`CASES`] per property unless `EQFUSE_PROPTEST_CASES` or `PROPTEST_CASES` says
//! otherwise; a fixed seed unless `EQFUSE_PROPTEST_SEED` gives one (or `random`).
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cpu::{run, Codegen, RunOptions};
use eqfuse_ir::check::{check, Checked};
use eqfuse_ir::testgen::{executor_agrees, program_and_inputs, Case, GenConfig};
use eqfuse_optimize::{optimize, OptimizeOptions, Optimized};
use proptest::prelude::*;
use std::sync::mpsc;
use std::time::Duration;

const CASES: u32 = 128;

/// How long one optimisation may take before the case is skipped (the optimiser's own
/// properties catch hangs; here a case without a plan tells nothing about the executor).
const GUARD: Duration = Duration::from_secs(30);

fn config() -> ProptestConfig {
    let cases = ["EQFUSE_PROPTEST_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|v| std::env::var(v).ok().and_then(|s| s.parse().ok()))
        .unwrap_or(CASES);
    let rng_seed = match std::env::var("EQFUSE_PROPTEST_SEED").ok().as_deref() {
        Some("random") => proptest::test_runner::RngSeed::Random,
        Some(n) => {
            n.parse().map_or(proptest::test_runner::RngSeed::Random, proptest::test_runner::RngSeed::Fixed)
        }
        None => proptest::test_runner::RngSeed::Fixed(0xC0DE_0CB0),
    };
    ProptestConfig { cases, max_shrink_time: 120_000, rng_seed, ..ProptestConfig::default() }
}

fn optimise_guarded(checked: &Checked) -> Option<Optimized> {
    let checked = checked.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(optimize(&checked, &OptimizeOptions::default()));
    });
    rx.recv_timeout(GUARD).ok().and_then(Result::ok)
}

fn agrees_on(case: &Case) -> Result<(), TestCaseError> {
    let checked = check(&case.program).map_err(|e| TestCaseError::fail(format!("{e}\n{}", case.text())))?;
    let Some(opt) = optimise_guarded(&checked) else {
        return Err(TestCaseError::reject("no plan"));
    };
    let limits = eqfuse_ir::Limits::default();
    let bound = match eqfuse_ir::bind::bind_inputs(&checked, &case.inputs, &limits) {
        Ok(b) => b,
        Err(e) => return Err(TestCaseError::fail(format!("inputs do not bind: {e}\n{}", case.text()))),
    };
    let tiny = |block_size, threads| RunOptions { block_size, threads, ..RunOptions::default() };
    for (label, plan) in [("optimised", &opt.plan), ("unfused", &opt.unfused_plan)] {
        let want = eqfuse_ir::plan::eval::eval(plan, &case.inputs, &bound.sizes);
        let vm = RunOptions { codegen: Codegen::Vm, ..RunOptions::default() };
        for opts in [RunOptions::default(), tiny(7, 2), tiny(1, 3), vm] {
            let got = run(plan, &case.inputs, &bound.sizes, &opts);
            let what = format!(
                "{label} plan, block {}, {} threads, {:?}",
                opts.block_size,
                opts.thread_count(),
                opts.codegen
            );
            executor_agrees(&want, &got, plan).map_err(|e| {
                TestCaseError::fail(format!("{e} ({what})\n{plan}\nprogram:\n{}", case.text()))
            })?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn executor_matches_the_plan_interpreter(case in program_and_inputs(GenConfig::default())) {
        agrees_on(&case)?;
    }

    #[test]
    fn executor_matches_with_runtime_errors(
        case in program_and_inputs(GenConfig { allow_runtime_errors: true, ..GenConfig::default() })
    ) {
        agrees_on(&case)?;
    }

    #[test]
    fn executor_matches_on_bigger_programs(
        case in program_and_inputs(GenConfig {
            allow_runtime_errors: true,
            max_expr_depth: 5,
            max_items: 10,
            max_size: 12,
            ..GenConfig::default()
        })
    ) {
        agrees_on(&case)?;
    }
}
