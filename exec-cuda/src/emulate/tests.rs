//! The emulator's tests: generated kernels run on the host against the plan interpreter.

use super::*;
use eqfuse_ir::check::check;
use eqfuse_ir::parse::parse;
use eqfuse_ir::plan::Step;
use eqfuse_ir::value::{compare, Scalar, Tolerance, Value};
use eqfuse_optimize::{optimize, OptimizeOptions};
use indexmap::IndexMap;
use std::path::Path;

mod flat;
mod groups;

fn emu() -> Option<Emu> {
    let e = Emu::new();
    if e.is_none() {
        // CI's machines have gcc: there, a missing compiler is a failure, not a skip
        assert!(
            std::env::var("CI").map_or(true, |v| v != "true"),
            "CI=true: no host C++ compiler (g++) for the CUDA emulator"
        );
        eprintln!("\n!!!!!!!!!! SKIPPED: no host C++ compiler for the CUDA emulator !!!!!!!!!!\n");
    }
    e
}

/// A buffer no allocation can hold is refused with `E-LIMIT`, not made with a smaller
/// layout than its length; one of 0 bytes still has an allocation to point to.
#[test]
fn emulated_buffers_refuse_impossible_sizes() {
    let err = EmuBuf::new(usize::MAX - 4, 0).err().expect("refused");
    assert_eq!(err.code, Code::Limit, "{err}");
    let mut b = EmuBuf::new(0, 7).expect("an empty buffer");
    assert!(b.bytes().is_empty() && b.bytes_mut().is_empty());
    let b = EmuBuf::new(33, 7).expect("a buffer");
    assert_eq!(b.bytes(), &[7u8; 33][..]);
    assert_eq!(b.ptr as usize % 16, 0);
}

