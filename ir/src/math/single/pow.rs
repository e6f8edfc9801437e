//! `pow` on `f32`, in `f32`: FreeBSD's `e_powf.c` without its branches for `log2 |x|` as a
//! pair `t1 + t2` (`t1` with 12 significant bits, about 36 bits in all) from `s = (m -
//! bp)/(m + bp)` in `f32` pairs; `y log2 |x| = p_h + p_l` with `p_h = y_1 t1` exact (`y_1`
//! the top 12 bits of `y`); then `2^{p_h + p_l}` by `exp2`'s pair kernel (module `exps`),
//! whose clamping gives the overflows and underflows. Every special case of C99 F.9.4.4 is a
//! select at the end, as in `pow_f64`.

use super::exps::exp2_pair32;
use super::logs::mask12;
use super::neg_if32;

/// `e_powf.c`'s `dp_h[1]`, `dp_l[1]`: `log2(1.5)` in two parts.
pub const DP_H_F32: f32 = f32::from_bits(0x3f15_c000);
/// See [`DP_H_F32`].
pub const DP_L_F32: f32 = f32::from_bits(0x35d1_cfdc);
/// `e_powf.c`'s `L1 ..= L6`: `(3/2)(log(x) - 2s - 2/3 s^3)`.
pub const POW_L_F32: [f32; 6] = [
    f32::from_bits(0x3f19_999a),
    f32::from_bits(0x3edb_6db7),
    f32::from_bits(0x3eaa_aaab),
    f32::from_bits(0x3e8b_a305),
    f32::from_bits(0x3e6c_3255),
    f32::from_bits(0x3e53_f142),
];
/// `2 / (3 ln 2)` (`e_powf.c`'s `cp`).
pub const CP_F32: f32 = f32::from_bits(0x3f76_384f);
/// `CP_F32`'s top 12 bits (`cp_h`).
pub const CP_H_F32: f32 = f32::from_bits(0x3f76_4000);
/// `2 / (3 ln 2) - CP_H_F32` (`cp_l`).
pub const CP_L_F32: f32 = f32::from_bits(0xb8f6_23c6);
/// `2^23`: adding and subtracting it rounds a smaller float to an integer.
const TWO23: f32 = 8_388_608.0;
/// `2^24`: floats from here on are even integers.
const TWO24: f32 = 16_777_216.0;
/// `2^64`: `|y|` from here on over/underflows (or gives 1).
pub const POW_YBIG_F32: f32 = 18_446_744_073_709_551_616.0;

/// `log2 x = t1 + t2` for positive finite `x` (`t1` with 12 significant bits).
#[inline(always)]
fn log2_pair32(ax: f32) -> (f32, f32) {
    let sub = ax < f32::MIN_POSITIVE;
    let axs = if sub { ax * TWO24 } else { ax };
    let ix = axs.to_bits();
    let n0 = (ix >> 23) as i32 - 0x7f - if sub { 24 } else { 0 };
    let j = ix & 0x007f_ffff;
    let k1 = j > 0x001c_c471 && j < 0x005d_b3d7;
    let k2 = j >= 0x005d_b3d7;
    let n = n0 + i32::from(k2);
    let ixn = (j | 0x3f80_0000) - if k2 { 0x0080_0000 } else { 0 };
    let axn = f32::from_bits(ixn);
    let bp = if k1 { 1.5 } else { 1.0 };
    let dph = if k1 { DP_H_F32 } else { 0.0 };
    let dpl = if k1 { DP_L_F32 } else { 0.0 };
    let u = axn - bp;
    let v = 1.0 / (axn + bp);
    let ss = u * v;
    let s_h = mask12(ss);
    let th = f32::from_bits(
        (((ixn >> 1) & 0xffff_f000) | 0x2000_0000) + 0x0040_0000 + if k1 { 1 << 21 } else { 0 },
    );
    let tl = axn - (th - bp);
    let s_l = v * ((u - s_h * th) - s_h * tl);
    let s2 = ss * ss;
    let l = &POW_L_F32;
    let r = (s2 * s2) * (l[0] + s2 * (l[1] + s2 * (l[2] + s2 * (l[3] + s2 * (l[4] + s2 * l[5])))));
    let r = r + s_l * (s_h + ss);
    let s2 = s_h * s_h;
    let th = mask12((3.0 + s2) + r);
    let tl = r - ((th - 3.0) - s2);
    let u = s_h * th;
    let v = s_l * th + tl * ss;
    let p_h = mask12(u + v);
    let p_l = v - (p_h - u);
    let z_h = CP_H_F32 * p_h;
    let z_l = (CP_L_F32 * p_h + p_l * CP_F32) + dpl;
    let t = n as f32;
    let t1 = mask12(((z_h + z_l) + dph) + t);
    let t2 = z_l - (((t1 - t) - dph) - z_h);
    (t1, t2)
}

