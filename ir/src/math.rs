//! eqfuse's own `exp`, `log`, `sin`, `cos`, `tan`, `tanh`, `pow` and `atan2`, and (language
//! version 2) `log2`, `log10`, `exp2`, `expm1`, `log1p`, `erf`, `erfc` and `lgamma`, used by every
//! backend: the reference interpreter, the plan interpreter, the VM, and the C and CUDA
//! code generators (which emit the same operations, in the same order, from [`c_source`]).
//! So every backend gives the same bits, and the C compiler vectorises them, where the C
//! library's `expf`/`sin`/`pow` are opaque calls.
//!
//! Each function is built only from IEEE basic operations (`+ - * /`, conversions, bit
//! moves, integer arithmetic on bits) in a fixed order, with no fused multiply-add, and is
//! branch-free: special cases and alternatives are computed and selected (in the C text by
//! bit masks, which gcc vectorises even under `-ftrapping-math`). `sin`, `cos`, `tan`
//! (module `trig`), `tanh`, `pow` and `atan2` are described in their modules, as are `log2`,
//! `log10`, `log1p` (module `logs`), `exp2`, `expm1` (module `exps`, with the double-double
//! exponential the tails of `erf` and `erfc` use), `erf`, `erfc` and `lgamma`. On `f32`,
//! `log`, `sin`, `cos`, `tan`, `tanh`, `atan2`, `pow`, `log2`, `log10`, `log1p`, `exp2` and
//! `expm1` compute in `f32` (module `single`, at twice `f64`'s vector width), as does `exp`
//! (below); `erf`, `erfc` and `lgamma` on `f32` compute in `f64` and round once.
//!
//! - `exp_f32` computes in `f32`, as `exp_f64` below (a two-part `ln 2`, whose high part has
//!   9 bits; a degree-7 Taylor polynomial; `2^k` in two halves), at twice `f64`'s vector
//!   width: every `f32` argument was checked, at most 1 ulp (`ir/tests/exp_f32.rs`);
//! - `exp_f64`: `x = k ln2 + r` with a two-part `ln2` (Cody and Waite), a degree-13 Taylor
//!   polynomial of `e^r` on `|r| <= ln2/2` (summed as `1 + (r + r^2 q(r))`), and `2^k` applied in two halves (so subnormal and
//!   overflowing results are right);
//! - `log_f64`: `x = 2^k m` with `m` in `[sqrt(1/2), sqrt(2))`, `log m = f - (f^2/2 - s (f^2/2
//!   + R(s^2)))` with `f = m - 1`, `s = f / (2 + f)` and fdlibm's minimax polynomial `R`, and
//!   `k ln2` in two parts.
//!
//! The measured error bounds (`exec-cpu/tests/math.rs` checks them on every test run,
//! against `f64` for the `f32` functions and the C library's 80-bit `long double` functions
//! for the `f64` ones, on edge cases and about a million points each; all at most 1 ulp but
//! `erf`/`erfc` (2) and `lgamma` (4) on `f64`) are in `docs/math.md`.

mod atan2;
mod erf;
mod exps;
mod lgamma;
mod logs;
mod pow;
mod single;
mod tanh;
mod trig;

pub use atan2::{
    atan2_f64, ATAN2_BIG, ATAN2_DOWN, ATAN2_TINY, ATAN2_UP, ATAN_HI, ATAN_LO, ATAN_T, PI_HI, PI_LO,
};
pub use erf::{erf_f32, erf_f64, erfc_f32, erfc_f64};
pub use exps::{exp2_f64, expm1_f64};
pub use lgamma::{lgamma_f32, lgamma_f64};
pub use logs::{log10_f64, log1p_f64, log2_f64};
pub use pow::{pow_f64, CP, CP_H, CP_L, DP_H, DP_L, LG2, LG2_H, LG2_L, OVT, POW_L, POW_P, POW_YBIG, TWO53};
pub use single::{
    atan2_f32, cos_f32, exp2_f32, expm1_f32, log10_f32, log1p_f32, log2_f32, log_f32, pow_f32, sin_f32,
    tan_f32, tanh_f32, ATAN_F32_HI, ATAN_F32_LO, ATAN_F32_T, COS_F32_C, CP_F32, CP_H_F32, CP_L_F32, DP_H_F32,
    DP_L_F32, EM1_F32_R, IVLN10HI_F32, IVLN10LO_F32, IVLN2HI_F32, IVLN2LO_F32, LG_F32, LN2_F32,
    LN2_HI_LOG_F32, LN2_LO_LOG_F32, LN2_TAIL_F32, LOG10_2HI_F32, LOG10_2LO_F32, PIO4_F32, POW_L_F32,
    POW_YBIG_F32, SIN_F32_S, TANH_F32_CLAMP, TANH_F32_P, TANH_F32_R, TWO_OVER_PI_F32_WORDS,
};
pub use tanh::{tanh_f64, TANH_CLAMP, TANH_P, TANH_SMALL};
pub use trig::{
    cos_f64, sin_f64, tan_f64, COS_C, PIO2_HI, PIO2_LO, PIO4, PIO4_BOUND, PIO4_LO, SIN_S, TAN_BIG, TAN_T,
    TWO_OVER_PI,
};

