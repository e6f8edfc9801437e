//! `eqfuse::calibrate`: where the calibration lives, loading it (with fallbacks), saving it,
//! measuring, and `eqfuse calibrate --no-save --json`.
#![allow(clippy::unwrap_used)]

use eqfuse::calibrate::{load_cpu, load_gpu, measure, path, path_for, save, save_for, Device};
use eqfuse::CostParams;
use std::path::PathBuf;
use std::process::Command;

fn fields(p: &CostParams) -> [(&'static str, f64); 17] {
    [
        ("bandwidth", p.bandwidth),
        ("launch", p.launch),
        ("flop", p.flop),
        ("div", p.div),
        ("sqrt", p.sqrt),
        ("transcendental", p.transcendental),
        ("int", p.int),
        ("compare", p.compare),
        ("gather", p.gather),
        ("code", p.code),
        ("gemm", p.gemm),
        ("cache", p.cache),
        ("transcendental_f64", p.transcendental_f64),
        ("compact", p.compact),
        ("scan", p.scan),
        ("strided", p.strided),
        ("scatter", p.scatter),
    ]
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("eqfuse-calibrate-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Every check that depends on environment variables, in one test (they are process-wide).
#[test]
fn path_load_and_save_follow_the_environment() {
    let saved_xdg = std::env::var_os("XDG_CONFIG_HOME");
    let saved_home = std::env::var_os("HOME");
    let dir = scratch("env");
    let file = dir.join("eqfuse").join("cost-cpu.toml");

    // the place: XDG_CONFIG_HOME first, then HOME/.config, else none
    std::env::set_var("XDG_CONFIG_HOME", &dir);
    assert_eq!(path(), Some(file.clone()));
    std::env::remove_var("XDG_CONFIG_HOME");
    std::env::set_var("HOME", "/somewhere/home");
    assert_eq!(path(), Some(PathBuf::from("/somewhere/home/.config/eqfuse/cost-cpu.toml")));
    std::env::remove_var("HOME");
    assert_eq!(path(), None);
    assert_eq!(load_cpu(), CostParams::cpu_default());
    let err = save(&CostParams::cpu_default()).unwrap_err();
    assert_eq!(err.code, eqfuse::Code::Input, "{err}");

    std::env::set_var("XDG_CONFIG_HOME", &dir);
    // no file: the defaults
    assert!(!file.exists());
    assert_eq!(load_cpu(), CostParams::cpu_default());

    // malformed files: the defaults, no panic
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    for junk in [
        "this is not toml = = [",
        "name = \"x\"\nbandwidth = 1.0\n", // fields missing
        "name = 3\nbandwidth = \"fast\"\n",
        "",
    ] {
        std::fs::write(&file, junk).unwrap();
        assert_eq!(load_cpu(), CostParams::cpu_default(), "for {junk:?}");
    }
    std::fs::write(&file, [0xff, 0xfe, 0x00, 0x80]).unwrap();
    assert_eq!(load_cpu(), CostParams::cpu_default(), "binary junk");

    // save, then load: the same parameters
    let p = CostParams {
        name: "calibrated on test-host 2024-01-01".into(),
        bandwidth: 1.234_567_890_123e10,
        launch: 2.5e-5,
        flop: 7.7e9,
        div: 1.1e9,
        sqrt: 1.3e9,
        transcendental: 3.3e8,
        int: 6.6e9,
        compare: 5.5e9,
        gather: 1.9e8,
        code: 2e-8,
        gemm: 9.5e10,
        cache: 1048576.0,
        transcendental_f64: 4.4e7,
        compact: 8.8e8,
        scan: 7.1e8,
        strided: 1.6e9,
        scatter: 1.2e9,
    };
    assert_eq!(save(&p).unwrap(), file);
    assert!(std::fs::read_to_string(&file).unwrap().contains("bandwidth"));
    assert_eq!(load_cpu(), p);

    // a file saved before the model had its access-pattern terms (and f64's transcendental
    // rate) loads, with the defaults for those
    let older: String = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter(|l| {
            !["transcendental_f64", "compact", "scan", "strided", "scatter"].iter().any(|k| l.starts_with(k))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, older).unwrap();
    let d = CostParams::cpu_default();
    let expected = CostParams {
        transcendental_f64: d.transcendental_f64,
        compact: d.compact,
        scan: d.scan,
        strided: d.strided,
        scatter: d.scatter,
        ..p.clone()
    };
    assert_eq!(load_cpu(), expected);

    // a saved value that is not positive falls back to its default, the rest are kept
    let bad = CostParams { launch: 0.0, flop: -3.0, cache: f64::NAN, ..p.clone() };
    save(&bad).unwrap();
    let loaded = load_cpu();
    assert_eq!(loaded.launch, CostParams::cpu_default().launch);
    assert_eq!(loaded.flop, CostParams::cpu_default().flop);
    assert_eq!(loaded.cache, CostParams::cpu_default().cache);
    assert_eq!(loaded.bandwidth, p.bandwidth);
    // a file saved before the cache was measured: its default
    let old = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with("cache"))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&file, old).unwrap();
    assert_eq!(load_cpu().cache, CostParams::cpu_default().cache);

    // the GPU's parameters: beside the CPU's, the H100-class defaults when none is saved,
    // and what is saved once it is (its cache of 0 kept: row blocks run phase by phase)
    let gpu_file = dir.join("eqfuse").join("cost-cuda.toml");
    assert_eq!(path_for(Device::Cuda), Some(gpu_file.clone()));
    assert_eq!(load_gpu(), CostParams::gpu_default());
    let g = CostParams {
        name: "calibrated on test-host (GPU) 2024-01-01".into(),
        bandwidth: 4.0e12,
        ..CostParams::gpu_default()
    };
    assert_eq!(save_for(&g, Device::Cuda).unwrap(), gpu_file);
    assert_eq!(load_gpu(), g);
    assert_eq!(load_gpu().cache, 0.0);
    // the CPU's file is not the GPU's
    assert_ne!(load_cpu().name, g.name);
    // the plans the GPU runs are priced with it: `explain --backend cuda` names it
    let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(["explain", "examples/dotp.eqf", "--backend", "cuda"])
        .env("XDG_CONFIG_HOME", &dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("cost model: {}", g.name)), "{text}");
    let opts = eqfuse::plan_options(eqfuse::Backend::Cuda, Default::default());
    assert_eq!(opts.cost.params, g);
    std::fs::write(&gpu_file, "bandwidth = \"fast\"").unwrap();
    assert_eq!(load_gpu(), CostParams::gpu_default());

    match saved_xdg {
        Some(v) => std::env::set_var("XDG_CONFIG_HOME", v),
        None => std::env::remove_var("XDG_CONFIG_HOME"),
    }
    match saved_home {
        Some(v) => std::env::set_var("HOME", v),
        None => std::env::remove_var("HOME"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn measure_gives_finite_positive_values() {
    let mut lines = Vec::new();
    let t0 = std::time::Instant::now();
    let p = measure(&mut |l| lines.push(l.to_string()));
    let took = t0.elapsed();
    for (name, v) in fields(&p) {
        assert!(v.is_finite() && v > 0.0, "{name} = {v}");
    }
    assert!(p.launch < 0.1, "launch {}", p.launch);
    for (name, v) in fields(&p).into_iter().filter(|(n, _)| !["launch", "code", "cache"].contains(n)) {
        assert!((1e6..=1e14).contains(&v), "{name} = {v}");
    }
    // a core's cache: what the system reports, or the default
    let reported = eqfuse_exec_cpu::private_cache_bytes().map(|b| b as f64);
    assert_eq!(p.cache, reported.unwrap_or(CostParams::cpu_default().cache));
    assert!(p.name.starts_with("calibrated on "), "{}", p.name);
    assert!(!lines.is_empty());
    eprintln!("measure took {took:?}: {p:?}");
}

#[test]
fn cli_calibrate_no_save_json_prints_the_parameters() {
    let dir = scratch("cli");
    let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(["calibrate", "--no-save", "--json"])
        .env("XDG_CONFIG_HOME", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "stderr: {stderr}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let obj = v.as_object().unwrap();
    assert!(obj["name"].as_str().unwrap().starts_with("calibrated on "), "{stdout}");
    for (name, _) in fields(&CostParams::cpu_default()) {
        let x = obj.get(name).and_then(|x| x.as_f64());
        assert!(x.is_some_and(|x| x.is_finite() && x > 0.0), "{name} in {stdout}");
    }
    assert_eq!(obj.len(), 18, "{stdout}");
    // the JSON reads back as the parameters
    let p: CostParams = serde_json::from_str(stdout.trim()).unwrap();
    assert!(p.bandwidth > 0.0);
    // --no-save: nothing written
    assert!(!dir.join("eqfuse").exists());
    assert!(stderr.contains("bandwidth"), "progress on stderr: {stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `calibrate --backend cuda`: on a machine with a GPU, the device's parameters (finite,
/// positive, a row block priced phase by phase), saved beside the CPU's; without one (CI),
/// an `E-DEVICE` error that saves nothing.
#[test]
fn calibrating_the_gpu_measures_it_or_is_a_device_error_that_saves_nothing() {
    let dir = scratch("gpu");
    let out = Command::new(env!("CARGO_BIN_EXE_eqfuse"))
        .args(["calibrate", "--backend", "cuda", "--json"])
        .env("XDG_CONFIG_HOME", &dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if eqfuse_exec_cuda::available() {
        assert!(out.status.success(), "stderr: {stderr}");
        let p: CostParams = serde_json::from_str(stdout.trim()).unwrap();
        for (name, v) in fields(&p).into_iter().filter(|(n, _)| *n != "cache") {
            assert!(v.is_finite() && v > 0.0, "{name} = {v}");
        }
        assert_eq!(p.cache, 0.0);
        assert!(dir.join("eqfuse").join("cost-cuda.toml").exists());
        assert!(!dir.join("eqfuse").join("cost-cpu.toml").exists());
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.starts_with("error[E-DEVICE]: "), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(!dir.join("eqfuse").exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
