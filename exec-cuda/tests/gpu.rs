//! On a machine with a GPU: every conformance case (`tests/conformance`, and the suite
//! `EQFUSE_EXTRA_CONFORMANCE` names when it is set), optimised and unfused, runs through the CUDA executor and
//! gives the expected outputs within the case's tolerances, or the expected error code.
//! Without a driver or a GPU, `run` must fail with `E-DEVICE` (never panic) and the rest is
//! skipped with a message: CI has no GPU.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cuda::{available, run, CudaOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::error::Code;
use eqfuse_ir::parse::parse;
use eqfuse_ir::value::{compare, Tolerance, Value};
use eqfuse_rules::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn read_values(dir: &Path) -> Result<IndexMap<String, Value>, eqfuse_ir::Error> {
    let mut out = IndexMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return Ok(out) };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.extension().is_some_and(|e| e == "npy") {
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            out.insert(name, eqfuse_ir::npy::read_value(&p)?);
        }
    }
    Ok(out)
}

/// `(tolerance, expected error code)` from `case.toml`.
fn spec(dir: &Path) -> (Tolerance, Option<String>) {
    let text = std::fs::read_to_string(dir.join("case.toml")).unwrap_or_default();
    let mut tol = Tolerance::EXACT;
    let mut error = None;
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        let Some((k, v)) = line.split_once('=') else { continue };
        let v = v.trim();
        match k.trim() {
            "rtol" => tol.rtol = v.parse().unwrap(),
            "atol" => tol.atol = v.parse().unwrap(),
            "mismatch_fraction" => tol.mismatch_fraction = v.parse().unwrap(),
            "error" => error = Some(v.trim_matches('"').to_string()),
            _ => {}
        }
    }
    (tol, error)
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
    let mut dirs = Vec::new();
    let extra = std::env::var_os("EQFUSE_EXTRA_CONFORMANCE").map(PathBuf::from);
    for set in [Some(root().join("tests/conformance")), extra].into_iter().flatten() {
        let Ok(rd) = std::fs::read_dir(&set) else { continue };
        let mut v: Vec<PathBuf> =
            rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("program.eqf").exists()).collect();
        v.sort();
        dirs.extend(v);
    }
    let mut failures = Vec::new();
    let mut passed = 0;
    for opts in
        [CudaOptions::default(), CudaOptions { block_size: 128, disk_cache: false, ..CudaOptions::default() }]
    {
        for dir in &dirs {
            let name = dir.display().to_string();
            let (tol, error) = spec(dir);
            let src = std::fs::read_to_string(dir.join("program.eqf")).unwrap();
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
            let inputs = match read_values(&dir.join("inputs")) {
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
            let expected = read_values(&dir.join("expected")).unwrap();
            for (label, plan) in [("optimised", &opt.plan), ("unfused", &opt.unfused_plan)] {
                let got = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default())
                    .and_then(|b| run(plan, &inputs, &b.sizes, &opts));
                let before = failures.len();
                match (&error, got) {
                    (Some(code), Err(e)) if e.code.as_str() == code => {}
                    (Some(code), other) => failures
                        .push(format!("{name} ({label}): expected {code}, got {:?}", other.map(|_| ()))),
                    (None, Err(e)) => failures.push(format!("{name} ({label}): {e}")),
                    (None, Ok(out)) => {
                        for (k, want) in &expected {
                            match out.get(k).map(|g| compare(g, want, &tol)) {
                                Some(Ok(())) => {}
                                Some(Err(m)) => failures.push(format!("{name} ({label}): `{k}`: {m}")),
                                None => failures.push(format!("{name} ({label}): no output `{k}`")),
                            }
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
