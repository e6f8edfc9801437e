//! `sin`, `cos`, `tan` on `f32`, in `f32`: an exact reduction `|x| = (q + f) π/2` by integer
//! arithmetic on the 24-bit significand and a 96-bit window of the bits of `2/π`, giving
//! `x · 2/π mod 4` in 64-bit fixed point with 62 fraction bits; `f` to `f64` by two exact
//! conversions of its halves and one rounding, `r = f π/2` rounded to `f64`, then to an `f32`
//! pair `r_hi + r_lo`; fdlibm's kernels in `f32` (Taylor polynomials to `r^9` and `r^10`,
//! truncation below `2^-28` relative), with the tail `r_lo`; `tan` as the quotient of the two
//! kernels' unrounded sums (a corrected `f32` division). `|x| <= π/4` goes to the kernels as it
//! is.
//!
//! The window is found without reading memory (a table lookup is a gather, which gcc emulates
//! lane by lane on AVX-512 and which cost a third of the loop): it starts at bit
//! `s = E - 126` of [`TWO_OVER_PI_F32_WORDS`] (`E` the biased exponent, clamped to
//! `126 ..= 253`; at `E = 254` the significand is doubled instead, 25 bits, and `E` taken as
//! 253), so its four aligned words are `words[s/32 ..]`, picked by the two bits of `s/32` with
//! masks, and shifted by `s mod 32`.
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

/// The bits of `2/π` after 26 zero bits (bit `j` of the string, most significant first, is
/// bit `j - 25` of `2/π`, of weight `2^(25 - j)`), 32 a word: for the biased exponent `E` of
/// `x = m 2^(E - 150)`, the 96 bits from bit `E - 126` on are the window with which
/// `x · 2/π mod 4 = m · window · 2^-94 mod 4`.
pub const TWO_OVER_PI_F32_WORDS: [u32; 8] = words();

const fn words() -> [u32; 8] {
    let mut out = [0u32; 8];
    let mut w = 0usize;
    while w < 8 {
        // bit j of the string is bit j + 38 of TWO_OVER_PI (bit 63 + k of it is bit k of 2/π)
        let i0 = 32 * w + 38;
        let (k, sh) = (i0 / 32, i0 % 32);
        let v = ((TWO_OVER_PI[k] as u64) << 32) | TWO_OVER_PI[k + 1] as u64;
        out[w] = ((v >> (32 - sh)) & 0xffff_ffff) as u32;
        w += 1;
    }
    out
}

/// `b[j]` when `mask` is 0, `b[j + step]` when it is all ones, for `j < N`.
#[inline(always)]
fn pick<const N: usize>(b: &[u32], step: usize, mask: u32) -> [u32; N] {
    let mut out = [0u32; N];
    for (j, o) in out.iter_mut().enumerate() {
        *o = b[j] ^ (mask & (b[j] ^ b[j + step]));
    }
    out
}

/// `2^-32`.
const TWO_M32: f64 = 1.0 / 4_294_967_296.0;
/// `2^-64`.
const TWO_M64: f64 = 1.0 / 18_446_744_073_709_551_616.0;

/// The reduced argument of `x`: `(q mod 4, r_hi, r_lo, negative, finite)`.
#[inline(always)]
fn reduce(x: f32) -> (u32, f32, f32, bool, bool) {
    let xb = x.to_bits();
    let ab = xb & 0x7fff_ffff;
    let ax = f32::from_bits(ab);
    let e0 = ab >> 23;
    let top = u32::from(e0 > 253);
    let e = e0.clamp(126, 253);
    let m = ((ab & 0x007f_ffff) | 0x0080_0000) << top;
    let s = e - 126;
    let sh = s & 31;
    // the aligned words s/32 ..= s/32 + 3, by the two bits of s/32
    let a: [u32; 6] = pick(&TWO_OVER_PI_F32_WORDS, 1, 0u32.wrapping_sub((s >> 5) & 1));
    let wd: [u32; 4] = pick(&a, 2, 0u32.wrapping_sub((s >> 6) & 1));
    let w0 = (wd[0] << sh) | ((wd[1] >> 1) >> (31 - sh));
    let w1 = (wd[1] << sh) | ((wd[2] >> 1) >> (31 - sh));
    let w2 = (wd[2] << sh) | ((wd[3] >> 1) >> (31 - sh));
    // the bits 2^1 .. 2^-62 of m · window · 2^-94 (mod 4)
    let p0 = m.wrapping_mul(w0);
    let p1 = u64::from(m) * u64::from(w1);
    let p2 = u64::from(m) * u64::from(w2);
    let hi = (u64::from(p0) << 32).wrapping_add(p1).wrapping_add(p2 >> 32);
    // round to the nearest quadrant: q, and f 2^64 as a signed integer
    let q = (hi.wrapping_add(1 << 61) >> 62) as u32;
    // f 2^64 = g as i64 = (its top 32 bits as i32) 2^32 + (its low 32 bits): both exact in
    // f64, their sum rounded once (gcc vectorises these conversions on AVX2 too; a 64-bit
    // integer conversion it does not)
    let g = hi << 2;
    let fa = f64::from((g >> 32) as u32 as i32) * TWO_M32;
    let fb = u52_to_f64(g & 0xffff_ffff) * TWO_M64;
    let r = (fa + fb) * PIO2_HI;
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
/// unrounded pair: `n · (1/d)`, corrected by its exact remainder times `1/d` (one division).
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    let (q, rh, rl, neg, fin) = reduce(x);
    let (sh, sl) = fast_two_sum32(rh, k_sin(rh, rl));
    let (w, t) = k_cos(rh, rl);
    let (ch, cl) = fast_two_sum32(w, t);
    let odd = (q & 1) != 0;
    let (nh, nl) = if odd { (-ch, -cl) } else { (sh, sl) };
    let (dh, dl) = if odd { (sh, sl) } else { (ch, cl) };
    // one division: qh = nh/dh to about an ulp, corrected by its exact remainder
    let inv = 1.0 / dh;
    let qh = nh * inv;
    let (p, pe) = two_prod32(qh, dh);
    let ql = ((((nh - p) - pe) + nl) - qh * dl) * inv;
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
  const unsigned int e0 = ab >> 23;
  const unsigned int top = (unsigned int)(e0 > 253U);
  unsigned int e = e0 < 126U ? 126U : e0;
  e = e > 253U ? 253U : e;
  const unsigned int m = ((ab & 0x007fffffU) | 0x00800000U) << top;
  const unsigned int s = e - 126U, sh = s & 31U;
  const unsigned int k1 = 0U - ((s >> 5) & 1U), k2 = 0U - ((s >> 6) & 1U);
@PICK@  const unsigned int w0 = (W0 << sh) | ((W1 >> 1) >> (31U - sh));
  const unsigned int w1 = (W1 << sh) | ((W2 >> 1) >> (31U - sh));
  const unsigned int w2 = (W2 << sh) | ((W3 >> 1) >> (31U - sh));
  const unsigned int p0 = m * w0;
  const unsigned long long p1 = (unsigned long long)m * (unsigned long long)w1;
  const unsigned long long p2 = (unsigned long long)m * (unsigned long long)w2;
  const unsigned long long hi = ((unsigned long long)p0 << 32) + p1 + (p2 >> 32);
  const unsigned int q = (unsigned int)((hi + (1ULL << 61)) >> 62);
  const unsigned long long g = hi << 2;
  const double fa = (double)(int)(unsigned int)(g >> 32) * @TWO_M32@;
  const double fb = eq_u52_to_f64(g & 0xffffffffULL) * @TWO_M64@;
  const double r = (fa + fb) * @PIO2_HI@;
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
  const float inv = 1.0f / dh;
  const float qh = nh * inv;
  const eq_ff p = eq_two_prod32(qh, dh);
  const float ql = ((((nh - p.hi) - p.lo) + nl) - qh * dl) * inv;
  const float v = eq_neg_if32(rd.neg, qh + ql);
  return eq_sel_f32(rd.fin, v, __int_as_float(0x7fc00000));
}
"#;

