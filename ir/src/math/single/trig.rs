//! `sin`, `cos`, `tan` on `f32`, in `f32`: an exact reduction `|x| = (q + f) π/2` by integer
//! arithmetic on the 24-bit significand and a 96-bit window of the bits of `2/π` (three
//! 32-bit words, picked by the exponent from [`TWO_OVER_PI_F32`]: a gather), giving
//! `x · 2/π mod 4` in 64-bit fixed point with 62 fraction bits; `f` to `f64` by its bits and
//! `r = f π/2` rounded to `f64`, then to an `f32` pair `r_hi + r_lo`; fdlibm's kernels in
//! `f32` (Taylor polynomials to `r^9` and `r^10`, truncation below `2^-28` relative), with
//! the tail `r_lo`; `tan` as the quotient of the two kernels' unrounded sums (a corrected
//! `f32` division). `|x| <= π/4` goes to the kernels as it is.
//!
//! The window gives the bits of `x · 2/π` from `2^1` to `2^-62` (the 32 below are dropped;
//! the bits of `2/π` past the window add less than `2^-70`): `f` is right to `2^-61`, so `r` keeps at
//! least 24 good bits wherever `|f| >= 2^-37` (`ir/tests/math_f32.rs` also sweeps the floats
//! next to the first 20,000 multiples of `π/2`).

use super::{fast_two_sum32, neg_if32, two_prod32};
use crate::math::{u52_to_f64, PIO2_HI, TWO_OVER_PI};

/// The largest `|x|` the kernels take as it is (`π/4` rounded down to `f32`).
pub const PIO4_F32: f32 = f32::from_bits(0x3f49_0fda);
/// The Taylor coefficients `-1/3!, 1/5!, -1/7!, 1/9!` of the sine kernel.
pub const SIN_F32_S: [f32; 4] = [-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362_880.0];
/// The Taylor coefficients `1/4!, -1/6!, 1/8!, -1/10!` of the cosine kernel.
pub const COS_F32_C: [f32; 4] = [1.0 / 24.0, -1.0 / 720.0, 1.0 / 40_320.0, -1.0 / 3_628_800.0];

/// For each biased exponent `E` in `126 ..= 254`, the bits `E - 151 ..= E - 56` of `2/π`
/// (bit `k` of weight `2^-k`; none before the binary point) as three 32-bit words: with the
/// significand `m` of `x = m 2^(E - 150)`, `x · 2/π mod 4 = m · window · 2^-94 mod 4`.
pub const TWO_OVER_PI_F32: [u32; 387] = window_table();

const fn window_table() -> [u32; 387] {
    let mut out = [0u32; 387];
    let mut e = 126usize;
    while e <= 254 {
        // bit k of 2/π is bit 63 + k of TWO_OVER_PI (two zero words first)
        let i0 = e - 88;
        let (w, sh) = (i0 / 32, i0 % 32);
        let mut j = 0;
        while j < 3 {
            let v = ((TWO_OVER_PI[w + j] as u64) << 32) | TWO_OVER_PI[w + j + 1] as u64;
            out[(e - 126) * 3 + j] = ((v >> (32 - sh)) & 0xffff_ffff) as u32;
            j += 1;
        }
        e += 1;
    }
    out
}

