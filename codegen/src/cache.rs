//! The code caches' shared policy: where compiled code is kept on disk, and what is checked
//! before it is used. The CPU backend keeps shared objects of plans (`KEY.so`), the CUDA
//! backend PTX and cubin images (`KEY.ptx`, `KEY.cubin`), and the tests' CUDA emulator shared
//! objects of kernels (`KEY.so`); all go through this module.
//!
//! Compiled code is code this process runs (or hands to the GPU), so nothing another user
//! could have written may be used, and nothing damaged either.
//!
//! - A cache directory is created with mode 0700 (each missing component), and used only
//!   while it is a directory itself (not a symlink), owned by the effective user and
//!   writable by no group or other user ([`open`], [`open_persistent`]). Otherwise a notice
//!   on stderr says why, once, and the process compiles into a private temporary directory
//!   instead (or, for CUDA, keeps no disk cache).
//! - No disk cache compiles into a private temporary directory: made under a random name by
//!   `mkdir` with mode 0700 (which fails on a name that exists, so no one can make it first),
//!   and removed when dropped.
//! - An entry is one file (`KEY.so`, `KEY.ptx`, ...): the object followed by a trailer of the
//!   SHA-256 of the entry's file name and the object (`len(name) as u64 LE || name ||
//!   object`) and the 16 bytes [`MARK`] (`eqfuse-sha256-v2`). One file, so that processes
//!   that share a cache never pair an object with a hash of another write; an ELF loader
//!   ignores bytes after the object, so a `.so` entry stays a shared object for whoever
//!   reads it. The name is hashed so that a sound entry of one key renamed to another fails
//!   its check (entries of `eqfuse-sha256-v1`, which hashed the object alone, are compiled
//!   again once).
//! - An entry is opened without following a symlink and checked through that one open file
//!   ([`read_entry`]): a regular file, owned by the effective user, writable by no group or
//!   other user, whose bytes hash to its trailer's value. The bytes are read once; a shared
//!   object's checked bytes are written into a fresh private directory inside the cache
//!   directory and loaded from there ([`load_or_compile`]), so that what runs is what was
//!   checked whatever happens to the entry meanwhile. An entry that fails is removed and
//!   compiled afresh, with a notice; a truncated or empty one fails its hash.
//! - Code is compiled in a private directory (random name `.eqfuse-work-*`, mode 0700)
//!   inside the cache directory, written there as an entry (created new, mode 0600) and
//!   renamed into place. The work directories of a process killed mid-compile are removed
//!   when a persistent cache directory is next opened, once they are an hour old.
//!
//! The owner and mode checks keep out other users' files; the hash keeps out damaged ones
//! (a truncated write, a file of another program or key put under the key). The hash is no
//! defence against the user's own processes, or root, which could write a matching trailer.

use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// The last bytes of an entry, after the SHA-256 of its name and object.
pub const MARK: &[u8; 16] = b"eqfuse-sha256-v2";

/// The length of an entry's trailer: the SHA-256 and [`MARK`].
pub const TRAILER: usize = 32 + MARK.len();

/// The largest entry read (compiled code is a few MiB at most); a larger file fails its
/// check rather than filling memory.
pub const MAX_ENTRY: u64 = 1 << 30;

/// The prefix of the private directories code is compiled in.
const WORK_PREFIX: &str = ".eqfuse-work-";

/// The age past which a work directory left in a persistent cache directory is removed
/// (no compile takes this long; the directory of one that runs is removed when it ends).
const STALE: Duration = Duration::from_secs(3600);

/// The root of eqfuse's default cache directories: `$XDG_CACHE_HOME/eqfuse`, else
/// `$HOME/.cache/eqfuse`; `None` when neither is set (then nothing persistent is written,
/// since a fixed path in the shared temporary directory could be made first by another
/// user). The backends keep their caches in subdirectories (`cpu`, `cuda`, `emu`).
pub fn root() -> Option<PathBuf> {
    root_from(|k| std::env::var_os(k))
}

