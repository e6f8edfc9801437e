//! On a machine with a GPU: every conformance case (`tests/conformance`, and the suite
//! `EQFUSE_EXTRA_CONFORMANCE` names when it is set), optimised and unfused, runs through the CUDA executor and
//! gives the expected outputs within the case's tolerances, or the expected error code:
//! once with matrix products through cuBLAS, once as their reduction kernels.
//! Without a driver or a GPU, `run` must fail with `E-DEVICE` (never panic) and the rest is
//! skipped with a message: CI has no GPU.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cuda::{available, blas_available, run, CudaOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::error::Code;
use eqfuse_ir::parse::parse;
use eqfuse_ir::value::Value;
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

#[test]
fn without_a_gpu_run_is_a_device_error() {
    if available() {
        return;
    }
    let checked = check(&parse("input xs : f32[n]\noutput y = map (\\x -> x + 1.0) xs").unwrap()).unwrap();
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let mut inputs = IndexMap::new();
    inputs.insert("xs".to_string(), Value::F32(ndarray::arr1(&[1.0f32]).into_dyn()));
    let mut sizes = IndexMap::new();
    sizes.insert("n".to_string(), 1);
    let err = run(&plan, &inputs, &sizes, &CudaOptions::default()).unwrap_err();
    assert_eq!(err.code, Code::Device, "{err}");
    eprintln!("no GPU here, as expected: {err}");
}

#[test]
fn conformance_cases_on_the_gpu() {
    if !available() {
        eprintln!("\n!!!!!!!!!! SKIPPED: no CUDA driver or no GPU on this machine !!!!!!!!!!\n");
        return;
    }
    let cases = eqfuse_ir::conformance::project_cases(&root()).unwrap();
    let mut failures = Vec::new();
    let mut passed = 0;
    // matrix products through cuBLAS (when it is found), then as their reduction kernels
    eprintln!("cuBLAS: {}", if blas_available() { "found" } else { "not found" });
    for opts in [
        CudaOptions::default(),
        CudaOptions { block_size: 128, disk_cache: false, gemm: false, ..CudaOptions::default() },
    ] {
        for case in &cases {
            let name = case.dir.display().to_string();
            let error = &case.spec.error;
            let src = case.source().unwrap();
            // a case that fails before it runs must expect that error
            let checked = match parse(&src).and_then(|p| check(&p)) {
                Ok(c) => c,
                Err(e) => {
                    if error.as_deref() == Some(e.code.as_str()) {
                        passed += 1;
                    } else {
                        failures.push(format!("{name}: expected {error:?}, check failed with {e}"));
                    }
                    continue;
                }
            };
            let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
            let inputs = match case.inputs() {
                Ok(i) => i,
                Err(e) => {
                    if error.as_deref() == Some(e.code.as_str()) {
                        passed += 1;
                    } else {
                        failures.push(format!("{name}: expected {error:?}, reading inputs failed with {e}"));
                    }
                    continue;
                }
            };
            for (label, plan) in [("optimised", &opt.plan), ("unfused", &opt.unfused_plan)] {
                let got = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default())
                    .and_then(|b| run(plan, &inputs, &b.sizes, &opts));
                let before = failures.len();
                match (error, got) {
                    (Some(code), Err(e)) if e.code.as_str() == code => {}
                    (Some(code), other) => failures
                        .push(format!("{name} ({label}): expected {code}, got {:?}", other.map(|_| ()))),
                    (None, Err(e)) => failures.push(format!("{name} ({label}): {e}")),
                    (None, Ok(out)) => {
                        if let Err(m) = case.compare(&out) {
                            failures.push(format!("{name} ({label}): {m}"));
                        }
                    }
                }
                if failures.len() == before {
                    passed += 1;
                }
            }
        }
    }
    eprintln!("{passed} passed, {} failed", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
