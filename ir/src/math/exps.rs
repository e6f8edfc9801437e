//! `exp2` and `expm1`, and the double-double exponential `erf`/`erfc` use: `x = k ln2 + r`
//! with `r = r1 + r2` kept exactly (two 2Sums), `e^r - 1 = r1 + r1^2/2 + r1^3 R(r1) +
//! r2 (1 + r1)` as a double-double (`R` the Taylor polynomial from `1/3!` to `1/13!`), so
//! that the only large error is the final rounding.
//!
//! - `exp2 x = e^{x ln2}` with `x ln2` as a double-double (`ln 2` in two parts, an exact
//!   product), `2^k` applied in two halves (subnormal and overflowing results);
//! - `expm1 x = 2^k (e^r - 1) + (2^k - 1)`, the sum in double-double (`2^k - 1` is exact
//!   for `-53 <= k <= 53`; beyond, its missing `-1` is added to the low part), `2^k` capped
//!   at `2^1000` and the rest applied after; `x` clamped to `[-40, 710]` (`expm1` rounds to
//!   `-1` below `-38`, overflows above `709.79`), `x` itself for `|x| < 2^-54`.
//!
//! The `f32` versions compute in `f32` (`single::exps`).

use super::{
    fast_two_sum, horner, two_prod, two_sum, EXP_TAYLOR, INV_LN2, LN2, LN2_HI, LN2_LO, SHIFT, SHIFT_BITS,
};

/// `ln 2 - LN2` (the low part of `ln 2` as a double-double).
#[allow(clippy::excessive_precision)]
const LN2_TAIL: f64 = 2.319046813846299558417771e-17;
/// `2^-54`: below it, `expm1 x` rounds to `x`.
const EXPM1_TINY: f64 = 5.551115123125783e-17;

/// `x - kd ln2` as an exact sum `r1 + r2` (up to the rounding of `kd * LN2_LO`), for `x =
/// xh + xl`.
#[inline(always)]
fn reduce(xh: f64, xl: f64, kd: f64) -> (f64, f64) {
    let (a, ae) = two_sum(xh, -(kd * LN2_HI));
    two_sum(a, (xl - kd * LN2_LO) + ae)
}

/// `e^{r1 + r2} - 1` as a double-double, `|r1| <= 0.35`, `|r2| <= 2^-50 |r1|`.
#[inline(always)]
fn em1(r1: f64, r2: f64) -> (f64, f64) {
    let (pp, pe) = two_prod(r1, r1);
    let tail = (r1 * pp) * horner(&EXP_TAYLOR[3..], r1);
    let (h, l) = two_sum(r1, 0.5 * pp);
    let lo = ((l + 0.5 * pe) + tail) + (r2 + r2 * r1);
    fast_two_sum(h, lo)
}

/// `e^{xh + xl} = 2^k (h + l)` (relative error about `2^-60`), for `|xh + xl| < 1100`.
#[inline(always)]
pub(crate) fn exp_dd(xh: f64, xl: f64) -> (f64, f64, i64) {
    let t = (xh + xl) * INV_LN2 + SHIFT;
    let kd = t - SHIFT;
    let (r1, r2) = reduce(xh, xl, kd);
    let (h, l) = em1(r1, r2);
    let (eh, e1) = fast_two_sum(1.0, h);
    let k = t.to_bits().wrapping_sub(SHIFT_BITS) as i64;
    (eh, e1 + l, k)
}

