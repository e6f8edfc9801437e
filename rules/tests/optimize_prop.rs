//! Properties of the optimiser over random well-typed programs (`eqfuse_ir::testgen`):
//!
//! * the optimised program (`Optimized::program`), printed, parsed back and checked,
//!   interprets to the same outputs as the original under the reference interpreter. The
//!   default rules preserve float results bit for bit (DESIGN.md decision 7), so outputs
//!   must be bit-identical (`testgen::identical`); when a run fails, the optimised program
//!   may fail with the same code or succeed (the optimiser may drop work on elements that
//!   are never read), but a run that succeeds must still succeed once optimised;
//! * optimisation is deterministic: the same program optimised twice prints the same and
//!   fires the same rules the same number of times.
//!
//! Case counts: each property runs `CASES` cases unless the environment says otherwise:
//! `EQFUSE_PROPTEST_CASES=N` first, else proptest's own `PROPTEST_CASES=N`, e.g.
//! `EQFUSE_PROPTEST_CASES=2000 cargo test --release -p eqfuse-rules --test optimize_prop`.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use eqfuse_ir::testgen::{identical, program_and_inputs, Case, GenConfig};
use eqfuse_rules::{optimize, OptimizeOptions, Optimized};
use proptest::prelude::*;

/// Cases per property unless `EQFUSE_PROPTEST_CASES` or `PROPTEST_CASES` says otherwise.
const CASES: u32 = 64;

fn config() -> ProptestConfig {
    let cases = ["EQFUSE_PROPTEST_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|v| std::env::var(v).ok().and_then(|s| s.parse().ok()))
        .unwrap_or(CASES);
    ProptestConfig { cases, ..ProptestConfig::default() }
}

fn optimised(case: &Case) -> Result<(eqfuse_ir::check::Checked, Optimized), TestCaseError> {
    let checked =
        check(&case.program).map_err(|e| TestCaseError::fail(format!("original: {e}\n{}", case.text())))?;
    let opt = optimize(&checked, &OptimizeOptions::default())
        .map_err(|e| TestCaseError::fail(format!("optimize: {e}\n{}", case.text())))?;
    Ok((checked, opt))
}

/// Optimises, decodes, checks and interprets `case`; compares with the original.
fn optimised_agrees(case: &Case) -> Result<(), TestCaseError> {
    let (checked, opt) = optimised(case)?;
    let text = print_program(&opt.program);
    let reparsed = parse(&text).map_err(|e| TestCaseError::fail(format!("optimised text: {e}\n{text}")))?;
    let ochecked =
        check(&reparsed).map_err(|e| TestCaseError::fail(format!("optimised check: {e}\n{text}")))?;
    let orig = interpret(&checked, &case.inputs);
    let got = interpret(&ochecked, &case.inputs);
    match (orig, got) {
        (Ok(o), Ok(g)) => {
            let (ok, gk): (Vec<&String>, Vec<&String>) = (o.keys().collect(), g.keys().collect());
            prop_assert_eq!(ok, gk, "output names differ\n{}", text);
            for (k, a) in &o {
                let b = &g[k];
                prop_assert!(identical(a, b), "output {} differs: {:?} vs {:?}\noptimised:\n{}", k, a, b, text);
            }
        }
        // the optimiser may remove an error on elements that are never read
        (Err(_), Ok(_)) => {}
        (Err(a), Err(b)) => {
            prop_assert_eq!(a.code, b.code, "original fails with {}, optimised with {}\noptimised:\n{}", a, b, text);
        }
        (Ok(_), Err(b)) => prop_assert!(false, "original runs, optimised fails: {}\noptimised:\n{}", b, text),
    }
    Ok(())
}

/// Optimising twice gives the same program and the same rule counts.
fn deterministic(case: &Case) -> Result<(), TestCaseError> {
    let (_, a) = optimised(case)?;
    let (_, b) = optimised(case)?;
    let (pa, pb) = (print_program(&a.program), print_program(&b.program));
    prop_assert_eq!(&pa, &pb, "two optimisations print differently");
    let fa: Vec<(&String, &usize)> = a.rules_fired.iter().collect();
    let fb: Vec<(&String, &usize)> = b.rules_fired.iter().collect();
    prop_assert_eq!(fa, fb, "rules fired differ\n{}", pa);
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn optimised_programs_compute_the_same(case in program_and_inputs(GenConfig::default())) {
        optimised_agrees(&case)?;
    }

    #[test]
    fn optimised_programs_with_runtime_errors(
        case in program_and_inputs(GenConfig { allow_runtime_errors: true, ..GenConfig::default() })
    ) {
        optimised_agrees(&case)?;
    }

    #[test]
    fn optimised_bigger_programs(
        case in program_and_inputs(GenConfig {
            allow_runtime_errors: true,
            max_expr_depth: 5,
            max_items: 10,
            ..GenConfig::default()
        })
    ) {
        optimised_agrees(&case)?;
    }

    #[test]
    fn optimisation_is_deterministic(case in program_and_inputs(GenConfig::default())) {
        deterministic(&case)?;
    }
}
