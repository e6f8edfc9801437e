//! `atan2` on `f32`, in `f32`: FreeBSD's `s_atanf.c` on `t = |y|/|x|` (five intervals by
//! `t`, each with `atan` of a breakpoint in two parts), but the reduced argument `t'`
//! computed from `|y|` and `|x|` directly (`(2|y| - |x|)/(2|x| + |y|)`, ...: one division,
//! the numerators exact where they cancel, the quotient's rounding error recovered from its
//! exact remainder and added to the polynomial's tail), both scaled first by a power of two that puts
//! the larger near `2^24` (so nothing overflows, and nothing underflows unless the result
//! does); `π - θ` for `x < 0`. The special cases of C99 F.9.1.4 are selects at the end.

use super::{neg_if32, two_prod32};

/// `s_atanf.c`'s `atan(0.5)`, `atan(1)`, `atan(1.5)`, `atan(inf)`, high parts.
pub const ATAN_F32_HI: [f32; 4] = [
    f32::from_bits(0x3eed_6338),
    f32::from_bits(0x3f49_0fda),
    f32::from_bits(0x3f7b_985e),
    f32::from_bits(0x3fc9_0fda),
];
/// Their low parts.
pub const ATAN_F32_LO: [f32; 4] = [
    f32::from_bits(0x31ac_3769),
    f32::from_bits(0x3322_2168),
    f32::from_bits(0x3314_0fb4),
    f32::from_bits(0x33a2_2168),
];
/// `s_atanf.c`'s `aT[0 ..= 4]` (`|t'| <= 7/16`).
#[allow(clippy::excessive_precision)]
pub const ATAN_F32_T: [f32; 5] =
    [3.3333328366e-01, -1.9999158382e-01, 1.4253635705e-01, -1.0648017377e-01, 6.1687607318e-02];
/// `π` rounded to `f32`, and `π - PI_F32` rounded.
const PI_F32: (f32, f32) = (f32::from_bits(0x4049_0fdb), f32::from_bits(0xb3bb_bd2e));
/// `π/2`, `π/4`, `3π/4`, rounded to `f32`.
const PIO2_F32: f32 = f32::from_bits(0x3fc9_0fdb);
const PIO4_R_F32: f32 = f32::from_bits(0x3f49_0fdb);
const PI3O4_F32: f32 = f32::from_bits(0x4016_cbe4);

