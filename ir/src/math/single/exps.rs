//! `exp2` and `expm1` on `f32`, in `f32`, and the exponential of an `f32` pair that `pow`
//! uses. One kernel, `e^{r + r_lo} - 1` as an `f32` pair for `|r| <= 0.35`: `r²` exact
//! (Dekker's product), `r + r²/2` an exact Fast2Sum, `r³ R(r)` (`R` the Taylor polynomial
//! from `1/3!` to `1/8!`, truncation below `2^-31` of the result) and `r_lo (1 + r)` added to
//! the tail; so the only large error is the final rounding.
//!
//! - `2^{z_h + z_l}`: `n` the integer nearest `z_h` (clamped to `[-160, 140]`), `r = (z_h -
//!   n) + z_l` exact (2Sum; `z_h - n` is exact), `r ln 2` as a pair (Dekker's product with
//!   `ln 2` rounded, plus `r` times its tail), `e^{r ln 2} = 1 + (h + l)` rounded once, `2^n`
//!   in two halves (subnormal results round twice, overflow gives `inf`); `exp2 x` is it with
//!   `z_l = 0`, exact at integers;
//! - `expm1 x = 2^k (e^r - 1) + (2^k - 1)` with `x = k ln 2 + r` reduced as `exp_f32` (its
//!   two-part `ln 2`), the sum as a pair (`2^k - 1` an exact 2Sum, its error to the tail), `2^k` capped at `2^100` and the rest applied after; `x`
//!   clamped to `[-20, 89]` (below `-17.4` the result rounds to `-1`, above `88.73` it
//!   overflows), `x` itself for `|x| < 2^-25`.

use super::{fast_two_sum32, horner32, two_prod32, two_sum32};
use crate::math::{INV_LN2_F32, LN2_HI_F32, LN2_LO_F32, SHIFT_F32, SHIFT_F32_BITS};

/// `ln 2` rounded to `f32`.
pub const LN2_F32: f32 = std::f32::consts::LN_2;
/// `ln 2 - LN2_F32`, rounded to `f32`.
pub const LN2_TAIL_F32: f32 = (std::f64::consts::LN_2 - LN2_F32 as f64) as f32;
/// `1/3! ..= 1/8!`: `(e^r - 1 - r - r²/2)/r³` to the truncation `r^9/9! < 2^-31 r`.
pub const EM1_F32_R: [f32; 6] =
    [1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40_320.0];
/// `2^-25`: below it, `expm1 x` rounds to `x`.
const EXPM1_F32_TINY: f32 = 2.980_232_2e-8;
/// `2^{z_h + z_l}` clamps `z_h` to `[EXP2_F32_LOW, EXP2_F32_HIGH]` (the result is `0` or
/// `inf` beyond, and `2^n` still splits into two normal halves).
const EXP2_F32_LOW: f32 = -160.0;
/// See [`EXP2_F32_LOW`].
const EXP2_F32_HIGH: f32 = 140.0;

/// `e^{r + r_lo} - 1 = h + l` (a pair), `|r| <= 0.35`, `|r_lo| <= 2^-23 |r|`.
#[inline(always)]
fn em1_32(r: f32, r_lo: f32) -> (f32, f32) {
    let (pp, pe) = two_prod32(r, r);
    let tail = (r * pp) * horner32(&EM1_F32_R, r);
    let (h, l) = fast_two_sum32(r, 0.5 * pp);
    let lo = ((l + 0.5 * pe) + tail) + (r_lo + r_lo * r);
    fast_two_sum32(h, lo)
}

/// `2^n` for `-126 <= n <= 127`, by its bits.
#[inline(always)]
fn pow2_32(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32) << 23)
}

