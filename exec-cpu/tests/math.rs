//! eqfuse's `exp` and `log` (`eqfuse_ir::math`): the generated C gives the Rust functions'
//! bits on every input tried, and the error of each function is within its documented
//! bound (`docs/math.md`), measured against a more precise reference: `f64` for the `f32`
//! functions, the C library's 80-bit `expl`/`logl` for the `f64` ones.
//!
//! The C is compiled by the system C compiler with the flags the CPU backend uses, into a
//! small program that maps a file of arguments to a file of results.
#![allow(clippy::unwrap_used)]

use eqfuse_ir::math::{exp_f32, exp_f64, log_f32, log_f64};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Points per function: edge cases, a sweep and random bit patterns.
const RANDOM: usize = 1 << 20;

fn scratch() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("math");
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

fn f32_points(lo: f32, hi: f32) -> Vec<f32> {
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
        if x.is_finite() && x >= lo && x <= hi {
            v.push(x);
        } else if x.is_finite() {
            v.push(lo + (hi - lo) * (r.next() >> 40) as f32 / (1u64 << 24) as f32);
        }
    }
    v
}

fn f64_points(lo: f64, hi: f64) -> Vec<f64> {
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
        if x.is_finite() && x >= lo && x <= hi {
            v.push(x);
        } else {
            v.push(lo + (hi - lo) * (r.next() >> 11) as f64 / (1u64 << 53) as f64);
        }
    }
    v
}

