//! Records the commit the binary is built from, for `eqfuse --version`.
//!
//! `git` is asked at build time; without git or outside a checkout (a source tarball) the
//! commit is `unknown`. `EQFUSE_COMMIT`, when set, wins (for packagers).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=EQFUSE_COMMIT");
    let commit = std::env::var("EQFUSE_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        // rebuild when HEAD moves: a commit, a checkout (the git directory of a worktree is
        // not `.git/`)
        if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
            println!("cargo:rerun-if-changed={dir}/HEAD");
            println!("cargo:rerun-if-changed={dir}/logs/HEAD");
        }
        // a tarball unpacked inside another checkout is not that checkout's commit
        let top = git(&["rev-parse", "--show-toplevel"])?;
        let here = std::env::var("CARGO_MANIFEST_DIR").ok()?;
        let same = |a: &str, b: &str| std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
        if !same(&top, &here) {
            return None;
        }
        git(&["rev-parse", "--short=12", "HEAD"])
    });
    println!("cargo:rustc-env=EQFUSE_COMMIT={}", commit.unwrap_or_else(|| "unknown".into()));
}
