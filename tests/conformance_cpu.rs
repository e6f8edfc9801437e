//! Every conformance case (`tests/conformance`, `tests/conformance-v2`, and
//! `EQFUSE_EXTRA_CONFORMANCE` when set) on the CPU executor: the optimised plan and the
//! unfused plan, through the public API and through the binary (`eqfuse run --backend cpu`,
//! with and without `--no-opt`). Outputs within the case's tolerances, or the expected
//! error code.
//!
//! A version-2 program with a form the optimiser does not compile yet runs on the reference
//! interpreter, with a note: [`INTERPRETED`] lists the project's cases that do, so that a
//! case that starts to compile, or one that stops, fails the suite until the list says so.

mod common;

use common::{project_cases, scratch, Case};
use eqfuse::{Backend, OptimizeOptions};
use std::process::Command;

/// The project's cases the optimiser refuses (`eqfuse_optimize::is_unsupported`): they run
/// on the reference interpreter on the CPU backend. Each needs a form named here.
const INTERPRETED: &[(&str, &str)] = &[];

/// Which plan of the program runs.
#[derive(Clone, Copy, Debug)]
enum Which {
    Optimised,
    Unfused,
}

/// Checks a run's result against the case; `Err` describes a mismatch.
fn judge(case: &Case, result: eqfuse::Result<eqfuse::Arrays>) -> Result<(), String> {
    match (&case.spec.error, result) {
        (Some(code), Err(e)) if e.code.as_str() == code => Ok(()),
        (Some(code), Err(e)) => Err(format!("expected {code}, got {e}")),
        (Some(code), Ok(_)) => Err(format!("expected {code}, but the run succeeded")),
        (None, Err(e)) => Err(format!("failed: {e}")),
        (None, Ok(out)) => case.compare(&out),
    }
}

/// Runs a case's plan on the CPU executor through the API.
fn via_api(case: &Case, which: Which) -> Result<(), String> {
    let result = eqfuse::parse(&case.source().unwrap_or_else(|e| panic!("{e}")))
        .and_then(|p| eqfuse::check(&p))
        .and_then(|c| {
            let inputs = eqfuse::files::read_inputs(Some(&case.inputs_dir()), &[])?;
            // input errors come first, as `eqfuse run` reports them
            eqfuse::ir::bind::bind_inputs(&c, &inputs, &eqfuse::Limits::default())?;
            let opt = match eqfuse::optimize_checked(c.clone(), &OptimizeOptions::default()) {
                Err(e) if eqfuse_optimize::is_unsupported(&e) => {
                    if !INTERPRETED.iter().any(|(n, _)| *n == case.name) {
                        return Err(eqfuse::Error::new(
                            eqfuse::Code::Internal,
                            format!("not compiled, and not in INTERPRETED: {e}"),
                        ));
                    }
                    return eqfuse::run(&c, Backend::Cpu, &inputs);
                }
                Err(e) => return Err(e),
                Ok(opt) if INTERPRETED.iter().any(|(n, _)| *n == case.name) => {
                    return Err(eqfuse::Error::new(
                        eqfuse::Code::Internal,
                        format!("compiled now ({} kernels): remove it from INTERPRETED", opt.kernels.passes),
                    ));
                }
                Ok(opt) => opt,
            };
            let plan = match which {
                Which::Optimised => &opt.result.plan,
                Which::Unfused => &opt.result.unfused_plan,
            };
            eqfuse::backend::run_plan(plan, &c, Backend::Cpu, &inputs)
        });
    judge(case, result)
}

/// The facade's own entry points: `eqfuse::run` on the CPU and `Optimized::run`.
fn via_facade(case: &Case) -> Result<(), String> {
    let checked =
        eqfuse::parse(&case.source().unwrap_or_else(|e| panic!("{e}"))).and_then(|p| eqfuse::check(&p));
    let inputs = || eqfuse::files::read_inputs(Some(&case.inputs_dir()), &[]);
    let direct = checked.clone().and_then(|c| eqfuse::run(&c, Backend::Cpu, &inputs()?));
    judge(case, direct).map_err(|m| format!("eqfuse::run: {m}"))?;
    let unfused = checked.clone().and_then(|c| eqfuse::backend::run_unfused(&c, Backend::Cpu, &inputs()?));
    judge(case, unfused).map_err(|m| format!("run_unfused: {m}"))?;
    if case.spec.error.is_none() && !INTERPRETED.iter().any(|(n, _)| *n == case.name) {
        let opt = checked.and_then(|c| eqfuse::optimize_checked(c, &OptimizeOptions::default()));
        let out = opt.and_then(|o| o.run(Backend::Cpu, &inputs()?));
        judge(case, out).map_err(|m| format!("Optimized::run: {m}"))?;
    }
    Ok(())
}