/// `atan2(y, x)` in `f32`.
#[inline(always)]
pub fn atan2_f32(y: f32, x: f32) -> f32 {
    let ay0 = f32::from_bits(y.to_bits() & 0x7fff_ffff);
    let ax0 = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let yneg = (y.to_bits() >> 31) != 0;
    let xneg = (x.to_bits() >> 31) != 0;
    // scale both by 2^(278 - E) (clamped to a normal float), E the exponent of the larger
    let mx = if ay0 > ax0 { ay0 } else { ax0 };
    let se = 278 - (mx.to_bits() >> 23) as i32;
    let se = if se < 1 { 1 } else { se };
    let se = if se > 254 { 254 } else { se };
    let sc = f32::from_bits((se as u32) << 23);
    let (ax, ay) = (ax0 * sc, ay0 * sc);
    // the interval of t = ay/ax, and t' = n/d
    let ay16 = ay * 16.0;
    let i0 = ay16 >= ax * 7.0;
    let i1 = ay16 >= ax * 11.0;
    let i2 = ay16 >= ax * 19.0;
    let i3 = ay16 >= ax * 39.0;
    let (n, d) = (ay, ax);
    let (n, d) = if i0 { (2.0 * ay - ax, 2.0 * ax + ay) } else { (n, d) };
    let (n, d) = if i1 { (ay - ax, ay + ax) } else { (n, d) };
    // ay - 1.5 ax with 1.5 ax = h + eh exactly (ay - h exact: ay/h in [0.79, 1.63])
    let h = 1.5 * ax;
    let eh = 0.5 * ax - (h - ax);
    let (n, d) = if i2 { ((ay - h) - eh, ax + 1.5 * ay) } else { (n, d) };
    let (n, d) = if i3 { (-ax, ay) } else { (n, d) };
    let tr = n / d;
    // the quotient's remainder (exact where n is): atan(tr + tl) ~ atan(tr) + tl
    let (p, pe) = two_prod32(tr, d);
    let tl = ((n - p) - pe) / d;
    let id = usize::from(i0) + usize::from(i1) + usize::from(i2) + usize::from(i3);
    let hi = [0.0, ATAN_F32_HI[0], ATAN_F32_HI[1], ATAN_F32_HI[2], ATAN_F32_HI[3]][id];
    let lo = [0.0, ATAN_F32_LO[0], ATAN_F32_LO[1], ATAN_F32_LO[2], ATAN_F32_LO[3]][id];
    let t = &ATAN_F32_T;
    let z = tr * tr;
    let w = z * z;
    let s1 = z * (t[0] + w * (t[2] + w * t[4]));
    let s2 = w * (t[1] + w * t[3]);
    let th = hi + (tr - ((tr * (s1 + s2) - lo) - tl));
    let th = if xneg { PI_F32.0 - (th - PI_F32.1) } else { th };
    // C99 F.9.1.4
    let inf = f32::INFINITY;
    let res = if ax0 == 0.0 { PIO2_F32 } else { th };
    let res = if ay0 == inf { PIO2_F32 } else { res };
    let at_inf = if ay0 == inf {
        if xneg {
            PI3O4_F32
        } else {
            PIO4_R_F32
        }
    } else if xneg {
        PI_F32.0
    } else {
        0.0
    };
    let res = if ax0 == inf { at_inf } else { res };
    let at_zero = if xneg { PI_F32.0 } else { 0.0 };
    let res = if ay0 == 0.0 { at_zero } else { res };
    let res = neg_if32(yneg, res);
    let nan = x + y;
    if x.is_nan() || y.is_nan() {
        nan
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ float eq_atan2_f32(float y, float x) {
  const unsigned int yb = (unsigned int)__float_as_int(y), xb = (unsigned int)__float_as_int(x);
  const float ay0 = __int_as_float((int)(yb & 0x7fffffffU));
  const float ax0 = __int_as_float((int)(xb & 0x7fffffffU));
  const bool yneg = (yb >> 31) != 0U;
  const bool xneg = (xb >> 31) != 0U;
  const float mx = eq_sel_f32(ay0 > ax0, ay0, ax0);
  int se = 278 - (int)((unsigned int)__float_as_int(mx) >> 23);
  se = se < 1 ? 1 : se;
  se = se > 254 ? 254 : se;
  const float sc = __int_as_float((int)((unsigned int)se << 23));
  const float ax = ax0 * sc, ay = ay0 * sc;
  const float ay16 = ay * 16.0f;
  const bool i0 = ay16 >= ax * 7.0f;
  const bool i1 = ay16 >= ax * 11.0f;
  const bool i2 = ay16 >= ax * 19.0f;
  const bool i3 = ay16 >= ax * 39.0f;
  float n = ay, d = ax;
  n = eq_sel_f32(i0, 2.0f * ay - ax, n); d = eq_sel_f32(i0, 2.0f * ax + ay, d);
  n = eq_sel_f32(i1, ay - ax, n); d = eq_sel_f32(i1, ay + ax, d);
  const float h = 1.5f * ax;
  const float eh = 0.5f * ax - (h - ax);
  n = eq_sel_f32(i2, (ay - h) - eh, n); d = eq_sel_f32(i2, ax + 1.5f * ay, d);
  n = eq_sel_f32(i3, -ax, n); d = eq_sel_f32(i3, ay, d);
  const float tr = n / d;
  const eq_ff p = eq_two_prod32(tr, d);
  const float tl = ((n - p.hi) - p.lo) / d;
  float hi = 0.0f, lo = 0.0f;
  hi = eq_sel_f32(i0, @H0@, hi); lo = eq_sel_f32(i0, @L0@, lo);
  hi = eq_sel_f32(i1, @H1@, hi); lo = eq_sel_f32(i1, @L1@, lo);
  hi = eq_sel_f32(i2, @H2@, hi); lo = eq_sel_f32(i2, @L2@, lo);
  hi = eq_sel_f32(i3, @H3@, hi); lo = eq_sel_f32(i3, @L3@, lo);
  const float z = tr * tr;
  const float w = z * z;
  const float s1 = z * (@T0@ + w * (@T2@ + w * @T4@));
  const float s2 = w * (@T1@ + w * @T3@);
  const float th0 = hi + (tr - ((tr * (s1 + s2) - lo) - tl));
  const float th = eq_sel_f32(xneg, @PI_HI@ - (th0 - @PI_LO@), th0);
  const float inf = __int_as_float(0x7f800000);
  float res = eq_sel_f32(ax0 == 0.0f, @PIO2@, th);
  res = eq_sel_f32(ay0 == inf, @PIO2@, res);
  const float at_inf = eq_sel_f32(ay0 == inf, eq_sel_f32(xneg, @PI3O4@, @PIO4@), eq_sel_f32(xneg, @PI_HI@, 0.0f));
  res = eq_sel_f32(ax0 == inf, at_inf, res);
  res = eq_sel_f32(ay0 == 0.0f, eq_sel_f32(xneg, @PI_HI@, 0.0f), res);
  res = eq_neg_if32(yneg, res);
  const float nan = x + y;
  return eq_sel_f32((x != x) | (y != y), nan, res);
}
"#;

/// The C text of `eq_atan2_f32`.
pub(crate) fn c_source() -> String {
    let mut consts: Vec<(String, f32)> = vec![
        ("PI_HI".into(), PI_F32.0),
        ("PI_LO".into(), PI_F32.1),
        ("PIO2".into(), PIO2_F32),
        ("PIO4".into(), PIO4_R_F32),
        ("PI3O4".into(), PI3O4_F32),
    ];
    consts.extend(ATAN_F32_HI.iter().enumerate().map(|(k, v)| (format!("H{k}"), *v)));
    consts.extend(ATAN_F32_LO.iter().enumerate().map(|(k, v)| (format!("L{k}"), *v)));
    consts.extend(ATAN_F32_T.iter().enumerate().map(|(k, v)| (format!("T{k}"), *v)));
    let refs: Vec<(&str, f32)> = consts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    super::fill32(C_TEXT, &refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn special_values() {
        use std::f32::consts::{FRAC_PI_2 as H, FRAC_PI_4 as Q, PI};
        let inf = f32::INFINITY;
        let cases = [
            (0.0, 0.0, 0.0),
            (-0.0, 0.0, -0.0),
            (0.0, -0.0, PI),
            (-0.0, -0.0, -PI),
            (0.0, -1.0, PI),
            (-0.0, 1.0, -0.0),
            (1.0, 0.0, H),
            (-1.0, -0.0, -H),
            (1.0, -inf, PI),
            (-1.0, inf, -0.0),
            (inf, 1.0, H),
            (-inf, -1.0, -H),
            (inf, -inf, 3.0 * Q),
            (-inf, inf, -Q),
            (1.0, 1.0, Q),
            (-1.0, -1.0, -3.0 * Q),
            (0.0, -inf, PI),
        ];
        for (y, x, want) in cases {
            assert!(same(atan2_f32(y, x), want), "atan2({y}, {x}) = {}", atan2_f32(y, x));
        }
        assert!(atan2_f32(f32::NAN, 1.0).is_nan() && atan2_f32(1.0, f32::NAN).is_nan());
        assert!(same(atan2_f32(f32::from_bits(1), 1e30), 0.0));
        assert_eq!(atan2_f32(1e-30, 1.0), 1e-30);
        assert_eq!(atan2_f32(3.0e38, 3.0e38), Q);
    }
}
