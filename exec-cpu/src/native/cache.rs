//! The CPU backend's code cache: where compiled plans are kept on disk. What is checked
//! before one is loaded (private directories, entries that carry the SHA-256 of their name
//! and bytes, loading from a private copy of the checked bytes) is the policy all of
//! eqfuse's code caches share, [`eqfuse_codegen::cache`].
//!
//! - The cache directory ([`crate::RunOptions::cache_dir`], by default [`default_cache_dir`])
//!   is used only while it is private to this user; else (with a notice) and with no disk
//!   cache (`--no-cache`, `cache_dir: None`, and the default when there is no
//!   `EQFUSE_CACHE_DIR`, `XDG_CACHE_HOME` or `HOME`) a plan is compiled into a private
//!   temporary directory, removed once it is loaded.
//! - A plan's entry is `KEY.so`: the shared object followed by its hash trailer (an ELF
//!   loader ignores bytes after the object). The generated C is kept beside it as `KEY.c`,
//!   for reading only.

use std::path::{Path, PathBuf};

pub(crate) use eqfuse_codegen::cache::{open, CacheDir, Loaded};

/// The default cache directory: `$EQFUSE_CACHE_DIR`, else `$XDG_CACHE_HOME/eqfuse/cpu`, else
/// `$HOME/.cache/eqfuse/cpu`; `None` (no disk cache: each process compiles into a private
/// temporary directory) when none of them is set, since a fixed path in the shared
/// temporary directory could be made first by another user.
pub fn default_cache_dir() -> Option<PathBuf> {
    cache_dir_from(|k| std::env::var_os(k))
}

/// [`default_cache_dir`] where `env` gives the environment's variables.
fn cache_dir_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    if let Some(d) = env("EQFUSE_CACHE_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d));
    }
    eqfuse_codegen::cache::root_from(env).map(|r| r.join("cpu"))
}

/// The plan of `key` from `dir` (the entry `KEY.so`), checked and loaded by `load`; on a
/// miss, or an entry that fails its check (removed, with a notice), `compile` makes it in a
/// private directory it is given (returning the shared object's path and the seconds it
/// took), and it is loaded and then stored in `dir`, with its C (`KEY.c`), when `dir` is
/// kept.
pub(crate) fn load_or_compile<M>(
    dir: &CacheDir,
    key: &str,
    compile: impl FnOnce(&Path) -> Result<(PathBuf, f64), String>,
    load: impl FnOnce(&Path) -> Result<M, String>,
) -> Result<Loaded<M>, String> {
    let name = format!("{key}.so");
    let source = format!("{key}.c");
    let entry = eqfuse_codegen::cache::Entry { name: &name, what: "plan", beside: &[&source] };
    eqfuse_codegen::cache::load_or_compile(dir, &entry, compile, load)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_plan_is_stored_as_key_so_with_its_c_beside_it() {
        let s = tempfile::Builder::new().prefix("eqfuse-cpu-cache-test-").tempdir().expect("a scratch dir");
        let d = s.path().join("c");
        let c = open(Some(&d)).expect("opened");
        assert!(c.persistent());
        let run = |object: &'static [u8]| {
            load_or_compile(
                &c,
                "k1",
                |work| {
                    let so = work.join("k1.so");
                    fs::write(&so, object).map_err(|e| e.to_string())?;
                    fs::write(work.join("k1.c"), "int x;").map_err(|e| e.to_string())?;
                    Ok((so, 0.5))
                },
                |p| fs::read(p).map_err(|e| e.to_string()),
            )
            .map(|l| (l.module, l.cached, l.seconds))
            .expect("loaded")
        };
        assert_eq!(run(b"obj"), (b"obj".to_vec(), false, 0.5));
        assert_eq!(run(b"other"), (b"obj".to_vec(), true, 0.0));
        let mut names: Vec<String> = fs::read_dir(&d)
            .expect("list")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .collect();
        names.sort();
        assert_eq!(names, ["k1.c", "k1.so"]);
        let stored = fs::read(d.join("k1.so")).expect("the entry");
        assert_eq!(eqfuse_codegen::cache::verify(&stored, "k1.so"), Ok(3));
    }

    #[test]
    fn the_default_has_no_disk_cache_without_a_home() {
        let vars = |set: &'static [(&'static str, &'static str)]| {
            move |k: &str| set.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v))
        };
        assert_eq!(cache_dir_from(vars(&[])), None);
        assert_eq!(cache_dir_from(vars(&[("HOME", ""), ("XDG_CACHE_HOME", "")])), None);
        assert_eq!(cache_dir_from(vars(&[("HOME", "/h")])), Some(PathBuf::from("/h/.cache/eqfuse/cpu")));
        assert_eq!(
            cache_dir_from(vars(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")])),
            Some(PathBuf::from("/x/eqfuse/cpu"))
        );
        assert_eq!(
            cache_dir_from(vars(&[("HOME", "/h"), ("EQFUSE_CACHE_DIR", "/e")])),
            Some(PathBuf::from("/e"))
        );
        assert_eq!(
            cache_dir_from(vars(&[("HOME", "/h"), ("EQFUSE_CACHE_DIR", "")])),
            Some(PathBuf::from("/h/.cache/eqfuse/cpu"))
        );
    }
}