/// [`root`] where `env` gives the environment's variables (an empty one counts as unset).
pub fn root_from(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let env = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = env("XDG_CACHE_HOME") {
        return Some(d.join("eqfuse"));
    }
    env("HOME").map(|d| d.join(".cache").join("eqfuse"))
}

/// The effective user id, whose files alone are trusted.
#[allow(unsafe_code)]
pub fn euid() -> u32 {
    // SAFETY: geteuid takes no argument, touches no memory and cannot fail.
    unsafe { libc::geteuid() }
}

/// Says `line` on stderr (`eqfuse: note: ...`), once per process and line.
pub fn say(line: &str) {
    static SAID: OnceLock<Mutex<Vec<String>>> = OnceLock::new();
    let said = SAID.get_or_init(Default::default);
    let mut said = said.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.iter().any(|s| s == line) {
        eprintln!("eqfuse: note: {line}");
        said.push(line.to_string());
    }
}

/// Why a file whose metadata (of the file itself, no symlink followed) is `meta` could have
/// been written by someone else: owned by another user, or writable by a group or others.
fn foreign(meta: &fs::Metadata) -> Option<String> {
    if meta.uid() != euid() {
        return Some(format!("owned by uid {}", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    (mode & 0o022 != 0).then(|| format!("mode {mode:04o}"))
}

/// A private directory of `0o700` under a random name in `parent`.
fn private_temp(parent: &Path, prefix: &str) -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir_in(parent)
        .map_err(|e| format!("cannot create a private directory in {}: {e}", parent.display()))
}

/// Where this process keeps compiled code: a private directory, kept across runs or this
/// process's own (removed when dropped).
#[derive(Debug)]
pub struct CacheDir {
    path: PathBuf,
    /// The temporary directory, when the cache is not kept.
    temporary: Option<tempfile::TempDir>,
}

impl CacheDir {
    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether entries are kept across runs.
    pub fn persistent(&self) -> bool {
        self.temporary.is_none()
    }
}

/// The cache directory `dir` (created, mode 0700, where missing) when it is private to this
/// user; else (said on stderr, once), or when `dir` is `None`, a private temporary one.
pub fn open(dir: Option<&Path>) -> Result<CacheDir, String> {
    if let Some(d) = dir {
        match open_persistent(d) {
            Ok(c) => return Ok(c),
            Err(why) => say(&format!(
                "the cache directory {} {why}; compiling into a private temporary directory instead",
                d.display()
            )),
        }
    }
    let t = private_temp(&std::env::temp_dir(), "eqfuse-")?;
    Ok(CacheDir { path: t.path().to_path_buf(), temporary: Some(t) })
}

/// The cache directory `d` (created, mode 0700, where missing) when it is private to this
/// user, else why not (`is not private (mode 0777)`); the stale work directories in it are
/// removed (once per process).
pub fn open_persistent(d: &Path) -> Result<CacheDir, String> {
    private_dir(d)?;
    sweep(d);
    Ok(CacheDir { path: d.to_path_buf(), temporary: None })
}

/// Creates `d` where missing (each component mode 0700) and says why it may not be used,
/// if it may not: a symlink, not a directory, or [`foreign`].
fn private_dir(d: &Path) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(d)
        .map_err(|e| format!("cannot be created ({e})"))?;
    let meta = fs::symlink_metadata(d).map_err(|e| format!("cannot be read ({e})"))?;
    let why = if meta.file_type().is_symlink() {
        Some("a symlink".to_string())
    } else if !meta.is_dir() {
        Some("not a directory".to_string())
    } else {
        foreign(&meta)
    };
    why.map_or(Ok(()), |w| Err(format!("is not private ({w})")))
}

/// Removes the work directories (`.eqfuse-work-*`) in the private directory `d` that are
/// this user's and older than [`STALE`] (by mtime): those of processes killed mid-compile.
/// Once per process and directory; failures are ignored.
fn sweep(d: &Path) {
    static SWEPT: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    let swept = SWEPT.get_or_init(Default::default);
    if !swept.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(d.to_path_buf()) {
        return;
    }
    let Ok(list) = fs::read_dir(d) else { return };
    let now = SystemTime::now();
    for e in list.flatten() {
        if !e.file_name().as_bytes().starts_with(WORK_PREFIX.as_bytes()) {
            continue;
        }
        let path = e.path();
        // the directory itself (no symlink followed), this user's, not touched for an hour
        let Ok(meta) = fs::symlink_metadata(&path) else { continue };
        let old = meta.modified().ok().and_then(|m| now.duration_since(m).ok()).is_some_and(|a| a > STALE);
        if meta.is_dir() && meta.uid() == euid() && old {
            let _ = fs::remove_dir_all(&path);
        }
    }
}

/// What the cache holds under a name.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// The object's bytes, checked.
    Object(Vec<u8>),
    /// Nothing.
    Missing,
    /// A file that failed its check, and why.
    Bad(String),
}

