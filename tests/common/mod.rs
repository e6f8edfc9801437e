//! Shared helpers for integration tests: conformance cases and result comparison.
#![allow(dead_code)]

use eqfuse::ir::value::{compare, Tolerance};
use eqfuse::{Arrays, Value};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// What `case.toml` says.
#[derive(Debug, Deserialize)]
pub struct CaseSpec {
    /// Output names to compare (in `expected/NAME.npy`).
    pub outputs: Option<Vec<String>>,
    /// Relative tolerance.
    pub rtol: Option<f64>,
    /// Absolute tolerance.
    pub atol: Option<f64>,
    /// Fraction of elements allowed outside the tolerance.
    pub mismatch_fraction: Option<f64>,
    /// Expected error code, for cases that must fail.
    pub error: Option<String>,
}

/// One conformance case directory.
#[derive(Debug)]
pub struct Case {
    pub name: String,
    pub dir: PathBuf,
    pub spec: CaseSpec,
}

impl Case {
    pub fn program(&self) -> PathBuf {
        self.dir.join("program.eqf")
    }

    pub fn inputs_dir(&self) -> PathBuf {
        self.dir.join("inputs")
    }

    pub fn source(&self) -> String {
        std::fs::read_to_string(self.program()).unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }

    pub fn expected(&self, name: &str) -> Value {
        let p = self.dir.join("expected").join(format!("{name}.npy"));
        eqfuse::ir::npy::read_value(&p).unwrap_or_else(|e| panic!("{}: {e}", self.name))
    }

    /// Compares run outputs with the expected files; `Err` says what differs.
    pub fn compare(&self, outputs: &Arrays) -> Result<(), String> {
        let names = self.spec.outputs.clone().unwrap_or_default();
        let got_names: Vec<&String> = outputs.keys().collect();
        if got_names.len() != names.len() || got_names.iter().zip(&names).any(|(a, b)| *a != b) {
            return Err(format!("outputs are {got_names:?}, case.toml lists {names:?}"));
        }
        for name in &names {
            let got = &outputs[name.as_str()];
            let want = self.expected(name);
            let tol = Tolerance {
                rtol: self.spec.rtol.unwrap_or(0.0),
                atol: self.spec.atol.unwrap_or(0.0),
                mismatch_fraction: self.spec.mismatch_fraction.unwrap_or(0.0),
            };
            compare(got, &want, &tol).map_err(|m| format!("output `{name}`: {m}"))?;
        }
        Ok(())
    }
}

fn load_dir(root: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let Ok(entries) = std::fs::read_dir(root) else { return cases };
    for e in entries.flatten() {
        let dir = e.path();
        let toml_path = dir.join("case.toml");
        let Ok(text) = std::fs::read_to_string(&toml_path) else { continue };
        let spec: CaseSpec =
            toml::from_str(&text).unwrap_or_else(|err| panic!("{}: {err}", toml_path.display()));
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        cases.push(Case { name, dir, spec });
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    cases
}

/// The conformance suite (`tests/conformance`), and the cases of the directory
/// `EQFUSE_EXTRA_CONFORMANCE` names, when it is set (a suite of the same layout kept
/// outside the repository); a name that is not a directory fails the test.
pub fn project_cases() -> Vec<Case> {
    let mut cases = load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance"));
    if let Some(extra) = std::env::var_os("EQFUSE_EXTRA_CONFORMANCE") {
        let extra = PathBuf::from(extra);
        assert!(extra.is_dir(), "EQFUSE_EXTRA_CONFORMANCE={} is not a directory", extra.display());
        cases.extend(load_dir(&extra));
    }
    cases
}

/// A fresh scratch directory under cargo's per-test tmp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}
