//! Conformance cases, read the same way by every suite (with the `testgen` feature).
//!
//! A case is a directory: `program.eqf`, `inputs/NAME.npy` for each input, and `case.toml`,
//! which either names the error the run must fail with (`error = "E-INDEX"`) or lists the
//! outputs to compare with `expected/NAME.npy` and the tolerance:
//!
//! ```toml
//! outputs = ["y", "z"]
//! rtol = 1e-4
//! atol = 1e-5
//! mismatch_fraction = 0.0
//! ```
//!
//! `case.toml` is read line by line (`key = value`, `#` starts a comment; a missing number
//! is 0): these few keys need no TOML parser among `eqfuse-ir`'s dependencies. An unknown
//! key or a value that does not parse is an error naming the file, so a typo cannot pass a
//! case silently.
//!
//! ```
//! let spec = eqfuse_ir::conformance::Spec::parse("outputs = [\"y\"]\nrtol = 1e-4 # relative\n")?;
//! assert_eq!(spec.outputs, ["y"]);
//! assert_eq!(spec.tol.rtol, 1e-4);
//! assert_eq!(spec.tol.atol, 0.0);
//! assert!(eqfuse_ir::conformance::Spec::parse("rtoll = 1").is_err());
//! # Ok::<(), String>(())
//! ```

use crate::error::Result;
use crate::value::{compare, Tolerance, Value};
use indexmap::IndexMap;
use std::path::{Path, PathBuf};

/// What `case.toml` says.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// The outputs to compare, in the program's order.
    pub outputs: Vec<String>,
    /// How closely each must agree with its expected file.
    pub tol: Tolerance,
    /// The error code the run must fail with, for cases that must fail.
    pub error: Option<String>,
}

impl Spec {
    /// Reads the text of a `case.toml`; `Err` says which line is wrong.
    pub fn parse(text: &str) -> std::result::Result<Spec, String> {
        let mut spec = Spec { outputs: Vec::new(), tol: Tolerance::EXACT, error: None };
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |what: &str| format!("line {}: {what}: `{line}`", n + 1);
            let (k, v) = line.split_once('=').ok_or_else(|| bad("not `key = value`"))?;
            let v = v.trim();
            let num = || v.parse::<f64>().map_err(|_| bad("not a number"));
            let unquote = |s: &str| s.trim().trim_matches('"').to_string();
            match k.trim() {
                "outputs" => {
                    let inner = v
                        .strip_prefix('[')
                        .and_then(|s| s.strip_suffix(']'))
                        .ok_or_else(|| bad("not a list"))?;
                    spec.outputs = inner.split(',').map(unquote).filter(|s| !s.is_empty()).collect();
                }
                "rtol" => spec.tol.rtol = num()?,
                "atol" => spec.tol.atol = num()?,
                "mismatch_fraction" => spec.tol.mismatch_fraction = num()?,
                "error" => spec.error = Some(unquote(v)),
                _ => return Err(bad("unknown key")),
            }
        }
        Ok(spec)
    }
}

/// One case.
#[derive(Clone, Debug)]
pub struct Case {
    /// Its directory's name.
    pub name: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its `case.toml`.
    pub spec: Spec,
}

impl Case {
    /// The case in `dir`; `Err` when its `case.toml` cannot be read or is malformed.
    pub fn read(dir: &Path) -> std::result::Result<Case, String> {
        let path = dir.join("case.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let spec = Spec::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        Ok(Case { name, dir: dir.to_path_buf(), spec })
    }

    /// `program.eqf`.
    pub fn program(&self) -> PathBuf {
        self.dir.join("program.eqf")
    }

    /// The program's text.
    pub fn source(&self) -> std::result::Result<String, String> {
        std::fs::read_to_string(self.program()).map_err(|e| format!("{}: {e}", self.program().display()))
    }

    /// The `inputs` directory.
    pub fn inputs_dir(&self) -> PathBuf {
        self.dir.join("inputs")
    }

    /// The inputs, by name.
    pub fn inputs(&self) -> Result<IndexMap<String, Value>> {
        read_values(&self.inputs_dir())
    }

    /// The expected outputs, by name.
    pub fn expected(&self) -> Result<IndexMap<String, Value>> {
        read_values(&self.dir.join("expected"))
    }

    /// Compares a run's outputs with the expected ones: the names `case.toml` lists, in its
    /// order, each within the tolerance. `Err` says what differs.
    pub fn compare(&self, outputs: &IndexMap<String, Value>) -> std::result::Result<(), String> {
        let names: Vec<&String> = outputs.keys().collect();
        if names.len() != self.spec.outputs.len()
            || names.iter().zip(&self.spec.outputs).any(|(a, b)| *a != b)
        {
            return Err(format!("outputs are {names:?}, case.toml lists {:?}", self.spec.outputs));
        }
        let expected = self.expected().map_err(|e| e.to_string())?;
        for name in &self.spec.outputs {
            let want = expected.get(name).ok_or_else(|| format!("no expected/{name}.npy"))?;
            compare(&outputs[name.as_str()], want, &self.spec.tol)
                .map_err(|m| format!("output `{name}`: {m}"))?;
        }
        Ok(())
    }
}

/// Every `DIR/NAME.npy` as `NAME`, in name order (none when `dir` does not exist); a file
/// that cannot be read is the error.
pub fn read_values(dir: &Path) -> Result<IndexMap<String, Value>> {
    let mut out = IndexMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else { return Ok(out) };
    let mut paths: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.extension().is_some_and(|e| e == "npy") {
            let name = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            out.insert(name, crate::npy::read_value(&p)?);
        }
    }
    Ok(out)
}

/// The cases under `root` (the directories with a `case.toml`), in name order; none when
/// `root` does not exist. `Err` names the first malformed case.
pub fn cases(root: &Path) -> std::result::Result<Vec<Case>, String> {
    let Ok(rd) = std::fs::read_dir(root) else { return Ok(Vec::new()) };
    let mut dirs: Vec<PathBuf> =
        rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.join("case.toml").is_file()).collect();
    dirs.sort();
    dirs.iter().map(|d| Case::read(d)).collect()
}

/// The cases of the repository (`tests/conformance` and `tests/conformance-v2`, language
/// version 2's, under `repo`), then those of the
/// directory `EQFUSE_EXTRA_CONFORMANCE` names, when it is set (a suite of the same layout
/// kept outside the repository); a name that is not a directory is an error.
pub fn project_cases(repo: &Path) -> std::result::Result<Vec<Case>, String> {
    let mut out = cases(&repo.join("tests").join("conformance"))?;
    // the cases of language version 2, kept beside version 1's
    out.extend(cases(&repo.join("tests").join("conformance-v2"))?);
    if let Some(extra) = std::env::var_os("EQFUSE_EXTRA_CONFORMANCE") {
        let extra = PathBuf::from(extra);
        if !extra.is_dir() {
            return Err(format!("EQFUSE_EXTRA_CONFORMANCE={} is not a directory", extra.display()));
        }
        out.extend(cases(&extra)?);
    }
    Ok(out)
}
