//! Every conformance case through the public API and through the `eqfuse` binary, on the
//! reference backend: outputs within the case's tolerances, or the expected error code.

mod common;

use common::{project_cases, scratch, Case};
use eqfuse::Backend;
use std::process::Command;

/// Runs a case through `parse` → `check` → `run`; `Err` describes a failure.
fn via_api(case: &Case, backend: Backend) -> Result<(), String> {
    // The same order as `eqfuse run`: parse, check, read the inputs, run.
    let result = eqfuse::parse(&case.source().unwrap_or_else(|e| panic!("{e}")))
        .and_then(|p| eqfuse::check(&p))
        .and_then(|c| {
            let inputs = eqfuse::files::read_inputs(Some(&case.inputs_dir()), &[])?;
            eqfuse::run(&c, backend, &inputs)
        });
    match (&case.spec.error, result) {
        (Some(code), Err(e)) if e.code.as_str() == code => Ok(()),
        (Some(code), Err(e)) => Err(format!("expected {code}, got {e}")),
        (Some(code), Ok(_)) => Err(format!("expected {code}, but the run succeeded")),
        (None, Err(e)) => Err(format!("failed: {e}")),
        (None, Ok(out)) => case.compare(&out),
    }
}

/// Runs a case through the binary; `Err` describes a failure.
fn via_binary(case: &Case, backend: &str) -> Result<(), String> {
    let out_dir = scratch(&format!("conformance-{}-{backend}", case.name));
    let output = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .arg("run")
        .arg(case.program())
        .arg("--inputs")
        .arg(case.inputs_dir())
        .arg("--out")
        .arg(&out_dir)
        .args(["--backend", backend])
        .output()
        .map_err(|e| format!("cannot start eqfuse: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    match &case.spec.error {
        Some(code) => {
            let first = stderr.lines().next().unwrap_or("");
            if output.status.code() != Some(1) {
                return Err(format!(
                    "expected exit status 1, got {:?}; stderr: {stderr}",
                    output.status.code()
                ));
            }
            if !first.starts_with(&format!("error[{code}]: ")) {
                return Err(format!("expected `error[{code}]: ...` first on stderr, got: {stderr}"));
            }
            Ok(())
        }
        None => {
            if !output.status.success() {
                return Err(format!("exit status {:?}; stderr: {stderr}", output.status.code()));
            }
            let mut outs = eqfuse::Arrays::new();
            for name in case.spec.outputs.clone() {
                let p = out_dir.join(format!("{name}.npy"));
                outs.insert(name, eqfuse::ir::npy::read_value(&p).map_err(|e| e.to_string())?);
            }
            case.compare(&outs)
        }
    }
}

fn run_all(cases: &[Case], f: impl Fn(&Case) -> Result<(), String>) {
    let failures: Vec<String> =
        cases.iter().filter_map(|c| f(c).err().map(|m| format!("  {}: {m}", c.name))).collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_project_has_all_25_cases() {
    assert!(project_cases().len() >= 25, "tests/conformance has {} cases", project_cases().len());
}

#[test]
fn reference_backend_via_api() {
    run_all(&project_cases(), |c| via_api(c, Backend::Reference));
}

#[test]
fn reference_backend_via_binary() {
    run_all(&project_cases(), |c| via_binary(c, "reference"));
}
