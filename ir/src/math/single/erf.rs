//! `erf` and `erfc` on `f32`: short rational functions in `f64`, rounded once to `f32` (not
//! the `f64` functions of `math::erf`, whose double-double tails cost several times more).
//!
//! `erf x = x P(x²)/Q(x²)`, `P`, `Q` of degree 6, on `|x| <= 3.95` (`|x|` clamped there on its
//! bits: `erf x` rounds to 1 from `3.833`), relative error below `2^-30`; the sign bit set
//! aside first and put back last. `erfc x = e^{-x²} G(|x|)` for `x >= 0`, `G` the scaled
//! complementary error function `erfcx` (smooth, about `1/(x√π)` far out) as a rational
//! function of degree 6 over 7 on `[0, 10.1]` (`|x|` clamped there: `erfc x` rounds to 0 from
//! `10.06`), relative error below `2^-29.7`; `e^{-x²}` by Cody–Waite (`k ln 2` with one
//! constant, its error `|k| 2^-54` far below what is needed) and Taylor's polynomial to degree
//! 8, relative error below `2^-32`, `2^k` (down to `2^-147`) put in the exponent; `x²` in
//! `f64` costs at most `2^-46` relative. `erfc(-x) = 2 - erfc x`. Every step is a basic
//! operation or an explicit fused multiply-add (Horner's rule), the same on every backend;
//! both parts computed and selected, no branch. Both fits are weighted least squares on
//! Chebyshev nodes, iterated towards the minimax (Lawson).

use super::{c_horner_fma, c_odd_rational_f32, horner_fma, odd_rational_f32};

/// `erf x` rounds to `±1` for `|x| >= 3.833`; `|x|` is clamped to `3.95` (on its bits).
pub const ERF_F32_CLAMP: f32 = 3.95;
/// `erf x = x P(x²)/Q(x²)` on `|x| <= 3.95`: `P`, from the constant term.
#[allow(clippy::excessive_precision)]
pub const ERF_F32_P: [f64; 7] = [
    1.128379168010981,
    0.16381501445292682,
    0.05038837502320096,
    0.0028077722219320474,
    0.0002941556719568383,
    -1.1080536692377346e-06,
    -5.0339265491302906e-08,
];
/// `Q` (from the constant 1).
#[allow(clippy::excessive_precision)]
pub const ERF_F32_Q: [f64; 7] = [
    1.0,
    0.4785106441894816,
    0.10415884585327599,
    0.013167043325466218,
    0.0009963708591273419,
    3.748030633362888e-05,
    -7.253180332755637e-07,
];
/// `erfc x` rounds to 0 for `x >= 10.06`; `|x|` is clamped to `10.1` (on its bits).
pub const ERFC_F32_CLAMP: f32 = 10.1;
/// `erfcx x = e^{x²} erfc x = P(x)/Q(x)` on `[0, 10.1]`: `P`, from the constant term.
#[allow(clippy::excessive_precision)]
pub const ERFCX_F32_P: [f64; 7] = [
    1.0000000010735268,
    1.0959747824223638,
    0.5809150662036305,
    0.1533809106905424,
    0.014397935162475381,
    -0.0013081848660505349,
    4.7057111130034706e-05,
];
/// `Q` (from the constant 1).
#[allow(clippy::excessive_precision)]
pub const ERFCX_F32_Q: [f64; 8] = [
    1.0,
    2.2243540706790137,
    2.0908276515578423,
    1.0405418298829074,
    0.2709114753904456,
    0.02554525698719934,
    -0.0023179671065942913,
    8.339188922954356e-05,
];
/// `1/n!`, `n = 0..=8`: `e^r` on `|r| <= ln2/2` to `r^9/9! < 2^-32`.
pub const ERFC_F32_EXP: [f64; 9] =
    [1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40_320.0];
/// `1.5 · 2^52`: adding it rounds to an integer, kept in the low bits.
const SHIFT: f64 = 6_755_399_441_055_744.0;
/// `-ln 2` rounded.
const NEG_LN2: f64 = -std::f64::consts::LN_2;

/// `erf x` on `f32` (in `f64`, one rounding).
#[inline(always)]
pub fn erf_f32(x: f32) -> f32 {
    odd_rational_f32(x, ERF_F32_CLAMP, &ERF_F32_P, &ERF_F32_Q)
}

