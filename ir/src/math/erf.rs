//! `erf` and `erfc`: fdlibm's `s_erf.c` without its branches (every interval computed, then
//! selected), with one change: in the tails (`|x| >= 1.25`) `e^{-x^2 - 0.5625 + R/S} / |x|`
//! is one double-double exponential ([`super::exps::exp_dd`], `-z^2 - 0.5625` exact for `z`
//! the top 21 bits of `|x|`, `(z - |x|)(z + |x|) + R/S` its low part) and a double-double
//! quotient, where fdlibm multiplies two rounded exponentials; `1 - E` and `2 - E` in
//! double-double. The `f32` versions (`erf_f32`, `erfc_f32`, re-exported here) are short
//! rational functions of their own, in `math::single`.

use super::exps::{exp_dd, pow2};
pub use super::single::{erf_f32, erfc_f32};
use super::{fast_two_sum, horner, neg_if, two_prod, two_sum, zero_low};

/// `erf(1)` rounded to 24 bits (fdlibm's `erx`).
#[allow(clippy::excessive_precision)]
const ERX: f64 = 8.45062911510467529297e-01;
/// `2/sqrt(pi) - 1` (fdlibm's `efx`), times 8.
#[allow(clippy::excessive_precision)]
const EFX8: f64 = 1.02703333676410069053e+00;
/// `erf x = x + x P(x^2)/Q(x^2)` on `|x| < 0.84375`: `P`.
#[allow(clippy::excessive_precision)]
const PP: [f64; 5] = [
    1.28379167095512558561e-01,
    -3.25042107247001499370e-01,
    -2.84817495755985104766e-02,
    -5.77027029648944159157e-03,
    -2.37630166566501626084e-05,
];
/// `Q` (from the constant 1).
#[allow(clippy::excessive_precision)]
const QQ: [f64; 6] = [
    1.0,
    3.97917223959155352819e-01,
    6.50222499887672944485e-02,
    5.08130628187576562776e-03,
    1.32494738004321644526e-04,
    -3.96022827877536812320e-06,
];
/// `erf(1 + s) = ERX + P(s)/Q(s)` on `0.84375 <= |x| < 1.25`: `P`.
#[allow(clippy::excessive_precision)]
const PA: [f64; 7] = [
    -2.36211856075265944077e-03,
    4.14856118683748331666e-01,
    -3.72207876035701323847e-01,
    3.18346619901161753674e-01,
    -1.10894694282396677476e-01,
    3.54783043256182359371e-02,
    -2.16637559486879084300e-03,
];
/// `Q`.
#[allow(clippy::excessive_precision)]
const QA: [f64; 7] = [
    1.0,
    1.06420880400844228286e-01,
    5.40397917702171048937e-01,
    7.18286544141962662868e-02,
    1.26171219808761642112e-01,
    1.36370839120290507362e-02,
    1.19844998467991074170e-02,
];
/// `erfc x = e^{-x^2 - 0.5625 + R(s)/S(s)} / x`, `s = 1/x^2`, on `[1.25, 1/0.35)`: `R`.
#[allow(clippy::excessive_precision)]
const RA: [f64; 8] = [
    -9.86494403484714822705e-03,
    -6.93858572707181764372e-01,
    -1.05586262253232909814e+01,
    -6.23753324503260060396e+01,
    -1.62396669462573470355e+02,
    -1.84605092906711035994e+02,
    -8.12874355063065934246e+01,
    -9.81432934416914548592e+00,
];
/// `S`.
#[allow(clippy::excessive_precision)]
const SA: [f64; 9] = [
    1.0,
    1.96512716674392571292e+01,
    1.37657754143519042600e+02,
    4.34565877475229228821e+02,
    6.45387271733267880336e+02,
    4.29008140027567833386e+02,
    1.08635005541779435134e+02,
    6.57024977031928170135e+00,
    -6.04244152148580987438e-02,
];
/// The same on `[1/0.35, 28]`: `R`.
#[allow(clippy::excessive_precision)]
const RB: [f64; 7] = [
    -9.86494292470009928597e-03,
    -7.99283237680523006574e-01,
    -1.77579549177547519889e+01,
    -1.60636384855821916062e+02,
    -6.37566443368389627722e+02,
    -1.02509513161107724954e+03,
    -4.83519191608651397019e+02,
];
/// `S`.
#[allow(clippy::excessive_precision)]
const SB: [f64; 8] = [
    1.0,
    3.03380607434824582924e+01,
    3.25792512996573918826e+02,
    1.53672958608443695994e+03,
    3.19985821950859553908e+03,
    2.55305040643316442583e+03,
    4.74528541206955367215e+02,
    -2.24409524465858183362e+01,
];
/// `1/0.35` (fdlibm's bound, high word `0x4006db6d`).
const ERF_RB: f64 = 2.857142857142857;
/// `2^-28`: below it, `erf x = x + x (2/sqrt(pi) - 1)`, computed as fdlibm does.
const ERF_TINY: f64 = 3.725290298461914e-9;

