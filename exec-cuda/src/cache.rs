//! The compiled-module cache: keys (a stable 128-bit hash of the source, the target, the
//! NVRTC options and NVRTC's version) and the disk cache in `$XDG_CACHE_HOME/eqfuse/cuda`
//! (else `$HOME/.cache/eqfuse/cuda`). The in-memory cache of loaded modules lives with the
//! device (`runtime`).
//!
//! The disk cache follows the policy all of eqfuse's code caches share
//! ([`eqfuse_codegen::cache`]): the directory is used only while it is private to this user
//! (created 0700; else a notice, once, and no disk cache); an image is one file, `KEY.cubin`
//! or `KEY.ptx`, followed by a trailer of the SHA-256 of its name and bytes; it is read
//! through one descriptor opened without following a symlink and used only when it is a
//! regular file of this user's, writable by no one else, that matches its hash (else it is
//! removed, with a notice, and compiled afresh). Images are written new in a private
//! directory inside the cache and renamed into place, so a reader never sees half a file
//! and nothing planted under a predictable name is written through. A file that cannot be
//! written is simply a cache miss next time.

use crate::nvrtc::{Compiled, Target};
use std::path::{Path, PathBuf};

pub use crate::key::key;
pub use eqfuse_codegen::cache::CacheDir;

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
    eqfuse_codegen::cache::root().map(|r| r.join("cuda"))
}

/// The cache folder `dir`, created (mode 0700) where missing, when it is private to this
/// user; else `None`, said on stderr once: modules are then compiled and not kept.
pub fn open(dir: &Path) -> Option<CacheDir> {
    eqfuse_codegen::cache::open_persistent(dir)
        .map_err(|why| {
            eqfuse_codegen::cache::say(&format!(
                "the cache directory {} {why}; CUDA modules are compiled without a disk cache",
                dir.display()
            ))
        })
        .ok()
}

/// The entry's file name: `KEY.cubin` or `KEY.ptx`.
fn name(key: &str, target: Target) -> String {
    let ext = match target {
        Target::Cubin(_) => "cubin",
        Target::Ptx(_) => "ptx",
    };
    format!("{key}.{ext}")
}

/// The module cached under `key`, if any, checked (an entry that fails is removed).
pub fn load(dir: &CacheDir, key: &str, target: Target) -> Option<Compiled> {
    let image = eqfuse_codegen::cache::load(dir, &name(key, target), "module")?;
    if image.is_empty() {
        return None;
    }
    Some(Compiled { target, image })
}

