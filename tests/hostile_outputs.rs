//! Outputs whole or not at all: `eqfuse run --out DIR` writes every output to a temporary file
//! in `DIR` and renames them over their names only when all were written. A failure (a full
//! disk, here a file-size limit; a name taken by a directory; an unwritable directory) is
//! `E-OUTPUT` and leaves `DIR` exactly as it was; a symlink at an output's name is replaced,
//! never written through.

use eqfuse::ir::npy;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Two outputs: `a` (16 bytes of data) and `b` (`n` f32 values). Written in name order, so `a`
/// is written before `b`.
const PROGRAM: &str = "input xs : f32[n]\noutput a = reduce (+) 0 xs\noutput b = map (\\x -> x * 2.0) xs\n";

/// A fresh directory for one test, with the program and an input of `n` elements.
fn setup(label: &str, n: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("eqfuse-outputs-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("in")).expect("make the test directory");
    std::fs::write(dir.join("p.eqf"), PROGRAM).expect("write the program");
    let xs: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let v = eqfuse::Value::from(ndarray::Array1::from(xs).into_dyn());
    npy::write_value(&dir.join("in").join("xs.npy"), &v).expect("write the input");
    dir
}

/// `eqfuse run p.eqf --inputs in --out out` in `dir`, through `sh -c` so that `ulimit` can be
/// set first (`prefix`).
fn run(dir: &Path, prefix: &str) -> Output {
    let bin = env!("CARGO_BIN_EXE_eqfuse");
    let script = format!("{prefix} exec '{bin}' run p.eqf --backend reference --inputs in --out out");
    Command::new("sh").arg("-c").arg(script).current_dir(dir).output().expect("start sh")
}

/// Every entry of `dir` (name to content; a symlink as `-> target`).
fn listing(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("list the output directory") {
        let e = e.expect("an entry");
        let name = e.file_name().to_string_lossy().into_owned();
        let meta = std::fs::symlink_metadata(e.path()).expect("stat an entry");
        let content = if meta.file_type().is_symlink() {
            format!("-> {}", std::fs::read_link(e.path()).expect("read a link").display()).into_bytes()
        } else if meta.is_dir() {
            b"<dir>".to_vec()
        } else {
            std::fs::read(e.path()).expect("read an entry")
        };
        out.insert(name, content);
    }
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Old outputs in `out/`, as a previous run left them.
fn old_outputs(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("make out/");
    std::fs::write(out.join("a.npy"), b"old a").expect("write an old output");
    std::fs::write(out.join("b.npy"), b"old b").expect("write an old output");
    listing(&out)
}

#[test]
fn a_full_disk_on_the_second_output_leaves_every_old_output_in_place() {
    // 100 000 f32 (400 kB) for `b` against a file-size limit of 64 blocks (32-64 kB): `a` (a
    // 0-d array, 132 bytes) fits, `b` does not
    let dir = setup("full", 100_000);
    let before = old_outputs(&dir);
    let o = run(&dir, "ulimit -f 64;");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error[E-OUTPUT]: cannot write"), "{}", stderr(&o));
    assert!(stderr(&o).contains("b.npy"), "{}", stderr(&o));
    assert_eq!(listing(&dir.join("out")), before, "the directory changed (or kept a temporary file)");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_that_succeeds_replaces_both_outputs_and_leaves_no_temporary_file() {
    let dir = setup("ok", 1000);
    old_outputs(&dir);
    let o = run(&dir, "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let names: Vec<String> = listing(&dir.join("out")).into_keys().collect();
    assert_eq!(names, ["a.npy", "b.npy"]);
    let b = npy::read_value(&dir.join("out").join("b.npy")).expect("read b");
    assert_eq!(b.shape(), [1000]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symlink_at_an_output_name_is_replaced_not_written_through() {
    let dir = setup("link", 10);
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("make out/");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, b"precious").expect("write the victim");
    std::os::unix::fs::symlink(&victim, out.join("b.npy")).expect("plant a symlink");
    let o = run(&dir, "");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).expect("read the victim"), b"precious");
    let meta = std::fs::symlink_metadata(out.join("b.npy")).expect("stat b.npy");
    assert!(meta.file_type().is_file(), "b.npy is still a symlink");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_name_taken_by_a_directory_is_an_output_error_before_anything_is_written() {
    let dir = setup("dirname", 10);
    let out = dir.join("out");
    std::fs::create_dir_all(out.join("b.npy")).expect("make a directory named b.npy");
    std::fs::write(out.join("a.npy"), b"old a").expect("write an old output");
    let before = listing(&out);
    let o = run(&dir, "");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error[E-OUTPUT]:"), "{}", stderr(&o));
    assert_eq!(listing(&out), before);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_output_directory_that_cannot_be_made_is_an_output_error() {
    let dir = setup("nodir", 10);
    // `out` is a file, so `out/` cannot be made
    std::fs::write(dir.join("out"), b"a file").expect("write a file named out");
    let o = run(&dir, "");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("error[E-OUTPUT]: cannot create the output directory"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
