//! `atan2`: fdlibm's `atan` on `t = |y|/|x|` (five intervals, each with its reduced
//! argument `t'` and `atan` of a breakpoint in two parts), but with `t'` computed from `|y|`
//! and `|x|` directly as a double-double quotient (its numerator and denominator exact), so
//! that the division's rounding does not reach the result; `π - θ` for `x < 0` in
//! double-double too. The special cases are selects.

use super::{neg_if, two_prod, two_sum};

/// fdlibm's `atan(0.5)`, `atan(1)`, `atan(1.5)`, `atan(inf)`, high parts.
#[allow(clippy::excessive_precision)]
pub const ATAN_HI: [f64; 4] = [
    4.63647609000806093515e-01,
    std::f64::consts::FRAC_PI_4,
    9.82793723247329054082e-01,
    std::f64::consts::FRAC_PI_2,
];
/// Their low parts.
#[allow(clippy::excessive_precision)]
pub const ATAN_LO: [f64; 4] = [
    2.26987774529616870924e-17,
    3.06161699786838301793e-17,
    1.39033110312309984516e-17,
    6.12323399573676603587e-17,
];
/// fdlibm's `aT[0 ..= 10]`.
#[allow(clippy::excessive_precision)]
pub const ATAN_T: [f64; 11] = [
    3.33333333333329318027e-01,
    -1.99999999998764832476e-01,
    1.42857142725034663711e-01,
    -1.11111104054623557880e-01,
    9.09088713343650656196e-02,
    -7.69187620504482999495e-02,
    6.66107313738753120669e-02,
    -5.83357013379057348645e-02,
    4.97687799461593236017e-02,
    -3.65315727442169155270e-02,
    1.62858201153657823623e-02,
];
/// `π` rounded to `f64`.
pub const PI_HI: f64 = std::f64::consts::PI;
/// `π - PI_HI`.
#[allow(clippy::excessive_precision)]
pub const PI_LO: f64 = 1.2246467991473531772e-16;

/// `2^960`: above it, both arguments are scaled by [`ATAN2_DOWN`].
pub const ATAN2_BIG: f64 = 9.7453140114e288;
/// `2^-128`.
pub const ATAN2_DOWN: f64 = 2.938735877055719e-39;
/// `2^300`: below it, both arguments are scaled by [`ATAN2_UP`] (so that the exact product
/// in the quotient's remainder does not underflow unless the result does).
pub const ATAN2_TINY: f64 = 2.037035976334486e90;
/// `2^600`.
pub const ATAN2_UP: f64 = 4.149515568880993e180;

