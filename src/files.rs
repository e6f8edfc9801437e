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
///
/// Whole or not at all: every output is first written to a new temporary file in `DIR`
/// (created exclusively, so a planted symlink is never followed) and synced to the disk; only
/// when all of them were written are they renamed over their names. A rename replaces a
/// symlink at `NAME.npy` instead of writing through it. Any failure before the renames (a full
/// disk, a name taken by a directory) removes the temporary files and leaves `DIR` as it was;
/// it is `E-OUTPUT`, naming the file.
pub fn write_outputs(dir: &Path, outputs: &Arrays) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::output(format!("cannot create the output directory `{}`: {e}", dir.display())))?;
    let mut staged = Staged { files: Vec::new() };
    for (name, value) in outputs {
        let path = dir.join(format!("{name}.npy"));
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return Err(Error::output(format!("cannot write `{}`: it is a directory", path.display())));
        }
        let tmp = staged.create(dir, name, &path)?;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(&tmp)
            .and_then(|f| npy::write_value_to(&f, value).and_then(|()| f.sync_all()));
        written.map_err(|e| Error::output(format!("cannot write `{}`: {e}", path.display())))?;
    }
    let mut paths = Vec::new();
    for (tmp, path) in std::mem::take(&mut staged.files) {
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::output(format!("cannot write `{}`: {e}", path.display())));
        }
        paths.push(path);
    }
    Ok(paths)
}

/// The temporary files of [`write_outputs`] not yet renamed into place (each with the name it
/// will take), removed when dropped.
struct Staged {
    files: Vec<(PathBuf, PathBuf)>,
}

impl Staged {
    /// A new, empty temporary file in `dir` for output `name`, to be renamed to `path`: a name
    /// no file has, created exclusively (`O_EXCL`, which never follows a symlink).
    fn create(&mut self, dir: &Path, name: &str, path: &Path) -> Result<PathBuf> {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        for _ in 0..64 {
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let tmp = dir.join(format!(".{name}.npy.{}-{n}.tmp", std::process::id()));
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(_) => {
                    self.files.push((tmp.clone(), path.to_path_buf()));
                    return Ok(tmp);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(Error::output(format!(
                        "cannot create a file in the output directory `{}`: {e}",
                        dir.display()
                    )))
                }
            }
        }
        Err(Error::output(format!("cannot find a free temporary name in `{}`", dir.display())))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (tmp, _) in &self.files {
            let _ = std::fs::remove_file(tmp);
        }
    }
}
