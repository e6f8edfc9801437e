//! Every conformance program, optimised with the default options (`eqfuse_optimize::optimize`),
//! printed, parsed back and checked, computes under the reference interpreter the expected
//! outputs within the case's tolerances; so do its plan and its unfused plan under the plan
//! interpreter (`eqfuse_ir::plan::eval`); and every optimisation saturates.
//!
//! Error cases: a parse- or check-time error code (`E-PARSE`, `E-TYPE`, ...) never reaches
//! the optimiser, so the test only asserts that the source fails with that code. A run-time
//! code (`E-DIV-ZERO`, `E-INDEX`, `E-SHAPE`, `E-INPUT`) must come out of reading or binding
//! the inputs, or out of running the *optimised* program.
//!
//! Runs `tests/conformance` and, when `EQFUSE_EXTRA_CONFORMANCE` names one, a second suite. Each optimised program prints one line to stderr with its optimisation
//! time, e-graph size and stop reason (`cargo test -- --nocapture` shows them).
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::conformance::{cases, Case, Spec};
use eqfuse_ir::error::{Code, Error};
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::print::print_program;
use eqfuse_ir::testgen::identical;
use eqfuse_ir::value::compare;
use eqfuse_ir::Value;
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use std::path::{Path, PathBuf};

/// Codes that the parser or the checker gives (the program never reaches the optimiser).
fn is_static(code: &str) -> bool {
    code == Code::Parse.as_str() || code == Code::Type.as_str()
}

/// Runs one case, adding what it saw to `log`; `Err` says what went wrong.
fn run_case(case: &Case, log: &mut Vec<String>) -> Result<(), String> {
    let spec = &case.spec;
    let src = case.source()?;
    let checked = match parse(&src).and_then(|p| check(&p)) {
        Ok(c) => c,
        Err(e) => {
            return match &spec.error {
                Some(code) if e.code.as_str() == code => {
                    log.push(format!("{code} from parse/check, as expected; not optimised"));
                    Ok(())
                }
                Some(code) => Err(format!("expected {code}, but parse/check gave {e}")),
                None => Err(format!("parse/check failed: {e}")),
            };
        }
    };
    if let Some(code) = &spec.error {
        if is_static(code) {
            return Err(format!("expected {code} from parse/check, but the program checks"));
        }
    }
    let opt = optimize(&checked, &OptimizeOptions::default()).map_err(|e| format!("optimize: {e}"))?;
    let (nodes, classes, iterations) = opt.egraph_size();
    log.push(format!(
        "optimize_ms {:.1}, e-graph {nodes} nodes / {classes} classes / {iterations} iterations, stop: {}",
        opt.optimize_ms, opt.stop_reason
    ));
    let text = print_program(&opt.program);
    let reparsed = parse(&text).map_err(|e| format!("optimised text does not parse: {e}\n{text}"))?;
    let ochecked = check(&reparsed).map_err(|e| format!("optimised program does not check: {e}\n{text}"))?;
    let mut problems = Vec::new();
    if opt.stop_reason != "saturated" {
        problems.push(format!("stopped by `{}`, not saturated", opt.stop_reason));
    }
    let inputs = case.inputs();
    let orig = inputs.clone().and_then(|inputs| interpret(&checked, &inputs));
    let got = inputs.clone().and_then(|inputs| interpret(&ochecked, &inputs));
    let expected = case.expected().map_err(|e| e.to_string())?;
    check_outcome(spec, "the optimised program", got.clone(), &expected, &mut problems, &text);
    // the plans the executors run, under the plan interpreter
    for (label, plan) in [("the plan", &opt.plan), ("the unfused plan", &opt.unfused_plan)] {
        let out = inputs.clone().and_then(|inputs| {
            let b = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default())?;
            eqfuse_ir::plan::eval::eval(plan, &inputs, &b.sizes)
        });
        check_outcome(spec, label, out, &expected, &mut problems, &format!("{plan}"));
    }
    match (&spec.error, orig, got) {
        (Some(code), _, Err(e)) if e.code.as_str() == code => log.push(format!("{code} as expected")),
        // Not required (reduce order is free), but worth knowing in the log.
        (None, Ok(o), Ok(got)) => {
            let same = o.iter().all(|(k, v)| got.get(k).is_some_and(|g| identical(v, g)));
            log.push(format!("bit-identical to the unoptimised program: {same}"));
        }
        _ => {}
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Checks one way of running a case (`label`) against the case's expectation.
fn check_outcome(
    spec: &Spec,
    label: &str,
    result: Result<IndexMap<String, Value>, Error>,
    expected: &IndexMap<String, Value>,
    problems: &mut Vec<String>,
    text: &str,
) {
    match (&spec.error, result) {
        (Some(code), Err(e)) if e.code.as_str() == code => {}
        (Some(code), Err(e)) => problems.push(format!("{label}: expected {code}, got {e}\n{text}")),
        (Some(code), Ok(_)) => {
            problems.push(format!("{label}: expected {code}, but it ran without error\n{text}"))
        }
        (None, Err(e)) => problems.push(format!("{label} failed: {e}\n{text}")),
        (None, Ok(got)) => {
            let names: Vec<&String> = got.keys().collect();
            if names.len() != spec.outputs.len() || names.iter().zip(&spec.outputs).any(|(a, b)| *a != b) {
                problems.push(format!("{label}: outputs are {names:?}, case.toml lists {:?}", spec.outputs));
            }
            for name in &spec.outputs {
                let Some(want) = expected.get(name) else {
                    problems.push(format!("no expected/{name}.npy"));
                    continue;
                };
                match got.get(name) {
                    None => problems.push(format!("{label}: no output `{name}`")),
                    Some(have) => {
                        if let Err(m) = compare(have, want, &spec.tol) {
                            problems.push(format!("{label}: output `{name}`: {m}\n{text}"));
                        }
                    }
                }
            }
        }
    }
}

/// Runs every case under `root`; `label` prefixes the log lines. Returns the case count.
fn run_suite(root: &Path, label: &str) -> usize {
    let dirs = cases(root).unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for case in &dirs {
        let mut log = Vec::new();
        let result = run_case(case, &mut log);
        eprintln!("{label}/{}: {}", case.name, log.join("; "));
        if let Err(m) = result {
            failures.push(format!("  {}: {m}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases in {} failed:\n{}",
        failures.len(),
        dirs.len(),
        root.display(),
        failures.join("\n")
    );
    dirs.len()
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn optimised_conformance_programs_give_the_expected_outputs() {
    let n = run_suite(&workspace_root().join("tests/conformance"), "tests/conformance");
    assert!(n >= 25, "tests/conformance has only {n} cases");
}

#[test]
fn optimised_extra_conformance_programs_when_named() {
    // EQFUSE_EXTRA_CONFORMANCE: a second suite of the same layout (.ci/run names the one
    // CI lays beside the checkout)
    if let Some(root) = std::env::var_os("EQFUSE_EXTRA_CONFORMANCE") {
        let root = std::path::PathBuf::from(root);
        assert!(root.is_dir(), "EQFUSE_EXTRA_CONFORMANCE={} is not a directory", root.display());
        run_suite(&root, "EQFUSE_EXTRA_CONFORMANCE");
    }
}