/// The entry `name` in directory `dir`, checked through one open file descriptor (see the
/// module doc).
pub fn read_entry(dir: &Path, name: &str) -> Found {
    let path = dir.join(name);
    // no symlink followed; a FIFO does not block the open (it then fails as no regular file)
    let opened = OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(&path);
    let file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Found::Missing,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Found::Bad("a symlink".into()),
        Err(e) => return Found::Bad(format!("cannot be opened: {e}")),
    };
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) => return Found::Bad(format!("cannot be read: {e}")),
    };
    if !meta.is_file() {
        return Found::Bad("not a regular file".into());
    }
    if let Some(why) = foreign(&meta) {
        return Found::Bad(why);
    }
    if meta.len() > MAX_ENTRY {
        return Found::Bad(format!("{} bytes, more than any compiled code", meta.len()));
    }
    let mut bytes = Vec::new();
    if let Err(e) = (&file).take(MAX_ENTRY).read_to_end(&mut bytes) {
        return Found::Bad(format!("cannot be read: {e}"));
    }
    match verify(&bytes, name) {
        Ok(n) => {
            bytes.truncate(n);
            Found::Object(bytes)
        }
        Err(why) => Found::Bad(why),
    }
}

/// The SHA-256 an entry named `name` holding `object` records.
fn digest(name: &str, object: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((name.len() as u64).to_le_bytes());
    h.update(name.as_bytes());
    h.update(object);
    h.finalize().into()
}

/// The trailer of the entry `name` holding `object`: its SHA-256 and [`MARK`].
pub fn trailer(name: &str, object: &[u8]) -> [u8; TRAILER] {
    let mut t = [0u8; TRAILER];
    t[..32].copy_from_slice(&digest(name, object));
    t[32..].copy_from_slice(MARK);
    t
}

/// The length of the object in `entry` (the bytes of the entry `name`) when its trailer
/// holds the SHA-256 of the name and object, else why not.
pub fn verify(entry: &[u8], name: &str) -> Result<usize, String> {
    let Some(n) = entry.len().checked_sub(TRAILER) else {
        return Err(format!("{} bytes, shorter than its hash trailer", entry.len()));
    };
    let (object, trailer) = entry.split_at(n);
    if &trailer[32..] != MARK {
        return Err("no hash trailer".into());
    }
    if digest(name, object) != trailer[..32] {
        return Err("its bytes do not match their recorded SHA-256".into());
    }
    Ok(n)
}

/// Writes `parts` into a new file `path` of mode 0600 (failing if anything is there, a
/// symlink included).
pub fn write_new(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let mut f = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    for p in parts {
        f.write_all(p)?;
    }
    f.flush()
}

/// Stores `object` as the entry `name` in `dir`, staged in the private directory `work`
/// (inside `dir`) and renamed into place.
fn store(dir: &Path, work: &Path, name: &str, object: &[u8]) -> std::io::Result<()> {
    let staged = work.join(format!("{name}.entry"));
    write_new(&staged, &[object, &trailer(name, object)])?;
    fs::rename(&staged, dir.join(name))
}