/// `atan2(y, x)` in `f64`.
#[inline(always)]
pub fn atan2_f64(y: f64, x: f64) -> f64 {
    let ay0 = f64::from_bits(y.to_bits() & 0x7fff_ffff_ffff_ffff);
    let ax0 = f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    // scale both by a power of 2 so that the exact products stay in range
    let mx = if ax0 > ay0 { ax0 } else { ay0 };
    let sc = if mx > ATAN2_BIG { ATAN2_DOWN } else { 1.0 };
    let sc = if mx < ATAN2_TINY { ATAN2_UP } else { sc };
    let ax = ax0 * sc;
    let ay = ay0 * sc;
    let t = ay / ax;
    // t' = N / D for each interval
    let ax2 = ax + ax;
    let ay2 = ay + ay;
    let (d0h, d0l) = two_sum(ax2, ay);
    let n0 = ay2 - ax;
    let (d1h, d1l) = two_sum(ay, ax);
    let n1 = ay - ax;
    let (s3, e3) = two_sum(ax2, ax);
    let (n2h, n2l) = two_sum(ay2 - s3, -e3);
    let (u3, ue3) = two_sum(ay2, ay);
    let (d2h, d2x) = two_sum(ax2, u3);
    let d2l = d2x + ue3;
    let id0 = t >= 0.4375;
    let id1 = t >= 0.6875;
    let id2 = t >= 1.1875;
    let id3 = t >= 2.4375;
    let nh = if id0 { n0 } else { ay };
    let dh = if id0 { d0h } else { ax };
    let dl = if id0 { d0l } else { 0.0 };
    let ah = if id0 { ATAN_HI[0] } else { 0.0 };
    let al = if id0 { ATAN_LO[0] } else { 0.0 };
    let nh = if id1 { n1 } else { nh };
    let dh = if id1 { d1h } else { dh };
    let dl = if id1 { d1l } else { dl };
    let ah = if id1 { ATAN_HI[1] } else { ah };
    let al = if id1 { ATAN_LO[1] } else { al };
    let nh = if id2 { n2h } else { nh };
    let nl = if id2 { n2l } else { 0.0 };
    let dh = if id2 { d2h } else { dh };
    let dl = if id2 { d2l } else { dl };
    let ah = if id2 { ATAN_HI[2] } else { ah };
    let al = if id2 { ATAN_LO[2] } else { al };
    let n3 = -ax;
    let nh = if id3 { n3 } else { nh };
    let nl = if id3 { 0.0 } else { nl };
    let dh = if id3 { ay } else { dh };
    let dl = if id3 { 0.0 } else { dl };
    let ah = if id3 { ATAN_HI[3] } else { ah };
    let al = if id3 { ATAN_LO[3] } else { al };
    // the quotient qh + ql
    let qh = nh / dh;
    let (p, pe) = two_prod(qh, dh);
    let ql = (((nh - p) - pe) + (nl - qh * dl)) / dh;
    // theta = ah + qh + small, small = al + ql / (1 + qh^2) - qh (s1 + s2) (fdlibm's atan)
    let at = &ATAN_T;
    let z = qh * qh;
    let w = z * z;
    let s1 = z * (at[0] + w * (at[2] + w * (at[4] + w * (at[6] + w * (at[8] + w * at[10])))));
    let s2 = w * (at[1] + w * (at[3] + w * (at[5] + w * (at[7] + w * at[9]))));
    let small = (ql * (1.0 - z) + al) - qh * (s1 + s2);
    // special cases: theta = 0, π/2, π/4
    let yinf = ay0 > f64::MAX;
    let xinf = ax0 > f64::MAX;
    let zero = ay0 == 0.0 || (xinf && !yinf);
    let half = (ax0 == 0.0 && ay0 != 0.0) || (yinf && !xinf);
    let quarter = yinf && xinf;
    let special = zero || half || quarter;
    let qh = if special { 0.0 } else { qh };
    let ah = if zero { 0.0 } else { ah };
    let small = if zero { 0.0 } else { small };
    let ah = if half { ATAN_HI[3] } else { ah };
    let small = if half { ATAN_LO[3] } else { small };
    let ah = if quarter { ATAN_HI[1] } else { ah };
    let small = if quarter { ATAN_LO[1] } else { small };
    // x >= +0: theta; x <= -0: π - theta; one rounding at the end
    let (sh, se) = two_sum(ah, qh);
    let pos = sh + (se + small);
    let (h1, e1) = two_sum(PI_HI, -ah);
    let (h2, e2) = two_sum(h1, -qh);
    let negx = h2 + (((e1 + e2) + PI_LO) - small);
    let res = if (x.to_bits() >> 63) != 0 { negx } else { pos };
    let res = neg_if((y.to_bits() >> 63) != 0, res);
    let nan = x + y;
    if x.is_nan() || y.is_nan() {
        nan
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ double eq_atan2_f64(double y, double x) {
  const double ay0 = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(y) & 0x7fffffffffffffffULL));
  const double ax0 = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffULL));
  const double mx = eq_sel_f64(ax0 > ay0, ax0, ay0);
  double sc = eq_sel_f64(mx > @BIG@, @DOWN@, 1.0);
  sc = eq_sel_f64(mx < @TINY@, @UP@, sc);
  const double ax = ax0 * sc;
  const double ay = ay0 * sc;
  const double t = ay / ax;
  const double ax2 = ax + ax;
  const double ay2 = ay + ay;
  const eq_dd d0 = eq_two_sum(ax2, ay);
  const double n0 = ay2 - ax;
  const eq_dd d1 = eq_two_sum(ay, ax);
  const double n1 = ay - ax;
  const eq_dd s3 = eq_two_sum(ax2, ax);
  const eq_dd n2 = eq_two_sum(ay2 - s3.hi, -s3.lo);
  const eq_dd u3 = eq_two_sum(ay2, ay);
  const eq_dd d2 = eq_two_sum(ax2, u3.hi);
  const double d2l = d2.lo + u3.lo;
  const bool id0 = t >= 0.4375, id1 = t >= 0.6875, id2 = t >= 1.1875, id3 = t >= 2.4375;
  double nh = eq_sel_f64(id0, n0, ay);
  double dh = eq_sel_f64(id0, d0.hi, ax);
  double dl = eq_sel_f64(id0, d0.lo, 0.0);
  double ah = eq_sel_f64(id0, @AH0@, 0.0);
  double al = eq_sel_f64(id0, @AL0@, 0.0);
  nh = eq_sel_f64(id1, n1, nh);
  dh = eq_sel_f64(id1, d1.hi, dh);
  dl = eq_sel_f64(id1, d1.lo, dl);
  ah = eq_sel_f64(id1, @AH1@, ah);
  al = eq_sel_f64(id1, @AL1@, al);
  nh = eq_sel_f64(id2, n2.hi, nh);
  double nl = eq_sel_f64(id2, n2.lo, 0.0);
  dh = eq_sel_f64(id2, d2.hi, dh);
  dl = eq_sel_f64(id2, d2l, dl);
  ah = eq_sel_f64(id2, @AH2@, ah);
  al = eq_sel_f64(id2, @AL2@, al);
  const double n3 = -ax;
  nh = eq_sel_f64(id3, n3, nh);
  nl = eq_sel_f64(id3, 0.0, nl);
  dh = eq_sel_f64(id3, ay, dh);
  dl = eq_sel_f64(id3, 0.0, dl);
  ah = eq_sel_f64(id3, @AH3@, ah);
  al = eq_sel_f64(id3, @AL3@, al);
  const double qh = nh / dh;
  const eq_dd p = eq_two_prod(qh, dh);
  const double ql = (((nh - p.hi) - p.lo) + (nl - qh * dl)) / dh;
  const double z = qh * qh;
  const double w = z * z;
  const double s1 = z * (@T0@ + w * (@T2@ + w * (@T4@ + w * (@T6@ + w * (@T8@ + w * @T10@)))));
  const double s2 = w * (@T1@ + w * (@T3@ + w * (@T5@ + w * (@T7@ + w * @T9@))));
  double small = (ql * (1.0 - z) + al) - qh * (s1 + s2);
  const bool yinf = ay0 > 1.7976931348623157e308;
  const bool xinf = ax0 > 1.7976931348623157e308;
  const bool zero = ay0 == 0.0 | (xinf & !yinf);
  const bool half = (ax0 == 0.0 & ay0 != 0.0) | (yinf & !xinf);
  const bool quarter = yinf & xinf;
  const bool special = zero | half | quarter;
  const double q = eq_sel_f64(special, 0.0, qh);
  ah = eq_sel_f64(zero, 0.0, ah);
  small = eq_sel_f64(zero, 0.0, small);
  ah = eq_sel_f64(half, @AH3@, ah);
  small = eq_sel_f64(half, @AL3@, small);
  ah = eq_sel_f64(quarter, @AH1@, ah);
  small = eq_sel_f64(quarter, @AL1@, small);
  const eq_dd sp = eq_two_sum(ah, q);
  const double pos = sp.hi + (sp.lo + small);
  const eq_dd h1 = eq_two_sum(@PI_HI@, -ah);
  const eq_dd h2 = eq_two_sum(h1.hi, -q);
  const double negx = h2.hi + (((h1.lo + h2.lo) + @PI_LO@) - small);
  const double res0 = eq_sel_f64(((unsigned long long)__double_as_longlong(x) >> 63) != 0ULL, negx, pos);
  const double res = eq_neg_if(((unsigned long long)__double_as_longlong(y) >> 63) != 0ULL, res0);
  const double nan = x + y;
  return eq_sel_f64(x != x | y != y, nan, res);
}
"#;

/// The C text of `eq_atan2_f64` (`eq_atan2_f32` is in `single`).
pub(crate) fn c_source() -> String {
    let mut consts: Vec<(String, f64)> = vec![
        ("PI_HI".into(), PI_HI),
        ("BIG".into(), ATAN2_BIG),
        ("DOWN".into(), ATAN2_DOWN),
        ("TINY".into(), ATAN2_TINY),
        ("UP".into(), ATAN2_UP),
        ("PI_LO".into(), PI_LO),
    ];
    consts.extend(ATAN_HI.iter().enumerate().map(|(k, v)| (format!("AH{k}"), *v)));
    consts.extend(ATAN_LO.iter().enumerate().map(|(k, v)| (format!("AL{k}"), *v)));
    consts.extend(ATAN_T.iter().enumerate().map(|(k, v)| (format!("T{k}"), *v)));
    let refs: Vec<(&str, f64)> = consts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    super::fill(C_TEXT, &refs)
}
