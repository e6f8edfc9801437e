//! `log2`, `log10` and `log1p`, on `log_f64`'s reduction and polynomial (`x = 2^k m`, `m`
//! in `[sqrt(1/2), sqrt(2))`, `f = m - 1`, `log m = f - hfsq + s (hfsq + R(s^2))`):
//!
//! - `log2`, `log10` (FreeBSD's `e_log2.c`, `e_log10.c`): `f - hfsq` split into `hi` (its
//!   top 21 bits) and `lo`, each multiplied by `1/ln 2` (or `1/ln 10`) in two parts, `k` (or
//!   `k log10 2` in two parts) added in double-double; exact at powers of two (`log2`);
//! - `log1p x`: `1 + x = u + c` exactly (2Sum), `log(u + c) = log u + c/u`, `c/u` added
//!   with `k ln2_lo` (FreeBSD's `s_log1p.c`), so `log1p x = x` for tiny `x`.
//!
//! The `f32` versions compute in `f32` (`single::logs`).

use super::{small_int_to_f64, two_sum, zero_low, LG, LN2_HI, LN2_LO, SQRT2};

/// `1/ln 2`, high part (its low 32 bits zero).
#[allow(clippy::excessive_precision)]
const IVLN2HI: f64 = 1.44269504072144627571e+00;
/// `1/ln 2 - IVLN2HI`.
#[allow(clippy::excessive_precision)]
const IVLN2LO: f64 = 1.67517131648865118353e-10;
/// `1/ln 10`, high part (its low 32 bits zero).
#[allow(clippy::excessive_precision)]
const IVLN10HI: f64 = 4.34294481878168880939e-01;
/// `1/ln 10 - IVLN10HI`.
#[allow(clippy::excessive_precision)]
const IVLN10LO: f64 = 2.50829467116452752298e-11;
/// `log10 2`, high part (`k LOG10_2HI` exact).
#[allow(clippy::excessive_precision)]
const LOG10_2HI: f64 = 3.01029995663611771306e-01;
/// `log10 2 - LOG10_2HI`.
#[allow(clippy::excessive_precision)]
const LOG10_2LO: f64 = 3.69423907715893078616e-13;

/// `x = 2^k (1 + f)` with `1 + f` in `[sqrt(1/2), sqrt(2))`: `(k, f, hfsq, s (hfsq + R))`,
/// `log(1 + f) = f - hfsq + s (hfsq + R)`. `x` positive and finite (subnormals scaled).
#[inline(always)]
pub(crate) fn log_parts(x: f64) -> (f64, f64, f64, f64) {
    let sub = x < 2.2250738585072014e-308;
    let xs = if sub { x * 18014398509481984.0 } else { x };
    let bits = xs.to_bits();
    let e0 = ((bits >> 52) & 0x7ff) as i64 - 1023 - if sub { 54 } else { 0 };
    let m0 = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let big = m0 > SQRT2;
    let m = if big { m0 * 0.5 } else { m0 };
    let e = if big { e0 + 1 } else { e0 };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    (small_int_to_f64(e), f, hfsq, s * (hfsq + r))
}