/// The checked object of entry `name` in `dir`, or `None`: none there, `dir` not kept, or an
/// entry that fails its check (removed, with a notice naming it "the cached `what`").
pub fn load(dir: &CacheDir, name: &str, what: &str) -> Option<Vec<u8>> {
    if !dir.persistent() {
        return None;
    }
    match read_entry(dir.path(), name) {
        Found::Object(object) => Some(object),
        Found::Missing => None,
        Found::Bad(why) => {
            let entry = dir.path().join(name);
            say(&format!(
                "the cached {what} {} failed its integrity check ({why}); recompiling",
                entry.display()
            ));
            let _ = remove(&entry);
            None
        }
    }
}

/// Removes what is at `p`: a file or symlink, or an empty directory.
fn remove(p: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir(p),
        _ => fs::remove_file(p),
    }
}

/// Stores `object` as the entry `name` in `dir` when `dir` is kept (staged in a private
/// directory inside it and renamed into place).
pub fn save(dir: &CacheDir, name: &str, object: &[u8]) -> Result<(), String> {
    if !dir.persistent() {
        return Ok(());
    }
    let work = private_temp(dir.path(), WORK_PREFIX)?;
    store(dir.path(), work.path(), name, object).map_err(|e| format!("cannot store {name}: {e}"))
}

/// An entry of compiled code, as [`load_or_compile`] keeps it.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    /// The entry's file name in the cache directory (`KEY.so`); its hash covers it.
    pub name: &'a str,
    /// What it holds, for notices (`plan`: "the cached plan D/KEY.so failed ...").
    pub what: &'a str,
    /// Files the compile leaves in its directory that are kept beside the entry, for
    /// reading only (the CPU's `KEY.c`).
    pub beside: &'a [&'a str],
}

/// A loaded module.
pub struct Loaded<M> {
    /// What `load` made of the shared object.
    pub module: M,
    /// Seconds spent compiling (0 on a hit).
    pub seconds: f64,
    /// Whether it came from the cache.
    pub cached: bool,
}

