//! `log2`, `log10` and `log1p` on `f32`, in `f32`, on `log_f32`'s reduction and polynomial
//! (`x = 2^k m`, `m` in `[√½, √2)`, `f = m - 1`, `log m = f - hfsq + s (hfsq + R(s²))`):
//!
//! - `log2`, `log10` (FreeBSD's `e_log2f.c`, `e_log10f.c`): `f - hfsq` split into `hi` (its
//!   top 12 bits) and `lo`, each multiplied by `1/ln 2` (or `1/ln 10`) in two parts (the high
//!   part 12 bits, so `hi` times it is exact), `k` (or `k log10 2` in two parts, the high part
//!   of 11 bits, so `k` times it is exact) added as an exact Fast2Sum; exact at powers of two
//!   (`log2`);
//! - `log1p x`: `1 + x = u + c` exactly (2Sum), `log(u + c) = log u + c/u`, `c/u` added with
//!   `k ln2_lo` (FreeBSD's `s_log1pf.c`), so `log1p x = x` for tiny `x`.

use super::log::{log_parts32, log_specials32, LG_F32, LN2_HI_LOG_F32, LN2_LO_LOG_F32, SQRT2_F32};
use super::two_sum32;

/// `1/ln 2`, high part (12 significant bits; `e_log2f.c`'s `ivln2hi`).
pub const IVLN2HI_F32: f32 = f32::from_bits(0x3fb8_b000);
/// `1/ln 2 - IVLN2HI_F32`, rounded.
pub const IVLN2LO_F32: f32 = (std::f64::consts::LOG2_E - IVLN2HI_F32 as f64) as f32;
/// `1/ln 10`, high part (11 significant bits; `e_log10f.c`'s `ivln10hi`).
pub const IVLN10HI_F32: f32 = f32::from_bits(0x3ede_6000);
/// `1/ln 10 - IVLN10HI_F32`, rounded.
pub const IVLN10LO_F32: f32 = (std::f64::consts::LOG10_E - IVLN10HI_F32 as f64) as f32;
/// `log10 2`, high part (11 significant bits: `k LOG10_2HI_F32` is exact for `|k| < 2^13`).
pub const LOG10_2HI_F32: f32 = f32::from_bits(0x3e9a_2000);
/// `log10 2 - LOG10_2HI_F32`, rounded.
pub const LOG10_2LO_F32: f32 = (std::f64::consts::LOG10_2 - LOG10_2HI_F32 as f64) as f32;

/// `x` with the low 12 bits of its representation cleared (its top 12 significant bits).
#[inline(always)]
pub(crate) fn mask12(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0xffff_f000)
}

/// `log2 x` in `f32`.
#[inline(always)]
pub fn log2_f32(x: f32) -> f32 {
    let (dk, f, hfsq, sr) = log_parts32(x);
    let hi = mask12(f - hfsq);
    let lo = ((f - hi) - hfsq) + sr;
    let val_hi = hi * IVLN2HI_F32;
    let val_lo = (lo + hi) * IVLN2LO_F32 + lo * IVLN2HI_F32;
    let w = dk + val_hi;
    let val_lo = val_lo + ((dk - w) + val_hi);
    log_specials32(x, val_lo + w)
}

/// `log10 x` in `f32`.
#[inline(always)]
pub fn log10_f32(x: f32) -> f32 {
    let (dk, f, hfsq, sr) = log_parts32(x);
    let hi = mask12(f - hfsq);
    let lo = ((f - hi) - hfsq) + sr;
    let val_hi = hi * IVLN10HI_F32;
    let y2 = dk * LOG10_2HI_F32;
    let val_lo = (dk * LOG10_2LO_F32 + (lo + hi) * IVLN10LO_F32) + lo * IVLN10HI_F32;
    let w = y2 + val_hi;
    let val_lo = val_lo + ((y2 - w) + val_hi);
    log_specials32(x, val_lo + w)
}

