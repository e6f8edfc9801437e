//! C compilation under the command's limits, through the binary: `--time-limit-ms` covers
//! compiling native code (a compiler still running at the deadline is stopped, the kernels
//! run on the interpreter), and `--timeout` leaves no compiler running and no temporary file
//! behind. A fake compiler (`$CC`, a shell script that answers `--version` and otherwise
//! sleeps, with a child of its own) stands for a slow one.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A fresh directory whose name no other process has.
fn fresh(what: &str) -> PathBuf {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let d = std::env::temp_dir().join(format!("eqfuse-{what}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&d).expect("a temporary directory");
    d
}

/// A compiler that answers `--version`, and otherwise starts a copy of itself and sleeps:
/// both copies have the script's (unique) path on their command line.
fn slow_cc(home: &Path) -> PathBuf {
    let script = home.join("slow-cc.sh");
    let text = "#!/bin/sh\nif [ \"$1\" = --version ]; then echo slow-cc 1.0; exit 0; fi\n\
                if [ \"$1\" != --child ]; then \"$0\" --child & fi\nsleep 30\n";
    std::fs::write(&script, text).expect("the script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    script
}

/// Live (not zombie) processes whose command line contains `marker`.
fn alive_with(marker: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let p = e.path();
        let Ok(cmd) = std::fs::read(p.join("cmdline")) else { continue };
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        let zombie = stat.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if !zombie && cmd.contains(marker) {
            out.push(format!("{}: {cmd}", p.display()));
        }
    }
    out
}

/// Files under `dir` whose names end in `.c`, `.o`, `.err` or `.so` (a compile's files).
fn compile_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if [".c", ".o", ".err", ".so"].iter().any(|x| p.to_string_lossy().ends_with(x)) {
                out.push(p);
            }
        }
    }
    out
}

fn program(home: &Path, text: &str) -> String {
    let p = home.join("program.eqf");
    std::fs::write(&p, text).expect("the program");
    p.display().to_string()
}

fn eqfuse(args: &[&str], cc: &Path, cache: &Path) -> (Output, Duration) {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(args)
        .env("CC", cc)
        .env("EQFUSE_CACHE_DIR", cache)
        .output()
        .expect("start eqfuse");
    (out, t0.elapsed())
}

#[test]
fn the_timeout_kills_the_compiler_and_removes_its_files() {
    let home = fresh("timeout-cc");
    let cache = home.join("cache");
    let cc = slow_cc(&home);
    let prog = program(&home, "input x : f64[n]\noutput y = map (\\v -> v * 2.0 + 1.0) x\n");
    let (out, took) = eqfuse(&["run", &prog, "--random-inputs", "1", "--timeout", "1"], &cc, &cache);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("timed out"), "{err}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // a moment for the kills to land
    let marker = cc.display().to_string();
    let t0 = Instant::now();
    while !alive_with(&marker).is_empty() && t0.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(alive_with(&marker), Vec::<String>::new(), "compilers left running");
    assert_eq!(compile_files(&cache), Vec::<PathBuf>::new(), "files left behind");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn the_time_limit_stops_a_slow_compiler_and_the_run_goes_on() {
    let home = fresh("limit-cc");
    let cache = home.join("cache");
    let cc = slow_cc(&home);
    let prog = program(&home, "output y = reduce (+) 0 (map (\\v -> v * 2) (iota 10))\n");
    let (out, took) = eqfuse(&["run", &prog, "--time-limit-ms", "300"], &cc, &cache);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("90"), "{:?}", out);
    assert!(err.contains("--time-limit-ms"), "{err}");
    // 300 ms and the start of the process; the old code waited the 30 s the compiler slept
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(alive_with(&cc.display().to_string()), Vec::<String>::new(), "compilers left running");
    assert_eq!(compile_files(&cache), Vec::<PathBuf>::new(), "files left behind");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_large_program_is_bounded_by_the_time_limit_with_the_real_compiler() {
    // 1000 distinct outputs: 1.2 MB of C, which gcc took over a minute on at -O3 in one
    // translation unit, whatever the time limit
    let home = fresh("limit-wide");
    let cache = home.join("cache");
    let mut text = String::from("input x : f32[n]\n");
    for k in 0..1000 {
        text.push_str(&format!("output o{k} = map (\\v -> v * {k}.0 + 1.0) x\n"));
    }
    let prog = program(&home, &text);
    let cc = PathBuf::from(std::env::var("CC").ok().filter(|c| !c.trim().is_empty()).unwrap_or("cc".into()));
    let args = ["run", &prog, "--random-inputs", "1", "--size", "n=100", "--time-limit-ms", "200"];
    let (out, took) = eqfuse(&args, &cc, &cache);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // generous for a loaded machine: today about 0.6 s in all
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert_eq!(compile_files(&cache), Vec::<PathBuf>::new(), "files left behind");
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn ctrl_c_kills_the_compiler_and_removes_its_files() {
    // the compiler runs in a process group of its own, which the terminal's Ctrl-C does not
    // reach: the command must kill it itself before it exits
    let home = fresh("sigint-cc");
    let cache = home.join("cache");
    let cc = slow_cc(&home);
    let prog = program(&home, "input x : f64[n]\noutput y = map (\\v -> v * 3.0 + 1.0) x\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(["run", &prog, "--random-inputs", "1"])
        .env("CC", &cc)
        .env("EQFUSE_CACHE_DIR", &cache)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start eqfuse");
    // wait until the fake compiler runs (it sleeps 30 s)
    let marker = cc.display().to_string();
    let t0 = Instant::now();
    while alive_with(&format!("{marker} --child")).is_empty() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive_with(&marker).is_empty(), "the compiler never started");
    let pid = i32::try_from(child.id()).expect("a pid");
    let sent = Command::new("kill").args(["-INT", &pid.to_string()]).status().expect("run kill");
    assert!(sent.success());
    let t1 = Instant::now();
    let status = child.wait().expect("wait for eqfuse");
    assert!(t1.elapsed() < Duration::from_secs(5), "{:?}", t1.elapsed());
    assert_eq!(status.code(), Some(128 + 2), "{status:?}");
    let t2 = Instant::now();
    while !alive_with(&marker).is_empty() && t2.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(alive_with(&marker), Vec::<String>::new(), "compilers left running");
    assert_eq!(compile_files(&cache), Vec::<PathBuf>::new(), "files left behind");
    let _ = std::fs::remove_dir_all(&home);
}
