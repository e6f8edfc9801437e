//! The conformance cases run through parse → check → interpret, compared with their expected
//! outputs (dtype, shape, and values within `rtol`/`atol`/`mismatch_fraction`), and the
//! error cases checked for their code.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::check::check;
use eqfuse_ir::interp::interpret;
use eqfuse_ir::npy::read_value;
use eqfuse_ir::parse::parse;
use eqfuse_ir::value::{compare, Tolerance};
use eqfuse_ir::{Result, Value};
use indexmap::IndexMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The project's copy of the conformance suite.
fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance")
}

/// `case.toml`, minimally: `key = value` lines; strings unquoted, lists kept as text.
fn read_case(path: &Path) -> IndexMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if l.starts_with('#') {
                return None;
            }
            let (k, v) = l.split_once('=')?;
            Some((k.trim().to_string(), v.trim().trim_matches('"').to_string()))
        })
        .collect()
}

/// The names in a `["a", "b"]` list.
fn list(v: &str) -> Vec<String> {
    v.trim_matches(|c| c == '[' || c == ']')
        .split(',')
        .map(|s| s.trim().trim_matches('"').to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Reads every `.npy` in `dir`, by file stem.
fn read_dir_values(dir: &Path) -> Result<IndexMap<String, Value>> {
    let mut out = IndexMap::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.extension().is_some_and(|e| e == "npy") {
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            out.insert(name, read_value(&p)?);
        }
    }
    Ok(out)
}

/// Parses, checks and runs one case.
fn run_case(dir: &Path) -> Result<IndexMap<String, Value>> {
    let src = std::fs::read_to_string(dir.join("program.eqf")).unwrap();
    let checked = check(&parse(&src)?)?;
    let inputs = read_dir_values(&dir.join("inputs"))?;
    interpret(&checked, &inputs)
}

#[test]
fn conformance_cases() {
    let root = cases_dir();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("case.toml").is_file())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no cases under {}", root.display());
    let mut failures = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let case = read_case(&dir.join("case.toml"));
        let start = Instant::now();
        let result = run_case(dir);
        let took = start.elapsed();
        eprintln!("{name}: {:.3} s", took.as_secs_f64());
        if let Some(code) = case.get("error") {
            match result {
                Err(e) if e.code.as_str() == code => {}
                Err(e) => failures.push(format!("{name}: expected {code}, got {e}")),
                Ok(_) => failures.push(format!("{name}: expected {code}, but it ran")),
            }
            continue;
        }
        let outs = match result {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let num = |k: &str, d: f64| case.get(k).and_then(|v| v.parse::<f64>().ok()).unwrap_or(d);
        let (rtol, atol, frac) = (num("rtol", 1e-4), num("atol", 1e-5), num("mismatch_fraction", 0.0));
        let expected = read_dir_values(&dir.join("expected")).unwrap();
        let names =
            case.get("outputs").map(|v| list(v)).unwrap_or_else(|| expected.keys().cloned().collect());
        for out in names {
            let (Some(got), Some(want)) = (outs.get(&out), expected.get(&out)) else {
                failures.push(format!("{name}: output `{out}` missing"));
                continue;
            };
            if let Err(why) = compare(got, want, &Tolerance { rtol, atol, mismatch_fraction: frac }) {
                failures.push(format!("{name}: output `{out}`: {why}"));
            }
        }
        assert!(took.as_secs_f64() < 5.0, "{name} took {took:?}");
    }
    assert!(failures.is_empty(), "conformance failures:\n{}", failures.join("\n"));
}
