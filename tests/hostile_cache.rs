//! The CPU backend's code cache under attack, through the `eqfuse` binary: a shared object
//! another program put under a plan's key, a damaged entry, a cache directory others could
//! write, and the temporary directories of `--no-cache` and of a user without `HOME`. A
//! foreign object's constructor writes a marker file; the marker must never appear, and
//! every run must print the right answer. The tests run as root, so "another user's" file
//! is one `chown`ed to uid 65534.

mod common;

use common::scratch;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A program with one native kernel (a reduce of a map), no inputs.
const PROGRAM: &str = "output s = reduce (+) 0 (map (\\i -> f64 i * 0.5 + 1.0) (iota 1000))\n";

/// What the fixture of one test holds: its scratch directory, the program, the marker a
/// foreign object writes, and that object.
struct Fixture {
    dir: PathBuf,
    program: PathBuf,
    marker: PathBuf,
    foreign: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        let dir = scratch(&format!("hostile-cache-{name}"));
        let program = dir.join("program.eqf");
        std::fs::write(&program, PROGRAM).expect("write the program");
        let marker = dir.join("MARKER");
        let foreign = dir.join("foreign.so");
        let c = dir.join("foreign.c");
        let src = format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {{\n  \
             FILE *f = fopen(\"{}\", \"w\");\n  if (f) {{ fputs(\"ran\", f); fclose(f); }}\n}}\n",
            marker.display()
        );
        std::fs::write(&c, src).expect("write the foreign C");
        let out = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&foreign)
            .arg(&c)
            .output()
            .expect("the tests need a C compiler `cc`");
        assert!(out.status.success(), "cc: {}", String::from_utf8_lossy(&out.stderr));
        Fixture { dir, program, marker, foreign }
    }

    /// A fresh, empty directory `name` in the scratch directory.
    fn sub(&self, name: &str) -> PathBuf {
        let d = self.dir.join(name);
        std::fs::create_dir_all(&d).expect("mkdir");
        d
    }

    /// `eqfuse run` on the CPU with `TMPDIR` set to `tmp`, the cache variables cleared and
    /// then `env` applied (`None` removes a variable).
    fn run(&self, tmp: &Path, env: &[(&str, Option<&Path>)], extra: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_eqfuse"));
        cmd.arg("run").arg(&self.program).args(["--backend", "cpu"]).args(extra);
        cmd.env("TMPDIR", tmp).env_remove("XDG_CACHE_HOME").env_remove("EQFUSE_CACHE_DIR");
        for (k, v) in env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.output().expect("start eqfuse")
    }

    /// The run with the cache in `cache`.
    fn run_cached(&self, cache: &Path) -> Output {
        self.run(&self.sub("tmp"), &[("EQFUSE_CACHE_DIR", Some(cache))], &[])
    }

    /// The right stdout: the reference interpreter's.
    fn expected(&self) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
            .arg("run")
            .arg(&self.program)
            .args(["--backend", "reference"])
            .output()
            .expect("start eqfuse");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Asserts that `out` succeeded with the right answer and the foreign object never ran;
    /// returns stderr.
    fn assert_right(&self, out: &Output) -> String {
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "stderr: {err}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), self.expected(), "stderr: {err}");
        assert!(!self.marker.exists(), "the planted object ran; stderr: {err}");
        assert!(!err.contains("interpreter"), "the plan should run natively: {err}");
        err
    }

    /// The plan's key: the name of the `.so` a run leaves in a fresh cache directory.
    fn key(&self) -> String {
        let cache = self.dir.join("learn-key");
        let _ = std::fs::remove_dir_all(&cache);
        self.assert_right(&self.run_cached(&cache));
        let keys: Vec<String> =
            names(&cache).into_iter().filter_map(|n| n.strip_suffix(".so").map(String::from)).collect();
        assert_eq!(keys.len(), 1, "{keys:?}");
        keys[0].clone()
    }
}