/// The reduced argument of `x`: `(q mod 4, r_hi, r_lo, negative, finite)`.
#[inline(always)]
fn reduce(x: f32) -> (u32, f32, f32, bool, bool) {
    let xb = x.to_bits();
    let ab = xb & 0x7fff_ffff;
    let ax = f32::from_bits(ab);
    let e = ab >> 23;
    let e = if e < 126 { 126 } else { e };
    let e = if e > 254 { 254 } else { e };
    let m = (ab & 0x007f_ffff) | 0x0080_0000;
    let i = ((e - 126) * 3) as usize;
    let (w0, w1, w2) = (TWO_OVER_PI_F32[i], TWO_OVER_PI_F32[i + 1], TWO_OVER_PI_F32[i + 2]);
    // the bits 2^1 .. 2^-62 of m · window · 2^-94 (mod 4)
    let p0 = m.wrapping_mul(w0);
    let p1 = u64::from(m) * u64::from(w1);
    let p2 = u64::from(m) * u64::from(w2);
    let hi = (u64::from(p0) << 32).wrapping_add(p1).wrapping_add(p2 >> 32);
    // round to the nearest quadrant: q, and f 2^64 in two's complement
    let hr = hi.wrapping_add(1 << 61);
    let q = (hr >> 62) as u32;
    let fb = (hr << 2) ^ (1 << 63);
    let a = u52_to_f64(fb >> 32) * 2.3283064365386963e-10 - u52_to_f64(fb >> 63);
    let b = u52_to_f64(fb & 0xffff_ffff) * 5.421010862427522e-20;
    let r = (a + b) * PIO2_HI;
    let rh = r as f32;
    let rl = (r - f64::from(rh)) as f32;
    let small = ax <= PIO4_F32;
    let q = if small { 0 } else { q };
    let rh = if small { ax } else { rh };
    let rl = if small { 0.0 } else { rl };
    (q, rh, rl, (xb >> 31) != 0, ax <= f32::MAX)
}

/// `sin(x + y)` for `|x + y| <= π/4` as `x + t` (`t` the rest, `|t| < |x|`).
#[inline(always)]
fn k_sin(x: f32, y: f32) -> f32 {
    let s = &SIN_F32_S;
    let z = x * x;
    let v = z * x;
    let r = s[1] + z * (s[2] + z * s[3]);
    -((z * (0.5 * y - v * r) - y) - v * s[0])
}

/// `cos(x + y)` for `|x + y| <= π/4` as `w + t` (`w = 1 - x^2/2`, `|t| < |w|`).
#[inline(always)]
fn k_cos(x: f32, y: f32) -> (f32, f32) {
    let c = &COS_F32_C;
    let z = x * x;
    let r = z * (c[0] + z * (c[1] + z * (c[2] + z * c[3])));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    (w, ((1.0 - w) - hz) + (z * r - x * y))
}

/// `sin x` in `f32`.
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    let (q, rh, rl, neg, fin) = reduce(x);
    let s = rh + k_sin(rh, rl);
    let (w, t) = k_cos(rh, rl);
    let c = w + t;
    let v = if (q & 1) != 0 { c } else { s };
    let v = neg_if32(((q & 2) != 0) != neg, v);
    if fin {
        v
    } else {
        f32::NAN
    }
}

/// `cos x` in `f32`.
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    let (q, rh, rl, _, fin) = reduce(x);
    let s = rh + k_sin(rh, rl);
    let (w, t) = k_cos(rh, rl);
    let c = w + t;
    let v = if (q & 1) != 0 { s } else { c };
    let v = neg_if32(((q + 1) & 2) != 0, v);
    if fin {
        v
    } else {
        f32::NAN
    }
}

/// `tan x` in `f32`: `sin r / cos r` (or `-cos r / sin r` in odd quadrants), each as an
/// unrounded pair, the quotient corrected by its exact remainder.
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    let (q, rh, rl, neg, fin) = reduce(x);
    let (sh, sl) = fast_two_sum32(rh, k_sin(rh, rl));
    let (w, t) = k_cos(rh, rl);
    let (ch, cl) = fast_two_sum32(w, t);
    let odd = (q & 1) != 0;
    let (nh, nl) = if odd { (-ch, -cl) } else { (sh, sl) };
    let (dh, dl) = if odd { (sh, sl) } else { (ch, cl) };
    let qh = nh / dh;
    let (p, pe) = two_prod32(qh, dh);
    let ql = ((((nh - p) - pe) + nl) - qh * dl) / dh;
    let v = neg_if32(neg, qh + ql);
    if fin {
        v
    } else {
        f32::NAN
    }
}

