//! `sin`, `cos`, `tan` on `f32`: a reduction `x = (q + f) π/2` to `r = f π/2` in `f64`, then
//! FreeBSD's `f32` kernels (`__kernel_sindf`, `__kernel_cosdf`, `__kernel_tandf`: minimax
//! polynomials evaluated in `f64`) and one rounding to `f32`. Two reductions, both computed
//! and one selected by `|x| <` [`TRIG_MEDIUM_F32`] (`2^28 π/2`):
//!
//! - **medium** (FreeBSD's `__rem_pio2f`): `n = rint(x · 2/π)` by adding and subtracting
//!   `1.5 · 2^52`, `r = (x - n · pio2_1) - n · pio2_1t` with `pio2_1` the top 25 bits of
//!   `π/2` (so `n · pio2_1` and the first difference are exact for `|n| <= 2^28`) and
//!   `pio2_1t = π/2 - pio2_1` rounded; `q` the low bits of the sum's representation.
//!   `|x| <= π/4` gives `n = 0`, `r = x` exactly.
//! - **large**: an exact reduction `|x| = (q + f) π/2` by integer arithmetic on the 24-bit
//!   significand and a 96-bit window of the bits of `2/π`, giving `x · 2/π mod 4` in 64-bit
//!   fixed point with 62 fraction bits; `f` to `f64` by two exact conversions of its halves
//!   and one rounding, `r = f π/2` rounded to `f64`; `q`, `r` negated for negative `x`.
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
//!
//! The generated C loops use the medium path alone where no lane of a block needs the large
//! one ([`c_source`]'s `eq_sin_f32_m`, `eq_trig_big_f32`; `codegen/src/c/skeleton/`): the same
//! bits, since the exact functions select between the two.

use crate::math::{neg_if, u52_to_f64, PIO2_HI, TWO_OVER_PI};

/// The largest `|x|` that is its own reduced argument (`π/4` rounded down to `f32`).
pub const PIO4_F32: f32 = f32::from_bits(0x3f49_0fda);
/// Below this `|x|` (`2^28 π/2`, rounded up to `f32`), the medium reduction.
pub const TRIG_MEDIUM_F32: f32 = f32::from_bits(0x4dc9_0fdb);
/// FreeBSD's `__kernel_sindf` coefficients `S1 ..= S4` (`|sin x / x - s(x)| < 2^-37.5` on
/// `[-π/4, π/4]`).
pub const SIN_F32_S: [f64; 4] = [
    f64::from_bits(0xbfc5_5555_54cb_ac77),
    f64::from_bits(0x3f81_1110_896e_fbb2),
    f64::from_bits(0xbf2a_00f9_e2ca_e774),
    f64::from_bits(0x3ec6_cd87_8c3b_46a7),
];
/// FreeBSD's `__kernel_cosdf` coefficients `C0 ..= C3` (`|cos x - c(x)| < 2^-34.1`).
pub const COS_F32_C: [f64; 4] = [
    f64::from_bits(0xbfdf_ffff_fd0c_5e81),
    f64::from_bits(0x3fa5_5553_e105_3a42),
    f64::from_bits(0xbf56_c087_e80f_1e27),
    f64::from_bits(0x3ef9_9342_e0ee_5069),
];
/// FreeBSD's `__kernel_tandf` coefficients `T0 ..= T5` (`|tan x / x - t(x)| < 2^-25.5`).
pub const TAN_F32_T: [f64; 6] = [
    f64::from_bits(0x3fd5_554d_3418_c99f),
    f64::from_bits(0x3fc1_12fd_3899_9f72),
    f64::from_bits(0x3fab_54c9_1d86_5afe),
    f64::from_bits(0x3f99_1df3_908c_33ce),
    f64::from_bits(0x3f68_5dad_fcec_f44e),
    f64::from_bits(0x3f83_62b9_bf97_1bcd),
];
/// `2/π` rounded (`__rem_pio2f`'s `invpio2`).
const INV_PIO2: f64 = f64::from_bits(0x3fe4_5f30_6dc9_c883);
/// The top 25 bits of `π/2` (`pio2_1`).
const PIO2_1: f64 = f64::from_bits(0x3ff9_21fb_5000_0000);
/// `π/2 - pio2_1`, rounded (`pio2_1t`).
const PIO2_1T: f64 = f64::from_bits(0x3e51_10b4_611a_6263);
/// `1.5 · 2^52`: adding and subtracting it rounds to an integer.
const SHIFT: f64 = 6_755_399_441_055_744.0;

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