/// The names in directory `d`, sorted.
fn names(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(d)
        .unwrap_or_else(|e| panic!("{}: {e}", d.display()))
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).expect("metadata").mode() & 0o7777
}

/// The object in file `path` as the cache entry `name` with a correct hash trailer
/// (`codegen/src/cache.rs`): the SHA-256, from `sha256sum`, of the name's length (8 bytes,
/// little-endian), the name and the object, then `eqfuse-sha256-v2`.
fn entry_of(path: &Path, name: &str) -> Vec<u8> {
    let object = std::fs::read(path).expect("read");
    let hashed = path.with_extension("hashed");
    let len = (name.len() as u64).to_le_bytes();
    std::fs::write(&hashed, [&len[..], name.as_bytes(), &object].concat()).expect("write");
    let out = Command::new("sha256sum").arg(&hashed).output().expect("the tests need `sha256sum`");
    let hex = String::from_utf8_lossy(&out.stdout);
    let hex = hex.split_whitespace().next().unwrap_or_default();
    assert_eq!(hex.len(), 64, "sha256sum: {hex}");
    let digest: Vec<u8> =
        (0..32).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")).collect();
    [object, digest, b"eqfuse-sha256-v2".to_vec()].concat()
}

#[test]
fn a_foreign_object_under_the_key_is_not_loaded() {
    let f = Fixture::new("foreign");
    let cache = f.sub("cache");
    f.assert_right(&f.run_cached(&cache));
    let key = f.key();
    let entry = cache.join(format!("{key}.so"));
    // a plain shared object: no recorded hash
    std::fs::copy(&f.foreign, &entry).expect("plant");
    let err = f.assert_right(&f.run_cached(&cache));
    assert!(
        err.contains(&format!("the cached plan {} failed its integrity check", entry.display())),
        "{err}"
    );
    assert!(err.contains("recompiling"), "{err}");
    // recompiled: the next run finds a sound entry and says nothing
    let err = f.assert_right(&f.run_cached(&cache));
    assert!(!err.contains("integrity"), "{err}");
    // a hash trailer is easy to forge: another user's entry is refused whatever it holds
    let forged = entry_of(&f.foreign, &format!("{key}.so"));
    std::fs::write(&entry, &forged).expect("plant");
    std::os::unix::fs::chown(&entry, Some(65534), Some(65534)).expect("chown (the tests run as root)");
    let err = f.assert_right(&f.run_cached(&cache));
    assert!(err.contains("owned by uid 65534"), "{err}");
    assert_eq!(std::fs::metadata(&entry).expect("the entry").uid(), 0, "the entry was replaced");
    // and so is one that others may write
    std::fs::write(&entry, &forged).expect("plant");
    std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let err = f.assert_right(&f.run_cached(&cache));
    assert!(err.contains("mode 0666"), "{err}");
    // a symlink under the key is not followed
    std::fs::remove_file(&entry).expect("remove");
    std::os::unix::fs::symlink(&f.foreign, &entry).expect("symlink");
    let err = f.assert_right(&f.run_cached(&cache));
    assert!(err.contains("a symlink"), "{err}");
}

#[test]
fn truncated_and_empty_entries_are_recompiled() {
    let f = Fixture::new("truncated");
    let cache = f.sub("cache");
    f.assert_right(&f.run_cached(&cache));
    let key = f.key();
    let entry = cache.join(format!("{key}.so"));
    let good = std::fs::read(&entry).expect("the entry");
    for len in [good.len() / 2, 0] {
        std::fs::write(&entry, &good[..len]).expect("truncate");
        let err = f.assert_right(&f.run_cached(&cache));
        assert!(err.contains("failed its integrity check"), "{len} bytes: {err}");
        // recompiled (to a sound entry: the next run finds it and says nothing)
        let now = std::fs::metadata(&entry).expect("the entry").len();
        assert!(now > good.len() as u64 / 2, "{len} bytes: now {now}");
        let err = f.assert_right(&f.run_cached(&cache));
        assert!(!err.contains("integrity"), "{len} bytes, then: {err}");
    }
}