/// `x^y` in `f32`.
#[inline(always)]
pub fn pow_f32(x: f32, y: f32) -> f32 {
    let xb = x.to_bits();
    let yb = y.to_bits();
    let ax = f32::from_bits(xb & 0x7fff_ffff);
    let ay = f32::from_bits(yb & 0x7fff_ffff);
    let xneg = (xb >> 31) != 0;
    // y: an integer? odd? (by rounding to an integer with 2^23)
    let yt = (ay + TWO23) - TWO23;
    let yint = ay >= TWO23 || yt == ay;
    let yh = ay * 0.5;
    let yht = (yh + TWO23) - TWO23;
    let yodd = ay < TWO24 && yint && yht != yh;
    let (t1, t2) = log2_pair32(ax);
    // y log2 |x| = p_h + p_l, p_h exact
    let y1 = mask12(y);
    let p_l = (y - y1) * t1 + y * t2;
    let p_h = y1 * t1;
    let res = exp2_pair32(p_h, p_l);
    let res = neg_if32(xneg && yodd, res);
    let res = if xneg && !yint { f32::NAN } else { res };
    // exact shortcuts
    let xx = x * x;
    let inv = 1.0 / x;
    let res = if y == 2.0 { xx } else { res };
    let res = if y == 1.0 { x } else { res };
    let res = if y == -1.0 { inv } else { res };
    // x = ±0, ±inf
    let zres = if (ax == 0.0) == (y < 0.0) { f32::INFINITY } else { 0.0 };
    let zres = neg_if32(xneg && yodd, zres);
    let res = if ax == 0.0 || ax == f32::INFINITY { zres } else { res };
    // |y| >= 2^64, ±inf
    let bres = if (ax < 1.0) == (y < 0.0) { f32::INFINITY } else { 0.0 };
    let bres = if ax == 1.0 { 1.0 } else { bres };
    let res = if ay >= POW_YBIG_F32 { bres } else { res };
    let nan = x + y;
    let res = if x.is_nan() || y.is_nan() { nan } else { res };
    if x == 1.0 || y == 0.0 {
        1.0
    } else {
        res
    }
}

