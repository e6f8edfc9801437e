//! `sin`, `cos`, `tan`: an exact (Payne–Hanek) reduction `|x| = (q + f) π/2`, `|f| <= 1/2`,
//! by integer arithmetic on the bits of `x` and of `2/π`, giving `r = f π/2` as a
//! double-double; then fdlibm's kernels on `[-π/4, π/4]`.
//!
//! The reduction multiplies the 53-bit significand of `x` by a 192-bit window of `2/π`
//! (six 32-bit words, chosen by the exponent of `x`) with 32x32-bit products and carries,
//! keeping the bits of weight `2^1 .. 2^-126` of `x · 2/π` exactly: so `f` is exact to
//! `2^-126` (the bits of `2/π` past the window add less than `2^-137`) for every finite
//! `x`, and even the closest double to a multiple of `π/2` (`|f| ~ 2^-62`) keeps 60 bits.
//! The table lookups are the only memory reads; everything else is basic operations.

use super::{fast_two_sum, neg_if, two_prod, two_sum, u52_to_f64};

/// The bits of `2/π`, 32 a word, most significant first, after 64 zero bits (so that the
/// window of an argument below 1 starts inside the table).
pub const TWO_OVER_PI: [u32; 39] = [
    0x00000000, 0x00000000, 0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599, 0x3c439041,
    0xfe5163ab, 0xdebbc561, 0xb7246e3a, 0x424dd2e0, 0x06492eea, 0x09d1921c, 0xfe1deb1c, 0xb129a73e,
    0xe88235f5, 0x2ebb4484, 0xe99c7026, 0xb45f7e41, 0x3991d639, 0x835339f4, 0x9c845f8b, 0xbdf9283b,
    0x1ff897ff, 0xde05980f, 0xef2f118b, 0x5a0a6d1f, 0x6d367ecf, 0x27cb09b7, 0x4f463f66, 0x9e5fea2d,
    0x7527bac7, 0xebe5f17b, 0x3d0739f7, 0x8a5292ea, 0x6bfb5fb1, 0x1f8d5d08, 0x56033046,
];
/// `π/2` rounded to `f64`.
pub const PIO2_HI: f64 = std::f64::consts::FRAC_PI_2;
/// `π/2 - PIO2_HI`.
#[allow(clippy::excessive_precision)]
pub const PIO2_LO: f64 = 6.12323399573676603587e-17;
/// The largest `|x|` the kernels take as it is (fdlibm's `|x| ~<= π/4`: high word `0x3fe921fb`).
pub const PIO4_BOUND: f64 = 0.785398006439209;
/// fdlibm's `__kernel_sin` coefficients `S1 ..= S6`.
#[allow(clippy::excessive_precision)]
pub const SIN_S: [f64; 6] = [
    -1.66666666666666324348e-01,
    8.33333333332248946124e-03,
    -1.98412698298579493134e-04,
    2.75573137070700676789e-06,
    -2.50507602534068634195e-08,
    1.58969099521155010221e-10,
];
/// fdlibm's `__kernel_cos` coefficients `C1 ..= C6`.
#[allow(clippy::excessive_precision)]
pub const COS_C: [f64; 6] = [
    4.16666666666666019037e-02,
    -1.38888888888741095749e-03,
    2.48015872894767294178e-05,
    -2.75573143513906633035e-07,
    2.08757232129817482790e-09,
    -1.13596475577881948265e-11,
];
/// fdlibm's `__kernel_tan` coefficients `T0 ..= T12`.
#[allow(clippy::excessive_precision)]
pub const TAN_T: [f64; 13] = [
    3.33333333333334091986e-01,
    1.33333333333201242699e-01,
    5.39682539762260521377e-02,
    2.18694882948595424599e-02,
    8.86323982359930005737e-03,
    3.59207910759131235356e-03,
    1.45620945432529025516e-03,
    5.88041240820264096874e-04,
    2.46463134818469906812e-04,
    7.81794442939557092300e-05,
    7.14072491382608190305e-05,
    -1.85586374855275456654e-05,
    2.59073051863633712884e-05,
];
/// `π/4` rounded to `f64`.
pub const PIO4: f64 = std::f64::consts::FRAC_PI_4;
/// `π/4 - PIO4`.
#[allow(clippy::excessive_precision)]
pub const PIO4_LO: f64 = 3.06161699786838301793e-17;
/// `|x| >= 0.6744` (high word `0x3fe59428`): `__kernel_tan` uses `tan(π/4 - x)`.
pub const TAN_BIG: f64 = 0.6743354797363281;

