//! The command line's snags of issue 45, each gone: one kernel count in `explain`,
//! `explain --json` and `bench`; one plan for `bench` and `run`; `run --save-inputs`;
//! `bench PROGRAM --json` and `--dump-inputs`; NumPy's print threshold.

mod common;

use common::scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn eqfuse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eqfuse")).args(args).output().expect("start eqfuse")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `eqfuse args`, asserting success; its stdout and stderr.
fn ok(args: &[&str]) -> (String, String) {
    let out = eqfuse(args);
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "eqfuse {}: {e}\n{o}", args.join(" "));
    (o, e)
}

fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("examples")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "eqf"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "examples: {v:?}");
    v
}

/// `--size NAME=32` for every size name the program's inputs declare.
fn small_sizes(program: &Path) -> Vec<String> {
    let src = std::fs::read_to_string(program).expect("read");
    let mut names: Vec<String> = Vec::new();
    for line in src.lines().filter(|l| l.starts_with("input ")) {
        let Some((_, dims)) = line.split_once('[') else { continue };
        for tok in dims.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if tok.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
                && !names.iter().any(|n| n == tok)
            {
                names.push(tok.to_string());
            }
        }
    }
    names.iter().flat_map(|n| ["--size".to_string(), format!("{n}=32")]).collect()
}

