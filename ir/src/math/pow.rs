//! `pow`: fdlibm's `e_pow.c` without its branches: `log2 |x|` in two pieces `t1 + t2`
//! (`t1` with 21 significant bits) from `s = (m - bp)/(m + bp)` in double-double,
//! `y log2 |x| = p_h + p_l` exactly split, `2^(p_h + p_l)` by fdlibm's rational `exp` with
//! its tail correction, and `2^n` applied in two halves (so subnormal results round once).
//! Every special case of C99 F.9.4.4 is a select at the end. `pow` on `f32` computes in `f32`
//! (`single::pow`).

use super::{neg_if, small_int_to_f64, zero_low, SHIFT, SHIFT_BITS, TWO52};

/// fdlibm's `dp_h[1]`, `dp_l[1]`: `log2(1.5)` in two parts.
#[allow(clippy::excessive_precision)]
pub const DP_H: f64 = 5.84962487220764160156e-01;
/// See [`DP_H`].
#[allow(clippy::excessive_precision)]
pub const DP_L: f64 = 1.35003920212974897128e-08;
/// `2^53`.
pub const TWO53: f64 = 9007199254740992.0;
/// fdlibm's `L1 ..= L6`: `(3/2)(log(x) - 2s - 2/3 s^3)`.
#[allow(clippy::excessive_precision)]
pub const POW_L: [f64; 6] = [
    5.99999999999994648725e-01,
    4.28571428578550184252e-01,
    3.33333329818377432918e-01,
    2.72728123808534006489e-01,
    2.30660745775561754067e-01,
    2.06975017800338417784e-01,
];
/// fdlibm's `P1 ..= P5` (its `exp`'s rational approximation).
#[allow(clippy::excessive_precision)]
pub const POW_P: [f64; 5] = [
    1.66666666666666019037e-01,
    -2.77777777770155933842e-03,
    6.61375632143793436117e-05,
    -1.65339022054652515390e-06,
    4.13813679705723846039e-08,
];
/// `ln 2`.
#[allow(clippy::excessive_precision)]
pub const LG2: f64 = std::f64::consts::LN_2;
/// `ln 2`, high part (21 significant bits).
#[allow(clippy::excessive_precision)]
pub const LG2_H: f64 = 6.93147182464599609375e-01;
/// `ln 2 - LG2_H`.
#[allow(clippy::excessive_precision)]
pub const LG2_L: f64 = -1.90465429995776804525e-09;
/// `-(1024 - log2(ovfl + 0.5 ulp))`.
#[allow(clippy::excessive_precision)]
pub const OVT: f64 = 8.0085662595372944372e-017;
/// `2 / (3 ln 2)`.
#[allow(clippy::excessive_precision)]
pub const CP: f64 = 9.61796693925975554329e-01;
/// `CP` as a `f32`.
#[allow(clippy::excessive_precision)]
pub const CP_H: f64 = 9.61796700954437255859e-01;
/// `CP - CP_H`.
#[allow(clippy::excessive_precision)]
pub const CP_L: f64 = -7.02846165095275826516e-09;
/// `2^64`: `|y|` from here on over/underflows (or gives 1).
pub const POW_YBIG: f64 = 18446744073709551616.0;

