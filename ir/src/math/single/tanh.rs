//! `tanh` on `f32`: `x P(x²)/Q(x²)` in `f64`, rounded once to `f32`. `tanh x / x` is a
//! Stieltjes function of `x²` (`Σ_k 2/(x² + ((2k+1)π/2)²)`), so a rational function of `x²`
//! converges fast on the whole half-line: `P` of degree 4 and `Q` of degree 5 (a weighted
//! least-squares fit, iterated towards the minimax, on `[0, 9.1]`) are within `2^-29.8` of it,
//! relative. `|x|` is clamped to `9.1` on its bits (an integer minimum: `tanh x` rounds to 1
//! from `9.011`), the sign bit set aside first and put back last. Horner's rule with explicit
//! fused multiply-adds (`f64::mul_add`, C's `fma`: one rounding each on every backend), one
//! division: no exponential, no branch, no table.

use super::{c_odd_rational_f32, odd_rational_f32};

/// `tanh x` rounds to 1 (in `f32`) for `|x| >= 9.011`; `|x|` is clamped to `9.1` (this
/// constant's bits, `0x4111999a`), where `P/Q` still holds.
pub const TANH_F32_CLAMP: f32 = 9.1;
/// `P`, from the constant term: `tanh x = x P(x²)/Q(x²)` on `|x| <= 9.1`.
#[allow(clippy::excessive_precision)]
pub const TANH_F32_P: [f64; 5] = [
    0.9999999989573867,
    0.13781524366154613,
    0.004003614051649534,
    3.148252840242779e-05,
    5.038755879183219e-08,
];
/// `Q` (from the constant 1), the denominator of [`TANH_F32_P`].
#[allow(clippy::excessive_precision)]
pub const TANH_F32_R: [f64; 6] = [
    1.0,
    0.47114856681870704,
    0.027719819489848165,
    0.000419855360382062,
    1.609222221552008e-06,
    7.298994942514609e-10,
];

/// `tanh x` on `f32` (in `f64`, one rounding).
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    odd_rational_f32(x, TANH_F32_CLAMP, &TANH_F32_P, &TANH_F32_R)
}

/// The C text of `eq_tanh_f32`.
pub(crate) fn c_source() -> String {
    c_odd_rational_f32("eq_tanh_f32", TANH_F32_CLAMP, &TANH_F32_P, &TANH_F32_R)
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
        assert!(same(tanh_f32(-f32::from_bits(1)), -f32::from_bits(1)));
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(9.1), 1.0);
        assert_eq!(tanh_f32(10.0), 1.0);
        assert_eq!(tanh_f32(-f32::MAX), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert!(tanh_f32(9.0) < 1.0);
    }

    #[test]
    fn the_c_text_uses_the_constants() {
        let c = c_source();
        assert!(c.contains("0x4111999aU") && c.contains("fma(z, fma(z, 5.038755879183219e-8"), "{c}");
        assert!(!c.contains('@'));
    }
}
