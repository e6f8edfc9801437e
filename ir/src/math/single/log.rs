//! `log` on `f32`, in `f32`: FreeBSD's `e_logf.c` without its branches. `x = 2^k m` with `m`
//! in `[√½, √2)` (subnormals scaled by `2^25` first), `f = m - 1`, `s = f/(2 + f)`,
//! `log m = f - (hfsq - s (hfsq + R(s²)))` with `hfsq = f²/2` and its degree-4 minimax `R`,
//! `k ln 2` in two parts.

/// `e_logf.c`'s `Lg1 ..= Lg4` (`|(log(1+s) - log(1-s))/s - Lg(s)| < 2^-34.24`).
pub const LG_F32: [f32; 4] = [
    11_184_810.0 / 16_777_216.0,
    13_422_099.0 / 33_554_432.0,
    9_562_606.0 / 33_554_432.0,
    16_293_414.0 / 67_108_864.0,
];
/// `ln 2`, high part (17 significant bits: `k LN2_HI_LOG_F32` exact for `|k| < 128`).
pub const LN2_HI_LOG_F32: f32 = f32::from_bits(0x3f31_7180);
/// `ln 2 - LN2_HI_LOG_F32`, rounded.
pub const LN2_LO_LOG_F32: f32 = f32::from_bits(0x3717_f7d1);
/// `√2` rounded to `f32`.
pub(crate) const SQRT2_F32: f32 = std::f32::consts::SQRT_2;

/// `ln x` in `f32`.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    let (dk, f, hfsq, shr) = log_parts32(x);
    let res = dk * LN2_HI_LOG_F32 - ((hfsq - (shr + dk * LN2_LO_LOG_F32)) - f);
    log_specials32(x, res)
}

/// `x = 2^k (1 + f)` with `1 + f` in `[√½, √2)`: `(k, f, hfsq, s (hfsq + R))`, `log(1 + f)
/// = f - hfsq + s (hfsq + R)`. `x` positive and finite (subnormals scaled by `2^25`).
#[inline(always)]
pub(crate) fn log_parts32(x: f32) -> (f32, f32, f32, f32) {
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 33_554_432.0 } else { x };
    let bits = xs.to_bits();
    let e0 = ((bits >> 23) & 0xff) as i32 - 127 - if sub { 25 } else { 0 };
    let m0 = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let big = m0 > SQRT2_F32;
    let m = if big { m0 * 0.5 } else { m0 };
    let e = if big { e0 + 1 } else { e0 };
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let lg = &LG_F32;
    let t1 = w * (lg[1] + w * lg[3]);
    let t2 = z * (lg[0] + w * lg[2]);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    (e as f32, f, hfsq, s * (hfsq + r))
}

/// The special values of a logarithm: `-inf` at `±0`, NaN below 0, `inf` at `inf`, NaN kept.
#[inline(always)]
pub(crate) fn log_specials32(x: f32, res: f32) -> f32 {
    let res = if x == 0.0 { f32::NEG_INFINITY } else { res };
    let res = if x < 0.0 { f32::NAN } else { res };
    let res = if x == f32::INFINITY { f32::INFINITY } else { res };
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ float eq_log_f32(float x) {
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
  const float hfsq = 0.5f * f * f;
  const float dk = (float)e;
  float res = dk * @LN2_HI@ - ((hfsq - (s * (hfsq + r) + dk * @LN2_LO@)) - f);
  res = eq_sel_f32(x == 0.0f, -__int_as_float(0x7f800000), res);
  res = eq_sel_f32(x < 0.0f, __int_as_float(0x7fc00000), res);
  res = eq_sel_f32(x == __int_as_float(0x7f800000), __int_as_float(0x7f800000), res);
  return eq_sel_f32(x != x, x, res);
}
"#;

/// The C text of `eq_log_f32`.
pub(crate) fn c_source() -> String {
    super::fill32(
        C_TEXT,
        &[
            ("SQRT2", SQRT2_F32),
            ("LG0", LG_F32[0]),
            ("LG1", LG_F32[1]),
            ("LG2", LG_F32[2]),
            ("LG3", LG_F32[3]),
            ("LN2_HI", LN2_HI_LOG_F32),
            ("LN2_LO", LN2_LO_LOG_F32),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_values_and_constants() {
        assert_eq!(LG_F32[0], 0.666_666_6);
        assert!(
            (f64::from(LN2_HI_LOG_F32) + f64::from(LN2_LO_LOG_F32) - std::f64::consts::LN_2).abs() < 1e-12
        );
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f32(f32::NAN).is_nan());
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert!((log_f32(f32::from_bits(1)) - (-103.27893)).abs() < 1e-4);
        assert!((log_f32(f32::MAX) - 88.72284).abs() < 1e-4);
        assert_eq!(log_f32(std::f32::consts::E), 1.0);
    }
}