/// The pieces of `erf` and `erfc` at `ax = |x|`: the small interval's `y = P/Q` (at
/// `x^2`), the middle interval's `P/Q` (at `|x| - 1`), and the tail's
/// `E = e^{-x^2 - 0.5625 + R/S} / |x|` (`|x|` clamped to `[1.25, 28]`), rounded and as a
/// double-double.
#[inline(always)]
fn pieces(ax: f64) -> (f64, f64, f64, f64, f64, f64) {
    let z = ax * ax;
    let y = horner(&PP, z) / horner(&QQ, z);
    let s = ax - 1.0;
    let (pq, pql) = mid_quotient(s);
    let at = if ax < 1.25 { 1.25 } else { ax };
    let at = if at > 28.0 { 28.0 } else { at };
    let s = 1.0 / (at * at);
    let low = at < ERF_RB;
    let r = if low { horner(&RA, s) } else { horner(&RB, s) };
    let bs = if low { horner(&SA, s) } else { horner(&SB, s) };
    let zt = zero_low(at);
    let (h, l, k) = exp_dd(-zt * zt - 0.5625, (zt - at) * (zt + at) + r / bs);
    let qh = h / at;
    let (p, pe) = two_prod(qh, at);
    let ql = (((h - p) - pe) + l) / at;
    let k1 = k >> 1;
    let (s1, s2) = (pow2(k1), pow2(k - k1));
    let e = ((qh + ql) * s1) * s2;
    (y, pq, pql, e, (qh * s1) * s2, (ql * s1) * s2)
}

/// The middle interval's `P(s)/Q(s)` as a double-double: the last Horner steps of `P` and
/// `Q` (`PA0 + s P1`, `1 + s Q1`) and the quotient carried exactly, so that `(1 - ERX) - P/Q`
/// (which cancels) keeps the precision of `P1` and `Q1`.
#[inline(always)]
fn mid_quotient(s: f64) -> (f64, f64) {
    let (m, me) = two_prod(s, horner(&PA[1..], s));
    let (ph, pl) = two_sum(PA[0], m);
    let pl = pl + me;
    let (n, ne) = two_prod(s, horner(&QA[1..], s));
    let (qh, ql) = fast_two_sum(1.0, n);
    let ql = ql + ne;
    let th = ph / qh;
    let (u, ue) = two_prod(th, qh);
    let tl = ((((ph - u) - ue) + pl) - th * ql) / qh;
    fast_two_sum(th, tl)
}