/// `log(1 + x)` in `f32`.
#[inline(always)]
pub fn log1p_f32(x: f32) -> f32 {
    let (u, c) = two_sum32(1.0, x);
    let (dk, f, hfsq, sr) = log_parts32(u);
    let cu = c / u;
    let res = dk * LN2_HI_LOG_F32 - ((hfsq - (sr + (dk * LN2_LO_LOG_F32 + cu))) - f);
    let res = if x == -1.0 { f32::NEG_INFINITY } else { res };
    let res = if x < -1.0 { f32::NAN } else { res };
    let res = if x == f32::INFINITY { f32::INFINITY } else { res };
    let res = if x == 0.0 { x } else { res };
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"typedef struct eq_logp32 { float dk; float f; float hfsq; float sr; } eq_logp32;
static __device__ __forceinline__ float eq_mask12(float x) {
  return __int_as_float((int)((unsigned int)__float_as_int(x) & 0xfffff000U));
}
static __device__ __forceinline__ eq_logp32 eq_log_parts32(float x) {
  const bool sub = x < 1.17549435e-38f;
  const float xs = eq_sel_f32(sub, x * 33554432.0f, x);
  const unsigned int bits = (unsigned int)__float_as_int(xs);
  const int e0 = (int)((bits >> 23) & 0xffU) - 127 - (sub ? 25 : 0);
  const float m0 = __int_as_float((int)((bits & 0x007fffffU) | 0x3f800000U));
  const bool big = m0 > @SQRT2@;
  const float m = eq_sel_f32(big, m0 * 0.5f, m0);
  const int e = big ? e0 + 1 : e0;
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float z = s * s;
  const float w = z * z;
  const float t1 = w * (@LG1@ + w * @LG3@);
  const float t2 = z * (@LG0@ + w * @LG2@);
  const float r = t2 + t1;
  eq_logp32 p;
  p.hfsq = 0.5f * f * f;
  p.dk = (float)e;
  p.f = f;
  p.sr = s * (p.hfsq + r);
  return p;
}
static __device__ __forceinline__ float eq_log_specials32(float x, float res) {
  const float inf = __int_as_float(0x7f800000);
  res = eq_sel_f32(x == 0.0f, -inf, res);
  res = eq_sel_f32(x < 0.0f, __int_as_float(0x7fc00000), res);
  res = eq_sel_f32(x == inf, inf, res);
  return eq_sel_f32(x != x, x, res);
}
static __device__ __forceinline__ float eq_log2_f32(float x) {
  const eq_logp32 p = eq_log_parts32(x);
  const float hi = eq_mask12(p.f - p.hfsq);
  const float lo = ((p.f - hi) - p.hfsq) + p.sr;
  const float val_hi = hi * @IVLN2HI@;
  float val_lo = (lo + hi) * @IVLN2LO@ + lo * @IVLN2HI@;
  const float w = p.dk + val_hi;
  val_lo = val_lo + ((p.dk - w) + val_hi);
  return eq_log_specials32(x, val_lo + w);
}
static __device__ __forceinline__ float eq_log10_f32(float x) {
  const eq_logp32 p = eq_log_parts32(x);
  const float hi = eq_mask12(p.f - p.hfsq);
  const float lo = ((p.f - hi) - p.hfsq) + p.sr;
  const float val_hi = hi * @IVLN10HI@;
  const float y2 = p.dk * @LOG10_2HI@;
  float val_lo = (p.dk * @LOG10_2LO@ + (lo + hi) * @IVLN10LO@) + lo * @IVLN10HI@;
  const float w = y2 + val_hi;
  val_lo = val_lo + ((y2 - w) + val_hi);
  return eq_log_specials32(x, val_lo + w);
}
static __device__ __forceinline__ float eq_log1p_f32(float x) {
  const eq_ff uc = eq_two_sum32(1.0f, x);
  const eq_logp32 p = eq_log_parts32(uc.hi);
  const float cu = uc.lo / uc.hi;
  float res = p.dk * @LN2_HI@ - ((p.hfsq - (p.sr + (p.dk * @LN2_LO@ + cu))) - p.f);
  const float inf = __int_as_float(0x7f800000);
  res = eq_sel_f32(x == -1.0f, -inf, res);
  res = eq_sel_f32(x < -1.0f, __int_as_float(0x7fc00000), res);
  res = eq_sel_f32(x == inf, inf, res);
  res = eq_sel_f32(x == 0.0f, x, res);
  return eq_sel_f32(x != x, x, res);
}
"#;

/// The C text of `eq_log2_f32`, `eq_log10_f32`, `eq_log1p_f32` and their helpers.
pub(crate) fn c_source() -> String {
    super::fill32(
        C_TEXT,
        &[
            ("SQRT2", SQRT2_F32),
            ("LG0", LG_F32[0]),
            ("LG1", LG_F32[1]),
            ("LG2", LG_F32[2]),
            ("LG3", LG_F32[3]),
            ("IVLN2HI", IVLN2HI_F32),
            ("IVLN2LO", IVLN2LO_F32),
            ("IVLN10HI", IVLN10HI_F32),
            ("IVLN10LO", IVLN10LO_F32),
            ("LOG10_2HI", LOG10_2HI_F32),
            ("LOG10_2LO", LOG10_2LO_F32),
            ("LN2_HI", LN2_HI_LOG_F32),
            ("LN2_LO", LN2_LO_LOG_F32),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn the_constants_are_what_they_say() {
        for (hi, lo, v, bits) in [
            (IVLN2HI_F32, IVLN2LO_F32, std::f64::consts::LOG2_E, 12),
            (IVLN10HI_F32, IVLN10LO_F32, std::f64::consts::LOG10_E, 11),
            (LOG10_2HI_F32, LOG10_2LO_F32, std::f64::consts::LOG10_2, 11),
        ] {
            assert_eq!(hi.to_bits().trailing_zeros(), 24 - bits, "{hi}");
            assert!((f64::from(hi) + f64::from(lo) - v).abs() < 1e-11 * v);
        }
        assert_eq!(IVLN2LO_F32.to_bits(), 0xb938_9ad4, "e_log2f.c's ivln2lo");
        assert_eq!(IVLN10LO_F32.to_bits(), 0xb804_ead9, "e_log10f.c's ivln10lo");
    }

    #[test]
    fn log2_is_exact_at_powers_of_two() {
        for k in -149..128 {
            let x = if k >= -126 { 2f32.powi(k) } else { f32::from_bits(1 << (k + 149)) };
            assert!(same(log2_f32(x), k as f32), "log2(2^{k}) = {}", log2_f32(x));
        }
        assert_eq!(log10_f32(10.0), 1.0);
        assert_eq!(log10_f32(1000.0), 3.0);
    }

    #[test]
    fn special_values() {
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        for f in [log2_f32, log10_f32] {
            assert!(same(f(0.0), -inf) && same(f(-0.0), -inf));
            assert!(f(-1.0).is_nan() && f(-inf).is_nan() && f(nan).is_nan());
            assert!(same(f(inf), inf) && same(f(1.0), 0.0));
        }
        assert!(same(log1p_f32(-1.0), -inf));
        assert!(log1p_f32(-1.5).is_nan() && log1p_f32(-inf).is_nan() && log1p_f32(nan).is_nan());
        assert!(same(log1p_f32(inf), inf) && log1p_f32(f32::MAX).is_finite());
        assert!(same(log1p_f32(0.0), 0.0) && same(log1p_f32(-0.0), -0.0));
        for x in [f32::from_bits(1), -f32::from_bits(1), 1e-30, -1e-30, 1e-9, -1e-9] {
            assert!(same(log1p_f32(x), x), "log1p({x})");
        }
    }

    #[test]
    fn close_to_f64() {
        let mut x = 1e-6f32;
        while x < 1e6 {
            for (a, b) in [(log2_f32(x), f64::from(x).log2()), (log10_f32(x), f64::from(x).log10())] {
                assert!(crate::math::ulps_f32(a, b) <= 1.0, "{x}: {a} vs {b}");
            }
            for y in [x, -x / (1.0 + x)] {
                let (a, b) = (log1p_f32(y), f64::from(y).ln_1p());
                assert!(crate::math::ulps_f32(a, b) <= 1.0, "log1p {y}: {a} vs {b}");
            }
            x *= 1.37;
        }
    }
}