/// `2^k` for `-1022 <= k <= 1023`, by its bits.
#[inline(always)]
pub(crate) fn pow2(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

/// `v 2^k` for `|k| <= 2044`, in two halves (one rounding, right for subnormal results as far
/// as `v` is).
#[inline(always)]
pub(crate) fn scale2(v: f64, k: i64) -> f64 {
    let k1 = k >> 1;
    (v * pow2(k1)) * pow2(k.wrapping_sub(k1))
}

/// `2^x` in `f64`.
#[inline(always)]
pub fn exp2_f64(x: f64) -> f64 {
    let c = if x < -1080.0 { -1080.0 } else { x };
    let c = if c > 1030.0 { 1030.0 } else { c };
    let (ph, pl) = two_prod(c, LN2);
    let (h, l, k) = exp_dd(ph, pl + c * LN2_TAIL);
    let res = scale2(h + l, k);
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// `e^x - 1` in `f64`.
#[inline(always)]
pub fn expm1_f64(x: f64) -> f64 {
    let c = if x < -40.0 { -40.0 } else { x };
    let c = if c > 710.0 { 710.0 } else { c };
    let t = c * INV_LN2 + SHIFT;
    let kd = t - SHIFT;
    let (r1, r2) = reduce(c, 0.0, kd);
    let (h, l) = em1(r1, r2);
    let k = t.to_bits().wrapping_sub(SHIFT_BITS) as i64;
    let k2 = if k > 1000 { 1000 } else { k };
    let p = pow2(k2);
    let c0 = p - 1.0;
    let corr = (p - c0) - 1.0;
    let (s, e) = two_sum(c0, p * h);
    let res = (s + ((e + p * l) + corr)) * pow2(k - k2);
    let ax = f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    let res = if ax < EXPM1_TINY { x } else { res };
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ eq_dd eq_exp_reduce(double xh, double xl, double kd) {
  const eq_dd a = eq_two_sum(xh, -(kd * @LN2_HI@));
  return eq_two_sum(a.hi, (xl - kd * @LN2_LO@) + a.lo);
}
static __device__ __forceinline__ eq_dd eq_em1(double r1, double r2) {
  const eq_dd pp = eq_two_prod(r1, r1);
  const double tail = (r1 * pp.hi) * (@RPOLY@);
  const eq_dd h = eq_two_sum(r1, 0.5 * pp.hi);
  const double lo = ((h.lo + 0.5 * pp.lo) + tail) + (r2 + r2 * r1);
  return eq_fast_two_sum(h.hi, lo);
}
static __device__ __forceinline__ eq_dd eq_exp_dd(double xh, double xl, long long* k) {
  const double t = (xh + xl) * @INV_LN2@ + @SHIFT@;
  const double kd = t - @SHIFT@;
  const eq_dd r = eq_exp_reduce(xh, xl, kd);
  const eq_dd h = eq_em1(r.hi, r.lo);
  const eq_dd e = eq_fast_two_sum(1.0, h.hi);
  *k = (long long)((unsigned long long)__double_as_longlong(t) - @SHIFT_BITS@ULL);
  eq_dd out; out.hi = e.hi; out.lo = e.lo + h.lo; return out;
}
static __device__ __forceinline__ double eq_pow2(long long k) {
  return __longlong_as_double((long long)((unsigned long long)(k + 1023) << 52));
}
static __device__ __forceinline__ double eq_scale2(double v, long long k) {
  const long long k1 = k >> 1;
  return (v * eq_pow2(k1)) * eq_pow2(k - k1);
}
static __device__ __forceinline__ double eq_exp2_f64(double x) {
  double c = eq_sel_f64(x < -1080.0, -1080.0, x);
  c = eq_sel_f64(c > 1030.0, 1030.0, c);
  const eq_dd p = eq_two_prod(c, @LN2@);
  long long k;
  const eq_dd e = eq_exp_dd(p.hi, p.lo + c * @LN2_TAIL@, &k);
  const double res = eq_scale2(e.hi + e.lo, k);
  return eq_sel_f64(x != x, x, res);
}
static __device__ __forceinline__ double eq_expm1_f64(double x) {
  double c = eq_sel_f64(x < -40.0, -40.0, x);
  c = eq_sel_f64(c > 710.0, 710.0, c);
  const double t = c * @INV_LN2@ + @SHIFT@;
  const double kd = t - @SHIFT@;
  const eq_dd r = eq_exp_reduce(c, 0.0, kd);
  const eq_dd h = eq_em1(r.hi, r.lo);
  const long long k = (long long)((unsigned long long)__double_as_longlong(t) - @SHIFT_BITS@ULL);
  const long long k2 = k > 1000 ? 1000 : k;
  const double p = eq_pow2(k2);
  const double c0 = p - 1.0;
  const double corr = (p - c0) - 1.0;
  const eq_dd s = eq_two_sum(c0, p * h.hi);
  double res = (s.hi + ((s.lo + p * h.lo) + corr)) * eq_pow2(k - k2);
  const double ax = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffULL));
  res = eq_sel_f64(ax < @TINY@, x, res);
  return eq_sel_f64(x != x, x, res);
}
"#;

/// The C text of `eq_exp2_f64`, `eq_expm1_f64` and the helpers (`eq_exp_dd`, `eq_scale2`).
pub(crate) fn c_source() -> String {
    let t = C_TEXT
        .replace("@RPOLY@", &super::c_horner(&EXP_TAYLOR[3..], "r1"))
        .replace("@SHIFT_BITS@", &format!("0x{SHIFT_BITS:x}"));
    super::fill(
        &t,
        &[
            ("INV_LN2", INV_LN2),
            ("SHIFT", SHIFT),
            ("LN2", LN2),
            ("LN2_HI", LN2_HI),
            ("LN2_LO", LN2_LO),
            ("LN2_TAIL", LN2_TAIL),
            ("TINY", EXPM1_TINY),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `2^k` for `-1074 <= k <= 1023`, exactly.
    fn pow2_exact(k: i32) -> f64 {
        if k >= -1022 {
            f64::from_bits(((k + 1023) as u64) << 52)
        } else {
            f64::from_bits(1u64 << (k + 1074))
        }
    }

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn exp2_is_exact_at_integers() {
        for k in -1074..1024 {
            assert_eq!(exp2_f64(k as f64), pow2_exact(k), "exp2({k})");
        }
    }

    #[test]
    fn special_values() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        assert!(same(exp2_f64(inf), inf) && same(exp2_f64(-inf), 0.0) && exp2_f64(nan).is_nan());
        assert!(same(exp2_f64(1024.0), inf) && same(exp2_f64(-1075.0), 0.0));
        assert!(same(exp2_f64(-1074.5), 5e-324) && exp2_f64(1023.99).is_finite());
        assert!(same(exp2_f64(0.0), 1.0) && same(exp2_f64(-0.0), 1.0));
        assert!(same(expm1_f64(0.0), 0.0) && same(expm1_f64(-0.0), -0.0));
        for x in [5e-324, -5e-324, 1e-300, -1e-20] {
            assert!(same(expm1_f64(x), x), "expm1({x})");
        }
        assert!(same(expm1_f64(inf), inf) && same(expm1_f64(-inf), -1.0) && expm1_f64(nan).is_nan());
        assert!(same(expm1_f64(710.0), inf) && expm1_f64(709.78).is_finite());
        assert!(same(expm1_f64(-40.0), -1.0) && same(expm1_f64(-38.0), -1.0));
        assert!(expm1_f64(-36.0) > -1.0);
    }

    #[test]
    fn close_to_the_c_library() {
        let mut x = -50.0f64;
        while x < 700.0 {
            let (a, b) = (expm1_f64(x), x.exp_m1());
            assert!((a - b).abs() <= 2.3e-16 * b.abs(), "expm1 {x}: {a} vs {b}");
            let (a, b) = (exp2_f64(x), x.exp2());
            assert!((a - b).abs() <= 2.3e-16 * b.abs(), "exp2 {x}: {a} vs {b}");
            let y = x * 1e-9;
            let (a, b) = (expm1_f64(y), y.exp_m1());
            assert!((a - b).abs() <= 2.3e-16 * b.abs(), "expm1 {y}: {a} vs {b}");
            x += 0.0731;
        }
    }
}