/// The C lines that pick the window's aligned words `W0 ..= W3` (as [`pick`] does).
fn c_pick() -> String {
    let b = &TWO_OVER_PI_F32_WORDS;
    let mut out = String::new();
    for j in 0..6 {
        out.push_str(&format!(
            "  const unsigned int a{j} = 0x{:08x}U ^ (k1 & 0x{:08x}U);\n",
            b[j],
            b[j] ^ b[j + 1]
        ));
    }
    for j in 0..4 {
        out.push_str(&format!("  const unsigned int W{j} = a{j} ^ (k2 & (a{j} ^ a{}));\n", j + 2));
    }
    out
}

/// The C text of `eq_sin_f32`, `eq_cos_f32`, `eq_tan_f32`.
pub(crate) fn c_source() -> String {
    let mut consts: Vec<(String, f32)> = vec![("PIO4_F32".into(), PIO4_F32)];
    consts.extend(SIN_F32_S.iter().enumerate().map(|(k, v)| (format!("S{k}"), *v)));
    consts.extend(COS_F32_C.iter().enumerate().map(|(k, v)| (format!("C{k}"), *v)));
    let refs: Vec<(&str, f32)> = consts.iter().map(|(n, v)| (n.as_str(), *v)).collect();
    let text = C_TEXT
        .replace("@TWO_M32@", &crate::math::c_double(TWO_M32))
        .replace("@TWO_M64@", &crate::math::c_double(TWO_M64))
        .replace("@PIO2_HI@", &crate::math::c_double(PIO2_HI))
        .replace("@PICK@", &c_pick());
    super::fill32(&text, &refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn the_words_hold_the_bits_of_two_over_pi_after_26_zeros() {
        let w = &TWO_OVER_PI_F32_WORDS;
        // 26 zero bits, then 0xa2f9836e 4e441529 ...: 0b101000 | 10 1111 1001 ...
        assert_eq!(w[0], 0x0000_0028);
        assert_eq!(w[1], 0xbe60_db93);
        assert_eq!(w[7], 0x9458_eaf7);
        // the window of E = 152 (x in [2^25, 2^26)) starts at the first bit of 2/π
        let s = 152 - 126;
        assert_eq!((w[0] << s) | (w[1] >> (32 - s)), 0xa2f9_836e);
    }

    #[test]
    fn the_reduction_agrees_with_the_f64_one_at_every_exponent() {
        // the window's words are picked by the exponent: one argument per exponent (and the
        // doubled significand of E = 254), against the f64 reduction of the f64 functions
        for e in 126u32..=254 {
            for mant in [0u32, 0x0055_5555, 0x007f_ffff, 0x0012_3457] {
                let x = f32::from_bits((e << 23) | mant);
                let (s, c) = (crate::math::sin_f64(f64::from(x)), crate::math::cos_f64(f64::from(x)));
                assert!((f64::from(sin_f32(x)) - s).abs() <= 1.2e-7 * s.abs().max(1e-3), "sin {x:e}");
                assert!((f64::from(cos_f32(x)) - c).abs() <= 1.2e-7 * c.abs().max(1e-3), "cos {x:e}");
            }
        }
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