/// `2^{zh + zl}` in `f32` (`|zl| <= ulp(zh)`; `zh` NaN gives NaN or a number, to be
/// selected away by the caller).
#[inline(always)]
pub(crate) fn exp2_pair32(zh: f32, zl: f32) -> f32 {
    let c = if zh < EXP2_F32_LOW { EXP2_F32_LOW } else { zh };
    let c = if c > EXP2_F32_HIGH { EXP2_F32_HIGH } else { c };
    let cl = if c == zh { zl } else { 0.0 };
    let t = c + SHIFT_F32;
    let nd = t - SHIFT_F32;
    let (rh, rl) = two_sum32(c - nd, cl);
    let (ph, pl) = two_prod32(rh, LN2_F32);
    let (th, tl) = fast_two_sum32(ph, pl + (rh * LN2_TAIL_F32 + rl * LN2_F32));
    let (h, l) = em1_32(th, tl);
    let (e, e1) = fast_two_sum32(1.0, h);
    let p = e + (e1 + l);
    let n = (t.to_bits() as i32).wrapping_sub(SHIFT_F32_BITS as i32);
    let n1 = n >> 1;
    (p * pow2_32(n1)) * pow2_32(n.wrapping_sub(n1))
}

/// `2^x` in `f32`.
#[inline(always)]
pub fn exp2_f32(x: f32) -> f32 {
    let res = exp2_pair32(x, 0.0);
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// `e^x - 1` in `f32`.
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    let c = if x < -20.0 { -20.0 } else { x };
    let c = if c > 89.0 { 89.0 } else { c };
    let t = c * INV_LN2_F32 + SHIFT_F32;
    let kd = t - SHIFT_F32;
    let (r1, r2) = two_sum32(c - kd * LN2_HI_F32, -(kd * LN2_LO_F32));
    let (h, l) = em1_32(r1, r2);
    let k = (t.to_bits() as i32).wrapping_sub(SHIFT_F32_BITS as i32);
    let k2 = if k > 100 { 100 } else { k };
    let p = pow2_32(k2);
    let (c0, corr) = two_sum32(p, -1.0);
    let (s, e) = two_sum32(c0, p * h);
    let res = (s + ((e + p * l) + corr)) * pow2_32(k.wrapping_sub(k2));
    let ax = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let res = if ax < EXPM1_F32_TINY { x } else { res };
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ eq_ff eq_em1_32(float r, float r_lo) {
  const eq_ff pp = eq_two_prod32(r, r);
  const float tail = (r * pp.hi) * (@RPOLY@);
  const eq_ff h = eq_fast_two_sum32(r, 0.5f * pp.hi);
  const float lo = ((h.lo + 0.5f * pp.lo) + tail) + (r_lo + r_lo * r);
  return eq_fast_two_sum32(h.hi, lo);
}
static __device__ __forceinline__ float eq_pow2_32(int n) {
  return __int_as_float((int)((unsigned int)(n + 127) << 23));
}
static __device__ __forceinline__ float eq_exp2_pair32(float zh, float zl) {
  float c = eq_sel_f32(zh < @LOW@, @LOW@, zh);
  c = eq_sel_f32(c > @HIGH@, @HIGH@, c);
  const float cl = eq_sel_f32(c == zh, zl, 0.0f);
  const float t = c + @SHIFT@;
  const float nd = t - @SHIFT@;
  const eq_ff r = eq_two_sum32(c - nd, cl);
  const eq_ff p0 = eq_two_prod32(r.hi, @LN2@);
  const eq_ff q = eq_fast_two_sum32(p0.hi, p0.lo + (r.hi * @LN2_TAIL@ + r.lo * @LN2@));
  const eq_ff h = eq_em1_32(q.hi, q.lo);
  const eq_ff e = eq_fast_two_sum32(1.0f, h.hi);
  const float p = e.hi + (e.lo + h.lo);
  const int n = (int)((unsigned int)__float_as_int(t) - @SHIFT_BITS@U);
  const int n1 = n >> 1;
  return (p * eq_pow2_32(n1)) * eq_pow2_32(n - n1);
}
static __device__ __forceinline__ float eq_exp2_f32(float x) {
  const float res = eq_exp2_pair32(x, 0.0f);
  return eq_sel_f32(x != x, x, res);
}
static __device__ __forceinline__ float eq_expm1_f32(float x) {
  float c = eq_sel_f32(x < -20.0f, -20.0f, x);
  c = eq_sel_f32(c > 89.0f, 89.0f, c);
  const float t = c * @INV_LN2@ + @SHIFT@;
  const float kd = t - @SHIFT@;
  const eq_ff r = eq_two_sum32(c - kd * @LN2_HI@, -(kd * @LN2_LO@));
  const eq_ff h = eq_em1_32(r.hi, r.lo);
  const int k = (int)((unsigned int)__float_as_int(t) - @SHIFT_BITS@U);
  const int k2 = k > 100 ? 100 : k;
  const float p = eq_pow2_32(k2);
  const eq_ff c0 = eq_two_sum32(p, -1.0f);
  const eq_ff s = eq_two_sum32(c0.hi, p * h.hi);
  float res = (s.hi + ((s.lo + p * h.lo) + c0.lo)) * eq_pow2_32(k - k2);
  const float ax = __int_as_float((int)((unsigned int)__float_as_int(x) & 0x7fffffffU));
  res = eq_sel_f32(ax < @TINY@, x, res);
  return eq_sel_f32(x != x, x, res);
}
"#;

/// The C text of `eq_exp2_f32`, `eq_expm1_f32` and their helpers (`eq_exp2_pair32`, which
/// `eq_pow_f32` uses).
pub(crate) fn c_source() -> String {
    let t = C_TEXT
        .replace("@RPOLY@", &super::c_horner32(&EM1_F32_R, "r"))
        .replace("@SHIFT_BITS@", &format!("0x{SHIFT_F32_BITS:x}"));
    super::fill32(
        &t,
        &[
            ("LOW", EXP2_F32_LOW),
            ("HIGH", EXP2_F32_HIGH),
            ("SHIFT", SHIFT_F32),
            ("LN2", LN2_F32),
            ("LN2_TAIL", LN2_TAIL_F32),
            ("INV_LN2", INV_LN2_F32),
            ("LN2_HI", LN2_HI_F32),
            ("LN2_LO", LN2_LO_F32),
            ("TINY", EXPM1_F32_TINY),
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
    fn exp2_is_exact_at_integers() {
        for k in -149..128 {
            let want = if k >= -126 { 2f32.powi(k) } else { f32::from_bits(1 << (k + 149)) };
            assert!(same(exp2_f32(k as f32), want), "exp2({k}) = {:e}", exp2_f32(k as f32));
        }
        assert!(same(exp2_f32(128.0), f32::INFINITY) && same(exp2_f32(-151.0), 0.0));
        assert!(same(exp2_f32(-150.0), 0.0), "2^-150 is a tie, to even");
        assert!(same(exp2_f32(-149.5), f32::from_bits(1)));
    }

    #[test]
    fn special_values() {
        let (inf, nan) = (f32::INFINITY, f32::NAN);
        assert!(same(exp2_f32(inf), inf) && same(exp2_f32(-inf), 0.0) && exp2_f32(nan).is_nan());
        assert!(same(exp2_f32(0.0), 1.0) && same(exp2_f32(-0.0), 1.0) && exp2_f32(127.99).is_finite());
        assert!(same(expm1_f32(0.0), 0.0) && same(expm1_f32(-0.0), -0.0));
        for x in [f32::from_bits(1), -f32::from_bits(1), 1e-30, -1e-20, 2.9e-8] {
            assert!(same(expm1_f32(x), x), "expm1({x})");
        }
        assert!(same(expm1_f32(inf), inf) && same(expm1_f32(-inf), -1.0) && expm1_f32(nan).is_nan());
        assert!(same(expm1_f32(89.0), inf) && same(expm1_f32(88.73), inf) && expm1_f32(88.72).is_finite());
        assert!(same(expm1_f32(-20.0), -1.0) && same(expm1_f32(-17.5), -1.0));
        assert!(expm1_f32(-17.0) > -1.0);
        assert_eq!(expm1_f32(f32::MAX), inf);
    }

    #[test]
    fn close_to_f64() {
        let mut x = -30.0f32;
        while x < 90.0 {
            for v in [x, x * 1e-4] {
                let (a, b) = (expm1_f32(v), f64::from(v).exp_m1());
                assert!(crate::math::ulps_f32(a, b) <= 1.0, "expm1 {v}: {a} vs {b}");
                let (a, b) = (exp2_f32(v), f64::from(v).exp2());
                assert!(crate::math::ulps_f32(a, b) <= 1.0, "exp2 {v}: {a} vs {b}");
            }
            x += 0.0173;
        }
    }
}
