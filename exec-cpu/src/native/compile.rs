//! The system C compiler, and the key plans are cached under.
//!
//! A plan's C source is compiled by `$CC` (else `cc`, the compiler Rust itself links with)
//! into a shared object, at `-O3 -march=native` with flags that keep IEEE results: no
//! contraction of `a * b + c` into a fused multiply-add (`-ffp-contract=off`; gcc contracts
//! by default), no `-ffast-math`. `-fno-math-errno` changes no value (it drops `errno`,
//! which nothing reads) and lets the compiler inline `sqrt`. `-fno-trapping-math` changes no
//! value either (nothing reads the floating-point exception flags) and lets gcc compute both
//! arms of a select and vectorise loops whose element function has special cases (`exp`'s
//! clamps, `min`'s NaN test): without it, gcc sinks work into branches it then may not
//! if-convert, and the loop stays scalar. One fold it enables would change a value,
//! `(double)(long long)x` into `trunc(x)` (which keeps the sign of -0.0 that the integer
//! drops): the prelude's integer-to-float conversions clear the sign bit when the integer is
//! 0, which undoes it (`a_conversion_through_an_integer_drops_the_sign_of_zero` in
//! `exec-cpu/tests/blocked_vm.rs` guards this). `-fwrapv` makes signed overflow wrap, as
//! the language's integers do; with `-DEQ_WRAPV` the prelude then writes `i64` addition and
//! subtraction as the plain operators, which the vectoriser takes as affine in an index (a
//! stencil's `t[i, j + 1]` is a contiguous load, not a gather), with the same bits.
//!
//! Shared objects are cached on disk (`cache.rs`: where, and what is checked before one is
//! loaded), named by the SHA-256 of the source, the compiler's path and version, the flags
//! and the CPU's model and feature flags (`-march=native` builds for this CPU), so that a
//! cache copied to another machine or kept across a compiler upgrade is never used wrongly.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

/// The flags every plan is compiled with (before `-o`).
pub(crate) const FLAGS: &[&str] = &[
    "-std=c11",
    "-O3",
    "-march=native",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-fwrapv",
    "-DEQ_WRAPV",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-w",
];

/// The C compiler: `$CC`, else `cc`.
pub(crate) fn compiler() -> String {
    std::env::var("CC").ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "cc".to_string())
}

/// The compiler's identity (its `--version` output), or why it cannot be run. Asked once
/// per process and compiler.
fn identity(cc: &str) -> Result<String, String> {
    type Ids = std::sync::Mutex<Vec<(String, Result<String, String>)>>;
    static IDS: OnceLock<Ids> = OnceLock::new();
    let ids = IDS.get_or_init(Default::default);
    let mut ids = ids.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, r)) = ids.iter().find(|(c, _)| c == cc) {
        return r.clone();
    }
    let r = match Command::new(cc).arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => Err(format!("`{cc} --version` failed: {}", String::from_utf8_lossy(&o.stderr).trim())),
        Err(e) => Err(format!("no C compiler `{cc}`: {e}")),
    };
    ids.push((cc.to_string(), r.clone()));
    r
}

/// The CPU's model and feature flags (what `-march=native` depends on).
fn cpu_identity() -> &'static str {
    static CPU: OnceLock<String> = OnceLock::new();
    CPU.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let pick = |key: &str| {
            info.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default()
        };
        format!("{} | {} | {}", std::env::consts::ARCH, pick("model name"), pick("flags"))
    })
}

/// The cache key of `source` compiled by `cc`.
pub(crate) fn key(source: &str, cc: &str) -> Result<String, String> {
    let id = identity(cc)?;
    let mut h = Sha256::new();
    for part in [source, cc, &id, &FLAGS.join(" "), cpu_identity()] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// What one compilation did.
#[derive(Clone, Debug)]
pub(crate) struct Compiled {
    /// The shared object.
    pub path: PathBuf,
    /// Seconds spent compiling.
    pub seconds: f64,
}

/// `source` compiled into `dir/KEY.so`, its source kept as `dir/KEY.c`. `dir` is a private
/// directory of this process (`cache.rs`), which checks, loads and stores the result. The
/// compiler is run by `build.rs`: in pieces for a large source, killed at `deadline`, its
/// temporary files removed whatever happens.
pub(crate) fn compile(
    source: &str,
    cc: &str,
    key: &str,
    dir: &Path,
    deadline: Option<Instant>,
) -> Result<Compiled, String> {
    let so = dir.join(format!("{key}.so"));
    let t0 = Instant::now();
    super::build::build(cc, FLAGS, source, &so, dir, &super::build::Options::new(deadline))?;
    let seconds = t0.elapsed().as_secs_f64();
    // the source stays beside the shared object, for whoever wants to read it
    let _ = std::fs::write(dir.join(format!("{key}.c")), source);
    Ok(Compiled { path: so, seconds })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_depends_on_the_source_and_compiler() {
        let a = key("int x;", "cc").expect("the tests need a C compiler `cc`");
        assert_eq!(a.len(), 64);
        assert_eq!(key("int x;", "cc").ok(), Some(a.clone()));
        assert_ne!(key("int y;", "cc").ok(), Some(a));
    }

    #[test]
    fn a_missing_compiler_is_an_error_not_a_panic() {
        let e = key("int x;", "/nonexistent/eqfuse-cc").err().unwrap_or_default();
        assert!(e.contains("no C compiler"), "{e}");
    }
}
