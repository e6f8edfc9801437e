//! eqfuse's math (`eqfuse_ir::math`): the generated C gives the Rust functions' bits on
//! every input tried, and the error of each function is within its documented bound
//! (`docs/math.md`), measured against a more precise reference: `f64` for the `f32`
//! functions (Rust's, or the C library's `long double` ones rounded to `f64` where Rust has
//! none), the C library's 80-bit `expl`/`logl`/... for the `f64` ones.
//!
//! The C is compiled by the system C compiler with the flags the CPU backend uses, into a
//! small program that maps a file of arguments to a file of results.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::math as m;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Points per function: edge cases, a sweep and random bit patterns.
const RANDOM: usize = 1 << 20;

fn scratch() -> PathBuf {
    scratch_in("math")
}

/// A scratch folder of its own for each test (they run at the same time).
fn scratch_in(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A deterministic generator (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Edge cases, an even sweep over `[lo, hi]`, random bit patterns in `[rlo, rhi]`.
fn f32_points(lo: f32, hi: f32, rlo: f32, rhi: f32) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE,
        1e-45,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    v.extend([
        88.72283,
        88.7229,
        89.0,
        -87.33654,
        -103.9,
        -104.0,
        -150.0,
        0.5,
        2.0,
        std::f32::consts::LN_2,
        1.0000001,
        0.99999994,
    ]);
    let n = 200_000;
    v.extend((0..n).map(|k| lo + (hi - lo) * k as f32 / n as f32));
    let mut r = Rng(7);
    while v.len() < RANDOM {
        let x = f32::from_bits(r.next() as u32);
        if x.is_finite() && x >= rlo && x <= rhi {
            v.push(x);
        } else if x.is_finite() {
            v.push(lo + (hi - lo) * (r.next() >> 40) as f32 / (1u64 << 24) as f32);
        }
    }
    v
}

/// Edge cases, an even sweep over `[lo, hi]`, random bit patterns in `[rlo, rhi]`.
fn f64_points(lo: f64, hi: f64, rlo: f64, rhi: f64) -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    v.extend([
        709.782712893384,
        709.79,
        710.0,
        -708.4,
        -745.13,
        -745.2,
        -746.0,
        0.5,
        2.0,
        std::f64::consts::LN_2,
    ]);
    v.extend([1.0 + f64::EPSILON, 1.0 - f64::EPSILON / 2.0, std::f64::consts::SQRT_2, 1e-310, 1e300]);
    let n = 200_000;
    v.extend((0..n).map(|k| lo + (hi - lo) * k as f64 / n as f64));
    let mut r = Rng(11);
    while v.len() < RANDOM {
        let x = f64::from_bits(r.next());
        if x.is_finite() && x >= rlo && x <= rhi {
            v.push(x);
        } else {
            v.push(lo + (hi - lo) * (r.next() >> 11) as f64 / (1u64 << 53) as f64);
        }
    }
    v
}

/// The unary functions, by name: the `f32` ones, the `f64` ones and the C library's 80-bit
/// references (written as two doubles, hi and lo).
const UNARY: [&str; 14] = [
    "exp", "log", "sin", "cos", "tan", "tanh", "log2", "log10", "exp2", "expm1", "log1p", "erf", "erfc",
    "lgamma",
];
/// The binary ones (arguments interleaved in the input).
const BINARY: [&str; 2] = ["pow", "atan2"];

/// The harness: `prog NAME IN OUT` applies function NAME (`exp_f32`, `pow_f64`, `sinl`, ...)
/// to every element (or pair) of IN, each in a loop of its own (so the compiler vectorises
/// it, as it does the kernels).
fn harness() -> PathBuf {
    harness_at(&scratch())
}