#[test]
fn a_cache_directory_others_could_write_is_not_used() {
    let f = Fixture::new("shared-dir");
    let world = f.sub("world");
    std::fs::set_permissions(&world, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let group = f.sub("group");
    std::fs::set_permissions(&group, std::fs::Permissions::from_mode(0o770)).expect("chmod");
    let theirs = f.sub("theirs");
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).expect("chown (the tests run as root)");
    let real = f.sub("real");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let link = f.dir.join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    for (d, why) in
        [(&world, "mode 0777"), (&group, "mode 0770"), (&theirs, "owned by uid 65534"), (&link, "a symlink")]
    {
        let tmp = f.sub("tmp");
        let out = f.run(&tmp, &[("EQFUSE_CACHE_DIR", Some(d))], &[]);
        let err = f.assert_right(&out);
        let want = format!(
            "eqfuse: note: the cache directory {} is not private ({why}); compiling into a private temporary directory instead",
            d.display()
        );
        assert!(err.contains(&want), "{err}");
        assert_eq!(names(&tmp), Vec::<String>::new(), "the temporary cache is removed");
    }
    for d in [&world, &group, &theirs, &real] {
        assert_eq!(names(d), Vec::<String>::new(), "{} was written", d.display());
    }
}

#[test]
fn the_cache_directory_is_created_private() {
    let f = Fixture::new("created");
    let top = f.dir.join("new");
    let cache = top.join("a").join("b");
    let err = f.assert_right(&f.run_cached(&cache));
    assert!(!err.contains("note"), "{err}");
    for d in [&top, &top.join("a"), &cache] {
        assert_eq!(mode(d), 0o700, "{}", d.display());
    }
    for n in names(&cache) {
        assert_eq!(mode(&cache.join(&n)) & 0o022, 0, "{n}");
    }
}

/// The name of the process id the next process will likely get, read from the kernel.
fn last_pid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .expect("/proc/sys/kernel/ns_last_pid")
        .trim()
        .parse()
        .expect("a pid")
}

#[test]
fn no_cache_never_uses_a_directory_made_in_advance() {
    let f = Fixture::new("no-cache");
    let key = f.key();
    let tmp = f.sub("tmp");
    // the names an older version would have compiled into, made first with a planted object
    // under the plan's key, for the next process ids
    let first = last_pid() + 1;
    let planted: Vec<PathBuf> = (first..first + 2000)
        .map(|pid| {
            let d = tmp.join(format!("eqfuse-nocache-{pid}-0"));
            std::fs::create_dir(&d).expect("mkdir");
            std::fs::hard_link(&f.foreign, d.join(format!("{key}.so"))).expect("link");
            d
        })
        .collect();
    let before = names(&tmp);
    let cache = f.dir.join("unused-cache");
    let out = f.run(&tmp, &[("EQFUSE_CACHE_DIR", Some(&cache))], &["--no-cache"]);
    f.assert_right(&out);
    assert_eq!(names(&tmp), before, "the fresh directory is removed, the planted ones left alone");
    for d in &planted {
        assert_eq!(names(d), [format!("{key}.so")], "{}", d.display());
    }
    assert!(!cache.exists(), "--no-cache wrote the cache directory");
}

#[test]
fn without_home_nothing_persistent_is_written() {
    let f = Fixture::new("no-home");
    let key = f.key();
    let tmp = f.sub("tmp");
    // where an older version kept its cache without HOME, with a planted object in it
    let old = tmp.join("eqfuse-cache").join("cpu");
    std::fs::create_dir_all(&old).expect("mkdir");
    std::fs::copy(&f.foreign, old.join(format!("{key}.so"))).expect("plant");
    let unset: &[(&str, Option<&Path>)] = &[("HOME", None)];
    for _ in 0..2 {
        f.assert_right(&f.run(&tmp, unset, &[]));
        assert_eq!(names(&tmp), ["eqfuse-cache"]);
        assert_eq!(names(&old), [format!("{key}.so")]);
    }
}