/// `ax = (q + f) π/2` for finite `ax >= π/4`: `(q mod 4, r_hi, r_lo)` with `r = f π/2`.
/// (Any other `ax` gives some finite result, unused.)
#[inline(always)]
pub(crate) fn rem_pio2(ax: f64) -> (u64, f64, f64) {
    let bits = ax.to_bits();
    let e = (bits >> 52) & 0x7ff;
    let e = if e < 1022 { 1022 } else { e };
    let e = if e > 2046 { 2046 } else { e };
    let m = (bits & 0x000f_ffff_ffff_ffff) | 0x0010_0000_0000_0000;
    // ax = m 2^(e-1075); the window starts at bit e-1076 of 2/π: position e-1012 of the table
    let p = e - 1013;
    let w = (p >> 5) as usize;
    let sh = 32 - (p & 31);
    let t = |j: usize| u64::from(TWO_OVER_PI[w + j]);
    let c = |j: usize| (((t(j) << 32) | t(j + 1)) >> sh) & 0xffff_ffff;
    let (c0, c1, c2, c3, c4, c5) = (c(0), c(1), c(2), c(3), c(4), c(5));
    let ml = m & 0xffff_ffff;
    let mh = m >> 32;
    const LO: u64 = 0xffff_ffff;
    let (a5, a4, a3, a2, a1, a0) = (ml * c5, ml * c4, ml * c3, ml * c2, ml * c1, ml * c0);
    let (b5, b4, b3, b2, b1) = (mh * c5, mh * c4, mh * c3, mh * c2, mh * c1);
    // columns of 32 bits: the product m * window, bit 190 of weight 2^0
    let k0 = a5 & LO;
    let k1 = (a5 >> 32) + (a4 & LO) + (b5 & LO) + (k0 >> 32);
    let k2 = (a4 >> 32) + (b5 >> 32) + (a3 & LO) + (b4 & LO) + (k1 >> 32);
    let k3 = (a3 >> 32) + (b4 >> 32) + (a2 & LO) + (b3 & LO) + (k2 >> 32);
    let k4 = (a2 >> 32) + (b3 >> 32) + (a1 & LO) + (b2 & LO) + (k3 >> 32);
    let k5 = (a1 >> 32) + (b2 >> 32) + (a0 & LO) + (b1 & LO) + (k4 >> 32);
    let hi = ((k5 & LO) << 32) | (k4 & LO);
    let lo = ((k3 & LO) << 32) | (k2 & LO);
    // round to the nearest quadrant: q, and f 2^64 in two's complement
    let hr = hi.wrapping_add(1 << 61);
    let q = hr >> 62;
    let fb = (hr << 2) ^ (1 << 63);
    let a = u52_to_f64(fb >> 32) * 2.3283064365386963e-10 - u52_to_f64(fb >> 63);
    let b = u52_to_f64(fb & LO) * 5.421010862427522e-20;
    let cc = u52_to_f64(lo >> 32) * 5.048709793414476e-29;
    let d = u52_to_f64(lo & LO) * 1.1754943508222875e-38;
    let (s1, e1) = two_sum(a, b);
    let (s2, e2) = two_sum(s1, cc);
    let (fh, fl) = fast_two_sum(s2, (e1 + e2) + d);
    let (ph, pe) = two_prod(fh, PIO2_HI);
    let (rh, rl) = fast_two_sum(ph, pe + (fh * PIO2_LO + fl * PIO2_HI));
    (q, rh, rl)
}

/// `sin(x + y)` for `|x + y| <= π/4` (fdlibm's `__kernel_sin` with a tail).
#[inline(always)]
fn k_sin(x: f64, y: f64) -> f64 {
    let s = &SIN_S;
    let z = x * x;
    let w = z * z;
    let r = (s[1] + z * (s[2] + z * s[3])) + (z * w) * (s[4] + z * s[5]);
    let v = z * x;
    x - ((z * (0.5 * y - v * r) - y) - v * s[0])
}

/// `cos(x + y)` for `|x + y| <= π/4` (fdlibm's `__kernel_cos`).
#[inline(always)]
fn k_cos(x: f64, y: f64) -> f64 {
    let c = &COS_C;
    let z = x * x;
    let w = z * z;
    let r = z * (c[0] + z * (c[1] + z * c[2])) + (w * w) * (c[3] + z * (c[4] + z * c[5]));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * r - x * y))
}