const C_TEXT: &str = r#"typedef struct eq_red32 { unsigned int q; float hi; float lo; bool neg; bool fin; } eq_red32;
static __device__ __forceinline__ eq_red32 eq_reduce_pio2_f32(float x) {
  const unsigned int xb = (unsigned int)__float_as_int(x);
  const unsigned int ab = xb & 0x7fffffffU;
  const float ax = __int_as_float((int)ab);
  unsigned int e = ab >> 23;
  e = e < 126U ? 126U : e;
  e = e > 254U ? 254U : e;
  const unsigned int m = (ab & 0x007fffffU) | 0x00800000U;
  const unsigned int i = (e - 126U) * 3U;
  const unsigned int w0 = eq_two_over_pi_f32[i], w1 = eq_two_over_pi_f32[i + 1U], w2 = eq_two_over_pi_f32[i + 2U];
  const unsigned int p0 = m * w0;
  const unsigned long long p1 = (unsigned long long)m * (unsigned long long)w1;
  const unsigned long long p2 = (unsigned long long)m * (unsigned long long)w2;
  const unsigned long long hi = ((unsigned long long)p0 << 32) + p1 + (p2 >> 32);
  const unsigned long long hr = hi + (1ULL << 61);
  const unsigned int q = (unsigned int)(hr >> 62);
  const unsigned long long fb = (hr << 2) ^ (1ULL << 63);
  const double a = eq_u52_to_f64(fb >> 32) * 2.3283064365386963e-10 - eq_u52_to_f64(fb >> 63);
  const double b = eq_u52_to_f64(fb & 0xffffffffULL) * 5.421010862427522e-20;
  const double r = (a + b) * @PIO2_HI@;
  const float rh = (float)r;
  const float rl = (float)(r - (double)rh);
  const bool small = ax <= @PIO4_F32@;
  eq_red32 out;
  out.q = q & (0U - (unsigned int)!small);
  out.hi = eq_sel_f32(small, ax, rh);
  out.lo = eq_sel_f32(small, 0.0f, rl);
  out.neg = (xb >> 31) != 0U;
  out.fin = ax <= 3.40282347e+38f;
  return out;
}
static __device__ __forceinline__ float eq_k_sin32(float x, float y) {
  const float z = x * x;
  const float v = z * x;
  const float r = @S1@ + z * (@S2@ + z * @S3@);
  return -((z * (0.5f * y - v * r) - y) - v * @S0@);
}
static __device__ __forceinline__ eq_ff eq_k_cos32(float x, float y) {
  const float z = x * x;
  const float r = z * (@C0@ + z * (@C1@ + z * (@C2@ + z * @C3@)));
  const float hz = 0.5f * z;
  eq_ff out;
  out.hi = 1.0f - hz;
  out.lo = ((1.0f - out.hi) - hz) + (z * r - x * y);
  return out;
}
static __device__ __forceinline__ float eq_sin_f32(float x) {
  const eq_red32 rd = eq_reduce_pio2_f32(x);
  const float s = rd.hi + eq_k_sin32(rd.hi, rd.lo);
  const eq_ff cw = eq_k_cos32(rd.hi, rd.lo);
  const float c = cw.hi + cw.lo;
  const float v0 = eq_sel_f32((rd.q & 1U) != 0U, c, s);
  const float v = eq_neg_if32(((rd.q & 2U) != 0U) != rd.neg, v0);
  return eq_sel_f32(rd.fin, v, __int_as_float(0x7fc00000));
}
static __device__ __forceinline__ float eq_cos_f32(float x) {
  const eq_red32 rd = eq_reduce_pio2_f32(x);
  const float s = rd.hi + eq_k_sin32(rd.hi, rd.lo);
  const eq_ff cw = eq_k_cos32(rd.hi, rd.lo);
  const float c = cw.hi + cw.lo;
  const float v0 = eq_sel_f32((rd.q & 1U) != 0U, s, c);
  const float v = eq_neg_if32(((rd.q + 1U) & 2U) != 0U, v0);
  return eq_sel_f32(rd.fin, v, __int_as_float(0x7fc00000));
}
static __device__ __forceinline__ float eq_tan_f32(float x) {
  const eq_red32 rd = eq_reduce_pio2_f32(x);
  const eq_ff s = eq_fast_two_sum32(rd.hi, eq_k_sin32(rd.hi, rd.lo));
  const eq_ff cw = eq_k_cos32(rd.hi, rd.lo);
  const eq_ff c = eq_fast_two_sum32(cw.hi, cw.lo);
  const bool odd = (rd.q & 1U) != 0U;
  const float nh = eq_sel_f32(odd, -c.hi, s.hi), nl = eq_sel_f32(odd, -c.lo, s.lo);
  const float dh = eq_sel_f32(odd, s.hi, c.hi), dl = eq_sel_f32(odd, s.lo, c.lo);
  const float qh = nh / dh;
  const eq_ff p = eq_two_prod32(qh, dh);
  const float ql = ((((nh - p.hi) - p.lo) + nl) - qh * dl) / dh;
  const float v = eq_neg_if32(rd.neg, qh + ql);
  return eq_sel_f32(rd.fin, v, __int_as_float(0x7fc00000));
}
"#;