/// `1.5 * 2^52`: adding it rounds a small `f64` to an integer kept in the low mantissa bits.
pub const SHIFT: f64 = 6755399441055744.0;
/// The bits of [`SHIFT`].
pub const SHIFT_BITS: u64 = SHIFT.to_bits();
/// `1 / ln 2`.
pub const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// `ln 2` rounded to `f64`.
pub const LN2: f64 = std::f64::consts::LN_2;
/// The high part of `ln 2` (fdlibm's digits, kept as published) (32 significant bits: `k * LN2_HI` is exact for `|k| < 2^11`).
#[allow(clippy::excessive_precision)]
pub const LN2_HI: f64 = 6.93147180369123816490e-01;
/// `ln 2 - LN2_HI`.
#[allow(clippy::excessive_precision)]
pub const LN2_LO: f64 = 1.90821492927058770002e-10;
/// `sqrt 2`.
pub const SQRT2: f64 = std::f64::consts::SQRT_2;
/// `1 / k!` for `k = 0 ..= 13`: the Taylor coefficients of `e^r`.
pub const EXP_TAYLOR: [f64; 14] = [
    1.0,
    1.0,
    0.5,
    0.16666666666666666,
    0.041666666666666664,
    0.008333333333333333,
    0.001388888888888889,
    0.0001984126984126984,
    2.48015873015873e-5,
    2.7557319223985893e-6,
    2.755731922398589e-7,
    2.505210838544172e-8,
    2.08767569878681e-9,
    1.6059043836821613e-10,
];
/// `1.5 * 2^23`: adding it rounds a small `f32` to an integer kept in the low mantissa bits.
pub const SHIFT_F32: f32 = 12582912.0;
/// The bits of [`SHIFT_F32`].
pub const SHIFT_F32_BITS: u32 = SHIFT_F32.to_bits();
/// `1 / ln 2` in `f32`.
pub const INV_LN2_F32: f32 = std::f32::consts::LOG2_E;
/// The high part of `ln 2` for `exp_f32`, 9 significant bits (`355 / 512`): `k * LN2_HI_F32`
/// is exact for every `k` `exp_f32` meets (`|k| <= 150`), and so is `c - k * LN2_HI_F32`.
#[allow(clippy::excessive_precision)] // 355 / 512, exact in `f32`
pub const LN2_HI_F32: f32 = 0.693359375;
/// `ln 2 - LN2_HI_F32`, rounded to `f32`.
pub const LN2_LO_F32: f32 = (std::f64::consts::LN_2 - 0.693359375) as f32;
/// `1 / k!` for `k = 2 ..= 7` in `f32`: `exp_f32`'s `q(r)`, the Taylor polynomial of
/// `(e^r - 1 - r) / r^2` (truncation error below `r^8 / 8! < 5.3e-9` on `|r| <= 0.347`).
pub const EXP_F32_Q: [f32; 6] = [0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];
/// fdlibm's `Lg1 ..= Lg7` (`log_f64`'s `R`), its digits kept as published.
#[allow(clippy::excessive_precision)]
pub const LG: [f64; 7] = [
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
];

/// The functions as methods of `f32` and `f64`, for code generic over the float type.
pub trait EqMath: Sized {
    /// `e^self` ([`exp_f32`], [`exp_f64`]).
    fn eq_exp(self) -> Self;
    /// `ln self` ([`log_f32`], [`log_f64`]).
    fn eq_ln(self) -> Self;
    /// `sin self` ([`sin_f32`], [`sin_f64`]).
    fn eq_sin(self) -> Self;
    /// `cos self` ([`cos_f32`], [`cos_f64`]).
    fn eq_cos(self) -> Self;
    /// `tan self` ([`tan_f32`], [`tan_f64`]).
    fn eq_tan(self) -> Self;
    /// `tanh self` ([`tanh_f32`], [`tanh_f64`]).
    fn eq_tanh(self) -> Self;
    /// `self^b` ([`pow_f32`], [`pow_f64`]).
    fn eq_pow(self, b: Self) -> Self;
    /// `atan2(self, b)` ([`atan2_f32`], [`atan2_f64`]).
    fn eq_atan2(self, b: Self) -> Self;
    /// `log2 self` ([`log2_f32`], [`log2_f64`]).
    fn eq_log2(self) -> Self;
    /// `log10 self` ([`log10_f32`], [`log10_f64`]).
    fn eq_log10(self) -> Self;
    /// `2^self` ([`exp2_f32`], [`exp2_f64`]).
    fn eq_exp2(self) -> Self;
    /// `e^self - 1` ([`expm1_f32`], [`expm1_f64`]).
    fn eq_expm1(self) -> Self;
    /// `ln(1 + self)` ([`log1p_f32`], [`log1p_f64`]).
    fn eq_ln_1p(self) -> Self;
    /// `erf self` ([`erf_f32`], [`erf_f64`]).
    fn eq_erf(self) -> Self;
    /// `erfc self = 1 - erf self` ([`erfc_f32`], [`erfc_f64`]).
    fn eq_erfc(self) -> Self;
    /// `ln |Gamma(self)|` ([`lgamma_f32`], [`lgamma_f64`]).
    fn eq_lgamma(self) -> Self;
}