/// The emulator keeps its kernels in a private directory (mode 0700, this user's, not
/// the predictable `$TMPDIR/eqfuse-emu-<hash>` of old) and loads only checked entries
/// from it: a shared object planted under a kernel's key in the old directory is not
/// loaded (its constructor would write a marker), and nothing is written there.
#[test]
fn kernels_are_not_loaded_from_the_old_shared_directory() {
    use std::os::unix::fs::MetadataExt;
    let Some(emu) = emu() else { return };
    let dir = emu.cache.path();
    let meta = std::fs::symlink_metadata(dir).unwrap();
    assert!(meta.is_dir(), "{}", dir.display());
    assert_eq!(meta.uid(), eqfuse_codegen::cache::euid(), "{}", dir.display());
    assert_eq!(meta.mode() & 0o022, 0, "{}: mode {:o}", dir.display(), meta.mode());
    if !emu.cache.persistent() {
        assert_eq!(meta.mode() & 0o7777, 0o700, "{}", dir.display());
    }
    let old = std::env::temp_dir().join(format!("eqfuse-emu-{}", crate::cache::key(&[EMU_HEADER, emu.cxx])));
    assert!(!dir.starts_with(&old), "{}", dir.display());
    // a kernel, and a foreign object under its old name
    let src = "input xs : f32[n]\noutput z = map (\\x -> x * 2.0 + 1.0) xs";
    let checked = check(&parse(src).unwrap()).unwrap();
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let opts = CudaOptions { block_size: 32, disk_cache: false, ..CudaOptions::default() };
    let host = eqfuse_codegen::host_known(&plan);
    let k = plan.kernels()[0];
    let code = eqfuse_codegen::cuda::generate(&plan, k, 0, opts.gen(), &host).unwrap();
    let scratch = tempfile::Builder::new().prefix("eqfuse-emu-test-").tempdir().unwrap();
    let marker = scratch.path().join("MARKER");
    let foreign_src = scratch.path().join("foreign.cpp");
    std::fs::write(
        &foreign_src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void planted() {{ FILE* f = fopen(\"{}\", \"w\"); if (f) fclose(f); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(&old).unwrap();
    let planted = old.join(format!("{}.so", crate::cache::key(&["", &code.source])));
    let _ = std::fs::remove_file(&planted);
    let out = Command::new(emu.cxx)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&planted)
        .arg(&foreign_src)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let before: Vec<_> = std::fs::read_dir(&old).unwrap().map(|e| e.unwrap().file_name()).collect();
    let m = emu.module(&code, &opts).unwrap();
    let launcher = format!("eqemu_{}", entries(&code.skeleton)[0]);
    // SAFETY: only looked up, not called
    let found = unsafe { m.lib.get::<unsafe extern "C" fn()>(launcher.as_bytes()) }.is_ok();
    let after: Vec<_> = std::fs::read_dir(&old).unwrap().map(|e| e.unwrap().file_name()).collect();
    let _ = std::fs::remove_file(&planted);
    assert!(found, "no {launcher} in the loaded kernel");
    assert!(!marker.exists(), "the planted object was loaded");
    assert_eq!(before, after, "the emulator wrote into {}", old.display());
}

/// Every conformance case under `tests/conformance`, optimised and unfused, through the
/// generated kernels on the emulator: the expected outputs within tolerance, or the
/// expected error code.
#[test]
fn conformance_cases_on_the_emulator() {
    let Some(emu) = emu() else { return };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let v1 = eqfuse_ir::conformance::cases(&repo.join("tests/conformance")).unwrap();
    let v2 = eqfuse_ir::conformance::cases(&repo.join("tests/conformance-v2")).unwrap();
    let opts = CudaOptions { block_size: 64, disk_cache: false, ..CudaOptions::default() };
    let mut failures = Vec::new();
    // version-2 cases with a form the optimiser cannot take yet run on the reference
    // interpreter on every backend: no kernel of theirs reaches the emulator
    let mut interpreted = Vec::new();
    for case in v1.iter().chain(&v2) {
        let (name, spec) = (&case.name, &case.spec);
        let src = case.source().unwrap();
        let Ok(checked) = parse(&src).and_then(|p| check(&p)) else { continue };
        let opt = match optimize(&checked, &OptimizeOptions::default()) {
            Ok(opt) => opt,
            Err(e) if eqfuse_optimize::is_unsupported(&e) && !v1.iter().any(|c| &c.name == name) => {
                interpreted.push(format!("{name}: {e}"));
                continue;
            }
            Err(e) => panic!("{name}: {e}"),
        };
        let Ok(inputs) = case.inputs() else { continue };
        for (label, plan) in [("optimised", &opt.plan), ("unfused", &opt.unfused_plan)] {
            // every optimised plan; unfused plans of up to 8 kernels (those of unrolled loops
            // have dozens: slow to build here)
            if label == "unfused" && plan.kernels().len() > 8 {
                continue;
            }
            let t = std::time::Instant::now();
            // matrix products through the emulated cuBLAS in the optimised plan, as their
            // reductions in the unfused one
            let opts = CudaOptions { gemm: label == "optimised", ..opts.clone() };
            let got = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default())
                .and_then(|b| crate::runtime::run(&emu, plan, &inputs, &b.sizes, &opts));
            eprintln!("{name} ({label}): {:.2} s", t.elapsed().as_secs_f64());
            match (&spec.error, got) {
                (Some(code), Err(e)) if e.code.as_str() == code => {}
                (Some(code), other) => {
                    failures.push(format!("{name} ({label}): expected {code}, got {:?}", other.map(|_| ())))
                }
                (None, Err(e)) => failures.push(format!("{name} ({label}): {e}")),
                (None, Ok(out)) => {
                    if let Err(m) = case.compare(&out) {
                        failures.push(format!("{name} ({label}): {m}"));
                    }
                }
            }
        }
    }
    eprintln!("{} version-2 cases not compiled yet:\n{}", interpreted.len(), interpreted.join("\n"));
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// Deterministic inputs for a program: sizes `r`, `c`, `h`, `w` are 37, 70, 5, 9, every
/// other size 1000; integers avoid 0 (no division by zero) and `idx` holds targets in
/// 0..8; floats lie in -2..2.
fn make_inputs(checked: &eqfuse_ir::check::Checked) -> IndexMap<String, Value> {
    use eqfuse_ir::types::{Dim, ElemType, Type};
    use ndarray::{ArrayD, IxDyn};
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut out = IndexMap::new();
    for (name, ty) in &checked.inputs {
        let (elem, shape) = match ty {
            Type::Scalar(e) => (*e, vec![]),
            Type::Array { elem, shape } => {
                let dims = shape
                    .iter()
                    .map(|d| match d {
                        Dim::Known(k) => *k as usize,
                        Dim::Size(s) if s == "r" => 37,
                        Dim::Size(s) if s == "c" => 70,
                        Dim::Size(s) if s == "h" => 5,
                        Dim::Size(s) if s == "w" => 9,
                        _ => 1000,
                    })
                    .collect();
                (*elem, dims)
            }
            _ => continue,
        };
        let n: usize = shape.iter().product();
        let sh = IxDyn(&shape);
        let v = match elem {
            ElemType::Bool => Value::Bool(ArrayD::from_shape_fn(sh, |_| next() % 3 == 0)),
            t if t.is_int() => {
                let data: Vec<i64> = (0..n)
                    .map(|_| {
                        let r = next();
                        if name == "idx" {
                            (r % 8) as i64
                        } else {
                            let m = (r % 50) as i64 + 1;
                            if r & 64 == 0 {
                                m
                            } else {
                                -m
                            }
                        }
                    })
                    .collect();
                let scalars: Vec<Scalar> =
                    data.iter().map(|&x| Scalar::from_i128_wrapping(t, i128::from(x))).collect();
                Value::from_scalars(t, &shape, &scalars).unwrap()
            }
            _ => {
                let data: Vec<f64> = (0..n).map(|_| ((next() % 4001) as f64 - 2000.0) / 1000.0).collect();
                if elem == ElemType::F32 {
                    Value::F32(ArrayD::from_shape_vec(sh, data.iter().map(|&x| x as f32).collect()).unwrap())
                } else {
                    Value::F64(ArrayD::from_shape_vec(sh, data).unwrap())
                }
            }
        };
        out.insert(name.clone(), v);
    }
    out
}

/// Runs `src`'s optimised and unfused plans on the emulator and under the plan
/// interpreter, on `inputs` (else generated ones); the results must agree (floats within
/// 1e-4 relative, as reductions combine in another order), or both fail with the same
/// code and message.
fn agrees(
    emu: &Emu,
    opts: &CudaOptions,
    name: &str,
    src: &str,
    inputs: Option<IndexMap<String, Value>>,
    must_fail: bool,
) -> Vec<String> {
    let checked = match parse(src).and_then(|p| check(&p)) {
        Ok(c) => c,
        Err(e) => return vec![format!("{name}: {e}")],
    };
    let inputs = inputs.unwrap_or_else(|| make_inputs(&checked));
    let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
    let sizes = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default()).unwrap().sizes;
    let tol = Tolerance { rtol: 1e-4, atol: 1e-6, mismatch_fraction: 0.0 };
    let mut problems = Vec::new();
    for (label, plan) in [("optimised", &opt.plan), ("unfused", &opt.unfused_plan)] {
        let want = eqfuse_ir::plan::eval::eval(plan, &inputs, &sizes);
        let got = crate::runtime::run(emu, plan, &inputs, &sizes, opts);
        match (want, got) {
            (Ok(w), Ok(g)) if !must_fail => {
                for (k, wv) in &w {
                    match g.get(k) {
                        Some(gv) => {
                            if let Err(m) = compare(gv, wv, &tol) {
                                problems.push(format!("{name} ({label}): `{k}`: {m}\n{plan}"));
                            }
                        }
                        None => problems.push(format!("{name} ({label}): no `{k}`")),
                    }
                }
            }
            (Ok(_), Ok(_)) if must_fail => problems.push(format!("{name} ({label}): did not fail")),
            // the same error at the same source position (line and column)
            (Err(w), Err(g))
                if w.code == g.code
                    && w.message == g.message
                    && w.span.map(|s| (s.line, s.col)) == g.span.map(|s| (s.line, s.col)) => {}
            (w, g) => problems.push(format!(
                "{name} ({label}): the interpreter gives {:?}, the emulator {:?}",
                w.map(|_| ()).map_err(|e| e.to_string()),
                g.map(|_| ()).map_err(|e| e.to_string())
            )),
        }
    }
    problems
}

/// Programs that reach every skeleton and the operations with special cases (wrapping,
/// saturating conversions, NaN-propagating min/max, lazy `if`, loops), on the
/// emulator, against the plan interpreter.
#[test]
fn skeletons_and_operations_on_the_emulator() {
    let Some(emu) = emu() else { return };
    let programs: &[(&str, &str)] = &[
        ("scan_rows", "input m : f32[r, c]\noutput s = scan (+) 0 m\noutput e = scan_exclusive max (-inf) m"),
        ("scan_long_rows", "input m : i64[h, k]\noutput s = scan (+) 0 m\noutput e = scan_exclusive (+) 0 m"),
        ("scan_f64_mul", "input xs : f64[n]\noutput p = scan (*) 1 (map (\\x -> 1.0 + x / 1000.0) xs)"),
        ("scan_ordered", "input xs : i32[n]\noutput p = scan (\\a b -> a + b) 0 xs\noutput q = scan_exclusive (\\a b -> a + b) 0 xs"),
        ("scan_empty", "input xs : i32[n]\noutput p = scan (+) 0 (filter (\\x -> x > 1000) xs)"),
        ("reduce_ordered", "input m : i64[r, c]\noutput s = reduce (\\a b -> a + b) 0 m\noutput t = reduce (\\a b -> a + b) 0 (reduce (+) 0 m)"),
        ("reduce_long_rows", "input m : f64[h, k]\noutput s = reduce (+) 0 m\noutput t = reduce (\\a b -> a + b) 0 m"),
        ("reduce_bool", "input xs : f32[n]\noutput all = reduce (&&) true (map (\\x -> x > -3.0) xs)\noutput any = reduce (||) false (map (\\x -> x > 1.9) xs)"),
        ("reduce_minmax", "input xs : f64[n]\noutput lo = reduce min inf xs\noutput hi = reduce max (-inf) xs\noutput nan = reduce max 0 (map (\\x -> if x > 1.5 then 0.0 / 0.0 else x) xs)"),
        ("reduce_empty", "input xs : f32[n]\noutput s = reduce (*) 1 (filter (\\x -> x > 100.0) xs)\noutput m = reduce max (-inf) (generate [0] (\\i -> 1.0))"),
        ("permute_f64_max", "input xs : f64[n]\ninput idx : i64[n]\noutput h = permute max (fill [8] (-inf)) (\\i -> idx[i]) xs"),
        ("permute_f32_add", "input xs : f32[n]\ninput idx : i64[n]\noutput h = permute (+) (fill [8] 0.0) (\\i -> idx[i]) (map (\\x -> floor (x * 4.0)) xs)"),
        ("permute_i32_min", "input xs : i32[n]\ninput idx : i64[n]\noutput h = permute min (fill [8] 1000) (\\i -> idx[i]) xs\noutput g = permute max (fill [8] (-1000)) (\\i -> idx[i]) xs"),
        ("permute_i64_mul", "input xs : i64[n]\ninput idx : i64[n]\noutput h = permute (*) (fill [8] 1) (\\i -> idx[i]) (map (\\x -> x % 3) xs)"),
        ("permute_bool_or", "input xs : f32[n]\ninput idx : i64[n]\noutput h = permute (||) (fill [8] false) (\\i -> idx[i]) (map (\\x -> x > 1.99) xs)\noutput g = permute (&&) (fill [8] true) (\\i -> idx[i]) (map (\\x -> x > -1.99) xs)"),
        ("permute_2d", "input xs : f32[n]\ninput idx : i64[n]\noutput h = permute (+) (fill [4, 4] 0.0) (\\i -> (idx[i] % 4, idx[i] / 4)) (map (\\x -> round x) xs)"),
        ("permute_drop", "input xs : i64[n]\ninput idx : i64[n]\noutput h = permute (+) (fill [8] 0) (\\i -> if idx[i] > 5 then -1 else idx[i]) xs"),
        ("filter_i32", "input xs : i32[n]\noutput k = filter (\\x -> x % 3 == 0) xs"),
        ("filter_bool", "input xs : bool[n]\noutput k = filter (\\x -> x) xs\noutput c = reduce (+) 0 (map (\\x -> if x then 1 else 0) xs)"),
        ("conversions", "input xs : f64[n]\noutput a = map (\\x -> i32 (x * 2000000000.0)) xs\noutput b = map (\\x -> i64 (f32 (x * 1e19))) xs\noutput c = map (\\x -> f64 (i32 x) + f64 (i64 (x / 0.0))) xs"),
        ("int_ops", "input a : i32[n]\ninput b : i32[n]\noutput q = map (\\x y -> x / y + x % y - abs x * (-y) + 2147483647 * x) a b\noutput m = map (\\x y -> clamp x (min x y) (max x y)) a b\noutput w = map (\\x -> (-2147483647 - 1) / (x / x * -1) + (-2147483647 - 1) % (x / x * -1)) a"),
        ("float_ops", "input a : f32[n]\ninput b : f32[n]\noutput r = map (\\x y -> pow (abs x) y + atan2 x y + tanh x + floor x + ceil y + round x + tan y + cos x + sin y + x % y + sqrt (abs y) + exp x + log (abs x + 1.0)) a b\noutput m = map (\\x y -> min x (-0.0) + max y 0.0) a b"),
        ("lazy_if", "input a : f64[n]\noutput r = map (\\x -> if x > 0.0 && x < 1.0 || x == 2.0 then log x else exp x) a"),
        ("sizes", "input m : f32[r, c]\noutput s = generate [size m 0] (\\i -> m[i, size m 1 - 1])"),
        ("iterate", "input a : f32[n]\noutput r = map (\\x -> iterate 7 (\\y -> y * 0.5 + 1.0) x) a\noutput s = reduce (+) 0 (map (\\x -> iterate (-2) (\\y -> y * 2.0) x) a)"),
        ("gather_2d", "input m : f64[r, c]\ninput idx : i64[k]\noutput g = generate [k, 3] (\\i j -> m[idx[i] + j, idx[i]])"),
        ("generate_3d", "input m : f32[r, c]\noutput g = generate [3, r, c] (\\k i j -> m[i, j] * f32 k)\noutput s = reduce (+) 0 (generate [3, r, c] (\\k i j -> m[i, j] * f32 k))"),
        ("host_scalars", "input xs : f64[n]\nlet s = reduce (+) 0 xs\noutput m = s / f64 n\noutput d = map (\\x -> x - s / f64 n) xs"),
        ("if_arrays", "input xs : f32[n]\nlet s = reduce (+) 0 xs\noutput r = if s > 0.0 then map (\\x -> x * 2.0) xs else map (\\x -> x - 1.0) xs"),
        ("softmax_big", "input m : f32[h, k]\nlet mx = reduce max (-inf) m\nlet e = generate [h, k] (\\i j -> exp (m[i, j] - mx[i]))\nlet s = reduce (+) 0 e\noutput sm = generate [h, k] (\\i j -> e[i, j] / s[i])"),
    ];
    let opts = CudaOptions { block_size: 64, disk_cache: false, ..CudaOptions::default() };
    let mut problems = Vec::new();
    for (name, src) in programs {
        let t = std::time::Instant::now();
        problems.extend(agrees(&emu, &opts, name, src, None, false));
        eprintln!("{name}: {:.2} s", t.elapsed().as_secs_f64());
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The integer types of version 2 and the bit operations of every integer type on the
/// emulator (the CUDA text compiled by the host compiler): elementwise operations, shifts
/// by amounts of every size, `popcount`/`clz`, conversions, reductions, scans and permutes
/// (1- and 2-byte targets updated inside their 32-bit word), against the plan interpreter.
#[test]
fn integer_types_on_the_emulator() {
    let Some(emu) = emu() else { return };
    let opts = CudaOptions { block_size: 64, disk_cache: false, ..CudaOptions::default() };
    let mut problems = Vec::new();
    for t in eqfuse_ir::types::ElemType::INTS {
        let src = format!(
            "input a : {t}[n]\ninput b : {t}[n]\ninput idx : i64[n]\n\
             output ops = map (\\x y -> ((x * y - x) / (y | 1)) ^ ((x % (y | 1)) & !y)) a b\n\
             output sh = map (\\x y -> (x << y) | (x >> (y + 3))) a b\n\
             output pc = map (\\x y -> popcount x + clz y) a b\n\
             output cv = map (\\x -> f32 x + f32 (u8 x) + f32 (i16 (f64 x * 3.5))) a\n\
             output mm = map (\\x y -> max (min x y) (abs (-x))) a b\n\
             output s = reduce (+) 0 a\n\
             output hi = reduce max (b[0]) a\n\
             output sc = scan (+) 0 (map (\\x y -> x ^ y) a b)\n\
             output h = permute (+) (fill [8] 0) (\\i -> idx[i]) a\n\
             output g = permute max (fill [8] (a[0])) (\\i -> idx[i]) b\n"
        );
        problems.extend(agrees(&emu, &opts, &format!("ints_{t}"), &src, None, false));
        // one element divides by zero: the error names its type and dividend
        let src =
            format!("input a : {t}[n]\noutput q = generate [n] (\\i -> a[i] / (if i == 5 then 0 else 1))\n");
        problems.extend(agrees(&emu, &opts, &format!("ints_{t}_div_zero"), &src, None, true));
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// Matrix products run as GEMM calls (cuBLAS's definition, emulated) and agree with the
/// interpreter: plain, transposed operands, batched and scaled by a host scalar, a
/// sub-block read at host offsets, `f64`, an empty reduced extent; with GEMM off, the
/// same plans make no call.
#[test]
fn contractions_run_as_gemm_calls() {
    let Some(emu) = emu() else { return };
    use std::sync::atomic::Ordering::Relaxed;
    let programs: &[(&str, &str)] = &[
        ("matmul", "input a : f32[r, w]\ninput b : f32[w, c]\noutput o = reduce (+) 0 (generate [r, c, w] (\\i j p -> a[i, p] * b[p, j]))"),
        ("transposed", "input a : f32[w, r]\ninput b : f32[c, w]\noutput o = reduce (+) 0 (generate [r, c, w] (\\i j p -> a[p, i] * b[j, p]))"),
        ("batched_scaled", "input q : f64[h, r, w]\ninput t : f64[h, c, w]\ninput s : f64\noutput o = reduce (+) 0 (generate [h, r, c, w] (\\z i j p -> s * q[z, i, p] * t[z, j, p]))"),
        ("sub_block", "input a : f32[r, c]\ninput b : f32[c, w]\ninput o : i64\noutput y = reduce (+) 0 (generate [r - 2, w, c - 3] (\\i j p -> a[i + 1, p + o] * b[p, j]))"),
        ("empty_k", "input a : f64[r, w]\ninput b : f64[w, c]\noutput o = reduce (+) 0 (generate [r, c, 0] (\\i j p -> a[i, p] * b[p, j]))"),
    ];
    let mut problems = Vec::new();
    for gemm in [true, false] {
        let opts = CudaOptions { block_size: 32, disk_cache: false, gemm, ..CudaOptions::default() };
        for (name, src) in programs {
            let before = emu.gemm_calls.load(Relaxed);
            let mut inputs = make_inputs(&check(&parse(src).unwrap()).unwrap());
            if inputs.contains_key("o") {
                inputs.insert("o".into(), Value::scalar(eqfuse_ir::value::Scalar::I64(2)));
            }
            problems.extend(agrees(&emu, &opts, name, src, Some(inputs), false));
            let calls = emu.gemm_calls.load(Relaxed) - before;
            let want_calls = gemm && *name != "empty_k";
            if want_calls != (calls > 0) {
                problems.push(format!("{name} (gemm {gemm}): {calls} GEMM calls"));
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// Row blocks run as one kernel, a block per row, and agree with the interpreter:
/// softmax (its `exp (m - mx)` kept in shared memory; with rows too long for it, in
/// memory), a per-row mean / variance / normalise (maps over the rows' results as outer
/// phases), a log-sum-exp, rows over two outer dimensions; rows shorter than a block,
/// and a phase that reads a neighbour (a read that may fail), run phase by phase instead.
#[test]
fn row_blocks_run_as_one_kernel() {
    let Some(emu) = emu() else { return };
    let programs: &[(&str, &str, bool)] = &[
        ("softmax", "input m : f32[r, c]\nlet mx = reduce max (-inf) m\nlet e = generate [r, c] (\\i j -> exp (m[i, j] - mx[i]))\nlet s = reduce (+) 0 e\noutput y = generate [r, c] (\\i j -> e[i, j] / s[i])", true),
        ("normalise", "input m : f64[r, c]\nlet mean = map (\\s -> s / f64 c) (reduce (+) 0 m)\nlet var = map (\\s -> s / f64 c) (reduce (+) 0 (generate [r, c] (\\i j -> (m[i, j] - mean[i]) * (m[i, j] - mean[i]))))\noutput y = generate [r, c] (\\i j -> (m[i, j] - mean[i]) / sqrt (var[i] + 1e-5))", true),
        ("logsumexp", "input m : f32[r, c]\nlet mx = reduce max (-inf) m\nlet s = reduce (+) 0 (generate [r, c] (\\i j -> exp (m[i, j] - mx[i])))\noutput l = map (\\a b -> a + log b) mx s", true),
        ("three_d", "input t : f32[h, w, c]\nlet mx = reduce max (-inf) t\noutput y = generate [h, w, c] (\\a b j -> t[a, b, j] - mx[a, b])", true),
        ("short_rows", "input m : f32[r, w]\nlet mx = reduce max (-inf) m\noutput y = generate [r, w] (\\i j -> m[i, j] - mx[i])", false),
        ("neighbour", "input m : f32[r, c]\nlet mx = reduce max (-inf) m\noutput y = generate [r, c] (\\i j -> m[i, abs (j - 1)] - mx[i])", false),
    ];
    let opts = CudaOptions { block_size: 32, disk_cache: false, ..CudaOptions::default() };
    let mut problems = Vec::new();
    for (name, src, one) in programs {
        let checked = check(&parse(src).unwrap()).unwrap();
        let opt = optimize(&checked, &OptimizeOptions::default()).unwrap();
        let blocks = opt.plan.steps.iter().filter(|s| matches!(s, Step::RowBlock { .. })).count();
        if blocks == 0 {
            problems.push(format!("{name}: the optimised plan has no row block:\n{}", opt.plan));
            continue;
        }
        emu.launches.lock().unwrap().clear();
        problems.extend(agrees(&emu, &opts, name, src, None, false));
        let launches = emu.launches.lock().unwrap().clone();
        let fused = launches.iter().filter(|e| e.ends_with("_rowblock")).count();
        // the optimised plan's row block as one launch (the unfused plan may have one too)
        if *one != (fused > 0) {
            problems.push(format!("{name}: launches {launches:?}"));
        }
        // softmax's `exp (m - mx)` is kept in shared memory, not written
        let kept = crate::kernel_sources(&opt.plan, &opts).iter().any(|(_, src)| src.contains("eq_kept"));
        if *name == "softmax" && !kept {
            problems.push(format!("{name}: nothing kept in shared memory"));
        }
    }
    // rows too long for the shared memory: what is kept goes to memory, still one kernel
    let src = programs[0].1;
    let mut inputs = IndexMap::new();
    let long = ndarray::Array2::from_shape_fn((3, 8300), |(i, j)| ((i * 31 + j * 7) % 97) as f32 / 9.0 - 5.0);
    inputs.insert("m".to_string(), Value::F32(long.into_dyn()));
    emu.launches.lock().unwrap().clear();
    problems.extend(agrees(&emu, &opts, "softmax (long rows)", src, Some(inputs), false));
    if !emu.launches.lock().unwrap().iter().any(|e| e.ends_with("_rowblock")) {
        problems.push("softmax (long rows): not one kernel".into());
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// The arrays of `all` that program `src` takes as inputs.
fn inputs_of(src: &str, all: &IndexMap<String, Value>) -> IndexMap<String, Value> {
    let checked = check(&parse(src).unwrap()).unwrap();
    all.iter().filter(|(k, _)| checked.inputs.contains_key(*k)).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Tiles (16-byte loads and stores over a 1-d space): every element is written or
/// folded exactly once for lengths around the tile widths (4 for 4-byte types, 2 when an
/// 8-byte type takes part), mixed types, bool outputs stored one by one, a read of a
/// neighbour (checked) beside tiled reads, and a reduction with generate lanes.
#[test]
fn tiles_cover_every_element() {
    let Some(emu) = emu() else { return };
    use ndarray::Array1;
    let programs: &[(&str, &str)] = &[
        ("map_f32", "input xs : f32[n]\ninput ys : f32[n]\noutput z = map (\\x y -> x * 2.0 + y) xs ys"),
        ("map_mixed", "input xs : f32[n]\ninput ds : f64[n]\noutput z = map (\\x d -> f64 x + d) xs ds\noutput b = map (\\x -> x > 0.5) xs\noutput i = map (\\x -> i32 (x * 10.0)) xs"),
        ("neighbour", "input xs : f32[n]\noutput d = generate [n] (\\i -> xs[i] - xs[(i + 1) % n])"),
        ("reduce_gen", "input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)\noutput z = map (\\x y -> x - y) xs ys"),
        ("reduce_i64", "input ks : i64[n]\noutput s = reduce (+) 0 ks\noutput m = reduce max (-1) ks"),
    ];
    let opts = CudaOptions { block_size: 32, disk_cache: false, ..CudaOptions::default() };
    let mut problems = Vec::new();
    for n in [0usize, 1, 3, 4, 5, 8, 13, 4 * 32 + 3, 4 * 32 * 3 + 1] {
        let f = |k: usize| ((k * 37 % 101) as f32) / 101.0;
        let mut inputs = IndexMap::new();
        inputs.insert("xs".to_string(), Value::F32(Array1::from_shape_fn(n, f).into_dyn()));
        inputs.insert("ys".to_string(), Value::F32(Array1::from_shape_fn(n, |k| f(k + 5)).into_dyn()));
        inputs.insert("ds".to_string(), Value::F64(Array1::from_shape_fn(n, |k| k as f64 * 0.25).into_dyn()));
        inputs.insert(
            "ks".to_string(),
            Value::I64(Array1::from_shape_fn(n, |k| (k * 7 % 13) as i64).into_dyn()),
        );
        for (name, src) in programs {
            let label = format!("{name} n={n}");
            problems.extend(agrees(&emu, &opts, &label, src, Some(inputs_of(src, &inputs)), false));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Single-pass scans and filters over many tiles (a tile is 8 elements per thread, 256
/// at 32 threads), commutative or not (a segmented scan over a group), inclusive and
/// exclusive, with every tile
/// publishing its inclusive prefix and, with `EQ_LOOKBACK_SPARSE`, only every fortieth
/// (so that the look-back folds aggregates across more than one 32-tile window),
/// against the interpreter.
#[test]
fn lookback_scans_and_filters_over_many_tiles() {
    let Some(mut emu) = emu() else { return };
    use ndarray::Array1;
    let programs: &[(&str, &str)] = &[
        ("scan_add", "input ks : i64[n]\noutput s = scan (+) 0 ks\noutput e = scan_exclusive (+) 0 ks"),
        ("scan_ordered", "input ks : i64[n]\noutput p = scan (\\a b -> a + b) 0 ks\noutput q = scan_exclusive (\\a b -> a + b) 0 ks"),
        ("scan_f32_max", "input xs : f32[n]\noutput m = scan max (-inf) xs"),
        ("filter", "input xs : f32[n]\noutput k = filter (\\x -> x > 0.5) xs\noutput c = reduce (+) 0 (map (\\x -> if x > 0.5 then 1 else 0) xs)"),
        ("filter_then_scan", "input ks : i64[n]\noutput s = scan (+) 0 (filter (\\k -> k % 3 == 1) ks)"),
        ("scan_group", "input ks : i64[n]\nlet seg = \\(f1, v1) (f2, v2) -> (f1 || f2, if f2 then v2 else v1 + v2)\nlet (f, v) = scan seg (false, 0) (map (\\k -> k == 3) ks, ks)\noutput v\nlet (g, w) = scan_exclusive seg (false, 0) (map (\\k -> k == 3) ks, ks)\noutput w"),
    ];
    let opts = CudaOptions { block_size: 32, disk_cache: false, ..CudaOptions::default() };
    let mut problems = Vec::new();
    for sparse in [false, true] {
        emu.defines = if sparse { "#define EQ_LOOKBACK_SPARSE 1\n".into() } else { String::new() };
        for n in [1usize, 255, 256, 257, 256 * 9 + 17, 256 * 90 + 5] {
            let mut inputs = IndexMap::new();
            inputs.insert(
                "ks".to_string(),
                Value::I64(Array1::from_shape_fn(n, |k| (k * 7 % 13) as i64 - 5).into_dyn()),
            );
            inputs.insert(
                "xs".to_string(),
                Value::F32(Array1::from_shape_fn(n, |k| ((k * 37 % 101) as f32) / 101.0).into_dyn()),
            );
            for (name, src) in programs {
                let label = format!("{name} n={n} sparse={sparse}");
                problems.extend(agrees(&emu, &opts, &label, src, Some(inputs_of(src, &inputs)), false));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Device errors name what the interpreter names, at the same source position: an
/// index out of bounds, a permute target out of bounds, a division by zero (one failing
/// element each), a map over arrays of different shapes.
#[test]
fn device_errors_match_the_interpreter() {
    let Some(emu) = emu() else { return };
    use ndarray::arr1;
    let opts = CudaOptions { block_size: 32, disk_cache: false, ..CudaOptions::default() };
    let xs = Value::F32(arr1(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).into_dyn());
    let bad_idx = Value::I64(arr1(&[0i64, 4, 7, 1]).into_dyn());
    let mut problems = Vec::new();
    let mut i1 = IndexMap::new();
    i1.insert("xs".to_string(), xs.clone());
    i1.insert("idx".to_string(), bad_idx.clone());
    problems.extend(agrees(
        &emu,
        &opts,
        "gather",
        "input xs : f32[n]\ninput idx : i64[k]\noutput g = gather xs idx",
        Some(i1.clone()),
        true,
    ));
    problems.extend(agrees(&emu, &opts, "target", "input xs : f32[n]\ninput idx : i64[k]\noutput h = permute (+) (fill [5] 0.0) (\\i -> idx[i]) (map (\\i -> 1.0) idx)", Some(i1), true));
    let mut i2 = IndexMap::new();
    i2.insert("a".to_string(), Value::I64(arr1(&[6i64, 7, 8]).into_dyn()));
    i2.insert("b".to_string(), Value::I64(arr1(&[2i64, 0, 4]).into_dyn()));
    problems.extend(agrees(
        &emu,
        &opts,
        "divzero",
        "input a : i64[n]\ninput b : i64[n]\noutput q = map (\\x y -> x % y) a b",
        Some(i2),
        true,
    ));
    let mut i3 = IndexMap::new();
    i3.insert("m".to_string(), Value::F32(ndarray::Array2::<f32>::zeros((3, 4)).into_dyn()));
    problems.extend(agrees(
        &emu,
        &opts,
        "index2d",
        "input m : f32[r, c]\noutput s = reduce (+) 0 (generate [r, c] (\\i j -> m[i, j + i / 2]))",
        Some(i3),
        true,
    ));
    let mut i4 = IndexMap::new();
    i4.insert("xs".to_string(), xs.clone());
    problems.extend(agrees(
        &emu,
        &opts,
        "past_the_end",
        "input xs : f32[n]\noutput d = generate [n] (\\i -> xs[i + 1] - xs[i])",
        Some(i4.clone()),
        true,
    ));
    i4.insert("ys".to_string(), Value::F32(arr1(&[1.0f32, 2.0]).into_dyn()));
    problems.extend(agrees(
        &emu,
        &opts,
        "shapes",
        "input xs : f32[n]\ninput ys : f32[m]\noutput s = map (\\x y -> x + y) xs ys",
        Some(i4),
        true,
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Inputs loaded once serve several runs (the device-resident API of benchmarks), with
/// kernels generated once for all of them, and outputs stay on the device until
/// downloaded.
#[test]
fn inputs_loaded_once_serve_several_runs() {
    let Some(emu) = emu() else { return };
    let src = "input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)\noutput z = map (\\x -> x * 2.0) xs";
    let checked = check(&parse(src).unwrap()).unwrap();
    let inputs = make_inputs(&checked);
    let plan = optimize(&checked, &OptimizeOptions::default()).unwrap().plan;
    let sizes = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default()).unwrap().sizes;
    let want = eqfuse_ir::plan::eval::eval(&plan, &inputs, &sizes).unwrap();
    let opts = CudaOptions { block_size: 64, disk_cache: false, ..CudaOptions::default() };
    let vals = crate::runtime::load_inputs(&emu, &plan, &inputs, &sizes).unwrap();
    let tol = Tolerance { rtol: 1e-4, atol: 1e-6, mismatch_fraction: 0.0 };
    let codes = crate::runtime::Codes::default();
    for run in 0..2 {
        let outs = crate::runtime::run_loaded(&emu, &plan, vals.clone(), &opts, Some(&codes)).unwrap();
        // the first run generated and loaded each kernel once; the second reuses them
        let kept = codes.lock().unwrap().len();
        assert_eq!(kept, plan.kernels().len(), "run {run}");
        let got = crate::runtime::download_outputs(&emu, outs).unwrap();
        assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
        for (k, w) in &want {
            compare(&got[k], w, &tol).unwrap();
        }
    }
}
