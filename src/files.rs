//! Reading inputs from and writing outputs to `.npy` files, as the command line does.
//!
//! ```
//! use eqfuse::{files, Arrays, Backend, Value};
//! let dir = std::env::temp_dir().join(format!("eqfuse-files-doc-{}", std::process::id()));
//! let mut arrays = Arrays::new();
//! arrays.insert("xs".into(), Value::from(ndarray::arr1(&[1.5f32, -2.0]).into_dyn()));
//! let written = files::write_outputs(&dir, &arrays)?;           // DIR/xs.npy
//! assert_eq!(written, [dir.join("xs.npy")]);
//!
//! let inputs = files::read_inputs(Some(&dir), &[])?;             // every DIR/NAME.npy
//! assert_eq!(inputs, arrays);
//! let checked = eqfuse::check(&eqfuse::parse("input xs : f32[n]\noutput s = reduce (+) 0 xs")?)?;
//! let out = eqfuse::run(&checked, Backend::Cpu, &inputs)?;
//! assert_eq!(out["s"], Value::from(ndarray::arr0(-0.5f32).into_dyn()));
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), eqfuse::Error>(())
//! ```

use crate::{Arrays, Error, Result};
use eqfuse_ir::npy;
use std::path::{Path, PathBuf};

/// Reads every `DIR/NAME.npy` as input `NAME`, then each `NAME=FILE` pair (which may
/// override a file from the directory). Checking names and types against the program is
/// the run's job (`E-INPUT` for unknown or missing inputs).
pub fn read_inputs(dir: Option<&Path>, pairs: &[(String, PathBuf)]) -> Result<Arrays> {
    read_inputs_with(dir, pairs, eqfuse_ir::ast::default_memory_limit())
}

/// [`read_inputs`], refusing (`E-LIMIT`, before reading its data) a file whose array takes
/// more than `max_array_bytes`.
pub fn read_inputs_with(
    dir: Option<&Path>,
    pairs: &[(String, PathBuf)],
    max_array_bytes: u64,
) -> Result<Arrays> {
    let mut inputs = Arrays::new();
    if let Some(dir) = dir {
        let entries = std::fs::read_dir(dir).map_err(|e| {
            Error::input(format!("cannot read the inputs directory `{}`: {e}", dir.display()))
        })?;
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| Error::input(format!("cannot list `{}`: {e}", dir.display())))?;
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("npy") {
                continue;
            }
            let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
                return Err(Error::input(format!("input file name `{}` is not UTF-8", path.display())));
            };
            files.push((name.to_string(), path.clone()));
        }
        files.sort();
        for (name, path) in files {
            inputs.insert(name, npy::read_value_with(&path, max_array_bytes)?);
        }
    }
    for (name, path) in pairs {
        inputs.insert(name.clone(), npy::read_value_with(path, max_array_bytes)?);
    }
    Ok(inputs)
}

/// Parses a `NAME=FILE` command-line pair.
pub fn parse_pair(s: &str) -> std::result::Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => {
            Ok((name.to_string(), PathBuf::from(file)))
        }
        _ => Err(format!("expected NAME=FILE.npy, got `{s}`")),
    }
}

/// Writes each output to `DIR/NAME.npy`, creating `DIR` if needed; returns the paths.
pub fn write_outputs(dir: &Path, outputs: &Arrays) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::input(format!("cannot create the output directory `{}`: {e}", dir.display())))?;
    let mut paths = Vec::new();
    for (name, value) in outputs {
        let path = dir.join(format!("{name}.npy"));
        npy::write_value(&path, value)?;
        paths.push(path);
    }
    Ok(paths)
}