impl EqMath for f32 {
    #[inline(always)]
    fn eq_exp(self) -> f32 {
        exp_f32(self)
    }
    #[inline(always)]
    fn eq_ln(self) -> f32 {
        log_f32(self)
    }
    #[inline(always)]
    fn eq_sin(self) -> f32 {
        sin_f32(self)
    }
    #[inline(always)]
    fn eq_cos(self) -> f32 {
        cos_f32(self)
    }
    #[inline(always)]
    fn eq_tan(self) -> f32 {
        tan_f32(self)
    }
    #[inline(always)]
    fn eq_tanh(self) -> f32 {
        tanh_f32(self)
    }
    #[inline(always)]
    fn eq_pow(self, b: f32) -> f32 {
        pow_f32(self, b)
    }
    #[inline(always)]
    fn eq_atan2(self, b: f32) -> f32 {
        atan2_f32(self, b)
    }
    #[inline(always)]
    fn eq_log2(self) -> f32 {
        log2_f32(self)
    }
    #[inline(always)]
    fn eq_log10(self) -> f32 {
        log10_f32(self)
    }
    #[inline(always)]
    fn eq_exp2(self) -> f32 {
        exp2_f32(self)
    }
    #[inline(always)]
    fn eq_expm1(self) -> f32 {
        expm1_f32(self)
    }
    #[inline(always)]
    fn eq_ln_1p(self) -> f32 {
        log1p_f32(self)
    }
    #[inline(always)]
    fn eq_erf(self) -> f32 {
        erf_f32(self)
    }
    #[inline(always)]
    fn eq_erfc(self) -> f32 {
        erfc_f32(self)
    }
    #[inline(always)]
    fn eq_lgamma(self) -> f32 {
        lgamma_f32(self)
    }
}

impl EqMath for f64 {
    #[inline(always)]
    fn eq_exp(self) -> f64 {
        exp_f64(self)
    }
    #[inline(always)]
    fn eq_ln(self) -> f64 {
        log_f64(self)
    }
    #[inline(always)]
    fn eq_sin(self) -> f64 {
        sin_f64(self)
    }
    #[inline(always)]
    fn eq_cos(self) -> f64 {
        cos_f64(self)
    }
    #[inline(always)]
    fn eq_tan(self) -> f64 {
        tan_f64(self)
    }
    #[inline(always)]
    fn eq_tanh(self) -> f64 {
        tanh_f64(self)
    }
    #[inline(always)]
    fn eq_pow(self, b: f64) -> f64 {
        pow_f64(self, b)
    }
    #[inline(always)]
    fn eq_atan2(self, b: f64) -> f64 {
        atan2_f64(self, b)
    }
    #[inline(always)]
    fn eq_log2(self) -> f64 {
        log2_f64(self)
    }
    #[inline(always)]
    fn eq_log10(self) -> f64 {
        log10_f64(self)
    }
    #[inline(always)]
    fn eq_exp2(self) -> f64 {
        exp2_f64(self)
    }
    #[inline(always)]
    fn eq_expm1(self) -> f64 {
        expm1_f64(self)
    }
    #[inline(always)]
    fn eq_ln_1p(self) -> f64 {
        log1p_f64(self)
    }
    #[inline(always)]
    fn eq_erf(self) -> f64 {
        erf_f64(self)
    }
    #[inline(always)]
    fn eq_erfc(self) -> f64 {
        erfc_f64(self)
    }
    #[inline(always)]
    fn eq_lgamma(self) -> f64 {
        lgamma_f64(self)
    }
}

/// `e^x` in `f32`, computed in `f32` (twice the vector width of `f64`).
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    let c = x.clamp(-104.0, 89.0);
    let t = c * INV_LN2_F32 + SHIFT_F32;
    let kd = t - SHIFT_F32;
    // r = a - b exactly as r + r_lo: a is exact, b = k ln2_lo rounded once (2Sum)
    let a = c - kd * LN2_HI_F32;
    let b = kd * LN2_LO_F32;
    let r = a - b;
    let bb = r - a;
    let r_lo = (a - (r - bb)) + (-b - bb);
    // e^r = 1 + r + r^2 q(r), the sums carried exactly (Fast2Sum: |r^2 q| < |r|, |s| < 1)
    // and rounded once at the end
    let mut q = EXP_F32_Q[EXP_F32_Q.len() - 1];
    let mut k = EXP_F32_Q.len() - 1;
    while k > 0 {
        k -= 1;
        q = q * r + EXP_F32_Q[k];
    }
    let t2 = (r * r) * q;
    let s = r + t2;
    let s_lo = t2 - (s - r);
    let u = 1.0 + s;
    let u_lo = s - (u - 1.0);
    let p = u + (u_lo + (s_lo + r_lo));
    // k = bits(t) - bits(SHIFT_F32); 2^k as 2^(k >> 1) * 2^(k - (k >> 1)), each a normal float
    let kk = (t.to_bits() as i32).wrapping_sub(SHIFT_F32_BITS as i32);
    let k1 = kk >> 1;
    let s1 = f32::from_bits((k1.wrapping_add(127) as u32) << 23);
    let s2 = f32::from_bits((kk.wrapping_sub(k1).wrapping_add(127) as u32) << 23);
    let res = (p * s1) * s2;
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// `e^x` in `f64`.
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    let c = x.clamp(-746.0, 710.0);
    let t = c * INV_LN2 + SHIFT;
    let kd = t - SHIFT;
    let r = (c - kd * LN2_HI) - kd * LN2_LO;
    // e^r = 1 + (r + r^2 q(r)): the small tail first, the two leading terms last
    let mut q = EXP_TAYLOR[13];
    let mut k = 13;
    while k > 2 {
        k -= 1;
        q = q * r + EXP_TAYLOR[k];
    }
    let p = 1.0 + (r + (r * r) * q);
    // k = bits(t) - bits(SHIFT); 2^k as 2^(k >> 1) * 2^(k - (k >> 1))
    let kk = t.to_bits().wrapping_sub(SHIFT_BITS) as i64;
    let k1 = kk >> 1;
    let s1 = f64::from_bits((k1.wrapping_add(1023) as u64) << 52);
    let s2 = f64::from_bits((kk.wrapping_sub(k1).wrapping_add(1023) as u64) << 52);
    let res = (p * s1) * s2;
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// A small integer `e` (`|e| < 2^51`) as `f64`, by the bits of `SHIFT + e`.
#[inline(always)]
pub(crate) fn small_int_to_f64(e: i64) -> f64 {
    f64::from_bits(SHIFT_BITS.wrapping_add(e as u64)) - SHIFT
}

