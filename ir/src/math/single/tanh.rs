//! `tanh` on `f32`, in `f32`: `|x| < 0.55`: `x + x³ P(x²)` (`P` a degree-6 least-squares
//! fit); above, `1 - 2/(e^{2|x|} + 1)` with `e^{2|x|}` as an `f32` pair (Cody–Waite with
//! `exp_f32`'s two-part `ln 2`, `e^r = 1 + r + r²/2 + r³ R(r)`, `1 + r` exact, the rest added
//! to its tail), `d = e + 1` as a pair, `2/d` as `2/d_hi` less its first-order correction
//! `(2/d_hi)² d_lo / 2` and the subtraction from 1 exact before its one rounding: above 0.55
//! the result is at least 0.5, so the quotient's own rounding (at most half an ulp of a number
//! at most 0.5) costs at most a quarter of an ulp of the result; `|x|` clamped to 10 (where
//! `tanh` rounds to 1).

use super::{fast_two_sum32, horner32, neg_if32, two_sum32};
use crate::math::{INV_LN2_F32, LN2_HI_F32, LN2_LO_F32, SHIFT_F32, SHIFT_F32_BITS};

/// Below it, the polynomial; above it, the exponential.
const TANH_F32_SMALL: f32 = 0.55;
/// `tanh x` rounds to 1 for `|x| >= 10`; the argument is clamped there.
pub const TANH_F32_CLAMP: f32 = 10.0;
/// `tanh x = x + x³ P(x²)` on `|x| <= 0.55`: `P`'s coefficients (a least-squares fit on
/// Chebyshev nodes, relative error of the term below `2^-27` of the result).
#[allow(clippy::excessive_precision)]
pub const TANH_F32_P: [f32; 7] = [
    -0.3333333432674408,
    0.13333332538604736,
    -0.05396806448698044,
    0.021865682676434517,
    -0.008826359175145626,
    0.0034054219722747803,
    -0.0009663078817538917,
];
/// `1/3! ..= 1/8!`: `(e^r - 1 - r - r²/2)/r³` to the truncation `r^9/9! < 2^-32`.
pub const TANH_F32_R: [f32; 6] =
    [1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40_320.0];

/// `tanh x` in `f32`.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let neg = (x.to_bits() >> 31) != 0;
    let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let z = a * a;
    let small = a + a * (z * horner32(&TANH_F32_P, z));
    // e = e^{2a} = 2^k e^r, r = r1 + r2
    let ac = if a > TANH_F32_CLAMP { TANH_F32_CLAMP } else { a };
    let a2 = ac + ac;
    let t = a2 * INV_LN2_F32 + SHIFT_F32;
    let kd = t - SHIFT_F32;
    let (r1, r2) = two_sum32(a2 - kd * LN2_HI_F32, -(kd * LN2_LO_F32));
    let z1 = r1 * r1;
    let tail = (z1 * 0.5 + (z1 * r1) * horner32(&TANH_F32_R, r1)) + r2 * (1.0 + r1);
    let (h, l) = fast_two_sum32(1.0, r1);
    let (eh, el) = fast_two_sum32(h, l + tail);
    let k = t.to_bits().wrapping_sub(SHIFT_F32_BITS);
    let scale = f32::from_bits(k.wrapping_add(127) << 23);
    let (eh, el) = (eh * scale, el * scale);
    // d = e + 1; q = 2/d = qh - (qh² dl)/2 (to first order in dl/dh); 1 - q
    let (dh, d1) = fast_two_sum32(eh, 1.0);
    let dl = d1 + el;
    let qh = 2.0 / dh;
    let corr = (qh * dl) * (0.5 * qh);
    let (s, e) = fast_two_sum32(1.0, -qh);
    let large = s + (e + corr);
    let res = neg_if32(neg, if a < TANH_F32_SMALL { small } else { large });
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ float eq_tanh_f32(float x) {
  const bool neg = ((unsigned int)__float_as_int(x) >> 31) != 0U;
  const float a = __int_as_float((int)((unsigned int)__float_as_int(x) & 0x7fffffffU));
  const float z = a * a;
  const float small = a + a * (z * (@POLY@));
  const float ac = eq_sel_f32(a > @CLAMP@, @CLAMP@, a);
  const float a2 = ac + ac;
  const float t = a2 * @INV_LN2@ + @SHIFT@;
  const float kd = t - @SHIFT@;
  const eq_ff r = eq_two_sum32(a2 - kd * @LN2_HI@, -(kd * @LN2_LO@));
  const float r1 = r.hi, r2 = r.lo;
  const float z1 = r1 * r1;
  const float tail = (z1 * 0.5f + (z1 * r1) * (@RPOLY@)) + r2 * (1.0f + r1);
  const eq_ff h = eq_fast_two_sum32(1.0f, r1);
  const eq_ff e0 = eq_fast_two_sum32(h.hi, h.lo + tail);
  const unsigned int k = (unsigned int)__float_as_int(t) - @SHIFT_BITS@U;
  const float scale = __int_as_float((int)((k + 127U) << 23));
  const float eh = e0.hi * scale, el = e0.lo * scale;
  const eq_ff d = eq_fast_two_sum32(eh, 1.0f);
  const float dl = d.lo + el;
  const float qh = 2.0f / d.hi;
  const float corr = (qh * dl) * (0.5f * qh);
  const eq_ff s = eq_fast_two_sum32(1.0f, -qh);
  const float large = s.hi + (s.lo + corr);
  const float res = eq_neg_if32(neg, eq_sel_f32(a < @SMALL@, small, large));
  return eq_sel_f32(x != x, x, res);
}
"#;

/// The C text of `eq_tanh_f32`.
pub(crate) fn c_source() -> String {
    let t = C_TEXT
        .replace("@POLY@", &super::c_horner32(&TANH_F32_P, "z"))
        .replace("@RPOLY@", &super::c_horner32(&TANH_F32_R, "r1"))
        .replace("@SHIFT_BITS@", &format!("0x{SHIFT_F32_BITS:x}"));
    super::fill32(
        &t,
        &[
            ("CLAMP", TANH_F32_CLAMP),
            ("SMALL", TANH_F32_SMALL),
            ("INV_LN2", INV_LN2_F32),
            ("SHIFT", SHIFT_F32),
            ("LN2_HI", LN2_HI_F32),
            ("LN2_LO", LN2_LO_F32),
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
    fn special_values() {
        assert!(same(tanh_f32(0.0), 0.0) && same(tanh_f32(-0.0), -0.0));
        assert!(same(tanh_f32(f32::from_bits(1)), f32::from_bits(1)));
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(10.0), 1.0);
        assert_eq!(tanh_f32(-f32::MAX), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert!(tanh_f32(9.0) < 1.0);
    }
}