/// The special values of a logarithm: `-inf` at `±0`, NaN below 0, `inf` at `inf`, NaN kept.
#[inline(always)]
pub(crate) fn log_specials(x: f64, res: f64) -> f64 {
    let res = if x == 0.0 { f64::NEG_INFINITY } else { res };
    let res = if x < 0.0 { f64::NAN } else { res };
    let res = if x == f64::INFINITY { f64::INFINITY } else { res };
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// `log2 x` in `f64`.
#[inline(always)]
pub fn log2_f64(x: f64) -> f64 {
    let (dk, f, hfsq, sr) = log_parts(x);
    let hi = zero_low(f - hfsq);
    let lo = ((f - hi) - hfsq) + sr;
    let val_hi = hi * IVLN2HI;
    let val_lo = (lo + hi) * IVLN2LO + lo * IVLN2HI;
    let w = dk + val_hi;
    let val_lo = val_lo + ((dk - w) + val_hi);
    log_specials(x, val_lo + w)
}

/// `log10 x` in `f64`.
#[inline(always)]
pub fn log10_f64(x: f64) -> f64 {
    let (dk, f, hfsq, sr) = log_parts(x);
    let hi = zero_low(f - hfsq);
    let lo = ((f - hi) - hfsq) + sr;
    let val_hi = hi * IVLN10HI;
    let y2 = dk * LOG10_2HI;
    let val_lo = (dk * LOG10_2LO + (lo + hi) * IVLN10LO) + lo * IVLN10HI;
    let w = y2 + val_hi;
    let val_lo = val_lo + ((y2 - w) + val_hi);
    log_specials(x, val_lo + w)
}

/// `log(1 + x)` in `f64`.
#[inline(always)]
pub fn log1p_f64(x: f64) -> f64 {
    let (u, c) = two_sum(1.0, x);
    let (dk, f, hfsq, sr) = log_parts(u);
    let cu = c / u;
    let res = dk * LN2_HI - ((hfsq - (sr + (dk * LN2_LO + cu))) - f);
    let res = if x == -1.0 { f64::NEG_INFINITY } else { res };
    let res = if x < -1.0 { f64::NAN } else { res };
    let res = if x == f64::INFINITY { f64::INFINITY } else { res };
    let res = if x == 0.0 { x } else { res };
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"typedef struct eq_logp { double dk; double f; double hfsq; double sr; } eq_logp;
static __device__ __forceinline__ eq_logp eq_log_parts(double x) {
  const bool sub = x < 2.2250738585072014e-308;
  const double xs = eq_sel_f64(sub, x * 18014398509481984.0, x);
  const unsigned long long bits = (unsigned long long)__double_as_longlong(xs);
  const long long e0 = (long long)((bits >> 52) & 0x7ffULL) - 1023 - (sub ? 54 : 0);
  const double m0 = __longlong_as_double((long long)((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL));
  const bool big = m0 > @SQRT2@;
  const double m = eq_sel_f64(big, m0 * 0.5, m0);
  const long long e = big ? e0 + 1 : e0;
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double z = s * s;
  const double w = z * z;
  const double t1 = w * (@LG1@ + w * (@LG3@ + w * @LG5@));
  const double t2 = z * (@LG0@ + w * (@LG2@ + w * (@LG4@ + w * @LG6@)));
  const double r = t2 + t1;
  eq_logp p;
  p.hfsq = 0.5 * f * f;
  p.dk = eq_small_int_f64(e);
  p.f = f;
  p.sr = s * (p.hfsq + r);
  return p;
}
static __device__ __forceinline__ double eq_log_specials(double x, double res) {
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  res = eq_sel_f64(x == 0.0, -inf, res);
  res = eq_sel_f64(x < 0.0, __longlong_as_double(0x7ff8000000000000LL), res);
  res = eq_sel_f64(x == inf, inf, res);
  return eq_sel_f64(x != x, x, res);
}
static __device__ __forceinline__ double eq_log2_f64(double x) {
  const eq_logp p = eq_log_parts(x);
  const double hi = eq_zero_low(p.f - p.hfsq);
  const double lo = ((p.f - hi) - p.hfsq) + p.sr;
  const double val_hi = hi * @IVLN2HI@;
  double val_lo = (lo + hi) * @IVLN2LO@ + lo * @IVLN2HI@;
  const double w = p.dk + val_hi;
  val_lo = val_lo + ((p.dk - w) + val_hi);
  return eq_log_specials(x, val_lo + w);
}
static __device__ __forceinline__ double eq_log10_f64(double x) {
  const eq_logp p = eq_log_parts(x);
  const double hi = eq_zero_low(p.f - p.hfsq);
  const double lo = ((p.f - hi) - p.hfsq) + p.sr;
  const double val_hi = hi * @IVLN10HI@;
  const double y2 = p.dk * @LOG10_2HI@;
  double val_lo = (p.dk * @LOG10_2LO@ + (lo + hi) * @IVLN10LO@) + lo * @IVLN10HI@;
  const double w = y2 + val_hi;
  val_lo = val_lo + ((y2 - w) + val_hi);
  return eq_log_specials(x, val_lo + w);
}
static __device__ __forceinline__ double eq_log1p_f64(double x) {
  const eq_dd uc = eq_two_sum(1.0, x);
  const eq_logp p = eq_log_parts(uc.hi);
  const double cu = uc.lo / uc.hi;
  double res = p.dk * @LN2_HI@ - ((p.hfsq - (p.sr + (p.dk * @LN2_LO@ + cu))) - p.f);
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  res = eq_sel_f64(x == -1.0, -inf, res);
  res = eq_sel_f64(x < -1.0, __longlong_as_double(0x7ff8000000000000LL), res);
  res = eq_sel_f64(x == inf, inf, res);
  res = eq_sel_f64(x == 0.0, x, res);
  return eq_sel_f64(x != x, x, res);
}
"#;

/// The C text of `eq_log2_f64`, `eq_log10_f64`, `eq_log1p_f64`.
pub(crate) fn c_source() -> String {
    let mut consts: Vec<(String, f64)> = vec![
        ("SQRT2".into(), SQRT2),
        ("IVLN2HI".into(), IVLN2HI),
        ("IVLN2LO".into(), IVLN2LO),
        ("IVLN10HI".into(), IVLN10HI),
        ("IVLN10LO".into(), IVLN10LO),
        ("LOG10_2HI".into(), LOG10_2HI),
        ("LOG10_2LO".into(), LOG10_2LO),
        ("LN2_HI".into(), LN2_HI),
        ("LN2_LO".into(), LN2_LO),
    ];
    consts.extend(LG.iter().enumerate().map(|(k, v)| (format!("LG{k}"), *v)));
    let refs: Vec<(&str, f64)> = consts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    super::fill(C_TEXT, &refs)
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
    fn log2_is_exact_at_powers_of_two() {
        for k in -1074..1024 {
            let x = pow2_exact(k);
            assert_eq!(log2_f64(x), k as f64, "log2(2^{k})");
        }
    }

    #[test]
    fn special_values() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        for f in [log2_f64, log10_f64] {
            assert!(same(f(0.0), -inf) && same(f(-0.0), -inf));
            assert!(f(-1.0).is_nan() && f(-inf).is_nan() && f(nan).is_nan());
            assert!(same(f(inf), inf) && same(f(1.0), 0.0));
        }
        assert!(same(log1p_f64(-1.0), -inf));
        assert!(log1p_f64(-1.5).is_nan() && log1p_f64(-inf).is_nan() && log1p_f64(nan).is_nan());
        assert!(same(log1p_f64(inf), inf));
        assert!(same(log1p_f64(0.0), 0.0) && same(log1p_f64(-0.0), -0.0));
        for x in [5e-324, -5e-324, 1e-300, -1e-300, 1e-17, -1e-17] {
            assert!(same(log1p_f64(x), x), "log1p({x})");
        }
    }

    #[test]
    fn close_to_the_c_library() {
        let mut x = 1e-6f64;
        while x < 1e6 {
            for (a, b) in [(log2_f64(x), x.log2()), (log10_f64(x), x.log10())] {
                assert!((a - b).abs() <= 2.3e-16 * b.abs(), "{x}: {a} vs {b}");
            }
            for y in [x, -x / (1.0 + x)] {
                let (a, b) = (log1p_f64(y), y.ln_1p());
                assert!((a - b).abs() <= 2.3e-16 * b.abs(), "log1p {y}: {a} vs {b}");
            }
            x *= 1.37;
        }
        for k in 0..23 {
            assert_eq!(log10_f64(10f64.powi(k)), k as f64, "log10(1e{k})");
        }
    }
}
