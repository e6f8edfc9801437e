//! The `eqfuse` binary: exit statuses, the `error[E-CODE]` line, rendered snippets, and
//! hostile program text that must produce an error, never a crash.

mod common;

use common::scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn eqfuse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_eqfuse")).args(args).output().expect("start eqfuse")
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn case(name: &str) -> PathBuf {
    root().join("tests/conformance").join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts status 1 and a first stderr line `error[CODE]: ...`; returns stderr.
fn assert_fails(out: &Output, code: &str) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "status {:?}, stderr: {err}", out.status.code());
    let first = err.lines().next().unwrap_or("");
    assert!(first.starts_with(&format!("error[{code}]: ")), "first stderr line: {first}\n{err}");
    err
}

fn write(dir: &Path, name: &str, contents: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, contents).expect("write");
    p.display().to_string()
}

#[test]
fn check_prints_the_signature() {
    let prog = case("blackscholes").join("program.eqf");
    let out = eqfuse(&["check", prog.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("input  s : f32[n]"), "{s}");
    assert!(s.contains("output call : f32[n]"), "{s}");
    assert!(s.contains("output put : f32[n]"), "{s}");
}

#[test]
fn parse_errors_show_line_column_and_snippet() {
    let prog = case("err_parse").join("program.eqf");
    let out = eqfuse(&["check", prog.to_str().expect("utf8")]);
    let err = assert_fails(&out, "E-PARSE");
    assert!(err.contains("program.eqf:2:"), "no file:line in\n{err}");
    assert!(err.contains("map (\\x -> x + ) xs"), "no snippet in\n{err}");
}

#[test]
fn type_errors_are_e_type() {
    let prog = case("err_type").join("program.eqf");
    assert_fails(&eqfuse(&["check", prog.to_str().expect("utf8")]), "E-TYPE");
}

#[test]
fn run_prints_a_summary_without_out() {
    let c = case("dotp");
    let out = eqfuse(&[
        "run",
        c.join("program.eqf").to_str().expect("utf8"),
        "--inputs",
        c.join("inputs").to_str().expect("utf8"),
        "--backend",
        "reference",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("dot = 9.94"), "{}", text(&out.stdout));
}

#[test]
fn run_takes_single_inputs_and_writes_npy() {
    let c = case("saxpy");
    let dir = scratch("cli-single-inputs");
    let pair = |n: &str| format!("{n}={}", c.join("inputs").join(format!("{n}.npy")).display());
    let out = eqfuse(&[
        "run",
        c.join("program.eqf").to_str().expect("utf8"),
        "--input",
        &pair("alpha"),
        "--input",
        &pair("xs"),
        "--input",
        &pair("ys"),
        "--out",
        dir.to_str().expect("utf8"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got = eqfuse::ir::npy::read_value(&dir.join("zs.npy")).expect("zs.npy");
    let want = eqfuse::ir::npy::read_value(&c.join("expected/zs.npy")).expect("expected");
    assert_eq!(got.shape(), want.shape());
}

#[test]
fn missing_and_unknown_inputs_are_e_input() {
    let c = case("saxpy");
    let prog = c.join("program.eqf");
    let xs = format!("xs={}", c.join("inputs/xs.npy").display());
    assert_fails(&eqfuse(&["run", prog.to_str().expect("utf8"), "--input", &xs]), "E-INPUT");
    let all = c.join("inputs");
    let extra = format!("bogus={}", c.join("inputs/xs.npy").display());
    let out = eqfuse(&[
        "run",
        prog.to_str().expect("utf8"),
        "--inputs",
        all.to_str().expect("utf8"),
        "--input",
        &extra,
    ]);
    assert_fails(&out, "E-INPUT");
    let missing_file = "xs=/nonexistent/xs.npy";
    assert_fails(&eqfuse(&["run", prog.to_str().expect("utf8"), "--input", missing_file]), "E-INPUT");
}

#[test]
fn unavailable_backends_are_e_device() {
    if eqfuse_exec_cuda::available() {
        return; // a machine with a GPU: `--backend cuda` runs (tests/conformance_cpu.rs's twin on the GPU)
    }
    let c = case("dotp");
    let out = eqfuse(&[
        "run",
        c.join("program.eqf").to_str().expect("utf8"),
        "--inputs",
        c.join("inputs").to_str().expect("utf8"),
        "--backend",
        "cuda",
    ]);
    assert_fails(&out, "E-DEVICE");
}

#[test]
fn unreadable_or_non_utf8_programs_fail_cleanly() {
    assert_fails(&eqfuse(&["check", "/nonexistent/program.eqf"]), "E-INPUT");
    let dir = scratch("cli-non-utf8");
    let p = write(&dir, "bad.eqf", b"input xs : f32[n]\noutput y = \xff\xfe xs\n");
    assert_fails(&eqfuse(&["check", &p]), "E-PARSE");
    let p = write(&dir, "empty.eqf", b"");
    let out = eqfuse(&["check", &p]);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1), "{out:?}");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let dir = scratch("cli-deep");
    let n = 200_000;
    let cases = [
        ("parens.eqf", format!("input x : f32\noutput y = {}x{}\n", "(".repeat(n), ")".repeat(n))),
        ("negs.eqf", format!("input x : f32\noutput y = {}x\n", "-".repeat(n))),
        ("sum.eqf", format!("input x : f32\noutput y = x{}\n", " + x".repeat(n))),
        ("lets.eqf", format!("input x : f32\noutput y = {}x\n", "let a = x in ".repeat(n))),
        ("lambdas.eqf", format!("input x : f32[n]\noutput y = map {}x) x\n", "(\\a -> ".repeat(n))),
    ];
    for (name, src) in cases {
        let p = write(&dir, name, src.as_bytes());
        let out = eqfuse(&["check", &p]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: status {:?}: {err}", out.status.code());
        assert!(err.starts_with("error[E-LIMIT]") || err.starts_with("error[E-PARSE]"), "{name}: {err}");
    }
}

#[test]
fn usage_errors_do_not_pretend_to_run() {
    let out = eqfuse(&["run"]);
    assert_eq!(out.status.code(), Some(2), "clap's usage error status");
    let out = eqfuse(&["--version"]);
    assert!(out.status.success());
}

#[test]
fn demo_runs_and_checks_its_results() {
    let out = eqfuse(&["demo"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.matches("matches the reference interpreter").count() >= 5, "{s}");
    assert!(s.contains("fused ") && s.contains("unfused "), "{s}");
}

#[test]
fn every_example_program_runs_with_its_case_inputs() {
    // README: every `examples/NAME.eqf` runs with `tests/conformance/NAME/inputs`.
    let mut ran = 0;
    for entry in std::fs::read_dir(root().join("examples")).expect("examples/") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("eqf") {
            continue;
        }
        let name = path.file_stem().and_then(|s| s.to_str()).expect("name");
        let inputs = case(name).join("inputs");
        assert!(inputs.is_dir(), "examples/{name}.eqf has no tests/conformance/{name}/inputs");
        let out = eqfuse(&["run", path.to_str().expect("utf8"), "--inputs", inputs.to_str().expect("utf8")]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} example programs");
}

#[test]
fn explain_json_is_one_object() {
    let prog = case("nbody").join("program.eqf");
    let out = eqfuse(&["explain", "--json", prog.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(j["stop_reason"], "saturated");
    assert_eq!(j["kernels"].as_array().map(Vec::len), Some(1));
    assert_eq!(j["kernels"][0]["writes"], serde_json::json!(["ax", "ay", "az"]));
    assert_eq!(j["materialized"], serde_json::json!([]));
    assert_eq!(j["unfused"]["kernels"], 13);
}

#[test]
fn explain_text_and_its_options() {
    let prog = case("map_chain").join("program.eqf");
    let p = prog.to_str().expect("utf8");
    let out = eqfuse(&["explain", p]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("kernels: 1 (unfused: 4)"), "{s}");
    // no fusion, and no fusion budget: the unfused plan
    for args in [vec!["explain", "--no-opt", p], vec!["explain", "--fuse-gas", "0", p]] {
        let out = eqfuse(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("kernels: 4 (unfused: 4)"), "{}", text(&out.stdout));
    }
    let out = eqfuse(&["explain", "--iter-limit", "1", p]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("iteration limit"), "{}", text(&out.stdout));
    assert_fails(&eqfuse(&["explain", "--node-limit", "0", p]), "E-LIMIT");
    let bad = case("err_type").join("program.eqf");
    assert_fails(&eqfuse(&["explain", bad.to_str().expect("utf8")]), "E-TYPE");
}

#[test]
fn explain_draws_the_plan_and_takes_the_cost_model_options() {
    let prog = case("softmax_rows").join("program.eqf");
    let p = prog.to_str().expect("utf8");
    let dir = std::env::temp_dir().join(format!("eqfuse-dot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let dot = dir.join("plan.dot");
    let out = eqfuse(&["explain", p, "--dot", dot.to_str().expect("utf8")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let d = std::fs::read_to_string(&dot).expect("the DOT file");
    assert!(d.starts_with("digraph"), "{d}");
    assert!(d.contains("reduce"), "{d}");
    // per-kernel predicted times, the cost model, the plan itself
    let s = text(&out.stdout);
    assert!(s.contains("cost model: "), "{s}");
    assert!(s.contains("; predicted "), "{s}");
    assert!(s.contains("plan:\n"), "{s}");
    // the GPU parameter set, the exhaustive search and the sizes all run
    for extra in [vec!["--backend", "cuda"], vec!["--exact"], vec!["--size", "r=4096", "--size", "c=64"]] {
        let mut args = vec!["explain", "--json", p];
        args.extend(extra.iter().copied());
        let out = eqfuse(&args);
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert!(j["predicted_s"].as_f64().is_some_and(|x| x > 0.0), "{extra:?}: {j}");
        assert!(j["kernels"][0]["predicted_s"].as_f64().is_some(), "{extra:?}: {j}");
    }
    let cuda = eqfuse(&["explain", p, "--backend", "cuda"]);
    assert!(text(&cuda.stdout).contains("cost model: gpu"), "{}", text(&cuda.stdout));
    // a DOT file that cannot be written is an error, not a panic
    let bad = dir.join("no/such/dir/plan.dot");
    assert_fails(&eqfuse(&["explain", p, "--dot", bad.to_str().expect("utf8")]), "E-INPUT");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_prints_the_designed_json_and_checks_its_results() {
    let out = eqfuse(&["bench", "--filter", "saxpy", "--scale", "0.001", "--min-time-ms", "1", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON list");
    let list = j.as_array().expect("a list");
    assert_eq!(list.len(), 1);
    let m = &list[0];
    assert_eq!(m["program"], "saxpy");
    assert_eq!(m["backend"], "cpu");
    for k in ["fused_s", "unfused_s", "handwritten_s", "copy_s"] {
        assert!(m[k].as_f64().is_some_and(|x| x.is_finite() && x >= 0.0), "{k}: {m}");
    }
    assert!(m["elements"].as_u64().is_some_and(|e| e > 1000), "{m}");
    // every program runs at a small scale (the plan is checked against the hand-written loop)
    let all = eqfuse(&["bench", "--scale", "0.0005", "--min-time-ms", "1"]);
    assert!(all.status.success(), "{}", text(&all.stderr));
    assert!(text(&all.stdout).lines().count() >= 14, "{}", text(&all.stdout));
    assert_fails(&eqfuse(&["bench", "--filter", "no-such-program"]), "E-INPUT");
    assert_fails(&eqfuse(&["bench", "--backend", "cuda"]), "E-DEVICE");
}

#[test]
fn bench_dumps_its_inputs_for_run() {
    let dir = scratch("bench-dump-inputs");
    let d = dir.to_str().expect("utf8");
    let out = eqfuse(&["bench", "--filter", "saxpy", "--scale", "0.001", "--dump-inputs", d]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for name in ["alpha", "xs", "ys"] {
        assert!(dir.join("saxpy").join(format!("{name}.npy")).is_file(), "{}", text(&out.stdout));
    }
    // what was written is what `run` reads
    let prog = case("saxpy").join("program.eqf");
    let inputs = dir.join("saxpy");
    let run = eqfuse(&["run", prog.to_str().expect("utf8"), "--inputs", inputs.to_str().expect("utf8")]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(text(&run.stdout).contains("zs"), "{}", text(&run.stdout));
}

#[test]
fn explain_writes_each_kernels_cuda_source() {
    let prog = case("softmax_rows").join("program.eqf");
    let dir = std::env::temp_dir().join(format!("eqfuse-cuda-src-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = eqfuse(&[
        "explain",
        prog.to_str().expect("utf8"),
        "--backend",
        "cuda",
        "--cuda-source",
        dir.to_str().expect("utf8"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("the folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // each kernel, then the row block they form as one kernel
    assert_eq!(names, ["k0_reduce.cu", "k0_rowblock.cu", "k1_reduce.cu", "k2_generate.cu"]);
    let k1 = std::fs::read_to_string(dir.join("k1_reduce.cu")).expect("source");
    assert!(k1.contains("__global__"), "{k1}");
    let block = std::fs::read_to_string(dir.join("k0_rowblock.cu")).expect("source");
    assert!(block.contains("eq_k0_rowblock") && block.contains("phase 2: k2"), "{block}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `eqfuse bench PROGRAMS... EXTRA...` on small random inputs (`n = 5000`), timed briefly.
fn bench_small(programs: &[&str], extra: &[&str]) -> Output {
    let mut args = vec!["bench"];
    args.extend_from_slice(programs);
    args.extend_from_slice(&["--random-inputs", "1", "--size", "n=5000", "--min-time-ms", "1"]);
    args.extend_from_slice(extra);
    eqfuse(&args)
}

#[test]
fn bench_times_a_program_of_ones_own() {
    let prog = root().join("examples/dotp.eqf");
    let out = bench_small(&[prog.to_str().expect("utf-8 path")], &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{}", stdout, text(&out.stderr));
    assert!(stdout.contains("optimised in"), "{stdout}");
    let rows: Vec<&str> =
        stdout.lines().filter(|l| l.starts_with("optimised ") || l.starts_with("unfused ")).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    // dotp's optimised plan is one kernel, run as native code
    let fields: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(&fields[1..3], ["1", "1"], "{stdout}");
    // without inputs it says what to give
    let out = eqfuse(&["bench", prog.to_str().expect("utf-8 path")]);
    assert_fails(&out, "E-INPUT");
}

#[test]
fn bench_times_several_phrasings_interleaved() {
    let set = root().join("tests/phrasings/maps_split_merged");
    let progs: Vec<String> = ["a.eqf", "b.eqf", "c.eqf"]
        .iter()
        .map(|m| set.join(m).to_str().expect("utf-8 path").to_string())
        .collect();
    let names: Vec<&str> = progs.iter().map(String::as_str).collect();
    let run = |extra: &[&str]| bench_small(&names, extra);
    let out = run(&[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}\n{}", stdout, text(&out.stderr));
    assert!(stdout.contains("timed interleaved"), "{stdout}");
    // one row per program, each naming it, the fastest at 1.00x
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("optimised ")).collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    for (row, prog) in rows.iter().zip(&progs) {
        assert!(row.ends_with(prog.as_str()), "{row}");
    }
    assert!(rows.iter().any(|r| r.contains(" 1.00x ")), "{stdout}");
    // whether the programs share a plan: one program twice does, another computation not
    let dotp = root().join("examples/dotp.eqf");
    for (second, want) in [
        (progs[0].as_str(), "one plan for all 2 programs"),
        (dotp.to_str().expect("utf-8"), "2 distinct plans"),
    ] {
        let out = bench_small(&[&progs[0], second], &[]);
        let stdout = text(&out.stdout);
        assert!(out.status.success() && stdout.contains(want), "{stdout}\n{}", text(&out.stderr));
    }
    // JSON: a list of one object per program, as `bench PROGRAM --json` prints it
    let out = run(&["--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let list = json.as_array().expect("a list");
    assert_eq!(list.len(), 3, "{json}");
    for (obj, prog) in list.iter().zip(&progs) {
        assert_eq!(obj["program"], serde_json::json!(prog), "{obj}");
        assert_eq!(obj["interleaved"], serde_json::json!(true), "{obj}");
        let plan = &obj["plans"][0];
        assert_eq!(plan["plan"], "optimised", "{obj}");
        let (lo, med, hi) = (plan["min_ms"].as_f64(), plan["median_ms"].as_f64(), plan["max_ms"].as_f64());
        let (lo, med, hi) = (lo.expect("min"), med.expect("median"), hi.expect("max"));
        assert!(0.0 < lo && lo <= med && med <= hi, "{obj}");
    }
    // inputs per program cannot be dumped for several at once; a bad member fails the call
    assert_fails(&run(&["--dump-inputs", "/tmp/eqfuse-never-written"]), "E-INPUT");
    let out = eqfuse(&["bench", &progs[0], "no-such-file.eqf", "--random-inputs", "1"]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
}

#[test]
fn run_timings_split_the_stages() {
    let prog = root().join("examples/dotp.eqf");
    let cache = std::env::temp_dir().join(format!("eqfuse-timings-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let run = |backend: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
            .args(["run", prog.to_str().expect("utf-8 path"), "--random-inputs", "1", "--size", "n=5000"])
            .args(["--timings", "--backend", backend])
            .env("EQFUSE_CACHE_DIR", &cache)
            .output()
            .expect("eqfuse runs");
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stderr)
    };
    let stage = |table: &str, name: &str| -> String {
        let line = table.lines().find(|l| l.trim_start().starts_with(name));
        line.unwrap_or_else(|| panic!("no `{name}` in\n{table}")).to_string()
    };
    let cold = run("cpu");
    for name in ["parse and check", "read inputs", "optimise", "compile", "execute", "write outputs", "total"]
    {
        assert!(stage(&cold, name).contains(" ms"), "{name}:\n{cold}");
    }
    assert!(!stage(&cold, "compile").contains("cache"), "{cold}");
    // a second process finds the compiled plan on disk
    let warm = run("cpu");
    assert!(stage(&warm, "compile").contains("(from the cache)"), "{warm}");
    // the reference interpreter neither optimises nor compiles
    let reference = run("reference");
    assert!(stage(&reference, "compile").trim_end().ends_with('-'), "{reference}");
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn explain_compile_reports_native_kernels_and_compile_time() {
    let prog = root().join("examples/dotp.eqf");
    let out = eqfuse(&["explain", prog.to_str().expect("utf-8 path"), "--compile"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let line = stdout.lines().find(|l| l.starts_with("native code (CPU): "));
    let line = line.unwrap_or_else(|| panic!("no native code line in\n{stdout}"));
    assert!(line.contains("1 of 1 kernels") && line.contains(" ms"), "{line}");
    let out = eqfuse(&["explain", prog.to_str().expect("utf-8 path"), "--compile", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(json["native"]["kernels"], serde_json::json!([0]), "{json}");
    assert!(json["native"]["compile_ms"].is_number() && json["native"]["cached"].is_boolean(), "{json}");
    // without --compile, nothing is compiled and the object has no `native`
    let out = eqfuse(&["explain", prog.to_str().expect("utf-8 path"), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(json.get("native").is_none(), "{json}");
}

/// What `build.rs` records: the checkout's commit, or `unknown` outside one.
fn expected_commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| text(&o.stdout).trim().to_string())
    };
    let inside = git(&["rev-parse", "--show-toplevel"])
        .is_some_and(|top| std::fs::canonicalize(top).ok() == std::fs::canonicalize(root()).ok());
    match std::env::var("EQFUSE_COMMIT") {
        Ok(c) if !c.is_empty() => c,
        _ if inside => git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into()),
        _ => "unknown".into(),
    }
}

#[test]
fn version_names_the_commit() {
    let out = eqfuse(&["--version"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = format!("eqfuse {} (commit {})\n", env!("CARGO_PKG_VERSION"), expected_commit());
    assert_eq!(text(&out.stdout), want);
}

/// A reader that goes away early (`eqfuse explain big.eqf | head -1`) ends the command
/// quietly: no panic, no error line, and no status of failure other than the pipe's signal.
#[test]
fn a_closed_output_pipe_is_not_an_error() {
    use std::io::Read;
    use std::process::Stdio;
    let dir = scratch("closed_pipe");
    // a plan long enough that `explain` writes far more than a pipe holds
    let mut src = String::from("input a0 : f32[n]\n");
    for k in 1..=3000 {
        src.push_str(&format!("let a{k} = map (\\x -> x + 1.0) a{}\n", k - 1));
    }
    src.push_str("output out = a3000\n");
    let prog = write(&dir, "long.eqf", src.as_bytes());
    let mut child = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(["explain", "--no-opt", &prog])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start eqfuse");
    let mut first = [0u8; 64];
    let mut stdout = child.stdout.take().expect("stdout");
    stdout.read_exact(&mut first).expect("the first bytes of the explanation");
    drop(stdout);
    let out = child.wait_with_output().expect("wait for eqfuse");
    let err = text(&out.stderr);
    assert!(err.is_empty(), "stderr: {err}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "status {:?}",
            out.status
        );
    }
}
