//! Reading inputs from and writing outputs to `.npy` files, as the command line does.

use crate::{Arrays, Error, Result};
use eqfuse_ir::npy;
use std::path::{Path, PathBuf};

/// Reads every `DIR/NAME.npy` as input `NAME`, then each `NAME=FILE` pair (which may
/// override a file from the directory). Checking names and types against the program is
/// the run's job (`E-INPUT` for unknown or missing inputs).
pub fn read_inputs(dir: Option<&Path>, pairs: &[(String, PathBuf)]) -> Result<Arrays> {
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
            inputs.insert(name, npy::read_value(&path)?);
        }
    }
    for (name, path) in pairs {
        inputs.insert(name.clone(), npy::read_value(path)?);
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