/// `erf x` in `f64`.
#[inline(always)]
pub fn erf_f64(x: f64) -> f64 {
    let neg = (x.to_bits() >> 63) != 0;
    let ax = f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    let (y, pq, pql, _, eh, el) = pieces(ax);
    let small = ax + ax * y;
    let tiny = 0.125 * (8.0 * ax + EFX8 * ax);
    let small = if ax < ERF_TINY { tiny } else { small };
    let mid = ERX + (pq + pql);
    let (th, tl) = fast_two_sum(1.0, -eh);
    let tail = th + (tl - el);
    let res = if ax < 0.84375 {
        small
    } else if ax < 1.25 {
        mid
    } else {
        tail
    };
    let res = neg_if(neg, res);
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// `erfc x = 1 - erf x` in `f64`.
#[inline(always)]
pub fn erfc_f64(x: f64) -> f64 {
    let neg = (x.to_bits() >> 63) != 0;
    let ax = f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    let (y, pq, pql, e, eh, el) = pieces(ax);
    let s1 = 1.0 - (x + x * y);
    // 0.5 - ((x - 0.5) + x y) in double-double: it cancels as x nears 0.84375
    let (a, ae) = two_prod(x, y);
    let (b, be) = two_sum(x - 0.5, a);
    let (c, ce) = fast_two_sum(0.5, -b);
    let s2 = c + (ce - (be + ae));
    let small = if x < 0.25 { s1 } else { s2 };
    let (mh, ml) = fast_two_sum(1.0 - ERX, -pq);
    let m1 = mh + (ml - pql);
    let m2 = 1.0 + (ERX + (pq + pql));
    let mid = if neg { m2 } else { m1 };
    let (th, tl) = fast_two_sum(2.0, -eh);
    let t2 = th + (tl - el);
    let tail = if neg { t2 } else { e };
    let res = if ax < 0.84375 {
        small
    } else if ax < 1.25 {
        mid
    } else {
        tail
    };
    if x.is_nan() {
        x
    } else {
        res
    }
}

const C_TEXT: &str = r#"typedef struct eq_erfp { double y; double pq; double pql; double e; double eh; double el; } eq_erfp;
static __device__ __forceinline__ eq_dd eq_erf_mid_quotient(double s) {
  const eq_dd m = eq_two_prod(s, @PA1@);
  const eq_dd p0 = eq_two_sum(@PA0@, m.hi);
  const double pl = p0.lo + m.lo;
  const eq_dd n = eq_two_prod(s, @QA1@);
  const eq_dd q0 = eq_fast_two_sum(1.0, n.hi);
  const double ql = q0.lo + n.lo;
  const double th = p0.hi / q0.hi;
  const eq_dd u = eq_two_prod(th, q0.hi);
  const double tl = ((((p0.hi - u.hi) - u.lo) + pl) - th * ql) / q0.hi;
  return eq_fast_two_sum(th, tl);
}
static __device__ __forceinline__ eq_erfp eq_erf_pieces(double ax) {
  eq_erfp o;
  const double z = ax * ax;
  o.y = (@PP@) / (@QQ@);
  const double s0 = ax - 1.0;
  const eq_dd pq = eq_erf_mid_quotient(s0);
  o.pq = pq.hi;
  o.pql = pq.lo;
  double at = eq_sel_f64(ax < 1.25, 1.25, ax);
  at = eq_sel_f64(at > 28.0, 28.0, at);
  const double s = 1.0 / (at * at);
  const bool low = at < @ERF_RB@;
  const double r = eq_sel_f64(low, @RA@, @RB@);
  const double bs = eq_sel_f64(low, @SA@, @SB@);
  const double zt = eq_zero_low(at);
  long long k;
  const eq_dd h = eq_exp_dd(-zt * zt - 0.5625, (zt - at) * (zt + at) + r / bs, &k);
  const double qh = h.hi / at;
  const eq_dd p = eq_two_prod(qh, at);
  const double ql = (((h.hi - p.hi) - p.lo) + h.lo) / at;
  const long long k1 = k >> 1;
  const double s1 = eq_pow2(k1), s2 = eq_pow2(k - k1);
  o.e = ((qh + ql) * s1) * s2;
  o.eh = (qh * s1) * s2;
  o.el = (ql * s1) * s2;
  return o;
}
static __device__ __forceinline__ double eq_erf_f64(double x) {
  const bool neg = ((unsigned long long)__double_as_longlong(x) >> 63) != 0ULL;
  const double ax = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffULL));
  const eq_erfp o = eq_erf_pieces(ax);
  double small = ax + ax * o.y;
  const double tiny = 0.125 * (8.0 * ax + @EFX8@ * ax);
  small = eq_sel_f64(ax < @ERF_TINY@, tiny, small);
  const double mid = @ERX@ + (o.pq + o.pql);
  const eq_dd t = eq_fast_two_sum(1.0, -o.eh);
  const double tail = t.hi + (t.lo - o.el);
  double res = eq_sel_f64(ax < 0.84375, small, eq_sel_f64(ax < 1.25, mid, tail));
  res = eq_neg_if(neg, res);
  return eq_sel_f64(x != x, x, res);
}
static __device__ __forceinline__ double eq_erfc_f64(double x) {
  const bool neg = ((unsigned long long)__double_as_longlong(x) >> 63) != 0ULL;
  const double ax = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffULL));
  const eq_erfp o = eq_erf_pieces(ax);
  const double s1 = 1.0 - (x + x * o.y);
  const eq_dd a = eq_two_prod(x, o.y);
  const eq_dd b = eq_two_sum(x - 0.5, a.hi);
  const eq_dd c = eq_fast_two_sum(0.5, -b.hi);
  const double s2 = c.hi + (c.lo - (b.lo + a.lo));
  const double small = eq_sel_f64(x < 0.25, s1, s2);
  const eq_dd mm = eq_fast_two_sum(1.0 - @ERX@, -o.pq);
  const double m1 = mm.hi + (mm.lo - o.pql);
  const double m2 = 1.0 + (@ERX@ + (o.pq + o.pql));
  const double mid = eq_sel_f64(neg, m2, m1);
  const eq_dd t = eq_fast_two_sum(2.0, -o.eh);
  const double t2 = t.hi + (t.lo - o.el);
  const double tail = eq_sel_f64(neg, t2, o.e);
  const double res = eq_sel_f64(ax < 0.84375, small, eq_sel_f64(ax < 1.25, mid, tail));
  return eq_sel_f64(x != x, x, res);
}
"#;