/// `tan(x + y)` (`odd` false) or `-1/tan(x + y)` (`odd` true) for `|x + y| <= π/4`
/// (fdlibm's `__kernel_tan`, both branches computed and selected).
#[inline(always)]
fn k_tan(x: f64, y: f64, odd: bool) -> f64 {
    let t = &TAN_T;
    let neg = x < 0.0;
    let big = neg_if(neg, x) >= TAN_BIG;
    let xa = neg_if(neg, x);
    let ya = neg_if(neg, y);
    let xb = (PIO4 - xa) + (PIO4_LO - ya);
    let x = if big { xb } else { x };
    let y = if big { 0.0 } else { y };
    let z = x * x;
    let w = z * z;
    let r = t[1] + w * (t[3] + w * (t[5] + w * (t[7] + w * (t[9] + w * t[11]))));
    let v = z * (t[2] + w * (t[4] + w * (t[6] + w * (t[8] + w * (t[10] + w * t[12])))));
    let s = z * x;
    let r = (y + z * (s * (r + v) + y)) + s * t[0];
    let w = x + r;
    // |x| >= 0.6744: tan(π/4 - x), or its -1/tan
    let sg = if odd { -1.0 } else { 1.0 };
    let vb = sg - 2.0 * (x + (r - w * w / (w + sg)));
    let vb = neg_if(neg, vb);
    // -1/(x + r), accurately
    let w0 = super::zero_low(w);
    let v = r - (w0 - x);
    let a = -1.0 / w;
    let a0 = super::zero_low(a);
    let inv = a0 + a * ((1.0 + a0 * w0) + a0 * v);
    let small = if odd { inv } else { w };
    if big {
        vb
    } else {
        small
    }
}

/// The reduced argument of `x`: `(q, r_hi, r_lo, negative, finite)`.
#[inline(always)]
fn reduce(x: f64) -> (u64, f64, f64, bool, bool) {
    let ax = f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    let (q, rh, rl) = rem_pio2(ax);
    let small = ax <= PIO4_BOUND;
    let q = if small { 0 } else { q };
    let rh = if small { ax } else { rh };
    let rl = if small { 0.0 } else { rl };
    (q, rh, rl, (x.to_bits() >> 63) != 0, ax <= f64::MAX)
}

/// `sin x` in `f64`.
#[inline(always)]
pub fn sin_f64(x: f64) -> f64 {
    let (q, rh, rl, neg, fin) = reduce(x);
    let s = k_sin(rh, rl);
    let c = k_cos(rh, rl);
    let v = if (q & 1) != 0 { c } else { s };
    let v = neg_if(((q & 2) != 0) != neg, v);
    if fin {
        v
    } else {
        f64::NAN
    }
}

/// `cos x` in `f64`.
#[inline(always)]
pub fn cos_f64(x: f64) -> f64 {
    let (q, rh, rl, _, fin) = reduce(x);
    let s = k_sin(rh, rl);
    let c = k_cos(rh, rl);
    let v = if (q & 1) != 0 { s } else { c };
    let v = neg_if(((q + 1) & 2) != 0, v);
    if fin {
        v
    } else {
        f64::NAN
    }
}

/// `tan x` in `f64`.
#[inline(always)]
pub fn tan_f64(x: f64) -> f64 {
    let (q, rh, rl, neg, fin) = reduce(x);
    let v = neg_if(neg, k_tan(rh, rl, (q & 1) != 0));
    if fin {
        v
    } else {
        f64::NAN
    }
}