/// The C text of `eq_sin_f32`, `eq_cos_f32`, `eq_tan_f32` and their table.
pub(crate) fn c_source() -> String {
    let mut out = String::from("static __device__ const unsigned int eq_two_over_pi_f32[387] = {");
    for (k, w) in TWO_OVER_PI_F32.iter().enumerate() {
        out.push_str(if k % 8 == 0 { "\n  " } else { " " });
        out.push_str(&format!("0x{w:08x}U,"));
    }
    out.push_str("\n};\n");
    let mut consts: Vec<(String, f32)> = vec![("PIO4_F32".into(), PIO4_F32)];
    consts.extend(SIN_F32_S.iter().enumerate().map(|(k, v)| (format!("S{k}"), *v)));
    consts.extend(COS_F32_C.iter().enumerate().map(|(k, v)| (format!("C{k}"), *v)));
    let refs: Vec<(&str, f32)> = consts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let text = C_TEXT.replace("@PIO2_HI@", &crate::math::c_double(PIO2_HI));
    out.push_str(&super::fill32(&text, &refs));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn the_window_table_holds_the_bits_of_two_over_pi() {
        // E = 127 (x in [1, 2)): bits -24 ..= 71 of 2/π: 25 zero bits, then 0xa2f983...
        let i = 3;
        assert_eq!(TWO_OVER_PI_F32[i], 0x0000_0051);
        assert_eq!(TWO_OVER_PI_F32[i + 1], 0x7cc1_b727);
        // E = 152 (x in [2^25, 2^26)): the window starts at the first bit
        assert_eq!(TWO_OVER_PI_F32[(152 - 126) * 3], 0xa2f9_836e);
    }

    #[test]
    fn special_values() {
        for f in [sin_f32, tan_f32] {
            assert!(same(f(0.0), 0.0) && same(f(-0.0), -0.0));
            assert!(same(f(f32::from_bits(1)), f32::from_bits(1)));
            assert!(same(f(-f32::MIN_POSITIVE), -f32::MIN_POSITIVE));
        }
        assert_eq!(cos_f32(0.0), 1.0);
        assert_eq!(cos_f32(-0.0), 1.0);
        for f in [sin_f32, cos_f32, tan_f32] {
            assert!(f(f32::INFINITY).is_nan() && f(f32::NEG_INFINITY).is_nan() && f(f32::NAN).is_nan());
            assert!(f(f32::MAX).is_finite() && f(-f32::MAX).is_finite());
        }
        // huge arguments: the reduction is exact (the f64 functions as the reference)
        for x in [1e20f32, 3.4e38, 16_367_173.0 * 2f32.powi(72), 1e5, 2f32.powi(24) - 1.0] {
            let want = crate::math::sin_f64(f64::from(x));
            assert!((f64::from(sin_f32(x)) - want).abs() <= 1e-7 * want.abs().max(1e-3), "sin {x}");
            let want = crate::math::cos_f64(f64::from(x));
            assert!((f64::from(cos_f32(x)) - want).abs() <= 1e-7 * want.abs().max(1e-3), "cos {x}");
        }
    }
}
