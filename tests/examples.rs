//! Every program in `examples/` runs as the README says: `eqfuse run examples/NAME.eqf
//! --random-inputs 1` exits with status 0 and prints each output. And `--random-inputs`
//! itself: deterministic for a seed, `--size`, its errors.
//!
//! No example fails on random data at the default sizes (every size name 1000): integers are
//! drawn from `0..16`, so `gathers`' indices stay inside `xs` and `histogram`'s bins inside
//! its 16 bins. At other sizes an example may legitimately fail; `gathers` with `n = 5`
//! reports `E-INDEX` (its `slice xs 10 20` reads past the end), checked below.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn eqfuse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eqfuse")).args(args).output().expect("start eqfuse")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn examples() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("eqf"))
        .collect();
    v.sort();
    v
}

/// The outputs a program declares, in order.
fn outputs(path: &Path) -> Vec<String> {
    let src = std::fs::read_to_string(path).expect("read");
    let checked = eqfuse::check(&eqfuse::parse(&src).expect("parses")).expect("checks");
    checked.outputs.keys().cloned().collect()
}

/// A fresh scratch directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("examples-test").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn every_example_runs_on_random_inputs() {
    let all = examples();
    assert!(all.len() >= 10, "examples/ holds {} programs", all.len());
    for path in all {
        let p = path.display().to_string();
        let out = eqfuse(&["run", &p, "--random-inputs", "1"]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{p}: status {:?}\nstderr: {stderr}", out.status.code());
        assert!(stderr.starts_with("random inputs (seed 1"), "{p}: stderr {stderr}");
        let names = outputs(&path);
        // a matrix prints its rows on the lines after `NAME = TYPE`
        let printed: Vec<&str> = stdout
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with(['[', ' ']))
            .filter_map(|l| l.split(" = ").next())
            .collect();
        assert_eq!(printed, names, "{p}: stdout\n{stdout}");
    }
}

#[test]
fn random_inputs_are_deterministic_and_backends_agree() {
    let p = root().join("examples/scans.eqf").display().to_string();
    let run = |dir: &Path, seed: &str, backend: &str| {
        let d = dir.display().to_string();
        let out = eqfuse(&[
            "run",
            &p,
            "--random-inputs",
            seed,
            "--size",
            "n=300",
            "--backend",
            backend,
            "--out",
            &d,
        ]);
        assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
        ["inc", "exc", "runmax"].map(|o| std::fs::read(dir.join(format!("{o}.npy"))).expect("output"))
    };
    let a = run(&scratch("det-a"), "7", "cpu");
    let b = run(&scratch("det-b"), "7", "reference");
    let c = run(&scratch("det-c"), "8", "cpu");
    // integer scans: the CPU plan and the reference interpreter agree bit for bit
    assert_eq!(a, b);
    assert_ne!(a, c);
    // 300 elements of 8 bytes after the header
    assert!(a[0].len() > 300 * 8 && a[0].len() < 300 * 8 + 256);
}

#[test]
fn sizes_and_their_errors() {
    let gathers = root().join("examples/gathers.eqf").display().to_string();
    let out = eqfuse(&["run", &gathers, "--random-inputs", "3", "--size", "n=40", "--size", "k=7"]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert!(text(&out.stderr).starts_with("random inputs (seed 3, n = 40, k = 7)"));
    assert!(text(&out.stdout).contains("g = f32[7]"), "{}", text(&out.stdout));

    // too short for `slice xs 10 20`: a legitimate run-time error
    let out = eqfuse(&["run", &gathers, "--random-inputs", "3", "--size", "n=5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("\nerror[E-INDEX]: slice"), "{}", text(&out.stderr));

    // a size the program does not have
    let out = eqfuse(&["run", &gathers, "--random-inputs", "3", "--size", "m=5"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.starts_with("error[E-INPUT]") && err.contains("`m`") && err.contains("n, k"), "{err}");

    // a size too large to allocate
    let out = eqfuse(&["run", &gathers, "--random-inputs", "3", "--size", "n=9223372036854775807"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("\nerror[E-LIMIT]: random input `xs`"), "{}", text(&out.stderr));

    // bad command lines: clap's usage errors (status 2)
    for args in [
        &["--random-inputs", "1", "--size", "n"][..],
        &["--random-inputs", "1", "--size", "n=-3"],
        &["--size", "n=3"],
        &["--random-inputs", "1", "--inputs", "somewhere"],
    ] {
        let mut all = vec!["run", gathers.as_str()];
        all.extend_from_slice(args);
        let out = eqfuse(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn examples_run_with_their_conformance_inputs() {
    // the README's other way to run an example: the inputs of the conformance case of the
    // same name, where there is one
    for path in examples() {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("name").to_string();
        let inputs = root().join("tests/conformance").join(&name).join("inputs");
        if !inputs.is_dir() {
            continue;
        }
        let (p, i) = (path.display().to_string(), inputs.display().to_string());
        let out = eqfuse(&["run", &p, "--inputs", &i]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
    }
}

/// The `eqf` code blocks of `docs/*.md`: each is a whole program that parses and checks.
#[test]
fn the_guide_s_programs_check() {
    let mut count = 0;
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("md"))
        .collect();
    docs.sort();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).expect("read");
        let mut rest = text.as_str();
        while let Some(start) = rest.find("```eqf\n") {
            let body = &rest[start + 7..];
            let end = body.find("```").expect("a closed code block");
            let program = &body[..end];
            let checked = eqfuse::parse(program).and_then(|p| eqfuse::check(&p));
            assert!(checked.is_ok(), "{}: {:?}\n{program}", doc.display(), checked.err());
            count += 1;
            rest = &body[end + 3..];
        }
    }
    assert!(count >= 15, "only {count} eqf blocks in docs/");
}

/// The README's table of examples names every `.eqf` program of `examples/`.
#[test]
fn the_readme_lists_every_example() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    for path in examples() {
        let name = path.file_stem().and_then(|s| s.to_str()).expect("name");
        assert!(readme.contains(&format!("`{name}`")), "README.md does not mention the example `{name}`");
    }
}