const C_TEXT: &str = r#"typedef struct eq_red { unsigned long long q; double hi; double lo; bool neg; bool fin; } eq_red;
static __device__ __forceinline__ eq_red eq_reduce_pio2(double x) {
  const unsigned long long xb = (unsigned long long)__double_as_longlong(x);
  const double ax = __longlong_as_double((long long)(xb & 0x7fffffffffffffffULL));
  const unsigned long long bits = xb & 0x7fffffffffffffffULL;
  unsigned long long e = (bits >> 52) & 0x7ffULL;
  e = e < 1022ULL ? 1022ULL : e;
  e = e > 2046ULL ? 2046ULL : e;
  const unsigned long long m = (bits & 0x000fffffffffffffULL) | 0x0010000000000000ULL;
  const unsigned long long p = e - 1013ULL;
  const unsigned long long w = p >> 5;
  const unsigned long long sh = 32ULL - (p & 31ULL);
  const unsigned long long t0 = eq_two_over_pi[w], t1 = eq_two_over_pi[w + 1], t2 = eq_two_over_pi[w + 2],
    t3 = eq_two_over_pi[w + 3], t4 = eq_two_over_pi[w + 4], t5 = eq_two_over_pi[w + 5], t6 = eq_two_over_pi[w + 6];
  const unsigned long long L = 0xffffffffULL;
  const unsigned long long c0 = (((t0 << 32) | t1) >> sh) & L, c1 = (((t1 << 32) | t2) >> sh) & L,
    c2 = (((t2 << 32) | t3) >> sh) & L, c3 = (((t3 << 32) | t4) >> sh) & L, c4 = (((t4 << 32) | t5) >> sh) & L,
    c5 = (((t5 << 32) | t6) >> sh) & L;
  const unsigned long long ml = m & L, mh = m >> 32;
  const unsigned long long a5 = ml * c5, a4 = ml * c4, a3 = ml * c3, a2 = ml * c2, a1 = ml * c1, a0 = ml * c0;
  const unsigned long long b5 = mh * c5, b4 = mh * c4, b3 = mh * c3, b2 = mh * c2, b1 = mh * c1;
  const unsigned long long k0 = a5 & L;
  const unsigned long long k1 = (a5 >> 32) + (a4 & L) + (b5 & L) + (k0 >> 32);
  const unsigned long long k2 = (a4 >> 32) + (b5 >> 32) + (a3 & L) + (b4 & L) + (k1 >> 32);
  const unsigned long long k3 = (a3 >> 32) + (b4 >> 32) + (a2 & L) + (b3 & L) + (k2 >> 32);
  const unsigned long long k4 = (a2 >> 32) + (b3 >> 32) + (a1 & L) + (b2 & L) + (k3 >> 32);
  const unsigned long long k5 = (a1 >> 32) + (b2 >> 32) + (a0 & L) + (b1 & L) + (k4 >> 32);
  const unsigned long long hi = ((k5 & L) << 32) | (k4 & L);
  const unsigned long long lo = ((k3 & L) << 32) | (k2 & L);
  const unsigned long long hr = hi + (1ULL << 61);
  const unsigned long long q = hr >> 62;
  const unsigned long long fb = (hr << 2) ^ (1ULL << 63);
  const double a = eq_u52_to_f64(fb >> 32) * 2.3283064365386963e-10 - eq_u52_to_f64(fb >> 63);
  const double b = eq_u52_to_f64(fb & L) * 5.421010862427522e-20;
  const double cc = eq_u52_to_f64(lo >> 32) * 5.048709793414476e-29;
  const double d = eq_u52_to_f64(lo & L) * 1.1754943508222875e-38;
  const eq_dd s1 = eq_two_sum(a, b);
  const eq_dd s2 = eq_two_sum(s1.hi, cc);
  const eq_dd f = eq_fast_two_sum(s2.hi, (s1.lo + s2.lo) + d);
  const eq_dd pp = eq_two_prod(f.hi, @PIO2_HI@);
  const eq_dd r = eq_fast_two_sum(pp.hi, pp.lo + (f.hi * @PIO2_LO@ + f.lo * @PIO2_HI@));
  const bool small = ax <= @PIO4_BOUND@;
  eq_red out;
  out.q = q & (0ULL - (unsigned long long)!small);
  out.hi = eq_sel_f64(small, ax, r.hi);
  out.lo = eq_sel_f64(small, 0.0, r.lo);
  out.neg = (xb >> 63) != 0ULL;
  out.fin = ax <= 1.7976931348623157e308;
  return out;
}
static __device__ __forceinline__ double eq_k_sin(double x, double y) {
  const double z = x * x;
  const double w = z * z;
  const double r = (@S1@ + z * (@S2@ + z * @S3@)) + (z * w) * (@S4@ + z * @S5@);
  const double v = z * x;
  return x - ((z * (0.5 * y - v * r) - y) - v * @S0@);
}
static __device__ __forceinline__ double eq_k_cos(double x, double y) {
  const double z = x * x;
  const double w = z * z;
  const double r = z * (@C0@ + z * (@C1@ + z * @C2@)) + (w * w) * (@C3@ + z * (@C4@ + z * @C5@));
  const double hz = 0.5 * z;
  const double w1 = 1.0 - hz;
  return w1 + (((1.0 - w1) - hz) + (z * r - x * y));
}
static __device__ __forceinline__ double eq_k_tan(double x0, double y0, bool odd) {
  const bool neg = x0 < 0.0;
  const bool big = eq_neg_if(neg, x0) >= @TAN_BIG@;
  const double xa = eq_neg_if(neg, x0);
  const double ya = eq_neg_if(neg, y0);
  const double xb = (@PIO4@ - xa) + (@PIO4_LO@ - ya);
  const double x = eq_sel_f64(big, xb, x0);
  const double y = eq_sel_f64(big, 0.0, y0);
  const double z = x * x;
  const double w = z * z;
  const double r0 = @T1@ + w * (@T3@ + w * (@T5@ + w * (@T7@ + w * (@T9@ + w * @T11@))));
  const double v0 = z * (@T2@ + w * (@T4@ + w * (@T6@ + w * (@T8@ + w * (@T10@ + w * @T12@)))));
  const double s = z * x;
  const double r = (y + z * (s * (r0 + v0) + y)) + s * @T0@;
  const double w1 = x + r;
  const double sg = eq_sel_f64(odd, -1.0, 1.0);
  const double vb = eq_neg_if(neg, sg - 2.0 * (x + (r - w1 * w1 / (w1 + sg))));
  const double w0 = eq_zero_low(w1);
  const double v = r - (w0 - x);
  const double a = -1.0 / w1;
  const double a0 = eq_zero_low(a);
  const double inv = a0 + a * ((1.0 + a0 * w0) + a0 * v);
  const double small = eq_sel_f64(odd, inv, w1);
  return eq_sel_f64(big, vb, small);
}
static __device__ __forceinline__ double eq_sin_f64(double x) {
  const eq_red rd = eq_reduce_pio2(x);
  const double s = eq_k_sin(rd.hi, rd.lo);
  const double c = eq_k_cos(rd.hi, rd.lo);
  const double v0 = eq_sel_f64((rd.q & 1ULL) != 0ULL, c, s);
  const double v = eq_neg_if(((rd.q & 2ULL) != 0ULL) != rd.neg, v0);
  return eq_sel_f64(rd.fin, v, __longlong_as_double(0x7ff8000000000000LL));
}
static __device__ __forceinline__ double eq_cos_f64(double x) {
  const eq_red rd = eq_reduce_pio2(x);
  const double s = eq_k_sin(rd.hi, rd.lo);
  const double c = eq_k_cos(rd.hi, rd.lo);
  const double v0 = eq_sel_f64((rd.q & 1ULL) != 0ULL, s, c);
  const double v = eq_neg_if(((rd.q + 1ULL) & 2ULL) != 0ULL, v0);
  return eq_sel_f64(rd.fin, v, __longlong_as_double(0x7ff8000000000000LL));
}
static __device__ __forceinline__ double eq_tan_f64(double x) {
  const eq_red rd = eq_reduce_pio2(x);
  const double v = eq_neg_if(rd.neg, eq_k_tan(rd.hi, rd.lo, (rd.q & 1ULL) != 0ULL));
  return eq_sel_f64(rd.fin, v, __longlong_as_double(0x7ff8000000000000LL));
}
"#;