const C_TEXT: &str = r#"static __device__ __forceinline__ eq_ff eq_log2_pair32(float ax) {
  const bool sub = ax < 1.17549435e-38f;
  const float axs = eq_sel_f32(sub, ax * 16777216.0f, ax);
  const unsigned int ix = (unsigned int)__float_as_int(axs);
  const int n0 = (int)(ix >> 23) - 0x7f - (sub ? 24 : 0);
  const unsigned int j = ix & 0x007fffffU;
  const bool k1 = (j > 0x001cc471U) & (j < 0x005db3d7U);
  const bool k2 = j >= 0x005db3d7U;
  const int n = n0 + (k2 ? 1 : 0);
  const unsigned int ixn = (j | 0x3f800000U) - (k2 ? 0x00800000U : 0U);
  const float axn = __int_as_float((int)ixn);
  const float bp = eq_sel_f32(k1, 1.5f, 1.0f);
  const float dph = eq_sel_f32(k1, @DP_H@, 0.0f);
  const float dpl = eq_sel_f32(k1, @DP_L@, 0.0f);
  const float u0 = axn - bp;
  const float v0 = 1.0f / (axn + bp);
  const float ss = u0 * v0;
  const float s_h = eq_mask12(ss);
  const float th0 = __int_as_float((int)((((ixn >> 1) & 0xfffff000U) | 0x20000000U) + 0x00400000U + (k1 ? (1U << 21) : 0U)));
  const float tl0 = axn - (th0 - bp);
  const float s_l = v0 * ((u0 - s_h * th0) - s_h * tl0);
  const float s20 = ss * ss;
  const float r0 = (s20 * s20) * (@L0@ + s20 * (@L1@ + s20 * (@L2@ + s20 * (@L3@ + s20 * (@L4@ + s20 * @L5@)))));
  const float r1 = r0 + s_l * (s_h + ss);
  const float s2 = s_h * s_h;
  const float th = eq_mask12((3.0f + s2) + r1);
  const float tl = r1 - ((th - 3.0f) - s2);
  const float u1 = s_h * th;
  const float v1 = s_l * th + tl * ss;
  const float p_h = eq_mask12(u1 + v1);
  const float p_l = v1 - (p_h - u1);
  const float z_h = @CP_H@ * p_h;
  const float z_l = (@CP_L@ * p_h + p_l * @CP@) + dpl;
  const float t = (float)n;
  eq_ff out;
  out.hi = eq_mask12(((z_h + z_l) + dph) + t);
  out.lo = z_l - (((out.hi - t) - dph) - z_h);
  return out;
}
static __device__ __forceinline__ float eq_pow_f32(float x, float y) {
  const unsigned int xb = (unsigned int)__float_as_int(x);
  const unsigned int yb = (unsigned int)__float_as_int(y);
  const float ax = __int_as_float((int)(xb & 0x7fffffffU));
  const float ay = __int_as_float((int)(yb & 0x7fffffffU));
  const bool xneg = (xb >> 31) != 0U;
  const float yt = (ay + @TWO23@) - @TWO23@;
  const bool yint = (ay >= @TWO23@) | (yt == ay);
  const float yh = ay * 0.5f;
  const float yht = (yh + @TWO23@) - @TWO23@;
  const bool yodd = (ay < @TWO24@) & yint & (yht != yh);
  const eq_ff t = eq_log2_pair32(ax);
  const float y1 = eq_mask12(y);
  const float p_l = (y - y1) * t.hi + y * t.lo;
  const float p_h = y1 * t.hi;
  float res = eq_exp2_pair32(p_h, p_l);
  res = eq_neg_if32(xneg & yodd, res);
  res = eq_sel_f32(xneg & !yint, __int_as_float(0x7fc00000), res);
  const float xx = x * x;
  const float inv = 1.0f / x;
  res = eq_sel_f32(y == 2.0f, xx, res);
  res = eq_sel_f32(y == 1.0f, x, res);
  res = eq_sel_f32(y == -1.0f, inv, res);
  const float inf = __int_as_float(0x7f800000);
  const float zres0 = eq_sel_f32((ax == 0.0f) == (y < 0.0f), inf, 0.0f);
  const float zres = eq_neg_if32(xneg & yodd, zres0);
  res = eq_sel_f32((ax == 0.0f) | (ax == inf), zres, res);
  const float bres0 = eq_sel_f32((ax < 1.0f) == (y < 0.0f), inf, 0.0f);
  const float bres = eq_sel_f32(ax == 1.0f, 1.0f, bres0);
  res = eq_sel_f32(ay >= @YBIG@, bres, res);
  const float nan = x + y;
  res = eq_sel_f32((x != x) | (y != y), nan, res);
  return eq_sel_f32((x == 1.0f) | (y == 0.0f), 1.0f, res);
}
"#;