/// `x^y` in `f64`.
#[inline(always)]
pub fn pow_f64(x: f64, y: f64) -> f64 {
    let xb = x.to_bits();
    let yb = y.to_bits();
    let ax = f64::from_bits(xb & 0x7fff_ffff_ffff_ffff);
    let ay = f64::from_bits(yb & 0x7fff_ffff_ffff_ffff);
    let xneg = (xb >> 63) != 0;
    // y: an integer? odd? (by rounding to an integer with 2^52)
    let yt = (ay + TWO52) - TWO52;
    let yint = ay >= TWO52 || yt == ay;
    let yh = ay * 0.5;
    let yht = (yh + TWO52) - TWO52;
    let yodd = ay < TWO53 && yint && yht != yh;
    // log2 |x| = t1 + t2
    let sub = ax < f64::MIN_POSITIVE;
    let axs = if sub { ax * TWO53 } else { ax };
    let hb = axs.to_bits() >> 32;
    let n0 = (hb >> 20) as i64 - 0x3ff - if sub { 53 } else { 0 };
    let j = hb & 0x000f_ffff;
    let k1 = j > 0x3988e && j < 0xbb67a;
    let k2 = j >= 0xbb67a;
    let n = n0 + i64::from(k2);
    let ixn = (j | 0x3ff0_0000) - if k2 { 0x0010_0000 } else { 0 };
    let axn = f64::from_bits((ixn << 32) | (axs.to_bits() & 0xffff_ffff));
    let bp = if k1 { 1.5 } else { 1.0 };
    let dph = if k1 { DP_H } else { 0.0 };
    let dpl = if k1 { DP_L } else { 0.0 };
    let u = axn - bp;
    let v = 1.0 / (axn + bp);
    let ss = u * v;
    let s_h = zero_low(ss);
    let th = f64::from_bits((((ixn >> 1) | 0x2000_0000) + 0x0008_0000 + if k1 { 1 << 18 } else { 0 }) << 32);
    let tl = axn - (th - bp);
    let s_l = v * ((u - s_h * th) - s_h * tl);
    let s2 = ss * ss;
    let l = &POW_L;
    let r = (s2 * s2) * (l[0] + s2 * (l[1] + s2 * (l[2] + s2 * (l[3] + s2 * (l[4] + s2 * l[5])))));
    let r = r + s_l * (s_h + ss);
    let s2 = s_h * s_h;
    let th = zero_low((3.0 + s2) + r);
    let tl = r - ((th - 3.0) - s2);
    let u = s_h * th;
    let v = s_l * th + tl * ss;
    let p_h = zero_low(u + v);
    let p_l = v - (p_h - u);
    let z_h = CP_H * p_h;
    let z_l = (CP_L * p_h + p_l * CP) + dpl;
    let t = small_int_to_f64(n);
    let t1 = zero_low(((z_h + z_l) + dph) + t);
    let t2 = z_l - (((t1 - t) - dph) - z_h);
    // y log2 |x| = p_h + p_l, p_h exact
    let y1 = zero_low(y);
    let p_l = (y - y1) * t1 + y * t2;
    let p_h = y1 * t1;
    let z = p_l + p_h;
    let over = z > 1024.0 || (z == 1024.0 && p_l + OVT > z - p_h);
    let under = z < -1075.0 || (z == -1075.0 && p_l <= z - p_h);
    // 2^(p_h + p_l) = 2^n 2^(p_h - n + p_l)
    let zc = if z < -1080.0 { -1080.0 } else { z };
    let zc = if zc > 1030.0 { 1030.0 } else { zc };
    let tt = zc + SHIFT;
    let nd = tt - SHIFT;
    let nn = tt.to_bits().wrapping_sub(SHIFT_BITS) as i64;
    let p_h = p_h - nd;
    let t = zero_low(p_l + p_h);
    let u = t * LG2_H;
    let v = (p_l - (t - p_h)) * LG2 + t * LG2_L;
    let z = u + v;
    let w = v - (z - u);
    let t = z * z;
    let pp = &POW_P;
    let t1 = z - t * (pp[0] + t * (pp[1] + t * (pp[2] + t * (pp[3] + t * pp[4]))));
    let r = (z * t1) / (t1 - 2.0) - (w + z * w);
    let z = 1.0 - (r - z);
    let n1 = nn >> 1;
    let sc1 = f64::from_bits((n1 as u64).wrapping_add(1023) << 52);
    let sc2 = f64::from_bits((nn as u64).wrapping_sub(n1 as u64).wrapping_add(1023) << 52);
    let res = (z * sc1) * sc2;
    let res = if over { f64::INFINITY } else { res };
    let res = if under { 0.0 } else { res };
    let res = neg_if(xneg && yodd, res);
    let res = if xneg && !yint { f64::NAN } else { res };
    // exact shortcuts
    let xx = x * x;
    let inv = 1.0 / x;
    let res = if y == 2.0 { xx } else { res };
    let res = if y == 1.0 { x } else { res };
    let res = if y == -1.0 { inv } else { res };
    // x = ±0, ±inf
    let zres = if (ax == 0.0) == (y < 0.0) { f64::INFINITY } else { 0.0 };
    let zres = neg_if(xneg && yodd, zres);
    let res = if ax == 0.0 || ax == f64::INFINITY { zres } else { res };
    // |y| >= 2^64, ±inf
    let bres = if (ax < 1.0) == (y < 0.0) { f64::INFINITY } else { 0.0 };
    let bres = if ax == 1.0 { 1.0 } else { bres };
    let res = if ay >= POW_YBIG { bres } else { res };
    let nan = x + y;
    let res = if x.is_nan() || y.is_nan() { nan } else { res };
    if x == 1.0 || y == 0.0 {
        1.0
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ double eq_pow_f64(double x, double y) {
  const unsigned long long xb = (unsigned long long)__double_as_longlong(x);
  const unsigned long long yb = (unsigned long long)__double_as_longlong(y);
  const double ax = __longlong_as_double((long long)(xb & 0x7fffffffffffffffULL));
  const double ay = __longlong_as_double((long long)(yb & 0x7fffffffffffffffULL));
  const bool xneg = (xb >> 63) != 0ULL;
  const double yt = (ay + @TWO52@) - @TWO52@;
  const bool yint = (ay >= @TWO52@) | (yt == ay);
  const double yh = ay * 0.5;
  const double yht = (yh + @TWO52@) - @TWO52@;
  const bool yodd = (ay < @TWO53@) & yint & (yht != yh);
  const bool sub = ax < 2.2250738585072014e-308;
  const double axs = eq_sel_f64(sub, ax * @TWO53@, ax);
  const unsigned long long hb = (unsigned long long)__double_as_longlong(axs) >> 32;
  const long long n0 = (long long)(hb >> 20) - 0x3ff - (sub ? 53 : 0);
  const unsigned long long j = hb & 0x000fffffULL;
  const bool k1 = j > 0x3988eULL & j < 0xbb67aULL;
  const bool k2 = j >= 0xbb67aULL;
  const long long n = n0 + (k2 ? 1 : 0);
  const unsigned long long ixn = (j | 0x3ff00000ULL) - (k2 ? 0x00100000ULL : 0ULL);
  const double axn = __longlong_as_double((long long)((ixn << 32) | ((unsigned long long)__double_as_longlong(axs) & 0xffffffffULL)));
  const double bp = eq_sel_f64(k1, 1.5, 1.0);
  const double dph = eq_sel_f64(k1, @DP_H@, 0.0);
  const double dpl = eq_sel_f64(k1, @DP_L@, 0.0);
  const double u0 = axn - bp;
  const double v0 = 1.0 / (axn + bp);
  const double ss = u0 * v0;
  const double s_h = eq_zero_low(ss);
  const double th0 = __longlong_as_double((long long)((((ixn >> 1) | 0x20000000ULL) + 0x00080000ULL + (k1 ? (1ULL << 18) : 0ULL)) << 32));
  const double tl0 = axn - (th0 - bp);
  const double s_l = v0 * ((u0 - s_h * th0) - s_h * tl0);
  const double s20 = ss * ss;
  const double r0 = (s20 * s20) * (@L0@ + s20 * (@L1@ + s20 * (@L2@ + s20 * (@L3@ + s20 * (@L4@ + s20 * @L5@)))));
  const double r1 = r0 + s_l * (s_h + ss);
  const double s2 = s_h * s_h;
  const double th = eq_zero_low((3.0 + s2) + r1);
  const double tl = r1 - ((th - 3.0) - s2);
  const double u1 = s_h * th;
  const double v1 = s_l * th + tl * ss;
  const double p_h0 = eq_zero_low(u1 + v1);
  const double p_l0 = v1 - (p_h0 - u1);
  const double z_h = @CP_H@ * p_h0;
  const double z_l = (@CP_L@ * p_h0 + p_l0 * @CP@) + dpl;
  const double tn = eq_small_int_f64(n);
  const double t1 = eq_zero_low(((z_h + z_l) + dph) + tn);
  const double t2 = z_l - (((t1 - tn) - dph) - z_h);
  const double y1 = eq_zero_low(y);
  const double p_l = (y - y1) * t1 + y * t2;
  const double p_h1 = y1 * t1;
  const double z0 = p_l + p_h1;
  const bool over = z0 > 1024.0 | (z0 == 1024.0 & p_l + @OVT@ > z0 - p_h1);
  const bool under = z0 < -1075.0 | (z0 == -1075.0 & p_l <= z0 - p_h1);
  double zc = eq_sel_f64(z0 < -1080.0, -1080.0, z0);
  zc = eq_sel_f64(zc > 1030.0, 1030.0, zc);
  const double tt = zc + @SHIFT@;
  const double nd = tt - @SHIFT@;
  const long long nn = (long long)((unsigned long long)__double_as_longlong(tt) - @SHIFT_BITS@ULL);
  const double p_h = p_h1 - nd;
  const double t3 = eq_zero_low(p_l + p_h);
  const double u = t3 * @LG2_H@;
  const double v = (p_l - (t3 - p_h)) * @LG2@ + t3 * @LG2_L@;
  const double z = u + v;
  const double w = v - (z - u);
  const double t = z * z;
  const double t4 = z - t * (@P0@ + t * (@P1@ + t * (@P2@ + t * (@P3@ + t * @P4@))));
  const double r = (z * t4) / (t4 - 2.0) - (w + z * w);
  const double z1 = 1.0 - (r - z);
  const long long n1 = nn >> 1;
  const double sc1 = __longlong_as_double((long long)(((unsigned long long)n1 + 1023ULL) << 52));
  const double sc2 = __longlong_as_double((long long)(((unsigned long long)nn - (unsigned long long)n1 + 1023ULL) << 52));
  double res = (z1 * sc1) * sc2;
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  res = eq_sel_f64(over, inf, res);
  res = eq_sel_f64(under, 0.0, res);
  res = eq_neg_if(xneg & yodd, res);
  res = eq_sel_f64(xneg & !yint, __longlong_as_double(0x7ff8000000000000LL), res);
  const double xx = x * x;
  const double inv = 1.0 / x;
  res = eq_sel_f64(y == 2.0, xx, res);
  res = eq_sel_f64(y == 1.0, x, res);
  res = eq_sel_f64(y == -1.0, inv, res);
  const double zres0 = eq_sel_f64((ax == 0.0) == (y < 0.0), inf, 0.0);
  const double zres = eq_neg_if(xneg & yodd, zres0);
  res = eq_sel_f64(ax == 0.0 | ax == inf, zres, res);
  const double bres0 = eq_sel_f64((ax < 1.0) == (y < 0.0), inf, 0.0);
  const double bres = eq_sel_f64(ax == 1.0, 1.0, bres0);
  res = eq_sel_f64(ay >= @YBIG@, bres, res);
  const double nan = x + y;
  res = eq_sel_f64(x != x | y != y, nan, res);
  return eq_sel_f64(x == 1.0 | y == 0.0, 1.0, res);
}
"#;

/// The C text of `eq_pow_f64` (`eq_pow_f32` computes in `f32`: `single::pow`).
pub(crate) fn c_source() -> String {
    let t = C_TEXT.replace("@SHIFT_BITS@", &format!("0x{SHIFT_BITS:x}"));
    let mut consts: Vec<(String, f64)> = vec![
        ("TWO53".into(), TWO53),
        ("TWO52".into(), TWO52),
        ("DP_H".into(), DP_H),
        ("DP_L".into(), DP_L),
        ("CP".into(), CP),
        ("CP_H".into(), CP_H),
        ("CP_L".into(), CP_L),
        ("OVT".into(), OVT),
        ("SHIFT".into(), SHIFT),
        ("LG2".into(), LG2),
        ("LG2_H".into(), LG2_H),
        ("LG2_L".into(), LG2_L),
        ("YBIG".into(), POW_YBIG),
    ];
    consts.extend(POW_L.iter().enumerate().map(|(k, v)| (format!("L{k}"), *v)));
    consts.extend(POW_P.iter().enumerate().map(|(k, v)| (format!("P{k}"), *v)));
    let refs: Vec<(&str, f64)> = consts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    super::fill(&t, &refs)
}