/// The C text of `eq_sin_f64`, `eq_cos_f64`, `eq_tan_f64` (their `f32` versions are in `single`).
pub(crate) fn c_source() -> String {
    let mut out = String::from("static __device__ const unsigned int eq_two_over_pi[39] = {");
    for (k, w) in TWO_OVER_PI.iter().enumerate() {
        out.push_str(if k % 8 == 0 { "\n  " } else { " " });
        out.push_str(&format!("0x{w:08x}U,"));
    }
    out.push_str("\n};\n");
    let mut consts: Vec<(String, f64)> = vec![
        ("PIO2_HI".into(), PIO2_HI),
        ("PIO2_LO".into(), PIO2_LO),
        ("PIO4_BOUND".into(), PIO4_BOUND),
        ("TAN_BIG".into(), TAN_BIG),
        ("PIO4".into(), PIO4),
        ("PIO4_LO".into(), PIO4_LO),
    ];
    consts.extend(SIN_S.iter().enumerate().map(|(k, v)| (format!("S{k}"), *v)));
    consts.extend(COS_C.iter().enumerate().map(|(k, v)| (format!("C{k}"), *v)));
    consts.extend(TAN_T.iter().enumerate().map(|(k, v)| (format!("T{k}"), *v)));
    let refs: Vec<(&str, f64)> = consts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    out.push_str(&super::fill(C_TEXT, &refs));
    out
}
