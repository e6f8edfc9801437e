//! Every kernel of the optimised and the unfused plan of every conformance program
//! (`tests/conformance`, and the suite `EQFUSE_EXTRA_CONFORMANCE` names when it is set), plus a few programs that
//! reach the skeletons the conformance programs do not, compiles under the real NVRTC for
//! one fixed architecture (`sm_80`, no device needed).
//!
//! NVRTC comes from the `nvidia-cuda-nvrtc-cu12` wheel in CI (`.ci/run` installs it into
//! `.ci/nvrtc` and puts it on `LD_LIBRARY_PATH`); the test also preloads it from there when
//! the variable is not set. With `CI=true` a missing NVRTC fails the test; elsewhere it
//! prints a loud message and passes.
#![allow(clippy::unwrap_used)]

use eqfuse_exec_cuda::nvrtc::{self, Target};
use eqfuse_exec_cuda::{kernel_sources, CudaOptions};
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::Plan;
use eqfuse_optimize::{optimize, OptimizeOptions};
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Whether NVRTC can be used (preloading the CI wheel's copy when it is there).
pub fn nvrtc_ready() -> bool {
    let local = root().join(".ci/nvrtc/nvidia/cuda_nvrtc/lib");
    if local.is_dir() && !nvrtc::available() {
        let _ = nvrtc::preload(&local);
    }
    nvrtc::available()
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// `true` when the test should go on; fails in CI when NVRTC is missing.
fn require_nvrtc() -> bool {
    if nvrtc_ready() {
        return true;
    }
    let msg = "NVRTC could not be loaded: install the `nvidia-cuda-nvrtc-cu12` wheel \
               (`.ci/run` does) or put libnvrtc.so on LD_LIBRARY_PATH";
    assert!(!in_ci(), "CI=true: {msg}");
    eprintln!("\n!!!!!!!!!! SKIPPED: {msg} !!!!!!!!!!\n");
    false
}

/// The optimised and unfused plans of a program (`Err`: it does not check; `None`: it has
/// a form the optimiser does not take yet, run on the reference interpreter).
fn plans(src: &str) -> Result<Option<(Plan, Plan)>, eqfuse_ir::Error> {
    let checked = parse(src).and_then(|p| check(&p))?;
    match optimize(&checked, &OptimizeOptions::default()) {
        Ok(opt) => Ok(Some((opt.plan, opt.unfused_plan))),
        Err(e) if eqfuse_optimize::is_unsupported(&e) => Ok(None),
        Err(e) => panic!("{e}\n{src}"),
    }
}

/// Programs that reach skeletons and operations the conformance programs may not.
const EXTRA: &[(&str, &str)] = &[
    ("scan_rows", "input m : f32[r, c]\noutput s = scan (+) 0 m\noutput e = scan_exclusive max (-inf) m"),
    ("scan_f64_mul", "input xs : f64[n]\noutput p = scan (*) 1 xs"),
    ("scan_ordered", "input xs : i32[n]\noutput p = scan (\\a b -> a + b) 0 xs"),
    ("reduce_ordered", "input m : i64[r, c]\noutput s = reduce (\\a b -> a + b) 0 m\noutput t = reduce (\\a b -> a + b) 0 (map (\\x -> x * 3) (reduce (+) 0 m))"),
    ("reduce_bool", "input xs : f32[n]\noutput all = reduce (&&) true (map (\\x -> x > 0.0) xs)\noutput any = reduce (||) false (map (\\x -> x > 0.0) xs)"),
    ("reduce_minmax", "input xs : f64[n]\noutput lo = reduce min inf xs\noutput hi = reduce max (-inf) xs"),
    ("permute_f64_max", "input xs : f64[n]\ninput idx : i64[n]\noutput h = permute max (fill [8] (-inf)) (\\i -> idx[i]) xs"),
    ("permute_f32_add", "input xs : f32[n]\ninput idx : i64[n]\noutput h = permute (+) (fill [8] 0.0) (\\i -> idx[i]) xs"),
    ("permute_i32_min", "input xs : i32[n]\ninput idx : i64[n]\noutput h = permute min (fill [8] 1000) (\\i -> idx[i]) xs"),
    ("permute_i64_mul", "input xs : i64[n]\ninput idx : i64[n]\noutput h = permute (*) (fill [8] 1) (\\i -> idx[i]) xs"),
    ("permute_bool_or", "input xs : f32[n]\ninput idx : i64[n]\noutput h = permute (||) (fill [8] false) (\\i -> idx[i]) (map (\\x -> x > 0.0) xs)"),
    ("permute_2d", "input xs : f32[n]\ninput idx : i64[n]\noutput h = permute (+) (fill [4, 4] 0.0) (\\i -> (idx[i] % 4, idx[i] / 4)) xs"),
    ("filter_i32", "input xs : i32[n]\noutput k = filter (\\x -> x % 3 == 0) xs"),
    ("filter_bool", "input xs : bool[n]\noutput k = filter (\\x -> x) xs"),
    ("conversions", "input xs : f64[n]\noutput a = map (\\x -> i32 x) xs\noutput b = map (\\x -> i64 (f32 x)) xs\noutput c = map (\\x -> f64 (i32 x) + f64 (i64 x)) xs"),
    ("int_ops", "input a : i32[n]\ninput b : i32[n]\noutput q = map (\\x y -> x / y + x % y - abs x * (-y)) a b\noutput m = map (\\x y -> clamp x (min x y) (max x y)) a b"),
    ("float_ops", "input a : f32[n]\ninput b : f32[n]\noutput r = map (\\x y -> pow x y + atan2 x y + tanh x + floor x + ceil y + round x + tan y + cos x + sin y + x % y) a b"),
    ("lazy_if", "input a : f64[n]\noutput r = map (\\x -> if x > 0.0 && x < 1.0 || x == 2.0 then log x else exp x) a"),
    ("sizes", "input m : f32[r, c]\noutput s = generate [size m 0] (\\i -> m[i, size m 1 - 1])"),
    ("ints_u8", "input a : u8[n]\ninput b : u8[n]\ninput idx : i64[n]\noutput o = map (\\x y -> ((x << y) | (x >> y)) ^ !(x & y)) a b\noutput p = map (\\x -> popcount x + clz x) a\noutput c = map (\\x -> f32 x + f32 (u8 (f64 x * 1.5))) a\noutput h = permute (+) (fill [8] 0) (\\i -> idx[i]) a\noutput s = reduce (+) 0 a"),
    ("ints_i16", "input a : i16[n]\ninput b : i16[n]\ninput idx : i64[n]\noutput o = map (\\x y -> (x * y - x) / (y | 1) + x % (y | 1)) a b\noutput p = map (\\x y -> (x << y) ^ (x >> y) ^ -x) a b\noutput h = permute max (fill [8] 0) (\\i -> idx[i]) a\noutput c = map (\\x -> i8 x + i8 (f32 x)) a"),
    ("ints_u32", "input a : u32[n]\ninput b : u32[n]\ninput idx : i64[n]\noutput o = map (\\x y -> (x / (y | 1)) ^ (x << y) ^ (x >> y)) a b\noutput p = map (\\x -> popcount x + clz x) a\noutput h = permute (+) (fill [8] 0) (\\i -> idx[i]) a\noutput g = permute min (fill [8] 99) (\\i -> idx[i]) b\noutput s = scan (+) 0 a"),
    ("ints_u64", "input a : u64[n]\ninput b : u64[n]\ninput idx : i64[n]\ninput f : f64[n]\noutput o = map (\\x y -> (x * y) ^ (x >> y) ^ (x << y)) a b\noutput p = map (\\x -> popcount x + clz x) a\noutput c = map (\\x -> u64 x) f\noutput d = map (\\x -> f64 x + f64 (f32 x)) a\noutput h = permute (+) (fill [8] 0) (\\i -> idx[i]) a\noutput m = reduce max 0 b"),
    ("ints_i8_bool", "input a : i8[n]\ninput f : f32[n]\noutput o = map (\\x -> abs x + max x (i8 3) + i8 (x > 0)) a\noutput fl = map (\\x -> isnan x || isinf x) f\noutput c = map (\\x -> i8 x) f"),
];

/// Compiles every kernel of `plan`; returns how many.
fn compile_all(label: &str, plan: &Plan, opts: &CudaOptions, target: Target) -> usize {
    let mut n = 0;
    for (file, src) in kernel_sources(plan, opts) {
        if let Err(e) = nvrtc::compile(&file, &src, target, opts.fast_math) {
            panic!("{label}: {file} does not compile:\n{e}\n--- source ---\n{src}");
        }
        n += 1;
    }
    n
}

#[test]
fn every_kernel_of_every_conformance_program_compiles() {
    if !require_nvrtc() {
        return;
    }
    let version = nvrtc::version().unwrap();
    let mut programs: Vec<(String, String)> = Vec::new();
    let mut expected_errors = std::collections::HashMap::new();
    for case in eqfuse_ir::conformance::project_cases(&root()).unwrap() {
        let name = case.dir.display().to_string();
        if let Some(code) = &case.spec.error {
            expected_errors.insert(name.clone(), code.clone());
        }
        programs.push((name, case.source().unwrap()));
    }
    for (name, src) in EXTRA {
        programs.push((name.to_string(), src.to_string()));
    }
    let opts = CudaOptions::default();
    let target = Target::Cubin(80);
    // two threads: NVRTC is thread-safe, and CI has two cores
    let half = programs.len() / 2;
    let (a, b) = programs.split_at(half);
    let count = |list: &[(String, String)]| -> (usize, usize) {
        let mut kernels = 0;
        let mut checked = 0;
        for (name, src) in list {
            let (plan, unfused) = match plans(src) {
                Ok(Some(p)) => p,
                Ok(None) => continue,
                // a case that fails to check must be one that expects that error
                Err(e) => {
                    let want = expected_errors.get(name);
                    assert_eq!(want.map(String::as_str), Some(e.code.as_str()), "{name}: {e}");
                    continue;
                }
            };
            checked += 1;
            kernels += compile_all(&format!("{name} (optimised)"), &plan, &opts, target);
            kernels += compile_all(&format!("{name} (unfused)"), &unfused, &opts, target);
        }
        (kernels, checked)
    };
    let ((ka, ca), (kb, cb)) = std::thread::scope(|s| {
        let h = s.spawn(|| count(a));
        let rb = count(b);
        (h.join().unwrap(), rb)
    });
    let (kernels, checked) = (ka + kb, ca + cb);
    eprintln!(
        "NVRTC {}.{}: {kernels} kernels of {checked} programs ({} conformance cases, {} extra) compiled for sm_80",
        version.0,
        version.1,
        programs.len() - EXTRA.len(),
        EXTRA.len()
    );
    assert!(checked >= EXTRA.len(), "the extra programs must all check");
    assert!(kernels > 0);
}

#[test]
fn fast_math_ptx_and_hopper_targets_compile() {
    if !require_nvrtc() {
        return;
    }
    let src = std::fs::read_to_string(root().join("tests/conformance/blackscholes/program.eqf")).unwrap();
    let (plan, _) = plans(&src).unwrap().unwrap();
    let fast = CudaOptions { fast_math: true, ..CudaOptions::default() };
    assert!(compile_all("blackscholes fast", &plan, &fast, Target::Cubin(90)) > 0);
    assert!(compile_all("blackscholes ptx", &plan, &CudaOptions::default(), Target::Ptx(80)) > 0);
    let small = CudaOptions { block_size: 64, ..CudaOptions::default() };
    let (plan, _) = plans(EXTRA[0].1).unwrap().unwrap();
    assert!(compile_all("scan_rows block 64", &plan, &small, Target::Cubin(70)) > 0);
}

/// Programs with reductions and scans over groups: argmin and argmax (rank 1 and per row,
/// `u8`), Welford's `(count, mean, M2)`, segmented scans over a `bool` flag (1-d and along
/// rows, inclusive and exclusive), a group beside an ordinary reduction.
const GROUPS: &[(&str, &str)] = &[
    ("argminmax", "input xs : f32[n]\ninput m : u8[r, c]\noutput i = argmin xs\noutput j = argmax xs\noutput s = reduce (+) 0 xs\noutput k = argmin m"),
    ("welford", "input xs : f64[n]\ninput m : f64[r, c]\nlet comb = \\(na, ma, qa) (nb, mb, qb) -> let nn = na + nb in if nn == 0.0 then (0.0, 0.0, 0.0) else let dd = mb - ma in (nn, ma + dd * nb / nn, qa + qb + dd * dd * na * nb / nn)\nlet (c1, m1, q1) = reduce comb (0.0, 0.0, 0.0) (map (\\x -> (1.0, x, 0.0)) xs)\noutput v1 = q1 / c1\nlet (c2, m2, q2) = reduce comb (0.0, 0.0, 0.0) (map (\\x -> (1.0, x, 0.0)) m)\noutput m2"),
    ("segscan", "input fl : bool[n]\ninput ys : i64[n]\ninput gl : bool[r, c]\ninput m : i32[r, c]\nlet (f, v) = scan (\\(f1, v1) (f2, v2) -> (f1 || f2, if f2 then v2 else v1 + v2)) (false, 0) (fl, ys)\noutput v\nlet (g, w) = scan_exclusive (\\(f1, v1) (f2, v2) -> (f1 || f2, if f2 then v2 else v1 + v2)) (false, 0) (gl, m)\noutput w\nlet (h, u) = scan_exclusive (\\(f1, v1) (f2, v2) -> (f1 || f2, if f2 then v2 else v1 + v2)) (false, 0) (fl, ys)\noutput u"),
];

/// The kernels of reductions and scans over groups compile at every block size, for old
/// and new architectures, and are generated (no refusal).
#[test]
fn group_kernels_compile_at_every_block_size() {
    if !require_nvrtc() {
        return;
    }
    for (name, src) in GROUPS {
        let (plan, _) = plans(src).unwrap().unwrap();
        let groups = plan
            .kernels()
            .iter()
            .filter(|k| k.lanes.iter().any(|l| matches!(l.op, eqfuse_ir::plan::LaneOp::Part)))
            .count();
        assert!(groups > 0, "{name}: no group in\n{plan}");
        for (block_size, target) in
            [(32, Target::Cubin(70)), (64, Target::Cubin(90)), (1024, Target::Cubin(80))]
        {
            let opts = CudaOptions { block_size, ..CudaOptions::default() };
            let with_groups =
                kernel_sources(&plan, &opts).iter().filter(|(_, s)| s.contains("struct EqG")).count();
            assert_eq!(with_groups, groups, "{name}: every group kernel generated");
            assert!(compile_all(&format!("{name} block {block_size}"), &plan, &opts, target) > 0);
        }
    }
}

#[test]
fn a_compile_error_is_a_device_error_naming_the_saved_source() {
    if !require_nvrtc() {
        return;
    }
    let src = "extern \"C\" __global__ void k(int* p) { p[0] = undefined_name; }\n";
    let err = nvrtc::compile("k9_broken.cu", src, Target::Cubin(80), false).unwrap_err();
    assert_eq!(err.code, eqfuse_ir::error::Code::Device);
    assert!(err.message.contains("undefined_name"), "{err}");
    let path = err.message.split("the source is saved in ").nth(1).unwrap().split(')').next().unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap(), src);
    // the options always turn contraction off unless fast math is asked for
    assert!(nvrtc::options(Target::Cubin(90), false).contains(&"--fmad=false".to_string()));
    assert!(nvrtc::options(Target::Ptx(90), true).contains(&"--fmad=true".to_string()));
}

#[test]
fn float_constants_reach_the_ptx_exactly() {
    if !require_nvrtc() {
        return;
    }
    // constants whose shortest decimal is not enough for every compiler, and ordinary ones
    let values = [0.1f32, 1.0e-45, 3.4028235e38, 0.3989423, -0.0, 16777217.0, 1.1754942e-38];
    let mut body = String::from("extern \"C\" __global__ void k(float* p) {\n");
    for (i, v) in values.iter().enumerate() {
        body.push_str(&format!("  p[{i}] = p[{i}] * {};\n", eqfuse_exec_cuda::float_literal_for_tests(*v)));
    }
    body.push_str("}\n");
    let c = nvrtc::compile("consts.cu", &body, Target::Ptx(80), false).unwrap();
    let ptx = nvrtc::ptx_text(&c).unwrap();
    for v in values {
        let bits = format!("0f{:08X}", v.to_bits());
        assert!(
            ptx.contains(&bits) || (v.to_bits() == 0 && ptx.contains("0f00000000")),
            "{v}: {bits} not in\n{ptx}"
        );
    }
}

/// The PTX of every kernel of `name`'s optimised plan (sm_90), with the CUDA sources.
fn ptx_of(name: &str) -> Vec<(String, String, String)> {
    let src = std::fs::read_to_string(root().join(format!("tests/conformance/{name}/program.eqf"))).unwrap();
    let (plan, _) = plans(&src).unwrap().unwrap();
    kernel_sources(&plan, &CudaOptions::default())
        .into_iter()
        .map(|(file, cu)| {
            let c = nvrtc::compile(&file, &cu, Target::Ptx(90), false).unwrap();
            (file, cu, nvrtc::ptx_text(&c).unwrap())
        })
        .collect()
}

#[test]
fn streaming_kernels_load_16_bytes_at_a_time_without_bounds_checks() {
    if !require_nvrtc() {
        return;
    }
    for name in ["dotp", "saxpy", "map_chain"] {
        let kernels = ptx_of(name);
        assert!(!kernels.is_empty(), "{name}: no kernels");
        for (file, cu, ptx) in kernels {
            // vector loads of the inputs (through the read-only cache)
            assert!(ptx.contains("ld.global.nc.v4.f32"), "{name} {file}: no 16-byte loads in\n{ptx}");
            // the element functions check no read: the host checks the shapes once
            let elem = cu.split("// the element function").nth(1).unwrap();
            let elem = elem.split("\n}\n").next().unwrap();
            assert!(!elem.contains("EQ_ERR_INDEX"), "{name} {file}: a checked read in\n{elem}");
            assert!(!elem.contains("eq_fail"), "{name} {file}: a failure path in\n{elem}");
            assert!(!ptx.contains("eq_fail"), "{name} {file}: a call of eq_fail in the PTX");
        }
    }
    // outputs too: saxpy and map_chain store 16 bytes at a time
    for name in ["saxpy", "map_chain"] {
        for (file, _, ptx) in ptx_of(name) {
            assert!(ptx.contains("st.global.v4.f32"), "{name} {file}: no 16-byte stores in\n{ptx}");
        }
    }
}

#[test]
fn scans_and_filters_are_one_pass() {
    if !require_nvrtc() {
        return;
    }
    let mut seen = 0;
    for name in ["scans", "filter_reduce"] {
        for (file, _, ptx) in ptx_of(name) {
            if file.contains("scan") || file.contains("filter") {
                seen += 1;
                let entries = ptx.matches(".entry").count();
                assert_eq!(entries, 1, "{name} {file}: {entries} entry points");
            }
        }
    }
    assert!(seen >= 2, "no scan or filter kernel found");
}