/// The C text of `eq_erf_*` and `eq_erfc_*` (after `exps`' helpers).
pub(crate) fn c_source() -> String {
    let h = super::c_horner;
    let t = C_TEXT
        .replace("@PP@", &h(&PP, "z"))
        .replace("@QQ@", &h(&QQ, "z"))
        .replace("@PA1@", &h(&PA[1..], "s"))
        .replace("@QA1@", &h(&QA[1..], "s"))
        .replace("@PA0@", &super::c_double(PA[0]))
        .replace("@RA@", &h(&RA, "s"))
        .replace("@RB@", &h(&RB, "s"))
        .replace("@SA@", &h(&SA, "s"))
        .replace("@SB@", &h(&SB, "s"));
    super::fill(&t, &[("ERF_RB", ERF_RB), ("EFX8", EFX8), ("ERF_TINY", ERF_TINY), ("ERX", ERX)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: f64, b: f64) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    #[test]
    fn special_values() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        assert!(same(erf_f64(0.0), 0.0) && same(erf_f64(-0.0), -0.0));
        assert!(same(erf_f64(inf), 1.0) && same(erf_f64(-inf), -1.0) && erf_f64(nan).is_nan());
        assert!(same(erf_f64(6.0), 1.0) && same(erf_f64(-30.0), -1.0));
        assert!(same(erf_f64(5e-324), 5e-324) && same(erf_f64(-5e-324), -5e-324));
        assert!(same(erfc_f64(0.0), 1.0) && same(erfc_f64(-0.0), 1.0));
        assert!(same(erfc_f64(inf), 0.0) && same(erfc_f64(-inf), 2.0) && erfc_f64(nan).is_nan());
        assert!(same(erfc_f64(28.0), 0.0) && same(erfc_f64(-7.0), 2.0));
        assert!(erfc_f64(27.0) > 0.0 && erfc_f64(26.0) > 1e-300);
        assert!(same(f64::from(erf_f32(f32::NEG_INFINITY)), -1.0) && same(f64::from(erfc_f32(-10.0)), 2.0));
        assert!(same(f64::from(erf_f32(-0.0)), -0.0) && erfc_f32(f32::NAN).is_nan());
    }

    #[test]
    fn known_values() {
        // erf and erfc at a few points (from a 50-digit computation), to 2 ulps
        let cases = [
            (0.5, 0.5204998778130465, 0.4795001221869535),
            (1.0, 0.8427007929497149, 0.15729920705028513),
            (2.0, 0.9953222650189527, 0.004677734981047266),
            (-1.5, -0.9661051464753108, 1.9661051464753108),
            (5.0, 0.9999999999984626, 1.537459794428035e-12),
            (10.0, 1.0, 2.088487583762545e-45),
            (26.0, 1.0, 5.663192408856143e-296),
        ];
        for (x, e, c) in cases {
            assert!((erf_f64(x) - e).abs() <= 2.0 * f64::EPSILON * e.abs(), "erf {x}: {}", erf_f64(x));
            assert!((erfc_f64(x) - c).abs() <= 2.0 * f64::EPSILON * c.abs(), "erfc {x}: {}", erfc_f64(x));
        }
    }
}
