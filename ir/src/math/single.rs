//! The `f32` functions that compute in `f32` (at twice `f64`'s vector width): `log`
//! (module `log`), `sin`, `cos`, `tan` (module `trig`), `atan2` (module `atan2`), `log2`,
//! `log10`, `log1p` (module `logs`), `exp2`, `expm1` (module `exps`) and `pow` (module
//! `pow`); `exp` on `f32` is in the parent module. `tanh` (module `tanh`), `erf` and `erfc`
//! (module `erf`) are short rational functions of their own in `f64` (explicit fused
//! multiply-adds, [`horner_fma`]), rounded once; `lgamma` on `f32` still computes with the
//! `f64` function and rounds once. The rules are those of the `f64` functions: IEEE basic
//! operations in a fixed order, fused multiply-adds only where written, no
//! branch (selects), the same operations in the C text of [`c_source`]; extra precision
//! where a result needs it comes from exact transformations in `f32` (2Sum, Dekker's product
//! with Veltkamp's split by `2^12 + 1`).
//! Besides those three, the only `f64` arithmetic is the last step of the `sin`/`cos`/`tan`
//! reduction (its 64-bit fixed-point remainder to a float: one conversion, one product, then
//! to an `f32` pair).

mod atan2;
mod erf;
mod exps;
mod log;
mod logs;
mod pow;
mod tanh;
mod trig;

pub use atan2::{atan2_f32, ATAN_F32_HI, ATAN_F32_LO, ATAN_F32_T};
pub use erf::{erf_f32, erfc_f32};
pub use exps::{exp2_f32, expm1_f32, EM1_F32_R, LN2_F32, LN2_TAIL_F32};
pub use log::{log_f32, LG_F32, LN2_HI_LOG_F32, LN2_LO_LOG_F32};
pub use logs::{
    log10_f32, log1p_f32, log2_f32, IVLN10HI_F32, IVLN10LO_F32, IVLN2HI_F32, IVLN2LO_F32, LOG10_2HI_F32,
    LOG10_2LO_F32,
};
pub use pow::{pow_f32, CP_F32, CP_H_F32, CP_L_F32, DP_H_F32, DP_L_F32, POW_L_F32, POW_YBIG_F32};
pub use tanh::{tanh_f32, TANH_F32_CLAMP, TANH_F32_P, TANH_F32_R};
pub use trig::{cos_f32, sin_f32, tan_f32, COS_F32_C, PIO4_F32, SIN_F32_S, TWO_OVER_PI_F32_WORDS};

/// `2^12 + 1`: Veltkamp's splitter for `f32`.
pub const SPLITTER_F32: f32 = 4097.0;