/// Runs a case through the binary on the CPU backend; `Err` describes a failure.
fn via_binary(case: &Case, no_opt: bool) -> Result<(), String> {
    via_binary_with(case, no_opt, &[])
}

/// [`via_binary`] with more arguments.
fn via_binary_with(case: &Case, no_opt: bool, extra: &[&str]) -> Result<(), String> {
    let tag = format!("{}{}", if no_opt { "cpu-noopt" } else { "cpu" }, extra.join("").replace('-', ""));
    let out_dir = scratch(&format!("conformance-{}-{tag}", case.name));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_eqfuse"));
    cmd.arg("run")
        .arg(case.program())
        .arg("--inputs")
        .arg(case.inputs_dir())
        .arg("--out")
        .arg(&out_dir)
        .args(["--backend", "cpu"])
        .args(extra);
    if no_opt {
        cmd.arg("--no-opt");
    }
    let output = cmd.output().map_err(|e| format!("cannot start eqfuse: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    match &case.spec.error {
        Some(code) => {
            // the error comes first, after any notes (`eqfuse: note: ... runs on the
            // reference interpreter`)
            let first = stderr.lines().find(|l| !l.starts_with("eqfuse: note: ")).unwrap_or("");
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

fn run_all(label: &str, cases: &[Case], f: impl Fn(&Case) -> Result<(), String>) {
    let failures: Vec<String> =
        cases.iter().filter_map(|c| f(c).err().map(|m| format!("  {}: {m}", c.name))).collect();
    assert!(
        failures.is_empty(),
        "{label}: {} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn cpu_optimised_plan_via_api() {
    run_all("optimised plan", &project_cases(), |c| via_api(c, Which::Optimised));
}

#[test]
fn cpu_unfused_plan_via_api() {
    run_all("unfused plan", &project_cases(), |c| via_api(c, Which::Unfused));
}

#[test]
fn cpu_through_the_facade() {
    run_all("facade", &project_cases(), via_facade);
}

#[test]
fn cpu_via_binary() {
    run_all("eqfuse run --backend cpu", &project_cases(), |c| via_binary(c, false));
}

#[test]
fn cpu_no_opt_via_binary() {
    run_all("eqfuse run --backend cpu --no-opt", &project_cases(), |c| via_binary(c, true));
}

#[test]
fn cpu_vm_only_via_binary() {
    run_all("eqfuse run --backend cpu --cpu-codegen vm", &project_cases(), |c| {
        via_binary_with(c, false, &["--cpu-codegen", "vm"])
    });
}

#[test]
fn cpu_kernels_run_as_native_code() {
    // every case whose plan has a map or reduction kernel runs it natively (counted in
    // this process; other tests run beside this one, so the counts are lower bounds)
    let before = eqfuse_exec_cpu::native_counts();
    run_all("optimised plan", &project_cases(), |c| via_api(c, Which::Optimised));
    let after = eqfuse_exec_cpu::native_counts();
    assert!(after.native >= before.native + 15, "{before:?} -> {after:?}");
}

#[test]
fn without_a_c_compiler_the_vm_runs_and_says_so() {
    let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(["run", "examples/dotp.eqf", "--inputs", "tests/conformance/dotp/inputs", "--backend", "cpu"])
        .env("CC", "/nonexistent/eqfuse-test-cc")
        .env("EQFUSE_CACHE_DIR", scratch("no-cc-cache"))
        .output()
        .expect("eqfuse runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("eqfuse: note: no C compiler `/nonexistent/eqfuse-test-cc`"), "{stderr}");
    assert!(stderr.contains("runs these kernels on its interpreter"), "{stderr}");
    assert_eq!(stderr.matches("eqfuse: note:").count(), 1, "said once: {stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("dot = "));
}

#[test]
fn auto_is_the_cpu() {
    assert_eq!(Backend::auto(), Backend::Cpu);
    assert_eq!("auto".parse::<Backend>().ok(), Some(Backend::Cpu));
}

#[test]
fn cuda_is_still_e_device() {
    let prog = eqfuse::parse("input xs : f32[n]\noutput s = reduce (+) 0 xs").and_then(|p| eqfuse::check(&p));
    let Ok(checked) = prog else { panic!("the program checks") };
    let mut inputs = eqfuse::Arrays::new();
    inputs.insert("xs".into(), eqfuse::Value::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn()));
    let err = eqfuse::run(&checked, Backend::Cuda, &inputs).err().map(|e| e.code);
    assert_eq!(err, Some(eqfuse::Code::Device));
}