/// The harness: `prog F IN OUT` applies function F (0: exp_f32, 1: log_f32, 2: exp_f64,
/// 3: log_f64, 4: expl, 5: logl as two doubles hi, lo) to every element of IN.
fn harness() -> PathBuf {
    let dir = scratch();
    let src = format!(
        "{}{}{}{}{}\n{}",
        eqfuse_codegen::c::prelude::HEAD,
        eqfuse_codegen::prelude::SCALAR_HEAD,
        eqfuse_codegen::prelude::SCALAR_HELPERS,
        eqfuse_ir::math::c_source(),
        eqfuse_codegen::c::prelude::TAIL,
        r#"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  int f = atoi(argv[1]);
  FILE* in = fopen(argv[2], "rb"); FILE* out = fopen(argv[3], "wb");
  if (!in || !out) return 2;
  fseek(in, 0, SEEK_END); long bytes = ftell(in); fseek(in, 0, SEEK_SET);
  char* buf = malloc(bytes + 16); if (fread(buf, 1, bytes, in) != (size_t)bytes) return 3;
  if (f <= 1) {
    long n = bytes / 4; float* x = (float*)buf; float* y = malloc(n * 4 + 4);
    for (long i = 0; i < n; ++i) y[i] = f == 0 ? eq_exp_f32(x[i]) : eq_log_f32(x[i]);
    fwrite(y, 4, n, out);
  } else if (f <= 3) {
    long n = bytes / 8; double* x = (double*)buf; double* y = malloc(n * 8 + 8);
    for (long i = 0; i < n; ++i) y[i] = f == 2 ? eq_exp_f64(x[i]) : eq_log_f64(x[i]);
    fwrite(y, 8, n, out);
  } else {
    long n = bytes / 8; double* x = (double*)buf; double* y = malloc(n * 16 + 16);
    for (long i = 0; i < n; ++i) {
      long double r = f == 4 ? expl((long double)x[i]) : logl((long double)x[i]);
      double hi = (double)r; double lo = (double)(r - (long double)hi);
      y[2 * i] = hi; y[2 * i + 1] = (hi == hi && hi - hi == 0) ? lo : 0.0;
    }
    fwrite(y, 8, 2 * n, out);
  }
  fclose(out);
  return 0;
}
"#
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

fn apply(exe: &Path, f: u32, input: &[u8], tag: &str) -> Vec<u8> {
    let dir = scratch();
    let (i, o) = (dir.join(format!("{tag}.in")), dir.join(format!("{tag}.out")));
    std::fs::write(&i, input).unwrap();
    let st = Command::new(exe).arg(f.to_string()).arg(&i).arg(&o).status().unwrap();
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

/// The error of `got` against the exact value `want` (a more precise number), in units in
/// the last place of `f32` at `want`.
fn ulps32(got: f32, want: f64) -> f64 {
    if got.is_nan() && want.is_nan() || (got as f64) == want {
        return 0.0;
    }
    if !want.is_finite() || !got.is_finite() {
        // overflow to infinity where the exact value is past the largest float
        return if got.is_infinite() && want.abs() > f32::MAX as f64 { 0.0 } else { f64::INFINITY };
    }
    let w = (want as f32).abs();
    let ulp = if w < f32::MIN_POSITIVE { 1e-45f64 } else { f64::from(f32::from_bits(w.to_bits() + 1) - w) };
    ((got as f64) - want).abs() / ulp
}

fn ulps64(got: f64, hi: f64, lo: f64) -> f64 {
    if got.is_nan() && hi.is_nan() || (got == hi && lo == 0.0) {
        return 0.0;
    }
    if !hi.is_finite() || !got.is_finite() {
        return if got == hi { 0.0 } else { f64::INFINITY };
    }
    let a = hi.abs();
    let ulp = if a < f64::MIN_POSITIVE { 5e-324 } else { f64::from_bits(a.to_bits() + 1) - a };
    ((got - hi) - lo).abs() / ulp
}

#[test]
fn generated_c_and_rust_agree_and_errors_are_within_bounds() {
    let exe = harness();
    let mut report = Vec::new();
    // f32
    for (f, name, rust, lo, hi) in [
        (0u32, "exp_f32", exp_f32 as fn(f32) -> f32, -110.0f32, 95.0f32),
        (1, "log_f32", log_f32 as fn(f32) -> f32, 0.0, f32::MAX),
    ] {
        let xs = f32_points(lo, hi);
        let c = f32s(&apply(&exe, f, &f32_bytes(&xs), name));
        let mut worst = (0.0f64, 0.0f32);
        for (x, cy) in xs.iter().zip(&c) {
            let ry = rust(*x);
            assert!(
                same_bits32(ry, *cy),
                "{name}({x:e}): Rust {ry:e} ({:#x}), C {cy:e} ({:#x})",
                ry.to_bits(),
                cy.to_bits()
            );
            let want = if f == 0 { (*x as f64).exp() } else { (*x as f64).ln() };
            let e = ulps32(ry, want);
            if e > worst.0 {
                worst = (e, *x);
            }
        }
        report.push(format!("{name}: {} points, max error {:.4} ulp at {:e}", xs.len(), worst.0, worst.1));
        assert!(worst.0 <= 1.0, "{name}: {:.4} ulp at {:e}", worst.0, worst.1);
    }
    // f64
    for (f, name, rust, lo, hi) in [
        (2u32, "exp_f64", exp_f64 as fn(f64) -> f64, -750.0f64, 712.0f64),
        (3, "log_f64", log_f64 as fn(f64) -> f64, 0.0, f64::MAX),
    ] {
        let xs = f64_points(lo, hi);
        let bytes = f64_bytes(&xs);
        let c = f64s(&apply(&exe, f, &bytes, name));
        let exact = f64s(&apply(&exe, f + 2, &bytes, &format!("{name}-ref")));
        let mut worst = (0.0f64, 0.0f64);
        for (k, (x, cy)) in xs.iter().zip(&c).enumerate() {
            let ry = rust(*x);
            assert!(same_bits64(ry, *cy), "{name}({x:e}): Rust {ry:e}, C {cy:e}");
            let e = ulps64(ry, exact[2 * k], exact[2 * k + 1]);
            if e > worst.0 {
                worst = (e, *x);
            }
        }
        report.push(format!("{name}: {} points, max error {:.4} ulp at {:e}", xs.len(), worst.0, worst.1));
        assert!(worst.0 <= MAX_ULP_F64, "{name}: {:.4} ulp at {:e}", worst.0, worst.1);
    }
    println!("{}", report.join("\n"));
}

/// The documented bound of the `f64` functions.
const MAX_ULP_F64: f64 = 1.0;
