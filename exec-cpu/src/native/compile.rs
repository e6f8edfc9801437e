//! The system C compiler and the code cache.
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
//! `exec-cpu/tests/blocked_vm.rs` guards this).
//!
//! Shared objects are cached on disk under the cache directory
//! ([`crate::RunOptions::cache_dir`]), named by the SHA-256 of the source, the compiler's
//! path and version, the flags and the CPU's model and feature flags (`-march=native`
//! builds for this CPU), so that a cache copied to another machine or kept across a
//! compiler upgrade is never used wrongly. A file is written under a temporary name and
//! renamed into place, so processes that share a cache never read half a file.

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
    /// Seconds spent compiling (0 on a cache hit).
    pub seconds: f64,
    /// Whether it was in the cache already.
    pub cached: bool,
}

/// The shared object of `source` in `dir` (compiled unless it is there already), keyed by
/// `key`.
pub(crate) fn compile(source: &str, cc: &str, key: &str, dir: &Path) -> Result<Compiled, String> {
    let so = dir.join(format!("{key}.so"));
    if so.is_file() {
        return Ok(Compiled { path: so, seconds: 0.0, cached: true });
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create the cache directory {}: {e}", dir.display()))?;
    let tmp = format!("{}.{}", std::process::id(), unique());
    let c = dir.join(format!("{key}.{tmp}.c"));
    let tmp_so = dir.join(format!("{key}.{tmp}.so"));
    std::fs::write(&c, source).map_err(|e| format!("cannot write {}: {e}", c.display()))?;
    let t0 = Instant::now();
    let out = Command::new(cc).args(FLAGS).arg("-o").arg(&tmp_so).arg(&c).arg("-lm").output();
    let seconds = t0.elapsed().as_secs_f64();
    let result = match out {
        Ok(o) if o.status.success() => std::fs::rename(&tmp_so, &so)
            .map(|()| Compiled { path: so, seconds, cached: false })
            .map_err(|e| format!("cannot move the compiled plan into the cache: {e}")),
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let first: Vec<&str> = err.lines().take(4).collect();
            Err(format!("`{cc}` failed on the generated C ({}): {}", c.display(), first.join(" | ")))
        }
        Err(e) => Err(format!("cannot run `{cc}`: {e}")),
    };
    if result.is_ok() {
        // the source stays beside the shared object, for whoever wants to read it
        let _ = std::fs::rename(&c, dir.join(format!("{key}.c")));
    }
    let _ = std::fs::remove_file(&tmp_so);
    result
}

/// A number unique in this process.
pub(crate) fn unique() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The default cache directory: `$EQFUSE_CACHE_DIR`, else `$XDG_CACHE_HOME/eqfuse/cpu`,
/// else `$HOME/.cache/eqfuse/cpu`, else the system's temporary directory.
pub fn default_cache_dir() -> PathBuf {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = env("EQFUSE_CACHE_DIR") {
        return d;
    }
    if let Some(d) = env("XDG_CACHE_HOME") {
        return d.join("eqfuse").join("cpu");
    }
    if let Some(d) = env("HOME") {
        return d.join(".cache").join("eqfuse").join("cpu");
    }
    std::env::temp_dir().join("eqfuse-cache").join("cpu")
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