/// [`harness`], built in `dir`.
fn harness_at(dir: &Path) -> PathBuf {
    let mut loops = String::new();
    for f in UNARY {
        loops.push_str(&format!(
            "  if (!strcmp(name, \"{f}_f32\")) {{ long n = bytes / 4; float* x = (float*)buf; float* y = malloc(n * 4 + 4);\n    \
             for (long i = 0; i < n; ++i) y[i] = eq_{f}_f32(x[i]);\n    fwrite(y, 4, n, out); }}\n  \
             if (!strcmp(name, \"{f}_f64\")) {{ long n = bytes / 8; double* x = (double*)buf; double* y = malloc(n * 8 + 8);\n    \
             for (long i = 0; i < n; ++i) y[i] = eq_{f}_f64(x[i]);\n    fwrite(y, 8, n, out); }}\n  \
             if (!strcmp(name, \"{f}l\")) {{ long n = bytes / 8; double* x = (double*)buf; double* y = malloc(n * 16 + 16);\n    \
             for (long i = 0; i < n; ++i) split(y + 2 * i, {f}l((long double)x[i]));\n    fwrite(y, 8, 2 * n, out); }}\n"
        ));
    }
    for f in BINARY {
        loops.push_str(&format!(
            "  if (!strcmp(name, \"{f}_f32\")) {{ long n = bytes / 8; float* x = (float*)buf; float* y = malloc(n * 4 + 4);\n    \
             for (long i = 0; i < n; ++i) y[i] = eq_{f}_f32(x[2 * i], x[2 * i + 1]);\n    fwrite(y, 4, n, out); }}\n  \
             if (!strcmp(name, \"{f}_f64\")) {{ long n = bytes / 16; double* x = (double*)buf; double* y = malloc(n * 8 + 8);\n    \
             for (long i = 0; i < n; ++i) y[i] = eq_{f}_f64(x[2 * i], x[2 * i + 1]);\n    fwrite(y, 8, n, out); }}\n  \
             if (!strcmp(name, \"{f}l\")) {{ long n = bytes / 16; double* x = (double*)buf; double* y = malloc(n * 16 + 16);\n    \
             for (long i = 0; i < n; ++i) split(y + 2 * i, {f}l((long double)x[2 * i], (long double)x[2 * i + 1]));\n    \
             fwrite(y, 8, 2 * n, out); }}\n"
        ));
    }
    let src = format!(
        "{}{}{}{}{}\n{}{loops}{}",
        eqfuse_codegen::c::prelude::HEAD,
        eqfuse_codegen::prelude::SCALAR_HEAD,
        eqfuse_codegen::prelude::SCALAR_HELPERS,
        eqfuse_ir::math::c_source(),
        eqfuse_codegen::c::prelude::TAIL,
        r#"
#include <stdio.h>
#include <stdlib.h>
// r as the double hi nearest to it and (r - hi) in ulps of hi (the ulp above |hi|)
static void split(double* y, long double r) {
  double hi = (double)r; double a = fabs(hi);
  long double u = a < 2.2250738585072014e-308 ? 4.9406564584124654e-324L : (long double)(nextafter(a, INFINITY) - a);
  y[0] = hi; y[1] = (hi == hi && hi - hi == 0) ? (double)((r - (long double)hi) / u) : 0.0;
}
int main(int argc, char** argv) {
  const char* name = argv[1];
  FILE* in = fopen(argv[2], "rb"); FILE* out = fopen(argv[3], "wb");
  if (!in || !out) return 2;
  fseek(in, 0, SEEK_END); long bytes = ftell(in); fseek(in, 0, SEEK_SET);
  char* buf = malloc(bytes + 16); if (fread(buf, 1, bytes, in) != (size_t)bytes) return 3;
"#,
        "  fclose(out);\n  return 0;\n}\n"
    );
    let c = dir.join("harness.c");
    std::fs::write(&c, src).unwrap();
    let exe = dir.join("harness");
    let (cc, flags) = eqfuse_exec_cpu::c_compiler_and_flags();
    let flags: Vec<&str> = flags
        .iter()
        .copied()
        .filter(|f| !matches!(*f, "-shared" | "-fPIC" | "-fvisibility=hidden"))
        .collect();
    let out = Command::new(&cc).args(&flags).arg("-o").arg(&exe).arg(&c).arg("-lm").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    exe
}

fn apply(exe: &Path, f: &str, input: &[u8]) -> Vec<u8> {
    let dir = exe.parent().unwrap();
    let (i, o) = (dir.join(format!("{f}.in")), dir.join(format!("{f}.out")));
    std::fs::write(&i, input).unwrap();
    let st = Command::new(exe).arg(f).arg(&i).arg(&o).status().unwrap();
    assert!(st.success());
    std::fs::read(&o).unwrap()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f64_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}
fn f64s(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn same_bits32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}
fn same_bits64(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The error of `got` against the exact value `hi + lo` ulps of `hi` (the ulp above `|hi|`).
fn ulps64(got: f64, hi: f64, lo: f64) -> f64 {
    if got.is_nan() && hi.is_nan() || (got == hi && lo == 0.0) {
        return 0.0;
    }
    if !hi.is_finite() || !got.is_finite() {
        return if got == hi { 0.0 } else { f64::INFINITY };
    }
    let a = hi.abs();
    let ulp = if a < f64::MIN_POSITIVE { 5e-324 } else { f64::from_bits(a.to_bits() + 1) - a };
    ((got - hi) / ulp - lo).abs()
}

/// One `f32` function's points through the C and Rust versions: the bits must agree; the
/// error against `reference` (in `f64`) is reported; above 1 ulp (`atan2`: 2), it is reported
/// FAILED.
fn check_f32(
    exe: &Path,
    name: &str,
    rust: &dyn Fn(&[f32]) -> f32,
    reference: &dyn Fn(&[f32]) -> f64,
    args: usize,
    xs: &[f32],
    report: &mut Vec<String>,
) {
    let c = f32s(&apply(exe, name, &f32_bytes(xs)));
    let mut worst = (0.0f64, 0);
    for (k, cy) in c.iter().enumerate() {
        let a = &xs[args * k..args * k + args];
        let ry = rust(a);
        assert!(
            same_bits32(ry, *cy),
            "{name}{a:?}: Rust {ry:e} ({:#x}), C {cy:e} ({:#x})",
            ry.to_bits(),
            cy.to_bits()
        );
        let e = eqfuse_ir::math::ulps_f32(ry, reference(a));
        if e > worst.0 || e.is_nan() {
            worst = (e, k);
        }
    }
    let a = &xs[args * worst.1..args * worst.1 + args];
    report.push(format!("{name}: {} points, max error {:.4} ulp at {a:?}", c.len(), worst.0));
    let bound = if name.starts_with("atan2") { MAX_ULP_ATAN2_F32 } else { 1.0 };
    if worst.0 > bound {
        report.push(format!("FAILED {name}: {:e} vs {:e}", rust(a), reference(a)));
    }
}

/// One `f64` function's points through the C and Rust versions: the bits must agree; the
/// error against the C library's 80-bit `long double` version (`reference`) is reported;
/// above [`MAX_ULP_F64`], it is reported FAILED.
fn check_f64(
    exe: &Path,
    name: &str,
    reference: &str,
    rust: &dyn Fn(&[f64]) -> f64,
    args: usize,
    xs: &[f64],
    report: &mut Vec<String>,
) {
    check_f64_within(exe, name, reference, rust, args, xs, MAX_ULP_F64, report);
}

/// [`check_f64`] with the bound `bound` (in ulps).
#[allow(clippy::too_many_arguments)]
fn check_f64_within(
    exe: &Path,
    name: &str,
    reference: &str,
    rust: &dyn Fn(&[f64]) -> f64,
    args: usize,
    xs: &[f64],
    bound: f64,
    report: &mut Vec<String>,
) {
    let bytes = f64_bytes(xs);
    let c = f64s(&apply(exe, name, &bytes));
    let exact = f64s(&apply(exe, reference, &bytes));
    let mut worst = (0.0f64, 0);
    for (k, cy) in c.iter().enumerate() {
        let a = &xs[args * k..args * k + args];
        let ry = rust(a);
        assert!(
            same_bits64(ry, *cy),
            "{name}{a:?}: Rust {ry:e} ({:#x}), C {cy:e} ({:#x})",
            ry.to_bits(),
            cy.to_bits()
        );
        let e = ulps64(ry, exact[2 * k], exact[2 * k + 1]);
        if e > worst.0 || e.is_nan() {
            worst = (e, k);
        }
    }
    let a = &xs[args * worst.1..args * worst.1 + args];
    report.push(format!("{name}: {} points, max error {:.4} ulp at {a:?}", c.len(), worst.0));
    if worst.0 > bound {
        report.push(format!(
            "FAILED {name}: {:e} vs {:e} + {:e}",
            rust(a),
            exact[2 * worst.1],
            exact[2 * worst.1 + 1]
        ));
    }
}

/// Special values for the two-argument functions: every pair of them is tried.
fn specials64() -> Vec<f64> {
    let mut v =
        vec![0.0, 1.0, 0.5, 2.0, 3.0, 2.5, 1e-300, 5e-324, f64::MIN_POSITIVE, f64::MAX, f64::INFINITY, 1e300];
    v.extend([
        1.0 + f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
        9007199254740993.0,
        9007199254740992.0,
        1e20,
        4503599627370497.0,
    ]);
    v.extend([0.1, 7.0, 1024.0, 1075.0, 1e-10]);
    let neg: Vec<f64> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v.push(f64::NAN);
    v
}

/// Pairs `(x, y)` for `pow`: every pair of special values; positive `x` of any magnitude with
/// `|y log2 x| <= lim` (the results that neither overflow nor underflow, and a little more);
/// negative `x` with integer `y`; `x` within a few ulps of 1 with large `y`.
fn pow_pairs(lim: f64, sub_bits: u32, max_y: f64, rng: &mut Rng, n: usize) -> Vec<(f64, f64)> {
    let sp = specials64();
    let mut v: Vec<(f64, f64)> = sp.iter().flat_map(|&x| sp.iter().map(move |&y| (x, y))).collect();
    while v.len() < n {
        let kind = rng.next() % 8;
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let (x, y) = match kind {
            0..=3 => {
                let x = f64::from_bits(rng.next() & 0x7fff_ffff_ffff_ffff);
                let l = x.log2().abs().max(1e-3);
                (x, (2.0 * u - 1.0) * (lim / l).min(max_y))
            }
            4 | 5 => {
                let x = 0.05 + 3.0 * u;
                (
                    x,
                    ((rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * lim
                        / x.log2().abs().max(1e-3),
                )
            }
            6 => (-(0.1 + 10.0 * u), ((rng.next() % 81) as f64) - 40.0),
            _ => {
                let d = (rng.next() % 64) as f64 - 32.0;
                (
                    1.0 + d * f64::from_bits((1023 - u64::from(sub_bits)) << 52),
                    (2.0 * u - 1.0) * 2f64.powi(sub_bits as i32 + 8),
                )
            }
        };
        if x.is_finite() && y.is_finite() {
            v.push((x, y));
        }
    }
    v
}

/// Pairs `(y, x)` for `atan2`: every pair of special values, an even square, random bit
/// patterns, and `y = x t` with `t` spread over the reduction's intervals at any magnitude.
fn atan2_pairs(rng: &mut Rng, n: usize) -> Vec<(f64, f64)> {
    let sp = specials64();
    let mut v: Vec<(f64, f64)> = sp.iter().flat_map(|&x| sp.iter().map(move |&y| (y, x))).collect();
    let m = 300;
    for i in 0..m {
        for j in 0..m {
            v.push((-10.0 + 20.0 * i as f64 / m as f64, -10.0 + 20.0 * j as f64 / m as f64));
        }
    }
    while v.len() < n {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        let (y, x) = match rng.next() % 3 {
            0 => (f64::from_bits(rng.next()), f64::from_bits(rng.next())),
            _ => {
                let x = f64::from_bits(rng.next());
                let t = (2.0 * u - 1.0) * 4.0;
                (x * t, if rng.next().is_multiple_of(2) { x } else { -x })
            }
        };
        if x.is_finite() && y.is_finite() {
            v.push((y, x));
        }
    }
    v
}

/// Arguments next to multiples of `π/2`, and the double closest to one (Kahan and McDonald).
fn near_pio2() -> Vec<f64> {
    let mut v = vec![
        6381956970095103.0 * 2f64.powi(797),
        5.319372648326541e255,
        1e22,
        2f64.powi(1023),
        std::f64::consts::FRAC_PI_2,
    ];
    for k in 1..2000i64 {
        let x = k as f64 * std::f64::consts::FRAC_PI_2;
        v.extend([x, f64::from_bits(x.to_bits() + 1), f64::from_bits(x.to_bits() - 1)]);
    }
    v
}

#[test]
fn generated_c_and_rust_agree_and_errors_are_within_bounds() {
    let exe = harness();
    let mut report = Vec::new();
    let un32 = |f: fn(f32) -> f32| move |a: &[f32]| f(a[0]);
    let un64 = |f: fn(f64) -> f64| move |a: &[f64]| f(a[0]);
    let r32 = |f: fn(f64) -> f64| move |a: &[f32]| f(f64::from(a[0]));
    // f32, against f64 (Rust's std, that is the C library's double functions)
    let big = f32::MAX;
    let trig32: Vec<f32> = {
        let mut v = f32_points(-10.0, 10.0, -big, big);
        v.extend(near_pio2().iter().map(|x| *x as f32).filter(|x| x.is_finite()));
        v
    };
    check_f32(
        &exe,
        "exp_f32",
        &un32(m::exp_f32),
        &r32(f64::exp),
        1,
        &f32_points(-110.0, 95.0, -110.0, 95.0),
        &mut report,
    );
    check_f32(
        &exe,
        "log_f32",
        &un32(m::log_f32),
        &r32(f64::ln),
        1,
        &f32_points(0.0, big, 0.0, big),
        &mut report,
    );
    check_f32(&exe, "sin_f32", &un32(m::sin_f32), &r32(f64::sin), 1, &trig32, &mut report);
    check_f32(&exe, "cos_f32", &un32(m::cos_f32), &r32(f64::cos), 1, &trig32, &mut report);
    check_f32(&exe, "tan_f32", &un32(m::tan_f32), &r32(f64::tan), 1, &trig32, &mut report);
    check_f32(
        &exe,
        "tanh_f32",
        &un32(m::tanh_f32),
        &r32(f64::tanh),
        1,
        &f32_points(-10.0, 10.0, -25.0, 25.0),
        &mut report,
    );
    let mut rng = Rng(13);
    let flat32 =
        |v: Vec<(f64, f64)>| -> Vec<f32> { v.iter().flat_map(|(a, b)| [*a as f32, *b as f32]).collect() };
    let pow32 = flat32(pow_pairs(160.0, 20, 1e10, &mut rng, PAIRS));
    check_f32(
        &exe,
        "pow_f32",
        &|a| m::pow_f32(a[0], a[1]),
        &|a| f64::from(a[0]).powf(f64::from(a[1])),
        2,
        &pow32,
        &mut report,
    );
    let atan32 = flat32(atan2_pairs(&mut rng, PAIRS));
    check_f32(
        &exe,
        "atan2_f32",
        &|a| m::atan2_f32(a[0], a[1]),
        &|a| f64::from(a[0]).atan2(f64::from(a[1])),
        2,
        &atan32,
        &mut report,
    );
    // f64, against the C library's long double functions
    let trig64: Vec<f64> = {
        let mut v = f64_points(-100.0, 100.0, -f64::MAX, f64::MAX);
        v.extend(near_pio2());
        v
    };
    check_f64(
        &exe,
        "exp_f64",
        "expl",
        &un64(m::exp_f64),
        1,
        &f64_points(-750.0, 712.0, -750.0, 712.0),
        &mut report,
    );
    check_f64(
        &exe,
        "log_f64",
        "logl",
        &un64(m::log_f64),
        1,
        &f64_points(0.0, f64::MAX, 0.0, f64::MAX),
        &mut report,
    );
    check_f64(&exe, "sin_f64", "sinl", &un64(m::sin_f64), 1, &trig64, &mut report);
    check_f64(&exe, "cos_f64", "cosl", &un64(m::cos_f64), 1, &trig64, &mut report);
    check_f64(&exe, "tan_f64", "tanl", &un64(m::tan_f64), 1, &trig64, &mut report);
    check_f64(
        &exe,
        "tanh_f64",
        "tanhl",
        &un64(m::tanh_f64),
        1,
        &f64_points(-10.0, 10.0, -25.0, 25.0),
        &mut report,
    );
    let flat64 = |v: Vec<(f64, f64)>| -> Vec<f64> { v.iter().flat_map(|(a, b)| [*a, *b]).collect() };
    let pow64 = flat64(pow_pairs(1100.0, 40, 1e300, &mut rng, PAIRS));
    check_f64(&exe, "pow_f64", "powl", &|a| m::pow_f64(a[0], a[1]), 2, &pow64, &mut report);
    let atan64 = flat64(atan2_pairs(&mut rng, PAIRS));
    check_f64(&exe, "atan2_f64", "atan2l", &|a| m::atan2_f64(a[0], a[1]), 2, &atan64, &mut report);
    println!("{}", report.join("\n"));
    assert!(!report.iter().any(|l| l.starts_with("FAILED")), "an error above its bound: see the report");
}

/// Argument pairs per two-argument function.
const PAIRS: usize = 1 << 19;

/// The documented bound of the `f64` functions.
const MAX_ULP_F64: f64 = 1.0;

/// The documented bound of `atan2` on `f32` (computed in `f32`; the other `f32` functions: 1).
const MAX_ULP_ATAN2_F32: f64 = 2.0;

/// One `f32` function's points through the C and Rust versions: the bits must agree; the
/// error against the C library's `long double` function `reference` (rounded to `f64`) is
/// reported; above `bound`, it is reported FAILED.
fn check_f32_c(
    exe: &Path,
    name: &str,
    reference: &str,
    rust: fn(f32) -> f32,
    xs: &[f32],
    bound: f64,
    report: &mut Vec<String>,
) {
    let wide: Vec<f64> = xs.iter().map(|x| f64::from(*x)).collect();
    let exact = f64s(&apply(exe, reference, &f64_bytes(&wide)));
    let c = f32s(&apply(exe, name, &f32_bytes(xs)));
    let mut worst = (0.0f64, 0);
    for (k, cy) in c.iter().enumerate() {
        let ry = rust(xs[k]);
        assert!(
            same_bits32(ry, *cy),
            "{name}({:e}): Rust {ry:e} ({:#x}), C {cy:e} ({:#x})",
            xs[k],
            ry.to_bits(),
            cy.to_bits()
        );
        let e = eqfuse_ir::math::ulps_f32(ry, exact[2 * k]);
        if e > worst.0 || e.is_nan() {
            worst = (e, k);
        }
    }
    report.push(format!("{name}: {} points, max error {:.4} ulp at [{:?}]", c.len(), worst.0, xs[worst.1]));
    if worst.0 > bound {
        report.push(format!("FAILED {name}: {:e} vs {:e}", rust(xs[worst.1]), exact[2 * worst.1]));
    }
}

/// The bounds of `erf`'s and `erfc`'s intervals (and their negatives are added).
const ERF_BOUNDS: [f64; 8] = [3.725290298461914e-9, 0.25, 0.84375, 1.0, 1.25, 2.857142857142857, 6.0, 28.0];
/// The bounds of `lgamma`'s intervals and its zeros 1 and 2.
const LGAMMA_BOUNDS: [f64; 11] = [
    8.470329472543003e-22,
    0.2316,
    0.7316,
    0.9,
    1.0,
    1.2316,
    1.4616321449683622,
    1.7316,
    2.0,
    8.0,
    2.8823037615171174e17,
];

/// `v` with, for each of `at` and its negative, the 400 doubles next to it and 400 points
/// within about `2^-20` of it.
fn with(mut v: Vec<f64>, at: &[f64]) -> Vec<f64> {
    for &b in at {
        for b in [b, -b] {
            for k in 1..200u64 {
                v.extend([f64::from_bits(b.to_bits() + k), f64::from_bits(b.to_bits() - k)]);
                let d = k as f64 * 2f64.powi(-28);
                v.extend([b + d * b.abs(), b - d * b.abs()]);
            }
        }
    }
    v
}

/// The arguments of `lgamma` on the positive axis (and the special values).
fn positive<T: Copy + PartialOrd + Default>(v: Vec<T>) -> Vec<T> {
    v.into_iter().filter(|x| x.partial_cmp(&T::default()) != Some(std::cmp::Ordering::Less)).collect()
}

/// Negative arguments of `lgamma`: an even sweep over `[-lo, 0)` and random ones, the
/// integers (poles) and the points next to them; those within `gap` of a zero of
/// `lgamma` are left out (there the error in ulps of a result near 0 is unbounded).
fn lgamma_negative(lo: f64, rng: &mut Rng, n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = Vec::new();
    for k in 1..40 {
        let x = -(k as f64);
        v.extend([x, f64::from_bits(x.to_bits() + 1), f64::from_bits(x.to_bits() - 1), x + 0.5]);
    }
    while v.len() < n {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        v.push(-lo * u);
    }
    v
}

/// A function to check: its name, the function, the C library's `long double` reference, the
/// points, the bound in ulps.
type Case<T> = (&'static str, fn(T) -> T, &'static str, Vec<T>, f64);

/// The functions of language version 2: `log2`, `log10`, `exp2`, `expm1`, `log1p`, `erf`,
/// `erfc`, `lgamma`, each on `f32` and `f64`, with their bounds of `docs/math.md`.
#[test]
fn new_functions_agree_and_are_within_bounds() {
    let exe = harness_at(&scratch_in("math_v2"));
    let mut report = Vec::new();
    let (big32, big) = (f32::MAX, f64::MAX);
    let cases32: Vec<Case<f32>> = vec![
        ("log2_f32", m::log2_f32, "log2l", f32_points(0.0, big32, 0.0, big32), 1.0),
        ("log10_f32", m::log10_f32, "log10l", f32_points(0.0, big32, 0.0, big32), 1.0),
        ("exp2_f32", m::exp2_f32, "exp2l", f32_points(-155.0, 130.0, -155.0, 130.0), 1.0),
        ("expm1_f32", m::expm1_f32, "expm1l", f32_points(-20.0, 90.0, -110.0, 95.0), 1.0),
        ("log1p_f32", m::log1p_f32, "log1pl", f32_points(-1.0, 10.0, -1.0, big32), 1.0),
        ("erf_f32", m::erf_f32, "erfl", f32_points(-5.0, 5.0, -12.0, 12.0), 1.0),
        ("erfc_f32", m::erfc_f32, "erfcl", f32_points(-5.0, 12.0, -12.0, 12.0), 1.0),
        ("lgamma_f32", m::lgamma_f32, "lgammal", positive(f32_points(0.0, 30.0, 0.0, big32)), 1.0),
    ];
    for (name, f, reference, xs, bound) in &cases32 {
        check_f32_c(&exe, name, reference, *f, xs, *bound, &mut report);
    }
    let mut rng = Rng(17);
    let cases64: Vec<Case<f64>> = vec![
        ("log2_f64", m::log2_f64, "log2l", f64_points(0.0, big, 0.0, big), 1.0),
        ("log10_f64", m::log10_f64, "log10l", f64_points(0.0, big, 0.0, big), 1.0),
        ("exp2_f64", m::exp2_f64, "exp2l", f64_points(-1080.0, 1030.0, -1080.0, 1030.0), 1.0),
        ("expm1_f64", m::expm1_f64, "expm1l", f64_points(-40.0, 712.0, -50.0, 712.0), 1.0),
        ("log1p_f64", m::log1p_f64, "log1pl", f64_points(-1.0, 10.0, -1.0, big), 1.0),
        (
            "erf_f64",
            m::erf_f64,
            "erfl",
            with(f64_points(-7.0, 7.0, -30.0, 30.0), &ERF_BOUNDS),
            LGAMMA_ERF_BOUND.1,
        ),
        (
            "erfc_f64",
            m::erfc_f64,
            "erfcl",
            with(f64_points(-7.0, 28.0, -30.0, 30.0), &ERF_BOUNDS),
            LGAMMA_ERF_BOUND.1,
        ),
        (
            "lgamma_f64",
            m::lgamma_f64,
            "lgammal",
            positive(with(f64_points(0.0, 30.0, 0.0, big), &LGAMMA_BOUNDS)),
            LGAMMA_ERF_BOUND.0,
        ),
        (
            "lgamma_f64 (x < 0, all)",
            m::lgamma_f64,
            "lgammal",
            lgamma_negative(30.0, &mut rng, 1 << 18),
            f64::INFINITY,
        ),
        (
            "lgamma_f64 (x < 0, |result| >= 1)",
            m::lgamma_f64,
            "lgammal",
            lgamma_away(&exe, &mut rng),
            LGAMMA_NEG_BOUND,
        ),
    ];
    for (name, f, reference, xs, bound) in &cases64 {
        let nm = name.split(' ').next().unwrap();
        let mut r = Vec::new();
        check_f64_within(&exe, nm, reference, &|a| f(a[0]), 1, xs, *bound, &mut r);
        report.extend(r.into_iter().map(|l| l.replacen(nm, name, 1)));
    }
    println!("{}", report.join("\n"));
    assert!(!report.iter().any(|l| l.starts_with("FAILED")), "an error above its bound: see the report");
}

/// Negative arguments of `lgamma` where the result is at least 1 and at least half of
/// `lgamma |x|` in magnitude: away from the zeros, where `log(pi / |x sin(pi x)|)` and
/// `lgamma |x|` cancel.
fn lgamma_away(exe: &Path, rng: &mut Rng) -> Vec<f64> {
    let xs = lgamma_negative(30.0, rng, 1 << 18);
    let exact = f64s(&apply(exe, "lgammal", &f64_bytes(&xs)));
    let keep = |k: usize, x: f64| {
        let h = exact[2 * k].abs();
        h >= 1.0 && h >= 0.5 * m::lgamma_f64(-x).abs()
    };
    xs.iter().enumerate().filter(|(k, x)| keep(*k, **x)).map(|(_, x)| *x).collect()
}

/// The documented bound of `lgamma` on `f64` for negative arguments away from its zeros.
const LGAMMA_NEG_BOUND: f64 = 8.0;

/// The documented bounds of `lgamma` on `f64` (positive arguments) and of `erf`, `erfc`.
const LGAMMA_ERF_BOUND: (f64, f64) = (4.0, 2.0);