/// The medium reduction of `x` (right for `|x| <` [`TRIG_MEDIUM_F32`]): `(q mod 4, r)`.
#[inline(always)]
fn reduce_medium(x: f32) -> (u32, f64) {
    let xd = f64::from(x);
    let t = xd * INV_PIO2 + SHIFT;
    let n = t - SHIFT;
    ((t.to_bits() as u32) & 3, (xd - n * PIO2_1) - n * PIO2_1T)
}

/// The exact reduction of `x` (finite; any other `x` gives some `(q, r)`): `(q mod 4, r)`.
#[inline(always)]
fn reduce_large(x: f32) -> (u32, f64) {
    let xb = x.to_bits();
    let ab = xb & 0x7fff_ffff;
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
    // x = -(q + f) π/2 = (-q - f) π/2
    let neg = (xb >> 31) != 0;
    let q = if neg { q.wrapping_neg() } else { q };
    (q & 3, neg_if(neg, r))
}

/// The reduction of `x`: the medium one below [`TRIG_MEDIUM_F32`], else the exact one.
#[inline(always)]
fn reduce(x: f32) -> (u32, f64) {
    let (qm, rm) = reduce_medium(x);
    let (ql, rl) = reduce_large(x);
    let medium = x.abs() < TRIG_MEDIUM_F32;
    (if medium { qm } else { ql }, if medium { rm } else { rl })
}

/// `sin r` for `|r| <= π/4` (a little beyond where `rint` rounded a half).
#[inline(always)]
fn k_sin(x: f64) -> f64 {
    let s = &SIN_F32_S;
    let z = x * x;
    let w = z * z;
    let r = s[2] + z * s[3];
    let v = z * x;
    (x + v * (s[0] + z * s[1])) + v * w * r
}

/// `cos r` for `|r| <= π/4`.
#[inline(always)]
fn k_cos(x: f64) -> f64 {
    let c = &COS_F32_C;
    let z = x * x;
    let w = z * z;
    let r = c[2] + z * c[3];
    ((1.0 + z * c[0]) + w * c[1]) + (w * z) * r
}

/// `tan r` for `|r| <= π/4`, or `-1 / tan r` when `odd` (one division).
#[inline(always)]
fn k_tan(x: f64, odd: bool) -> f64 {
    let t = &TAN_F32_T;
    let z = x * x;
    let r = t[4] + z * t[5];
    let u = t[2] + z * t[3];
    let w = z * z;
    let s = z * x;
    let v = t[0] + z * t[1];
    let p = (x + s * v) + (s * w) * (u + w * r);
    let inv = -1.0 / p;
    if odd {
        inv
    } else {
        p
    }
}

/// `v` rounded to `f32`, NaN where `x` is not finite, `x` where `x` is zero (`sin`, `tan`
/// keep the sign of zero).
#[inline(always)]
fn finish(x: f32, v: f64, keep_zero: bool) -> f32 {
    let v = v as f32;
    let v = if keep_zero && x == 0.0 { x } else { v };
    if x.abs() <= f32::MAX {
        v
    } else {
        f32::NAN
    }
}

/// `v` with its sign bit flipped where `bit` (0 or 2) is 2: `-v` (the C text flips the bit).
#[inline(always)]
fn flip_if(bit: u32, v: f64) -> f64 {
    f64::from_bits(v.to_bits() ^ (u64::from(bit & 2) << 62))
}

/// `sin` of the reduced argument `(q, r)`.
#[inline(always)]
fn sin_of(q: u32, r: f64) -> f64 {
    let (s, c) = (k_sin(r), k_cos(r));
    let v = if (q & 1) != 0 { c } else { s };
    flip_if(q & 2, v)
}

