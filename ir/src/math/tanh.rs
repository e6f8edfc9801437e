//! `tanh`: an odd polynomial for `|x| < 0.55`; above, `1 - 2/(e^{2|x|} + 1)` with
//! `e^{2|x|}` as a double-double (relative error about `2^-57`) and the division and the
//! subtraction in double-double, so that the only large error is the final rounding.

use super::{
    fast_two_sum, neg_if, two_prod, two_sum, EXP_TAYLOR, INV_LN2, LN2_HI, LN2_LO, SHIFT, SHIFT_BITS,
};

/// Below it, the polynomial; above it, the exponential (`tanh 0.55 > 1/2`).
pub const TANH_SMALL: f64 = 0.55;
/// `tanh x = 1` (rounded) for `|x| >= 22`; the argument is clamped there.
pub const TANH_CLAMP: f64 = 22.0;
/// `tanh x = x + x^3 P(x^2)` on `|x| <= 0.55`: `P`'s coefficients (a Chebyshev fit of
/// degree 11, relative error `2^-60`).
#[allow(clippy::excessive_precision)]
pub const TANH_P: [f64; 12] = [
    -0.3333333333333333,
    0.1333333333333331,
    -0.05396825396822037,
    0.021869488534073906,
    -0.0088632354631468,
    0.0035921267699626346,
    -0.001455819097151351,
    0.0005899052969492733,
    -0.0002384727248015252,
    9.455133052924858e-05,
    -3.372080112046316e-05,
    7.874274345344419e-06,
];

/// `tanh x` in `f64`.
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    let neg = (x.to_bits() >> 63) != 0;
    let a = f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    // small: a + a (z P(z)) (the sign is applied at the end, so -0 stays -0)
    let z = a * a;
    let small = a + a * (z * super::horner(&TANH_P, z));
    // large: e = e^{2a} = 2^k e^r, r = r1 + r2
    let ac = if a > TANH_CLAMP { TANH_CLAMP } else { a };
    let a2 = ac + ac;
    let t = a2 * INV_LN2 + SHIFT;
    let kd = t - SHIFT;
    let (r1, r2) = two_sum(a2 - kd * LN2_HI, -(kd * LN2_LO));
    // e^r1 = 1 + r1 + r1^2/2 + r1^3 R(r1)
    let (pp, pe) = two_prod(r1, r1);
    let tail = (r1 * pp) * super::horner(&EXP_TAYLOR[3..], r1);
    let (h, l) = fast_two_sum(1.0, r1);
    let (h, l2) = two_sum(h, 0.5 * pp);
    let lo = (((l + l2) + 0.5 * pe) + tail) + (r2 + r2 * r1);
    let (eh, el) = fast_two_sum(h, lo);
    let k = t.to_bits().wrapping_sub(SHIFT_BITS);
    let scale = f64::from_bits(k.wrapping_add(1023) << 52);
    let (eh, el) = (eh * scale, el * scale);
    // d = e + 1; q = 2/d; 1 - q
    let (dh, d1) = fast_two_sum(eh, 1.0);
    let dl = d1 + el;
    let qh = 2.0 / dh;
    let (p, pe2) = two_prod(qh, dh);
    let ql = (((2.0 - p) - pe2) - qh * dl) / dh;
    let (s, e) = fast_two_sum(1.0, -qh);
    let large = s + (e - ql);
    let res = neg_if(neg, if a < TANH_SMALL { small } else { large });
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ double eq_tanh_f64(double x) {
  const bool neg = ((unsigned long long)__double_as_longlong(x) >> 63) != 0ULL;
  const double a = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffULL));
  const double z = a * a;
  const double small = a + a * (z * (@POLY@));
  const double ac = eq_sel_f64(a > @TANH_CLAMP@, @TANH_CLAMP@, a);
  const double a2 = ac + ac;
  const double t = a2 * @INV_LN2@ + @SHIFT@;
  const double kd = t - @SHIFT@;
  const eq_dd r = eq_two_sum(a2 - kd * @LN2_HI@, -(kd * @LN2_LO@));
  const double r1 = r.hi, r2 = r.lo;
  const eq_dd pp = eq_two_prod(r1, r1);
  const double tail = (r1 * pp.hi) * (@RPOLY@);
  const eq_dd h1 = eq_fast_two_sum(1.0, r1);
  const eq_dd h2 = eq_two_sum(h1.hi, 0.5 * pp.hi);
  const double lo = ((((h1.lo + h2.lo) + 0.5 * pp.lo) + tail) + (r2 + r2 * r1));
  const eq_dd e0 = eq_fast_two_sum(h2.hi, lo);
  const unsigned long long k = (unsigned long long)__double_as_longlong(t) - @SHIFT_BITS@ULL;
  const double scale = __longlong_as_double((long long)((k + 1023ULL) << 52));
  const double eh = e0.hi * scale, el = e0.lo * scale;
  const eq_dd d = eq_fast_two_sum(eh, 1.0);
  const double dl = d.lo + el;
  const double qh = 2.0 / d.hi;
  const eq_dd p = eq_two_prod(qh, d.hi);
  const double ql = (((2.0 - p.hi) - p.lo) - qh * dl) / d.hi;
  const eq_dd s = eq_fast_two_sum(1.0, -qh);
  const double large = s.hi + (s.lo - ql);
  const double res = eq_neg_if(neg, eq_sel_f64(a < @TANH_SMALL@, small, large));
  return eq_sel_f64(x != x, x, res);
}
"#;

/// The C text of `eq_tanh_f64` (`eq_tanh_f32` is in `single`).
pub(crate) fn c_source() -> String {
    let t = C_TEXT
        .replace("@POLY@", &super::c_horner(&TANH_P, "z"))
        .replace("@RPOLY@", &super::c_horner(&EXP_TAYLOR[3..], "r1"))
        .replace("@SHIFT_BITS@", &format!("0x{SHIFT_BITS:x}"));
    super::fill(
        &t,
        &[
            ("TANH_CLAMP", TANH_CLAMP),
            ("TANH_SMALL", TANH_SMALL),
            ("INV_LN2", INV_LN2),
            ("SHIFT", SHIFT),
            ("LN2_HI", LN2_HI),
            ("LN2_LO", LN2_LO),
        ],
    )
}