/// `a + b = s + e` exactly (Knuth's two-sum), in `f32`.
#[inline(always)]
pub(crate) fn two_sum32(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a + b = s + e` exactly, given `|a| >= |b|` (or `a == 0`), in `f32`.
#[inline(always)]
pub(crate) fn fast_two_sum32(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    (s, b - (s - a))
}

/// `a * b = p + e` exactly (Dekker's product; `|a|, |b| < 2^114`, no underflow), in `f32`.
#[inline(always)]
pub(crate) fn two_prod32(a: f32, b: f32) -> (f32, f32) {
    let p = a * b;
    let ca = SPLITTER_F32 * a;
    let ah = ca - (ca - a);
    let al = a - ah;
    let cb = SPLITTER_F32 * b;
    let bh = cb - (cb - b);
    let bl = b - bh;
    (p, (((ah * bh - p) + ah * bl) + al * bh) + al * bl)
}

/// `neg ? -x : x`, both computed first.
#[inline(always)]
pub(crate) fn neg_if32(neg: bool, x: f32) -> f32 {
    let n = -x;
    if neg {
        n
    } else {
        x
    }
}

/// `c[0] + z * (c[1] + z * (... + z * c[n-1]))`, innermost first, in `f32`.
#[inline(always)]
pub(crate) fn horner32(c: &[f32], z: f32) -> f32 {
    let mut p = c[c.len() - 1];
    let mut k = c.len() - 1;
    while k > 0 {
        k -= 1;
        p = c[k] + z * p;
    }
    p
}

/// `c[0] + z (c[1] + z (... + z c[n-1]))` in `f64`, innermost first, each step one fused
/// multiply-add (`f64::mul_add`, C's `fma`: exact before its one rounding on every backend).
#[inline(always)]
pub(crate) fn horner_fma(c: &[f64], z: f64) -> f64 {
    let mut p = c[c.len() - 1];
    let mut k = c.len() - 1;
    while k > 0 {
        k -= 1;
        p = z.mul_add(p, c[k]);
    }
    p
}

/// `x P(x²)/Q(x²)` in `f64` for an odd function (`tanh`, `erf`), rounded once to `f32`:
/// `|x|` clamped to `clamp` on its bits (an integer minimum), the sign bit set aside first
/// and put back last, `P` and `Q` by [`horner_fma`]; `NaN` stays itself.
#[inline(always)]
pub(crate) fn odd_rational_f32(x: f32, clamp: f32, p: &[f64], q: &[f64]) -> f32 {
    let b = x.to_bits();
    let a = f64::from(f32::from_bits((b & 0x7fff_ffff).min(clamp.to_bits())));
    let z = a * a;
    let t = ((a * horner_fma(p, z)) / horner_fma(q, z)) as f32;
    let res = f32::from_bits(t.to_bits() | (b & 0x8000_0000));
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// [`odd_rational_f32`] as the C function `float name(float x)`.
pub(crate) fn c_odd_rational_f32(name: &str, clamp: f32, p: &[f64], q: &[f64]) -> String {
    let bits = format!("0x{:x}U", clamp.to_bits());
    format!(
        "static __device__ __forceinline__ float {name}(float x) {{
  const unsigned int b = (unsigned int)__float_as_int(x);
  const unsigned int ab0 = b & 0x7fffffffU;
  const unsigned int ab = ab0 < {bits} ? ab0 : {bits};
  const double a = (double)__int_as_float((int)ab);
  const double z = a * a;
  const float t = (float)((a * ({})) / ({}));
  const float res = __int_as_float((int)((unsigned int)__float_as_int(t) | (b & 0x80000000U)));
  return eq_sel_f32(x != x, x, res);
}}
",
        c_horner_fma(p, "z"),
        c_horner_fma(q, "z")
    )
}

/// [`horner_fma`] as C text (`fma(z, ..., c[k])`).
pub(crate) fn c_horner_fma(c: &[f64], z: &str) -> String {
    let mut s = crate::math::c_double(c[c.len() - 1]);
    for k in (0..c.len() - 1).rev() {
        s = format!("fma({z}, {s}, {})", crate::math::c_double(c[k]));
    }
    s
}

/// Prints `v` as a C `float` literal that reads back as exactly `v`.
pub(crate) fn c_float(v: f32) -> String {
    let s = format!("{v:?}");
    if s.contains('.') || s.contains('e') {
        format!("{s}f")
    } else {
        format!("{s}.0f")
    }
}

/// `c[0] + z * (c[1] + z * (... + z * c[n-1]))` as C text (the order [`horner32`] evaluates).
pub(crate) fn c_horner32(c: &[f32], z: &str) -> String {
    let mut s = c_float(c[c.len() - 1]);
    for k in (0..c.len() - 1).rev() {
        s = format!("{} + {z} * ({s})", c_float(c[k]));
    }
    s
}

/// Replaces every `@NAME@` of `template` by the C `float` literal of the constant `NAME`.
pub(crate) fn fill32(template: &str, consts: &[(&str, f32)]) -> String {
    let mut out = template.to_string();
    for (name, v) in consts {
        out = out.replace(&format!("@{name}@"), &c_float(*v));
    }
    assert!(!out.contains('@'), "a constant of the C math source is not given: {out}");
    out
}

/// The `f32` helpers in C (after `eq_sel_f32` and the double-double helpers).
const HELPERS_C: &str = r#"typedef struct eq_ff { float hi; float lo; } eq_ff;
static __device__ __forceinline__ eq_ff eq_two_sum32(float a, float b) {
  eq_ff r; r.hi = a + b; const float bb = r.hi - a; r.lo = (a - (r.hi - bb)) + (b - bb); return r;
}
static __device__ __forceinline__ eq_ff eq_fast_two_sum32(float a, float b) {
  eq_ff r; r.hi = a + b; r.lo = b - (r.hi - a); return r;
}
static __device__ __forceinline__ eq_ff eq_two_prod32(float a, float b) {
  eq_ff r; r.hi = a * b;
  const float ca = 4097.0f * a; const float ah = ca - (ca - a); const float al = a - ah;
  const float cb = 4097.0f * b; const float bh = cb - (cb - b); const float bl = b - bh;
  r.lo = (((ah * bh - r.hi) + ah * bl) + al * bh) + al * bl; return r;
}
static __device__ __forceinline__ float eq_neg_if32(bool neg, float x) { const float n = -x; return eq_sel_f32(neg, n, x); }
"#;

/// The C text of the `f32` functions of this module (`eq_log_f32`, `eq_sin_f32`,
/// `eq_cos_f32`, `eq_tan_f32`, `eq_tanh_f32`, `eq_erf_f32`, `eq_erfc_f32`, `eq_atan2_f32`, `eq_exp2_f32`, `eq_expm1_f32`,
/// `eq_log2_f32`, `eq_log10_f32`, `eq_log1p_f32`, `eq_pow_f32`), after the `f64` ones (it uses
/// `eq_sel_f32` and `eq_u52_to_f64`).
pub(crate) fn c_source() -> String {
    let mut out = String::from("// f32 functions computed in f32: the same operations as eqfuse_ir::math.\n");
    out.push_str(HELPERS_C);
    out.push_str(&log::c_source());
    out.push_str(&trig::c_source());
    out.push_str(&tanh::c_source());
    out.push_str(&erf::c_source());
    out.push_str(&atan2::c_source());
    out.push_str(&exps::c_source());
    out.push_str(&logs::c_source());
    out.push_str(&pow::c_source());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_transformations_are_exact() {
        let (a, b) = (1.0f32 + f32::EPSILON, 3.0e-8f32);
        let (s, e) = two_sum32(a, b);
        assert_eq!(f64::from(s) + f64::from(e), f64::from(a) + f64::from(b));
        let (p, e) = two_prod32(a, 1.2345678);
        assert_eq!(f64::from(p) + f64::from(e), f64::from(a) * f64::from(1.2345678f32));
        assert_eq!(c_float(1.0), "1.0f");
        assert_eq!(c_horner32(&[1.0, 2.0], "z"), "1.0f + z * (2.0f)");
        assert_eq!(horner32(&[1.0, 2.0, 3.0], 2.0), 17.0);
    }
}
