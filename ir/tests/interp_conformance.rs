//! The conformance cases run through parse → check → interpret, compared with their expected
//! outputs (dtype, shape, and values within `rtol`/`atol`/`mismatch_fraction`), and the
//! error cases checked for their code.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::conformance::{cases, Case};
use eqfuse_ir::interp::interpret;
use eqfuse_ir::parse::parse;
use eqfuse_ir::{Result, Value};
use indexmap::IndexMap;
use std::path::Path;
use std::time::Instant;

/// Parses, checks and runs one case.
fn run_case(case: &Case) -> Result<IndexMap<String, Value>> {
    let src = case.source().unwrap();
    let checked = check(&parse(&src)?)?;
    interpret(&checked, &case.inputs()?)
}

#[test]
fn conformance_cases() {
    // the project's copy of the conformance suite
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance");
    let all = cases(&root).unwrap();
    assert!(!all.is_empty(), "no cases under {}", root.display());
    let mut failures = Vec::new();
    for case in &all {
        let name = &case.name;
        let start = Instant::now();
        let result = run_case(case);
        let took = start.elapsed();
        eprintln!("{name}: {:.3} s", took.as_secs_f64());
        match (&case.spec.error, result) {
            (Some(code), Err(e)) if e.code.as_str() == code => {}
            (Some(code), Err(e)) => failures.push(format!("{name}: expected {code}, got {e}")),
            (Some(code), Ok(_)) => failures.push(format!("{name}: expected {code}, but it ran")),
            (None, Err(e)) => failures.push(format!("{name}: {e}")),
            (None, Ok(outs)) => {
                if let Err(why) = case.compare(&outs) {
                    failures.push(format!("{name}: {why}"));
                }
            }
        }
        assert!(took.as_secs_f64() < 5.0, "{name} took {took:?}");
    }
    assert!(failures.is_empty(), "conformance failures:\n{}", failures.join("\n"));
}