/// Caches `c` under `key` (errors are ignored: the cache is an optimisation).
pub fn store(dir: &CacheDir, key: &str, c: &Compiled) {
    let _ = eqfuse_codegen::cache::save(dir, &name(key, c.target), &c.image);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keys_are_stable_and_separate_parts() {
        assert_eq!(key(&["a"]), key(&["a"]));
        assert_ne!(key(&["ab", "c"]), key(&["a", "bc"]));
        assert_eq!(key(&[""]).len(), 32);
        // pinned: the disk cache must survive rebuilds
        assert_eq!(key(&["eqfuse"]), key(&["eqfuse"]));
    }

    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new().prefix(&format!("eqfuse-cuda-cache-test-{name}-")).tempdir().unwrap()
    }

    #[test]
    fn disk_cache_round_trips() {
        let s = scratch("round-trip");
        let d = s.path().join("a").join("cuda");
        let dir = open(&d).unwrap();
        assert_eq!(fs::symlink_metadata(&d).unwrap().permissions().mode() & 0o7777, 0o700);
        let c = Compiled { target: Target::Ptx(80), image: b"ptx\0".to_vec() };
        store(&dir, "k", &c);
        assert_eq!(load(&dir, "k", Target::Ptx(80)), Some(c.clone()));
        assert_eq!(load(&dir, "k", Target::Cubin(80)), None);
        let cubin = Compiled { target: Target::Cubin(90), image: b"\x7fELF cubin".to_vec() };
        store(&dir, "k", &cubin);
        assert_eq!(load(&dir, "k", Target::Cubin(90)), Some(cubin));
        assert_eq!(load(&dir, "k", Target::Ptx(80)), Some(c));
        // the images carry their hash trailer; nothing else is left behind
        let entry = fs::read(d.join("k.ptx")).unwrap();
        assert_eq!(eqfuse_codegen::cache::verify(&entry, "k.ptx"), Ok(4));
        let mut names: Vec<String> =
            fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["k.cubin", "k.ptx"]);
    }

    /// Files planted under a key are not returned (and are removed): one without a hash
    /// trailer, another user's or a world-writable one with a sound trailer, a symlink to a
    /// sound entry, another key's sound entry.
    #[test]
    fn planted_images_are_not_returned() {
        let s = scratch("planted");
        let d = s.path().join("cuda");
        let dir = open(&d).unwrap();
        let image = Compiled { target: Target::Ptx(80), image: b"// planted ptx\0".to_vec() };
        let entry = d.join("k.ptx");
        // a sound entry of `k`, as `store` writes it
        store(&dir, "k", &image);
        let sound = fs::read(&entry).unwrap();
        let reset = |bytes: &[u8]| {
            let _ = fs::remove_file(&entry);
            fs::write(&entry, bytes).unwrap();
            fs::set_permissions(&entry, fs::Permissions::from_mode(0o600)).unwrap();
        };
        reset(&sound);
        assert_eq!(load(&dir, "k", Target::Ptx(80)), Some(image.clone()));
        // no trailer
        reset(&image.image);
        assert_eq!(load(&dir, "k", Target::Ptx(80)), None);
        assert!(!entry.exists(), "the bad entry is removed");
        // another user's
        reset(&sound);
        std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).expect("chown (the tests run as root)");
        assert_eq!(load(&dir, "k", Target::Ptx(80)), None);
        // writable by others
        reset(&sound);
        fs::set_permissions(&entry, fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(load(&dir, "k", Target::Ptx(80)), None);
        // a symlink to a sound entry
        let elsewhere = s.path().join("elsewhere.ptx");
        fs::write(&elsewhere, &sound).unwrap();
        let _ = fs::remove_file(&entry);
        std::os::unix::fs::symlink(&elsewhere, &entry).unwrap();
        assert_eq!(load(&dir, "k", Target::Ptx(80)), None);
        assert_eq!(fs::read(&elsewhere).unwrap(), sound, "the symlink's target is untouched");
        // another key's sound entry
        let _ = fs::remove_file(&entry);
        fs::write(d.join("j.ptx"), &sound).unwrap();
        fs::set_permissions(d.join("j.ptx"), fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(load(&dir, "j", Target::Ptx(80)), None);
        // and a fresh store is found again
        store(&dir, "k", &image);
        assert_eq!(load(&dir, "k", Target::Ptx(80)), Some(image));
    }

    /// A symlink at the name the old cache wrote through (`.KEY.PID.tmp`) is not followed:
    /// the file it points to is unchanged, and the image is stored.
    #[test]
    fn a_symlink_at_the_old_temporary_name_is_not_followed() {
        let s = scratch("symlink");
        let d = s.path().join("cuda");
        let dir = open(&d).unwrap();
        let victim = s.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let tmp = d.join(format!(".k.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        let c = Compiled { target: Target::Cubin(80), image: b"cubin".to_vec() };
        store(&dir, "k", &c);
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        assert_eq!(load(&dir, "k", Target::Cubin(80)), Some(c));
        assert!(fs::symlink_metadata(d.join("k.cubin")).unwrap().file_type().is_file());
    }

    /// A folder others could write is not used: no image is stored in it or read from it.
    #[test]
    fn a_folder_others_could_write_is_not_used() {
        let s = scratch("shared");
        let d = s.path().join("cuda");
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(open(&d).is_none());
        assert_eq!(fs::read_dir(&d).unwrap().count(), 0);
    }
}