/// `ln x` in `f64`.
#[inline(always)]
pub fn log_f64(x: f64) -> f64 {
    let (dk, f, hfsq, sr) = logs::log_parts(x);
    logs::log_specials(x, dk * LN2_HI - ((hfsq - (sr + dk * LN2_LO)) - f))
}

// ---- double-double helpers (exact transformations of basic operations) ----

/// `2^27 + 1`: Veltkamp's splitter for `f64`.
pub const SPLITTER: f64 = 134217729.0;
/// `2^52`: `2^52 + v` holds an integer `0 <= v < 2^52` in the low mantissa bits.
pub const TWO52: f64 = 4503599627370496.0;

/// `a + b = s + e` exactly (Knuth's two-sum).
#[inline(always)]
pub(crate) fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a + b = s + e` exactly, given `|a| >= |b|` (or `a == 0`) (Dekker's fast two-sum).
#[inline(always)]
pub(crate) fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// `a * b = p + e` exactly (Dekker's product with Veltkamp's split; `|a|, |b| < 2^995`).
#[inline(always)]
pub(crate) fn two_prod(a: f64, b: f64) -> (f64, f64) {
    let p = a * b;
    let ca = SPLITTER * a;
    let ah = ca - (ca - a);
    let al = a - ah;
    let cb = SPLITTER * b;
    let bh = cb - (cb - b);
    let bl = b - bh;
    (p, (((ah * bh - p) + ah * bl) + al * bh) + al * bl)
}

/// An integer `0 <= v < 2^52` as `f64`, by its bits (no conversion instruction).
#[inline(always)]
pub(crate) fn u52_to_f64(v: u64) -> f64 {
    f64::from_bits(0x4330_0000_0000_0000 | v) - TWO52
}

/// `x` with the low 32 bits of its representation cleared.
#[inline(always)]
pub(crate) fn zero_low(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0xffff_ffff_0000_0000)
}

/// `x` with `|x| <= MAX` as a `bool` select of `-x`: `neg ? -x : x`, both computed first.
#[inline(always)]
pub(crate) fn neg_if(neg: bool, x: f64) -> f64 {
    let n = -x;
    if neg {
        n
    } else {
        x
    }
}

/// Selects by bit masks: `c ? a : b` of two computed values without a branch, which the C
/// compiler if-converts and vectorises even where a floating-point operation might trap
/// (`-ftrapping-math`, the default), where it would sink the arms of a `?:` into branches.
const SEL_C: &str = r#"static __device__ __forceinline__ double eq_sel_f64(bool c, double a, double b) {
  const unsigned long long m = 0ULL - (unsigned long long)c;
  return __longlong_as_double((long long)(((unsigned long long)__double_as_longlong(a) & m) | ((unsigned long long)__double_as_longlong(b) & ~m)));
}
static __device__ __forceinline__ float eq_sel_f32(bool c, float a, float b) {
  const unsigned int m = 0U - (unsigned int)c;
  return __int_as_float((int)(((unsigned int)__float_as_int(a) & m) | ((unsigned int)__float_as_int(b) & ~m)));
}
"#;

/// The double-double helpers in C, for [`c_source`].
const DD_C: &str = r#"typedef struct eq_dd { double hi; double lo; } eq_dd;
static __device__ __forceinline__ eq_dd eq_two_sum(double a, double b) {
  eq_dd r; r.hi = a + b; const double bb = r.hi - a; r.lo = (a - (r.hi - bb)) + (b - bb); return r;
}
static __device__ __forceinline__ eq_dd eq_fast_two_sum(double a, double b) {
  eq_dd r; r.hi = a + b; r.lo = b - (r.hi - a); return r;
}
static __device__ __forceinline__ eq_dd eq_two_prod(double a, double b) {
  eq_dd r; r.hi = a * b;
  const double ca = @SPLITTER@ * a; const double ah = ca - (ca - a); const double al = a - ah;
  const double cb = @SPLITTER@ * b; const double bh = cb - (cb - b); const double bl = b - bh;
  r.lo = (((ah * bh - r.hi) + ah * bl) + al * bh) + al * bl; return r;
}
static __device__ __forceinline__ double eq_u52_to_f64(unsigned long long v) {
  return __longlong_as_double((long long)(0x4330000000000000ULL | v)) - @TWO52@;
}
static __device__ __forceinline__ double eq_zero_low(double x) {
  return __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0xffffffff00000000ULL));
}
static __device__ __forceinline__ double eq_neg_if(bool neg, double x) { const double n = -x; return eq_sel_f64(neg, n, x); }
"#;

/// Prints `v` as a C `double` literal that reads back as exactly `v`.
pub(crate) fn c_double(v: f64) -> String {
    let s = format!("{v:?}");
    if s.contains('.') || s.contains('e') || s.contains("inf") || s.contains("NaN") {
        s
    } else {
        format!("{s}.0")
    }
}

/// Replaces every `@NAME@` of `template` by the C literal of the constant `NAME`.
pub(crate) fn fill(template: &str, consts: &[(&str, f64)]) -> String {
    let mut out = template.to_string();
    for (name, v) in consts {
        out = out.replace(&format!("@{name}@"), &c_double(*v));
    }
    assert!(!out.contains('@'), "a constant of the C math source is not given: {out}");
    out
}

/// `c[0] + z * (c[1] + z * (... + z * c[n-1]))` as C text (the order [`horner`] evaluates).
pub(crate) fn c_horner(c: &[f64], z: &str) -> String {
    let mut s = c_double(c[c.len() - 1]);
    for k in (0..c.len() - 1).rev() {
        s = format!("{} + {z} * ({s})", c_double(c[k]));
    }
    s
}

/// `c[0] + z * (c[1] + z * (... + z * c[n-1]))`, innermost first.
#[inline(always)]
pub(crate) fn horner(c: &[f64], z: f64) -> f64 {
    let mut p = c[c.len() - 1];
    let mut k = c.len() - 1;
    while k > 0 {
        k -= 1;
        p = c[k] + z * p;
    }
    p
}

/// The error of `got` against the exact value `want` (a more precise number), in units in
/// the last place of `f32` at `want` (the subnormal ulp for subnormal results); `0` for an
/// infinity where `want` is past the largest float. How the bounds of `docs/math.md` are
/// measured.
pub fn ulps_f32(got: f32, want: f64) -> f64 {
    if got.is_nan() && want.is_nan() || (got as f64) == want {
        return 0.0;
    }
    if !want.is_finite() || !got.is_finite() {
        // overflow to infinity where the exact value is past the largest float
        return if got.is_infinite() && want.abs() > f32::MAX as f64 { 0.0 } else { f64::INFINITY };
    }
    let w = (want as f32).abs();
    let ulp = if w < f32::MIN_POSITIVE {
        f64::from(f32::from_bits(1))
    } else {
        f64::from(f32::from_bits(w.to_bits() + 1) - w)
    };
    ((got as f64) - want).abs() / ulp
}

/// The same functions in C, for the code generators: `eq_exp_f32`, `eq_exp_f64`,
/// `eq_log_f32`, `eq_log_f64`, `eq_sin_*`, `eq_cos_*`, `eq_tan_*`, `eq_tanh_*`, `eq_pow_*`,
/// `eq_atan2_*`, `eq_log2_*`, `eq_log10_*`, `eq_log1p_*`, `eq_exp2_*`, `eq_expm1_*`,
/// `eq_erf_*`, `eq_erfc_*`, `eq_lgamma_*` (`*` is `f32` or `f64`), declared `static __device__ __forceinline__` (the C prelude
/// makes that plain C), using `__double_as_longlong` and `__longlong_as_double` for the bit
/// moves. Every constant is printed from the Rust constants above, exactly. Built once per
/// process (every plan's translation unit includes it).
pub fn c_source() -> &'static str {
    static SOURCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SOURCE.get_or_init(build_c_source)
}

fn build_c_source() -> String {
    let d = |v: f64| {
        let s = format!("{v:?}");
        if s.contains('.') || s.contains('e') {
            s
        } else {
            format!("{s}.0")
        }
    };
    // an `f32` constant: Rust's shortest text that reads back as the same `f32`, suffixed
    let f = |v: f32| {
        let s = format!("{v:?}");
        if s.contains('.') || s.contains('e') {
            format!("{s}f")
        } else {
            format!("{s}.0f")
        }
    };
    let horner = |coef: &[f64], var: &str, acc: &str| -> String {
        let last = coef.len() - 1;
        let mut s = format!("  double {acc} = {};\n", d(coef[last]));
        for k in (0..last).rev() {
            s.push_str(&format!("  {acc} = {acc} * {var} + {};\n", d(coef[k])));
        }
        s
    };
    let mut out =
        String::from("// eqfuse's math: the same operations as eqfuse_ir::math, in the same order.\n");
    out.push_str(SEL_C);
    out.push_str(&format!(
        "static __device__ __forceinline__ double eq_small_int_f64(long long e) {{\n  \
         return __longlong_as_double((long long)(0x{SHIFT_BITS:x}ULL + (unsigned long long)e)) - {};\n}}\n",
        d(SHIFT)
    ));
    // exp_f32
    out.push_str("static __device__ __forceinline__ float eq_exp_f32(float x) {\n");
    out.push_str("  const float c = eq_sel_f32(x < -104.0f, -104.0f, eq_sel_f32(x > 89.0f, 89.0f, x));\n");
    out.push_str(&format!("  const float t = c * {} + {};\n", f(INV_LN2_F32), f(SHIFT_F32)));
    out.push_str(&format!("  const float kd = t - {};\n", f(SHIFT_F32)));
    out.push_str(&format!("  const float a = c - kd * {};\n", f(LN2_HI_F32)));
    out.push_str(&format!("  const float b = kd * {};\n", f(LN2_LO_F32)));
    out.push_str("  const float r = a - b;\n  const float bb = r - a;\n");
    out.push_str("  const float r_lo = (a - (r - bb)) + (-b - bb);\n");
    let last = EXP_F32_Q.len() - 1;
    out.push_str(&format!("  float q = {};\n", f(EXP_F32_Q[last])));
    for k in (0..last).rev() {
        out.push_str(&format!("  q = q * r + {};\n", f(EXP_F32_Q[k])));
    }
    out.push_str("  const float t2 = (r * r) * q;\n  const float s = r + t2;\n");
    out.push_str("  const float s_lo = t2 - (s - r);\n  const float u = 1.0f + s;\n");
    out.push_str("  const float u_lo = s - (u - 1.0f);\n");
    out.push_str("  const float p = u + (u_lo + (s_lo + r_lo));\n");
    out.push_str(&format!(
        "  const int kk = (int)((unsigned int)__float_as_int(t) - 0x{SHIFT_F32_BITS:x}U);\n"
    ));
    out.push_str("  const int k1 = kk >> 1;\n");
    out.push_str("  const float s1 = __int_as_float((int)((unsigned int)(k1 + 127) << 23));\n");
    out.push_str("  const float s2 = __int_as_float((int)((unsigned int)(kk - k1 + 127) << 23));\n");
    out.push_str("  const float res = (p * s1) * s2;\n");
    out.push_str("  return eq_sel_f32(x != x, x, res);\n}\n");
    // exp_f64
    out.push_str("static __device__ __forceinline__ double eq_exp_f64(double x) {\n");
    out.push_str("  const double c = eq_sel_f64(x < -746.0, -746.0, eq_sel_f64(x > 710.0, 710.0, x));\n");
    out.push_str(&format!("  const double t = c * {} + {};\n", d(INV_LN2), d(SHIFT)));
    out.push_str(&format!("  const double kd = t - {};\n", d(SHIFT)));
    out.push_str(&format!("  const double r = (c - kd * {}) - kd * {};\n", d(LN2_HI), d(LN2_LO)));
    out.push_str(&horner(&EXP_TAYLOR[2..], "r", "q"));
    out.push_str("  const double p = 1.0 + (r + (r * r) * q);\n");
    out.push_str(&format!(
        "  const long long kk = (long long)((unsigned long long)__double_as_longlong(t) - 0x{SHIFT_BITS:x}ULL);\n"
    ));
    out.push_str("  const long long k1 = kk >> 1;\n");
    out.push_str(
        "  const double s1 = __longlong_as_double((long long)((unsigned long long)(k1 + 1023) << 52));\n",
    );
    out.push_str("  const double s2 = __longlong_as_double((long long)((unsigned long long)(kk - k1 + 1023) << 52));\n");
    out.push_str("  const double res = (p * s1) * s2;\n");
    out.push_str("  return eq_sel_f64(x != x, x, res);\n}\n");
    // log_f64
    out.push_str("static __device__ __forceinline__ double eq_log_f64(double x) {\n");
    out.push_str("  const bool sub = x < 2.2250738585072014e-308;\n");
    out.push_str("  const double xs = eq_sel_f64(sub, x * 18014398509481984.0, x);\n");
    out.push_str("  const unsigned long long bits = (unsigned long long)__double_as_longlong(xs);\n");
    out.push_str("  const long long e0 = (long long)((bits >> 52) & 0x7ffULL) - 1023 - (sub ? 54 : 0);\n");
    out.push_str(
        "  const double m0 = __longlong_as_double((long long)((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL));\n",
    );
    out.push_str(&format!("  const bool big = m0 > {};\n", d(SQRT2)));
    out.push_str("  const double m = eq_sel_f64(big, m0 * 0.5, m0);\n");
    out.push_str("  const long long e = big ? e0 + 1 : e0;\n");
    out.push_str("  const double f = m - 1.0;\n");
    out.push_str("  const double s = f / (2.0 + f);\n");
    out.push_str("  const double z = s * s;\n");
    out.push_str("  const double w = z * z;\n");
    out.push_str(&format!(
        "  const double t1 = w * ({} + w * ({} + w * {}));\n",
        d(LG[1]),
        d(LG[3]),
        d(LG[5])
    ));
    out.push_str(&format!(
        "  const double t2 = z * ({} + w * ({} + w * ({} + w * {})));\n",
        d(LG[0]),
        d(LG[2]),
        d(LG[4]),
        d(LG[6])
    ));
    out.push_str("  const double r = t2 + t1;\n");
    out.push_str("  const double hfsq = 0.5 * f * f;\n");
    out.push_str("  const double dk = eq_small_int_f64(e);\n");
    out.push_str(&format!(
        "  double res = dk * {} - ((hfsq - (s * (hfsq + r) + dk * {})) - f);\n",
        d(LN2_HI),
        d(LN2_LO)
    ));
    out.push_str("  res = eq_sel_f64(x == 0.0, -__longlong_as_double(0x7ff0000000000000LL), res);\n");
    out.push_str("  res = eq_sel_f64(x < 0.0, __longlong_as_double(0x7ff8000000000000LL), res);\n");
    out.push_str(
        "  res = eq_sel_f64(x == __longlong_as_double(0x7ff0000000000000LL), __longlong_as_double(0x7ff0000000000000LL), res);\n",
    );
    out.push_str("  return eq_sel_f64(x != x, x, res);\n}\n");
    out.push_str(
        "// sin, cos, tan, tanh, atan2, pow: the same operations as eqfuse_ir::math, in the same order.\n",
    );
    out.push_str(&fill(DD_C, &[("SPLITTER", SPLITTER), ("TWO52", TWO52)]));
    out.push_str(&trig::c_source());
    out.push_str(&tanh::c_source());
    out.push_str(&atan2::c_source());
    out.push_str(&tail_c_source());
    out.push_str(&single::c_source());
    out
}

/// The C text of `pow` and of version 2's functions (which use `log`, `sin` and the
/// double-double helpers, emitted before).
fn tail_c_source() -> String {
    let mut out = pow::c_source();
    out.push_str("// log2, log10, log1p, exp2, expm1, erf, erfc, lgamma: the same, in the same order.\n");
    out.push_str(&logs::c_source());
    out.push_str(&exps::c_source());
    out.push_str(&erf::c_source());
    out.push_str(&lgamma::c_source());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_constants_are_what_they_say() {
        let mut f = 1.0f64;
        for (k, c) in EXP_TAYLOR.iter().enumerate() {
            if k > 0 {
                f *= k as f64;
            }
            assert_eq!(*c, 1.0 / f, "1/{k}!");
        }
        assert_eq!(SHIFT.to_bits(), SHIFT_BITS);
        assert_eq!(LN2_HI.to_bits() & 0x1f_ffff, 0, "k * LN2_HI exact");
        assert!(((LN2_HI + LN2_LO) - std::f64::consts::LN_2).abs() < 1e-16);
    }

    #[test]
    fn special_values() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f64(0.0), 1.0);
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f64(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp_f64(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert_eq!(exp_f64(710.0), f64::INFINITY);
        assert!(exp_f64(709.78).is_finite());
        assert!(exp_f32(f32::NAN).is_nan() && exp_f64(f64::NAN).is_nan());
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f64(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f64(-0.0), f64::NEG_INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f64(-1.0).is_nan());
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(log_f64(f64::INFINITY), f64::INFINITY);
        assert!(log_f32(f32::NAN).is_nan() && log_f64(f64::NAN).is_nan());
        // subnormal arguments and results
        assert!((log_f64(5e-324) - (-744.4400719213812)).abs() < 1e-12);
        assert!((log_f32(1e-45) - (-103.27893)).abs() < 1e-4);
        assert_eq!(exp_f64(-745.0), 5e-324);
        assert_eq!(exp_f64(-745.2), 0.0);
        assert!(exp_f32(-103.5) > 0.0);
    }

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn the_new_constants_are_what_they_say() {
        assert_eq!(ATAN2_BIG, 2f64.powi(960));
        assert_eq!(ATAN2_DOWN, 2f64.powi(-128));
        assert_eq!(ATAN2_TINY, 2f64.powi(300));
        assert_eq!(ATAN2_UP, 2f64.powi(600));
        assert_eq!(PIO4_BOUND.to_bits(), 0x3fe9_21fb_0000_0000);
        assert_eq!(TAN_BIG.to_bits(), 0x3fe5_9428_0000_0000);
        assert_eq!(PIO2_HI + PIO2_LO, std::f64::consts::FRAC_PI_2);
        assert_eq!(TWO_OVER_PI[2], 0xa2f9_836e, "2/π = 0.a2f9836e4e44...");
        assert_eq!(POW_YBIG, 2f64.powi(64));
        assert_eq!(TWO53, 2f64.powi(53));
        assert_eq!(TWO52, 2f64.powi(52));
    }

    #[test]
    fn trig_special_values() {
        for f in [sin_f64, tan_f64] {
            assert!(same(f(0.0), 0.0) && same(f(-0.0), -0.0));
            assert!(same(f(-5e-324), -5e-324) && same(f(1e-300), 1e-300));
        }
        assert_eq!(cos_f64(0.0), 1.0);
        assert_eq!(cos_f64(-0.0), 1.0);
        for f in [sin_f64, cos_f64, tan_f64] {
            assert!(f(f64::INFINITY).is_nan() && f(f64::NEG_INFINITY).is_nan() && f(f64::NAN).is_nan());
            let y = f(f64::MAX);
            assert!(y.is_finite());
        }
        for f in [sin_f32, cos_f32, tan_f32] {
            assert!(f(f32::INFINITY).is_nan() && f(f32::NAN).is_nan());
        }
        assert!(same(f64::from(sin_f32(-0.0)), -0.0));
        // the closest double to a multiple of π/2 (Kahan and McDonald): cos is -4.687e-19
        let x = 6381956970095103.0 * 2f64.powi(797);
        assert!((cos_f64(x) / -4.687165924254628e-19 - 1.0).abs() < 1e-15, "{}", cos_f64(x));
        assert_eq!(sin_f64(x), 1.0);
        assert!((sin_f64(1e22) - -0.8522008497671888).abs() < 2e-16);
        assert!((cos_f64(1e22) - 0.523214785395139).abs() < 2e-16);
    }

    #[test]
    fn tanh_special_values() {
        assert!(same(tanh_f64(0.0), 0.0) && same(tanh_f64(-0.0), -0.0));
        assert_eq!(tanh_f64(f64::INFINITY), 1.0);
        assert_eq!(tanh_f64(f64::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f64(30.0), 1.0);
        assert_eq!(tanh_f32(-30.0), -1.0);
        assert!(tanh_f64(f64::NAN).is_nan() && tanh_f32(f32::NAN).is_nan());
        assert!(same(tanh_f64(5e-324), 5e-324));
    }

    #[test]
    fn atan2_special_values() {
        use std::f64::consts::{FRAC_PI_2 as H, FRAC_PI_4 as Q, PI};
        let inf = f64::INFINITY;
        let cases = [
            (0.0, 0.0, 0.0),
            (-0.0, 0.0, -0.0),
            (0.0, -0.0, PI),
            (-0.0, -0.0, -PI),
            (0.0, -1.0, PI),
            (-0.0, -1.0, -PI),
            (0.0, 1.0, 0.0),
            (-0.0, 1.0, -0.0),
            (1.0, 0.0, H),
            (1.0, -0.0, H),
            (-1.0, 0.0, -H),
            (1.0, -inf, PI),
            (-1.0, -inf, -PI),
            (1.0, inf, 0.0),
            (-1.0, inf, -0.0),
            (inf, 1.0, H),
            (-inf, -1.0, -H),
            (inf, -inf, 3.0 * Q),
            (-inf, -inf, -3.0 * Q),
            (inf, inf, Q),
            (-inf, inf, -Q),
            (1.0, 1.0, Q),
            (-1.0, -1.0, -3.0 * Q),
            (0.0, inf, 0.0),
            (0.0, -inf, PI),
        ];
        for (y, x, want) in cases {
            assert!(same(atan2_f64(y, x), want), "atan2({y}, {x}) = {} (not {want})", atan2_f64(y, x));
            assert!(
                same(f64::from(atan2_f32(y as f32, x as f32)), f64::from(want as f32)),
                "atan2_f32({y}, {x})"
            );
        }
        assert!(atan2_f64(f64::NAN, 1.0).is_nan() && atan2_f64(1.0, f64::NAN).is_nan());
        assert!(same(atan2_f64(5e-324, 1e300), 0.0));
        assert!(same(atan2_f64(1e-300, 1e10), 1e-310));
    }

    #[test]
    fn pow_special_values() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        // C99 F.9.4.4
        let cases = [
            (0.0, -3.0, inf),
            (-0.0, -3.0, -inf),
            (0.0, -2.0, inf),
            (-0.0, -2.5, inf),
            (-0.0, -inf, inf),
            (0.0, -inf, inf),
            (0.0, 3.0, 0.0),
            (-0.0, 3.0, -0.0),
            (-0.0, 2.0, 0.0),
            (-0.0, 0.5, 0.0),
            (-1.0, inf, 1.0),
            (-1.0, -inf, 1.0),
            (1.0, nan, 1.0),
            (1.0, -inf, 1.0),
            (nan, 0.0, 1.0),
            (nan, -0.0, 1.0),
            (inf, 0.0, 1.0),
            (-2.0, 0.5, nan),
            (-8.0, 1.0 / 3.0, nan),
            (0.5, -inf, inf),
            (-0.5, -inf, inf),
            (2.0, -inf, 0.0),
            (-2.0, -inf, 0.0),
            (0.5, inf, 0.0),
            (-2.0, inf, inf),
            (-inf, -3.0, -0.0),
            (-inf, -2.0, 0.0),
            (-inf, -0.5, 0.0),
            (-inf, 3.0, -inf),
            (-inf, 2.0, inf),
            (-inf, 0.5, inf),
            (inf, -1.0, 0.0),
            (inf, 0.5, inf),
            (-2.0, 3.0, -8.0),
            (-2.0, 2.0, 4.0),
            (-2.0, -1.0, -0.5),
            (-1.0, 9007199254740993.0, 1.0),
            (-1.0, 9007199254740991.0, -1.0),
            (2.0, 1024.0, inf),
            (2.0, -1074.0, 5e-324),
            (2.0, -1075.0, 0.0),
            (-2.0, -1075.0, -0.0),
            (-2.0, -1073.0, -1e-323),
            (10.0, 308.0, 1e308),
            (nan, 1.0, nan),
            (2.0, nan, nan),
            (1.0000000001, 1e300, inf),
            (0.9999999999, 1e300, 0.0),
        ];
        for (x, y, want) in cases {
            assert!(same(pow_f64(x, y), want), "pow({x}, {y}) = {} (not {want})", pow_f64(x, y));
            let (xf, yf) = (x as f32, y as f32);
            if f64::from(xf) == x && f64::from(yf) == y {
                let w = (want as f32) as f64;
                assert!(same(f64::from(pow_f32(xf, yf)), w), "pow_f32({x}, {y}) = {}", pow_f32(xf, yf));
            }
        }
        assert_eq!(pow_f64(3.0, 40.0), 12157665459056928801.0);
        assert_eq!(pow_f32(5.756, 2.0), 5.756 * 5.756);
    }

    #[test]
    fn close_to_the_c_library() {
        // a quick check here; the bounds are measured in exec-cpu/tests/math.rs
        let mut x = -20.0f64;
        while x < 20.0 {
            let (a, b) = (exp_f64(x), x.exp());
            assert!(((a - b) / b).abs() < 4e-16, "exp {x}: {a} vs {b}");
            let y = x.abs() + 1e-3;
            let (a, b) = (log_f64(y), y.ln());
            assert!((a - b).abs() <= 4e-16 * b.abs().max(1e-300), "log {y}: {a} vs {b}");
            let xf = x as f32;
            assert!((exp_f32(xf) - xf.exp()).abs() <= f32::EPSILON * xf.exp());
            for (a, b) in [(sin_f64(x), x.sin()), (cos_f64(x), x.cos()), (tanh_f64(x), x.tanh())] {
                assert!((a - b).abs() <= 3e-16, "{x}: {a} vs {b}");
            }
            assert!(((tan_f64(x) - x.tan()) / x.tan()).abs() <= 3e-16, "tan {x}");
            assert!(((pow_f64(y, x) - y.powf(x)) / y.powf(x)).abs() <= 3e-16, "pow {y} {x}");
            assert!((atan2_f64(x, y - 10.0) - x.atan2(y - 10.0)).abs() <= 1e-15, "atan2 {x} {y}");
            x += 0.0123;
        }
    }
}