/// The C text of `eq_pow_f32` (after `eq_exp2_pair32` and `eq_mask12`).
pub(crate) fn c_source() -> String {
    let l = &POW_L_F32;
    super::fill32(
        C_TEXT,
        &[
            ("DP_H", DP_H_F32),
            ("DP_L", DP_L_F32),
            ("L0", l[0]),
            ("L1", l[1]),
            ("L2", l[2]),
            ("L3", l[3]),
            ("L4", l[4]),
            ("L5", l[5]),
            ("CP", CP_F32),
            ("CP_H", CP_H_F32),
            ("CP_L", CP_L_F32),
            ("TWO23", TWO23),
            ("TWO24", TWO24),
            ("YBIG", POW_YBIG_F32),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn the_constants_are_what_they_say() {
        assert!((f64::from(DP_H_F32) + f64::from(DP_L_F32) - 1.5f64.log2()).abs() < 1e-12);
        let cp = 2.0 / (3.0 * std::f64::consts::LN_2);
        assert!((f64::from(CP_H_F32) + f64::from(CP_L_F32) - cp).abs() < 1e-11);
        assert_eq!(CP_F32, cp as f32);
        assert_eq!(POW_YBIG_F32, 2f32.powi(64));
    }

    #[test]
    fn exact_and_special_results() {
        assert!(same(pow_f32(2.0, -149.0), f32::from_bits(1)) && same(pow_f32(2.0, -150.0), 0.0));
        assert!(same(pow_f32(-2.0, -149.0), -f32::from_bits(1)) && same(pow_f32(-2.0, -151.0), -0.0));
        assert!(same(pow_f32(2.0, 128.0), f32::INFINITY) && same(pow_f32(-2.0, 127.0), -(2f32.powi(127))));
        assert_eq!(pow_f32(3.0, 10.0), 59049.0);
        assert_eq!(pow_f32(10.0, 7.0), 1e7);
        assert_eq!(pow_f32(0.5, 20.0), 2f32.powi(-20));
        assert_eq!(pow_f32(16.0, 0.25), 2.0);
        assert!(same(pow_f32(1.0 + f32::EPSILON, 1e12), f32::INFINITY));
        assert!(same(pow_f32(1.0 - f32::EPSILON, 1e12), 0.0));
        assert!(same(pow_f32(f32::MAX, f32::MAX), f32::INFINITY) && same(pow_f32(f32::MAX, -2.5), 0.0));
        assert!(same(pow_f32(f32::from_bits(1), 0.5), 2f32.powf(-74.5)));
    }

    /// On special values (where the result is exact, `0`, `inf` or NaN), the same results as
    /// `pow_f64` rounded once to `f32`, which `pow_f32` was before it computed in `f32`.
    #[test]
    fn special_values_give_pow_f64_rounded() {
        let mut sp: Vec<f32> = vec![0.0, 1.0, 0.5, 2.0, 3.0, 2.5, 7.0, 1024.0, 149.0, 150.0, 1e20, 0.1];
        sp.extend([1.0 + f32::EPSILON, 1.0 - f32::EPSILON / 2.0, 2f32.powi(24), 2f32.powi(24) + 2.0]);
        sp.extend([2f32.powi(23) + 1.0, f32::from_bits(1), f32::MIN_POSITIVE, f32::MAX, f32::INFINITY]);
        sp.extend(sp.clone().iter().map(|v| -v));
        sp.push(f32::NAN);
        for &x in &sp {
            for &y in &sp {
                let want = crate::math::pow_f64(f64::from(x), f64::from(y)) as f32;
                let exact = f64::from(want) == crate::math::pow_f64(f64::from(x), f64::from(y));
                if exact || want.is_nan() || want == 0.0 || want.is_infinite() {
                    assert!(
                        same(pow_f32(x, y), want),
                        "pow_f32({x:e}, {y:e}) = {:e}, not {want:e}",
                        pow_f32(x, y)
                    );
                }
            }
        }
    }
}