/// `erfc x = 1 - erf x` on `f32` (in `f64`, one rounding).
#[inline(always)]
pub fn erfc_f32(x: f32) -> f32 {
    let b = x.to_bits();
    let a = f64::from(f32::from_bits((b & 0x7fff_ffff).min(ERFC_F32_CLAMP.to_bits())));
    let z = a * a;
    // e^{-z} = 2^k e^r
    let t = (-z).mul_add(std::f64::consts::LOG2_E, SHIFT);
    let kd = t - SHIFT;
    let r = kd.mul_add(NEG_LN2, -z);
    let k = t.to_bits().wrapping_sub(SHIFT.to_bits());
    let scale = f64::from_bits(k.wrapping_add(1023) << 52);
    let g = horner_fma(&ERFCX_F32_P, a) / horner_fma(&ERFCX_F32_Q, a);
    let v = (horner_fma(&ERFC_F32_EXP, r) * scale) * g;
    let w = 2.0 - v;
    let res = (if (b >> 31) != 0 { w } else { v }) as f32;
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ float eq_erfc_f32(float x) {
  const unsigned int b = (unsigned int)__float_as_int(x);
  const unsigned int ab0 = b & 0x7fffffffU;
  const unsigned int ab = ab0 < @ERFC_CLAMP@U ? ab0 : @ERFC_CLAMP@U;
  const double a = (double)__int_as_float((int)ab);
  const double z = a * a;
  const double t = fma(-z, @LOG2E@, @SHIFT@);
  const double kd = t - @SHIFT@;
  const double r = fma(kd, @NEG_LN2@, -z);
  const unsigned long long k = (unsigned long long)__double_as_longlong(t) - @SHIFT_BITS@ULL;
  const double scale = __longlong_as_double((long long)((k + 1023ULL) << 52));
  const double g = (@G_P@) / (@G_Q@);
  const double v = ((@EXP@) * scale) * g;
  const double w = 2.0 - v;
  const float res = (float)eq_sel_f64((b >> 31) != 0U, w, v);
  return eq_sel_f32(x != x, x, res);
}
"#;

/// The C text of `eq_erf_f32` and `eq_erfc_f32`.
pub(crate) fn c_source() -> String {
    let t = C_TEXT
        .replace("@ERFC_CLAMP@", &format!("0x{:x}", ERFC_F32_CLAMP.to_bits()))
        .replace("@SHIFT_BITS@", &format!("0x{:x}", SHIFT.to_bits()))
        .replace("@G_P@", &c_horner_fma(&ERFCX_F32_P, "a"))
        .replace("@G_Q@", &c_horner_fma(&ERFCX_F32_Q, "a"))
        .replace("@EXP@", &c_horner_fma(&ERFC_F32_EXP, "r"));
    let erf = c_odd_rational_f32("eq_erf_f32", ERF_F32_CLAMP, &ERF_F32_P, &ERF_F32_Q);
    erf + &crate::math::fill(
        &t,
        &[("LOG2E", std::f64::consts::LOG2_E), ("SHIFT", SHIFT), ("NEG_LN2", NEG_LN2)],
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
        let (inf, nan, tiny) = (f32::INFINITY, f32::NAN, f32::from_bits(1));
        assert!(same(erf_f32(0.0), 0.0) && same(erf_f32(-0.0), -0.0));
        assert!(same(erf_f32(inf), 1.0) && same(erf_f32(-inf), -1.0) && erf_f32(nan).is_nan());
        assert!(same(erf_f32(3.95), 1.0) && same(erf_f32(-f32::MAX), -1.0) && erf_f32(3.8) < 1.0);
        // erf x = 2x/√π for the smallest subnormals: 1.128 rounds to 1, 2.257 to 2
        assert!(same(erf_f32(tiny), tiny) && same(erf_f32(-2.0 * tiny), -2.0 * tiny));
        assert!(same(erfc_f32(0.0), 1.0) && same(erfc_f32(-0.0), 1.0) && same(erfc_f32(tiny), 1.0));
        assert!(same(erfc_f32(inf), 0.0) && same(erfc_f32(-inf), 2.0) && erfc_f32(nan).is_nan());
        assert!(same(erfc_f32(10.1), 0.0) && same(erfc_f32(-5.0), 2.0));
        assert!(erfc_f32(10.0) > 0.0 && erfc_f32(10.0) < 1e-44);
    }

    #[test]
    fn the_c_text_uses_the_constants() {
        let c = c_source();
        // the f32 functions do not call the f64 ones (their double-double tails are the cost)
        assert!(!c.contains("eq_erf_f64") && !c.contains("eq_erfc_f64"), "{c}");
        let all = crate::math::c_source();
        assert_eq!(all.matches("float eq_erf_f32(float x)").count(), 1);
        assert_eq!(all.matches("float eq_erfc_f32(float x)").count(), 1);
        assert!(
            c.contains("0x407ccccdU") && c.contains("0x4121999aU") && c.contains("0x4338000000000000ULL"),
            "{c}"
        );
        assert!(c.contains("fma(z, fma(z, fma(z, fma(z, fma(z, fma(z, -5.0339265491302906e-8"), "{c}");
    }
}
