//! Shared helpers for integration tests: the conformance cases (read by
//! `eqfuse_ir::conformance`, as every suite reads them) and scratch directories.
#![allow(dead_code)]

pub use eqfuse::ir::conformance::Case;
use std::path::{Path, PathBuf};

/// The conformance suite (`tests/conformance`), and the cases of the directory
/// `EQFUSE_EXTRA_CONFORMANCE` names, when it is set (a suite of the same layout kept
/// outside the repository); a malformed case, or a name that is not a directory, fails the
/// test.
pub fn project_cases() -> Vec<Case> {
    eqfuse::ir::conformance::project_cases(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh scratch directory under cargo's per-test tmp dir.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}