/// The shared object of `entry` from `dir`, checked and loaded by `load`; on a miss, or an
/// entry that fails its check (removed, with a notice), `compile` makes it in a private
/// directory it is given (returning the shared object's path and the seconds it took), and
/// it is loaded and then stored in `dir` when `dir` is kept.
pub fn load_or_compile<M>(
    dir: &CacheDir,
    entry: &Entry<'_>,
    compile: impl FnOnce(&Path) -> Result<(PathBuf, f64), String>,
    load_so: impl FnOnce(&Path) -> Result<M, String>,
) -> Result<Loaded<M>, String> {
    let work = private_temp(dir.path(), WORK_PREFIX)?;
    if let Some(object) = load(dir, entry.name, entry.what) {
        let copy = work.path().join(entry.name);
        write_new(&copy, &[&object]).map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
        let module = load_so(&copy)?;
        return Ok(Loaded { module, seconds: 0.0, cached: true });
    }
    let (so, seconds) = compile(work.path())?;
    let object = fs::read(&so).map_err(|e| format!("cannot read {}: {e}", so.display()))?;
    let module = load_so(&so)?;
    if dir.persistent() {
        // a cache that cannot be written costs a compile next time, nothing more
        if store(dir.path(), work.path(), entry.name, &object).is_ok() {
            for b in entry.beside {
                let _ = fs::rename(work.path().join(b), dir.path().join(b));
            }
        }
    }
    Ok(Loaded { module, seconds, cached: false })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const KEY: &str = "k0";
    const NAME: &str = "k0.so";
    const ENTRY: Entry<'static> = Entry { name: NAME, what: "plan", beside: &["k0.c"] };

    /// A fresh, empty directory under the system's temporary directory.
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("eqfuse-cache-test-{name}-"))
            .tempdir()
            .expect("a scratch dir")
    }

    fn mode(p: &Path) -> u32 {
        fs::symlink_metadata(p).expect("metadata").mode() & 0o7777
    }

    /// `load_or_compile` of `entry` in `dir` where compiling writes `object` (and `KEY.c`)
    /// and loading reads the file back: the bytes loaded, whether it was a hit, and the
    /// compiles it ran.
    fn run_entry(dir: &CacheDir, entry: &Entry<'_>, object: &[u8]) -> (Vec<u8>, bool, usize) {
        let compiles = Cell::new(0);
        let got = load_or_compile(
            dir,
            entry,
            |work| {
                compiles.set(compiles.get() + 1);
                let so = work.join(entry.name);
                fs::write(&so, object).map_err(|e| e.to_string())?;
                fs::write(work.join(format!("{KEY}.c")), "int x;").map_err(|e| e.to_string())?;
                Ok((so, 0.5))
            },
            |p| fs::read(p).map_err(|e| e.to_string()),
        )
        .expect("loaded");
        (got.module, got.cached, compiles.get())
    }

    fn run(dir: &CacheDir, object: &[u8]) -> (Vec<u8>, bool, usize) {
        run_entry(dir, &ENTRY, object)
    }

    fn persistent(d: &Path) -> CacheDir {
        let c = open(Some(d)).expect("opened");
        assert!(c.persistent(), "{} should be used", d.display());
        c
    }

    fn names(d: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(d)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_entry_is_stored_with_its_hash_and_found_again() {
        let s = scratch("hit");
        let d = s.path().join("a").join("b");
        let c = persistent(&d);
        assert_eq!(mode(&s.path().join("a")), 0o700);
        assert_eq!(mode(&d), 0o700);
        assert_eq!(run(&c, b"object one"), (b"object one".to_vec(), false, 1));
        let stored = fs::read(d.join(NAME)).expect("stored");
        assert_eq!(verify(&stored, NAME), Ok(10));
        assert_eq!(mode(&d.join(NAME)), 0o600);
        assert!(d.join(format!("{KEY}.c")).is_file());
        // a hit loads the checked bytes without compiling
        assert_eq!(run(&c, b"other"), (b"object one".to_vec(), true, 0));
        // nothing but the entry and its source is left behind
        assert_eq!(names(&d), [format!("{KEY}.c"), NAME.to_string()]);
    }

    /// Puts `bytes` at the entry [`NAME`] in `d`.
    fn plant(d: &Path, bytes: &[u8]) -> PathBuf {
        let p = d.join(NAME);
        let _ = fs::remove_file(&p);
        fs::write(&p, bytes).expect("plant");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).expect("chmod");
        p
    }

    fn entry_of(name: &str, object: &[u8]) -> Vec<u8> {
        [object, &trailer(name, object)].concat()
    }

    #[test]
    fn damaged_or_foreign_entries_are_recompiled() {
        let s = scratch("bad");
        let d = s.path().join("c");
        let c = persistent(&d);
        let good = entry_of(NAME, b"the real object");
        let truncated = &good[..good.len() / 2];
        let wrong_hash = [b"a planted object".as_slice(), &good[good.len() - TRAILER..]].concat();
        // an entry of the version that hashed the object alone
        let v1 = [b"the real object".as_slice(), &Sha256::digest(b"the real object"), b"eqfuse-sha256-v1"]
            .concat();
        for bad in [&b""[..], truncated, b"\x7fELF a planted object without trailer", &wrong_hash, &v1] {
            plant(&d, bad);
            assert!(matches!(read_entry(&d, NAME), Found::Bad(_)), "{bad:?}");
            assert_eq!(run(&c, b"fresh"), (b"fresh".to_vec(), false, 1), "{bad:?}");
            assert_eq!(fs::read(d.join(NAME)).expect("stored"), entry_of(NAME, b"fresh"));
        }
        // a sound entry that is group- or world-writable, or another user's, is not trusted
        for m in [0o620, 0o602, 0o666] {
            let p = plant(&d, &good);
            fs::set_permissions(&p, fs::Permissions::from_mode(m)).expect("chmod");
            assert_eq!(read_entry(&d, NAME), Found::Bad(format!("mode {m:04o}")));
            assert_eq!(run(&c, b"fresh"), (b"fresh".to_vec(), false, 1));
        }
        let p = plant(&d, &good);
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).expect("chown (the tests run as root)");
        assert_eq!(read_entry(&d, NAME), Found::Bad("owned by uid 65534".into()));
        assert_eq!(run(&c, b"fresh"), (b"fresh".to_vec(), false, 1));
        // a symlink to a sound entry is not followed
        let elsewhere = s.path().join("elsewhere.so");
        fs::write(&elsewhere, &good).expect("write");
        let p = d.join(NAME);
        fs::remove_file(&p).expect("remove");
        std::os::unix::fs::symlink(&elsewhere, &p).expect("symlink");
        assert_eq!(read_entry(&d, NAME), Found::Bad("a symlink".into()));
        assert_eq!(run(&c, b"fresh"), (b"fresh".to_vec(), false, 1));
        assert_eq!(fs::read(&elsewhere).expect("kept"), good, "the symlink's target is not written");
        // a directory under the key is no entry; it is removed (when empty) and the plan
        // still runs
        fs::remove_file(&p).expect("remove");
        fs::create_dir(&p).expect("mkdir");
        assert_eq!(read_entry(&d, NAME), Found::Bad("not a regular file".into()));
        assert_eq!(run(&c, b"fresh"), (b"fresh".to_vec(), false, 1));
        assert!(p.is_file(), "the directory is replaced by the entry");
        // the sound entry is loaded as it is
        plant(&d, &good);
        assert_eq!(run(&c, b"fresh"), (b"the real object".to_vec(), true, 0));
    }

    /// The hash covers the entry's name: a sound entry of key A renamed to key B fails
    /// its check, and B is compiled afresh.
    #[test]
    fn an_entry_renamed_to_another_key_is_recompiled() {
        let s = scratch("renamed");
        let d = s.path().join("c");
        let c = persistent(&d);
        let a = Entry { name: "ka.so", what: "plan", beside: &[] };
        let b = Entry { name: "kb.so", what: "plan", beside: &[] };
        assert_eq!(run_entry(&c, &a, b"object of a"), (b"object of a".to_vec(), false, 1));
        assert_eq!(read_entry(&d, "ka.so"), Found::Object(b"object of a".to_vec()));
        fs::rename(d.join("ka.so"), d.join("kb.so")).expect("rename");
        assert_eq!(
            read_entry(&d, "kb.so"),
            Found::Bad("its bytes do not match their recorded SHA-256".into())
        );
        assert_eq!(run_entry(&c, &b, b"object of b"), (b"object of b".to_vec(), false, 1));
        assert_eq!(run_entry(&c, &b, b"other"), (b"object of b".to_vec(), true, 0));
        // the same through `load` and `save`
        save(&c, "x.ptx", b"ptx of x").expect("saved");
        assert_eq!(load(&c, "x.ptx", "module"), Some(b"ptx of x".to_vec()));
        fs::rename(d.join("x.ptx"), d.join("y.ptx")).expect("rename");
        assert_eq!(load(&c, "y.ptx", "module"), None);
        assert!(!d.join("y.ptx").exists(), "the bad entry is removed");
    }

    #[test]
    fn a_directory_others_could_write_is_not_used() {
        let s = scratch("dirs");
        let shared = s.path().join("shared");
        fs::create_dir(&shared).expect("mkdir");
        fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).expect("chmod");
        let group = s.path().join("group");
        fs::create_dir(&group).expect("mkdir");
        fs::set_permissions(&group, fs::Permissions::from_mode(0o770)).expect("chmod");
        let theirs = s.path().join("theirs");
        fs::create_dir(&theirs).expect("mkdir");
        fs::set_permissions(&theirs, fs::Permissions::from_mode(0o700)).expect("chmod");
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown (the tests run as root)");
        let real = s.path().join("real");
        fs::create_dir(&real).expect("mkdir");
        fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).expect("chmod");
        let link = s.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let file = s.path().join("file");
        fs::write(&file, b"").expect("write");
        for (d, why) in [
            (&shared, "is not private (mode 0777)".to_string()),
            (&group, "is not private (mode 0770)".to_string()),
            (&theirs, "is not private (owned by uid 65534)".to_string()),
            (&link, "is not private (a symlink)".to_string()),
        ] {
            assert_eq!(private_dir(d), Err(why.clone()));
            assert_eq!(open_persistent(d).err(), Some(why));
            let c = open(Some(d)).expect("a temporary cache");
            assert!(!c.persistent());
            assert_eq!(run(&c, b"obj"), (b"obj".to_vec(), false, 1));
            let t = c.path().to_path_buf();
            drop(c);
            assert!(!t.exists(), "the temporary cache is removed");
        }
        assert!(private_dir(&file).is_err());
        for d in [&shared, &group, &real] {
            assert_eq!(fs::read_dir(d).expect("list").count(), 0, "{} was written", d.display());
        }
        // an existing private directory of the default mode (0755) is used
        let plain = s.path().join("plain");
        fs::create_dir(&plain).expect("mkdir");
        fs::set_permissions(&plain, fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(private_dir(&plain), Ok(()));
    }

    #[test]
    fn no_cache_compiles_in_a_fresh_private_directory_each_time() {
        let a = open(None).expect("a temporary cache");
        let b = open(None).expect("a temporary cache");
        assert!(!a.persistent());
        assert_ne!(a.path(), b.path());
        assert_eq!(mode(a.path()), 0o700);
        assert_eq!(run(&a, b"obj"), (b"obj".to_vec(), false, 1));
        // nothing is kept, so a second run compiles again
        assert_eq!(run(&a, b"obj"), (b"obj".to_vec(), false, 1));
        assert_eq!(fs::read_dir(a.path()).expect("list").count(), 0);
        // nor through `save` and `load`
        save(&a, "x.ptx", b"ptx").expect("nothing to do");
        assert_eq!(load(&a, "x.ptx", "module"), None);
        assert_eq!(fs::read_dir(a.path()).expect("list").count(), 0);
    }

    /// Sets the mtime of `p` (a directory or file) to `age` ago.
    fn back_date(p: &Path, age: Duration) {
        let f = fs::File::open(p).expect("open");
        f.set_modified(SystemTime::now() - age).expect("set_modified");
    }

    /// Opening a persistent cache directory removes this user's work directories left an
    /// hour ago or more (a process killed mid-compile), and nothing else.
    #[test]
    fn stale_work_directories_are_removed() {
        let s = scratch("stale");
        let d = s.path().join("c");
        fs::DirBuilder::new().mode(0o700).create(&d).expect("mkdir");
        let mk = |name: &str| {
            let w = d.join(name);
            fs::DirBuilder::new().mode(0o700).create(&w).expect("mkdir");
            fs::write(w.join("k.c"), "int x;").expect("write");
            w
        };
        let old = mk(".eqfuse-work-old");
        let fresh = mk(".eqfuse-work-fresh");
        let recent = mk(".eqfuse-work-recent");
        let theirs = mk(".eqfuse-work-theirs");
        let other = mk("not-work");
        let file = d.join(".eqfuse-work-file");
        fs::write(&file, b"").expect("write");
        let hour = Duration::from_secs(3600);
        for p in [&old, &theirs, &other, &file] {
            back_date(p, 2 * hour);
        }
        back_date(&recent, hour - Duration::from_secs(60));
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown (the tests run as root)");
        let c = persistent(&d);
        assert!(!old.exists(), "the stale work directory is removed");
        for p in [&fresh, &recent, &theirs, &other, &file] {
            assert!(p.exists(), "{} was removed", p.display());
        }
        // and the cache works as before
        assert_eq!(run(&c, b"obj"), (b"obj".to_vec(), false, 1));
    }

    #[test]
    fn the_root_needs_a_home() {
        let vars = |set: &'static [(&'static str, &'static str)]| {
            move |k: &str| set.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v))
        };
        assert_eq!(root_from(vars(&[])), None);
        assert_eq!(root_from(vars(&[("HOME", ""), ("XDG_CACHE_HOME", "")])), None);
        assert_eq!(root_from(vars(&[("HOME", "/h")])), Some(PathBuf::from("/h/.cache/eqfuse")));
        assert_eq!(
            root_from(vars(&[("HOME", "/h"), ("XDG_CACHE_HOME", "/x")])),
            Some(PathBuf::from("/x/eqfuse"))
        );
    }
}