/// The number after `kernels: ` on the `kernels:` line of `explain`'s text.
fn text_count(explain: &str) -> usize {
    let line = explain.lines().find(|l| l.starts_with("kernels: ")).unwrap_or_else(|| panic!("{explain}"));
    let n = line["kernels: ".len()..].split(|c: char| !c.is_ascii_digit()).next().unwrap_or("");
    n.parse().unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn one_kernel_count_and_one_plan_on_every_example() {
    let mut compared = 0;
    for program in examples() {
        let p = program.display().to_string();
        let (json, _) = ok(&["explain", &p, "--json"]);
        let j: serde_json::Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{p}: {e}\n{json}"));
        if j.get("interpreted").is_some() {
            println!("{p}: runs on the reference interpreter, no plan");
            continue;
        }
        let n = j["kernel_count"].as_u64().unwrap_or_else(|| panic!("{p}: no kernel_count\n{json}")) as usize;
        let listed = j["kernels"].as_array().map(Vec::len);
        assert_eq!(listed, Some(n), "{p}: explain --json lists {listed:?} kernels, counts {n}");
        let (explained, _) = ok(&["explain", &p]);
        assert_eq!(text_count(&explained), n, "{p}: explain's text and --json disagree:\n{explained}");

        let sizes = small_sizes(&program);
        let sizes: Vec<&str> = sizes.iter().map(String::as_str).collect();
        let mut run_args = vec!["run", &p, "--backend", "cpu", "--random-inputs", "1", "--timings"];
        run_args.extend(&sizes);
        let (_, stderr) = ok(&run_args);
        let plan =
            stderr.lines().find_map(|l| l.strip_prefix("plan: ")).unwrap_or_else(|| panic!("{p}: {stderr}"));
        let (kernels, digest) = plan.split_once(" kernels, digest ").unwrap_or_else(|| panic!("{plan}"));
        assert_eq!(
            kernels.parse::<usize>().ok(),
            Some(n),
            "{p}: run's plan has {kernels} kernels, explain's {n}"
        );

        let mut bench_args = vec!["bench", &p, "--random-inputs", "1", "--json", "--min-time-ms", "1"];
        bench_args.extend(&sizes);
        let (bench, _) = ok(&bench_args);
        let b: serde_json::Value =
            serde_json::from_str(&bench).unwrap_or_else(|e| panic!("{p}: bench --json: {e}\n{bench}"));
        let optimised = &b["plans"][0];
        assert_eq!(optimised["plan"], "optimised", "{p}: {bench}");
        assert_eq!(optimised["kernels"].as_u64(), Some(n as u64), "{p}: bench counts otherwise: {bench}");
        assert_eq!(optimised["digest"].as_str(), Some(digest), "{p}: bench timed another plan than run ran");
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} examples compared");
}

#[test]
fn run_saves_the_random_inputs_it_ran_on() {
    let dir = scratch("cli_snags_save_inputs");
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/saxpy.eqf");
    let p = program.display().to_string();
    let saved = dir.join("in");
    let (printed, stderr) = ok(&[
        "run",
        &p,
        "--random-inputs",
        "7",
        "--size",
        "n=5",
        "--save-inputs",
        &saved.display().to_string(),
    ]);
    let checked =
        eqfuse::check(&eqfuse::parse(&std::fs::read_to_string(&program).expect("read")).expect("parse"))
            .expect("check");
    for name in checked.inputs.keys() {
        let file = saved.join(format!("{name}.npy"));
        assert!(file.is_file(), "{} missing; stderr: {stderr}", file.display());
    }
    // reading them back gives the same outputs
    let (again, _) = ok(&["run", &p, "--inputs", &saved.display().to_string()]);
    assert_eq!(printed, again);
    // without --random-inputs the flag is refused
    let out = eqfuse(&["run", &p, "--inputs", &saved.display().to_string(), "--save-inputs", "x"]);
    assert!(!out.status.success());
}

#[test]
fn bench_program_dumps_its_inputs_as_run_saves_them() {
    let dir = scratch("cli_snags_dump_inputs");
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/saxpy.eqf").display().to_string();
    let (dumped, saved) = (dir.join("dumped"), dir.join("saved"));
    ok(&[
        "bench",
        &p,
        "--random-inputs",
        "3",
        "--size",
        "n=9",
        "--dump-inputs",
        &dumped.display().to_string(),
    ]);
    ok(&["run", &p, "--random-inputs", "3", "--size", "n=9", "--save-inputs", &saved.display().to_string()]);
    let mut names: Vec<String> = std::fs::read_dir(&saved)
        .expect("saved")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for n in &names {
        let (a, b) = (std::fs::read(dumped.join(n)), std::fs::read(saved.join(n)));
        assert!(
            a.is_ok() && a.ok() == b.ok(),
            "{n} differs between bench --dump-inputs and run --save-inputs"
        );
    }
}

#[test]
fn bench_program_json_is_json() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/dotp.eqf").display().to_string();
    let (out, _) =
        ok(&["bench", &p, "--random-inputs", "1", "--size", "n=100", "--json", "--min-time-ms", "1"]);
    let j: serde_json::Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"));
    let plans = j["plans"].as_array().expect("plans");
    assert_eq!(plans.len(), 2, "{out}");
    assert!(plans[0]["median_ms"].as_f64().is_some_and(|t| t >= 0.0), "{out}");
    assert_eq!(plans[1]["plan"], "unfused");
}

#[test]
fn run_prints_as_numpy_does() {
    // NumPy's threshold: up to 1000 elements whole, above it the first and last 3
    let dir = scratch("cli_snags_print");
    let prog = dir.join("iota.eqf");
    std::fs::write(&prog, "input n : i64\noutput y = iota n\n").expect("write");
    let p = prog.display().to_string();
    for (n, whole) in [(1000i64, true), (1001, false)] {
        let sub = dir.join(format!("in{n}"));
        let mut arrays = indexmap::IndexMap::new();
        arrays.insert("n".to_string(), eqfuse::Value::from(ndarray::arr0(n).into_dyn()));
        eqfuse::files::write_outputs(&sub, &arrays).expect("write n");
        let (out, _) = ok(&["run", &p, "--inputs", &sub.display().to_string()]);
        assert_eq!(out.contains("..."), !whole, "n = {n}: {out}");
        let shown = out.matches(", ").count();
        assert_eq!(shown, if whole { 999 } else { 6 }, "n = {n}: {out}");
    }
}