/// `cos` of the reduced argument `(q, r)`.
#[inline(always)]
fn cos_of(q: u32, r: f64) -> f64 {
    let (s, c) = (k_sin(r), k_cos(r));
    let v = if (q & 1) != 0 { s } else { c };
    flip_if((q + 1) & 2, v)
}

/// `sin x` in `f32`.
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    let (q, r) = reduce(x);
    finish(x, sin_of(q, r), true)
}

/// `cos x` in `f32`.
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    let (q, r) = reduce(x);
    finish(x, cos_of(q, r), false)
}

/// `tan x` in `f32`: `tan r` or, in odd quadrants, `-1 / tan r`.
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    let (q, r) = reduce(x);
    finish(x, k_tan(r, (q & 1) != 0), true)
}

const C_TEXT: &str = r#"typedef struct eq_red32 { unsigned long long q; double r; } eq_red32;
static __device__ __forceinline__ eq_red32 eq_reduce_pio2_f32_m(float x) {
  const double xd = (double)x;
  const double t = xd * @INV_PIO2@ + @SHIFT@;
  const double n = t - @SHIFT@;
  eq_red32 out;
  out.q = (unsigned long long)__double_as_longlong(t);
  out.r = (xd - n * @PIO2_1@) - n * @PIO2_1T@;
  return out;
}
static __device__ __forceinline__ eq_red32 eq_reduce_pio2_f32(float x) {
  const unsigned int xb = (unsigned int)__float_as_int(x);
  const unsigned int ab = xb & 0x7fffffffU;
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
  const bool neg = (xb >> 31) != 0U;
  const unsigned int kn = 0U - (unsigned int)neg;
  eq_red32 out;
  out.q = (unsigned long long)((q ^ (kn & (q ^ (0U - q)))) & 3U);
  out.r = eq_neg_if(neg, r);
  return out;
}
static __device__ __forceinline__ eq_red32 eq_reduce_pio2_f32_x(float x) {
  const eq_red32 md = eq_reduce_pio2_f32_m(x);
  const eq_red32 lg = eq_reduce_pio2_f32(x);
  const bool medium = fabsf(x) < @TRIG_MEDIUM@;
  const unsigned long long km = 0ULL - (unsigned long long)medium;
  eq_red32 out;
  out.q = lg.q ^ (km & (lg.q ^ md.q));
  out.r = eq_sel_f64(medium, md.r, lg.r);
  return out;
}
static __device__ __forceinline__ int eq_trig_big_f32(float x) { return !(fabsf(x) < @TRIG_MEDIUM@); }
static __device__ __forceinline__ double eq_k_sin32(double x) {
  const double z = x * x;
  const double w = z * z;
  const double r = @S2@ + z * @S3@;
  const double v = z * x;
  return (x + v * (@S0@ + z * @S1@)) + v * w * r;
}
static __device__ __forceinline__ double eq_k_cos32(double x) {
  const double z = x * x;
  const double w = z * z;
  const double r = @C2@ + z * @C3@;
  return ((1.0 + z * @C0@) + w * @C1@) + (w * z) * r;
}
static __device__ __forceinline__ double eq_k_tan32(double x, bool odd) {
  const double z = x * x;
  const double r = @T4@ + z * @T5@;
  const double u = @T2@ + z * @T3@;
  const double w = z * z;
  const double s = z * x;
  const double v = @T0@ + z * @T1@;
  const double p = (x + s * v) + (s * w) * (u + w * r);
  const double inv = -1.0 / p;
  return eq_sel_f64(odd, inv, p);
}
static __device__ __forceinline__ double eq_sin32_of(eq_red32 rd) {
  const double s = eq_k_sin32(rd.r), c = eq_k_cos32(rd.r);
  const double v = eq_sel_f64((rd.q & 1ULL) != 0ULL, c, s);
  return __longlong_as_double((long long)((unsigned long long)__double_as_longlong(v) ^ ((rd.q & 2ULL) << 62)));
}
static __device__ __forceinline__ double eq_cos32_of(eq_red32 rd) {
  const double s = eq_k_sin32(rd.r), c = eq_k_cos32(rd.r);
  const double v = eq_sel_f64((rd.q & 1ULL) != 0ULL, s, c);
  return __longlong_as_double((long long)((unsigned long long)__double_as_longlong(v) ^ (((rd.q + 1ULL) & 2ULL) << 62)));
}
static __device__ __forceinline__ float eq_trig32_round(float x, double v, bool keep_zero) {
  return eq_sel_f32(keep_zero && x == 0.0f, x, (float)v);
}
static __device__ __forceinline__ float eq_trig32_finish(float x, double v, bool keep_zero) {
  const float f = eq_trig32_round(x, v, keep_zero);
  return eq_sel_f32(fabsf(x) <= 3.40282347e+38f, f, __int_as_float(0x7fc00000));
}
static __device__ __forceinline__ float eq_sin_f32(float x) {
  return eq_trig32_finish(x, eq_sin32_of(eq_reduce_pio2_f32_x(x)), true);
}
static __device__ __forceinline__ float eq_cos_f32(float x) {
  return eq_trig32_finish(x, eq_cos32_of(eq_reduce_pio2_f32_x(x)), false);
}
static __device__ __forceinline__ float eq_tan_f32(float x) {
  const eq_red32 rd = eq_reduce_pio2_f32_x(x);
  return eq_trig32_finish(x, eq_k_tan32(rd.r, (rd.q & 1ULL) != 0ULL), true);
}
static __device__ __forceinline__ float eq_sin_f32_m(float x) {
  return eq_trig32_round(x, eq_sin32_of(eq_reduce_pio2_f32_m(x)), true);
}
static __device__ __forceinline__ float eq_cos_f32_m(float x) {
  return eq_trig32_round(x, eq_cos32_of(eq_reduce_pio2_f32_m(x)), false);
}
static __device__ __forceinline__ float eq_tan_f32_m(float x) {
  const eq_red32 rd = eq_reduce_pio2_f32_m(x);
  return eq_trig32_round(x, eq_k_tan32(rd.r, (rd.q & 1ULL) != 0ULL), true);
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

/// The C text of `eq_sin_f32`, `eq_cos_f32`, `eq_tan_f32`, their medium paths
/// `eq_sin_f32_m`, `eq_cos_f32_m`, `eq_tan_f32_m` (right where `eq_trig_big_f32` is 0) and
/// `eq_trig_big_f32` (`|x| >=` [`TRIG_MEDIUM_F32`], or NaN).
pub(crate) fn c_source() -> String {
    let d = crate::math::c_double;
    let mut doubles: Vec<(String, f64)> = vec![
        ("INV_PIO2".into(), INV_PIO2),
        ("SHIFT".into(), SHIFT),
        ("PIO2_1".into(), PIO2_1),
        ("PIO2_1T".into(), PIO2_1T),
        ("TWO_M32".into(), TWO_M32),
        ("TWO_M64".into(), TWO_M64),
        ("PIO2_HI".into(), PIO2_HI),
    ];
    doubles.extend(SIN_F32_S.iter().enumerate().map(|(k, v)| (format!("S{k}"), *v)));
    doubles.extend(COS_F32_C.iter().enumerate().map(|(k, v)| (format!("C{k}"), *v)));
    doubles.extend(TAN_F32_T.iter().enumerate().map(|(k, v)| (format!("T{k}"), *v)));
    let mut text = C_TEXT.replace("@PICK@", &c_pick());
    for (name, v) in &doubles {
        text = text.replace(&format!("@{name}@"), &d(*v));
    }
    super::fill32(&text, &[("TRIG_MEDIUM", TRIG_MEDIUM_F32)])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sin x` by the medium reduction alone: [`sin_f32`] where `|x| <` [`TRIG_MEDIUM_F32`].
    fn sin_f32_medium(x: f32) -> f32 {
        let (q, r) = reduce_medium(x);
        finish(x, sin_of(q, r), true)
    }

    /// `cos x` by the medium reduction alone: [`cos_f32`] where `|x| <` [`TRIG_MEDIUM_F32`].
    fn cos_f32_medium(x: f32) -> f32 {
        let (q, r) = reduce_medium(x);
        finish(x, cos_of(q, r), false)
    }

    /// `tan x` by the medium reduction alone: [`tan_f32`] where `|x| <` [`TRIG_MEDIUM_F32`].
    fn tan_f32_medium(x: f32) -> f32 {
        let (q, r) = reduce_medium(x);
        finish(x, k_tan(r, (q & 1) != 0), true)
    }

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
                for sign in [0, 0x8000_0000] {
                    let x = f32::from_bits(sign | (e << 23) | mant);
                    let (s, c) = (crate::math::sin_f64(f64::from(x)), crate::math::cos_f64(f64::from(x)));
                    assert!((f64::from(sin_f32(x)) - s).abs() <= 1.2e-7 * s.abs().max(1e-3), "sin {x:e}");
                    assert!((f64::from(cos_f32(x)) - c).abs() <= 1.2e-7 * c.abs().max(1e-3), "cos {x:e}");
                }
            }
        }
    }

    #[test]
    fn the_exact_reduction_agrees_with_the_medium_one_below_the_bound() {
        // both reductions on the same arguments: the large one is exact everywhere, the
        // medium one right below TRIG_MEDIUM_F32: its r is off by at most n · 2^-53 · pio2_1t
        // and two roundings (below 1e-15 for n < 2^28)
        for e in 126u32..=156 {
            for mant in [0u32, 0x0055_5555, 0x007f_ffff, 0x0012_3457, 0x0049_0fdb] {
                for sign in [0, 0x8000_0000] {
                    let x = f32::from_bits(sign | (e << 23) | mant);
                    if x.abs() >= TRIG_MEDIUM_F32 {
                        continue;
                    }
                    let ((qm, rm), (ql, rl)) = (reduce_medium(x), reduce_large(x));
                    // the same quadrant, or the neighbouring one at a half (r = ±π/4)
                    let same_q = qm == ql && (rm - rl).abs() <= 1e-15 + 1e-15 * rl.abs();
                    let moved =
                        (rm - rl).abs() > 1.5 && (rl.abs() - std::f64::consts::FRAC_PI_4).abs() < 1e-6;
                    assert!(same_q || moved, "{x:e}: ({qm}, {rm:e}) against ({ql}, {rl:e})");
                }
            }
        }
    }

    #[test]
    fn special_values() {
        for f in [sin_f32, tan_f32, sin_f32_medium, tan_f32_medium] {
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
        for x in [1e20f32, 3.4e38, 16_367_173.0 * 2f32.powi(72), 1e5, 2f32.powi(24) - 1.0, 4.2e8, 4.3e8] {
            for x in [x, -x] {
                let want = crate::math::sin_f64(f64::from(x));
                assert!((f64::from(sin_f32(x)) - want).abs() <= 1e-7 * want.abs().max(1e-3), "sin {x}");
                let want = crate::math::cos_f64(f64::from(x));
                assert!((f64::from(cos_f32(x)) - want).abs() <= 1e-7 * want.abs().max(1e-3), "cos {x}");
            }
        }
    }

    #[test]
    fn the_medium_functions_are_the_exact_ones_below_the_bound() {
        let below = f32::from_bits(TRIG_MEDIUM_F32.to_bits() - 1);
        for x in [0.5f32, 1e3, 3e5, 1e8, below, 12_345.679, std::f32::consts::FRAC_PI_4, 2.3561945] {
            for x in [x, -x] {
                assert!(same(sin_f32_medium(x), sin_f32(x)), "sin {x}");
                assert!(same(cos_f32_medium(x), cos_f32(x)), "cos {x}");
                assert!(same(tan_f32_medium(x), tan_f32(x)), "tan {x}");
            }
        }
        // above it the medium path is not used: the exact one differs from it somewhere
        let big = [TRIG_MEDIUM_F32, 1e10, 3e9, 1e30];
        assert!(big.iter().any(|&x| !same(sin_f32_medium(x), sin_f32(x))));
    }
}
