//! `lgamma`: fdlibm's `e_lgamma_r.c` without its branches (every interval computed, then
//! selected): on `(0, 2)` three polynomials (around 1, around the minimum `1.4616...`,
//! around 2; `-log x` added below 0.9), on `[2, 8)` `lgamma(2 + y)`'s rational
//! approximation plus `log((y + 2) ... (y + i - 1))`, on `[8, 2^58)` Stirling's series in
//! `1/x`, above `x (log x - 1)`; below `2^-70`, `-log |x|`. For `x < 0` the reflection
//! `lgamma x = log(pi / |x sin(pi x)|) - lgamma |x|`, `sin(pi x)` as `sin(pi f)` with `f`
//! the (exact) distance of `|x|` from the nearest integer. `eqfuse`'s own `log` and `sin`
//! throughout. The `f32` version computes in `f64` and rounds once.

use super::{horner, log_f64, sin_f64, TWO52};

/// fdlibm's `a0, a2, ..., a10`.
#[allow(clippy::excessive_precision)]
const A_EVEN: [f64; 6] = [
    7.72156649015328655494e-02,
    6.73523010531292681824e-02,
    7.38555086081402883957e-03,
    1.19270763183362067845e-03,
    2.20862790713908385557e-04,
    2.52144565451257326939e-05,
];
/// fdlibm's `a1, a3, ..., a11`.
#[allow(clippy::excessive_precision)]
const A_ODD: [f64; 6] = [
    3.22467033424113591611e-01,
    2.05808084325167332806e-02,
    2.89051383673415629091e-03,
    5.10069792153511336608e-04,
    1.08011567247583939954e-04,
    4.48640949618915160150e-05,
];
/// The abscissa of `lgamma`'s minimum (fdlibm's `tc`).
#[allow(clippy::excessive_precision)]
const TC: f64 = 1.46163214496836224576e+00;
/// `lgamma(TC)` (fdlibm's `tf`).
#[allow(clippy::excessive_precision)]
const TF: f64 = -1.21486290535849611461e-01;
/// `-(lgamma(TC) - TF)` (fdlibm's `tt`).
#[allow(clippy::excessive_precision)]
const TT: f64 = -3.63867699703950536541e-18;
/// fdlibm's `t0, t3, ..., t12`.
#[allow(clippy::excessive_precision)]
const T0: [f64; 5] = [
    4.83836122723810047042e-01,
    -3.27885410759859649565e-02,
    6.10053870246291332635e-03,
    -1.40346469989232843813e-03,
    3.15632070903625950361e-04,
];
/// fdlibm's `t1, t4, ..., t13`.
#[allow(clippy::excessive_precision)]
const T1: [f64; 5] = [
    -1.47587722994593911752e-01,
    1.79706750811820387126e-02,
    -3.68452016781138256760e-03,
    8.81081882437654011382e-04,
    -3.12754168375120860518e-04,
];
/// fdlibm's `t2, t5, ..., t14`.
#[allow(clippy::excessive_precision)]
const T2: [f64; 5] = [
    6.46249402391333854778e-02,
    -1.03142241298341437450e-02,
    2.25964780900612472250e-03,
    -5.38595305356740546715e-04,
    3.35529192635519073543e-04,
];
/// fdlibm's `u0 ..= u5`.
#[allow(clippy::excessive_precision)]
const U: [f64; 6] = [
    -7.72156649015328655494e-02,
    6.32827064025093366517e-01,
    1.45492250137234768737e+00,
    9.77717527963372745603e-01,
    2.28963728064692451092e-01,
    1.33810918536787660377e-02,
];
/// `1, v1 ..= v5`.
#[allow(clippy::excessive_precision)]
const V: [f64; 6] = [
    1.0,
    2.45597793713041134822e+00,
    2.12848976379893395361e+00,
    7.69285150456672783825e-01,
    1.04222645593369134254e-01,
    3.21709242282423911810e-03,
];
/// fdlibm's `s0 ..= s6`.
#[allow(clippy::excessive_precision)]
const S: [f64; 7] = [
    -7.72156649015328655494e-02,
    2.14982415960608852501e-01,
    3.25778796408930981787e-01,
    1.46350472652464452805e-01,
    2.66422703033638609560e-02,
    1.84028451407337715652e-03,
    3.19475326584100867617e-05,
];
/// `1, r1 ..= r6`.
#[allow(clippy::excessive_precision)]
const R: [f64; 7] = [
    1.0,
    1.39200533467621045958e+00,
    7.21935547567138069525e-01,
    1.71933865632803078993e-01,
    1.86459191715652901344e-02,
    7.77942496381893596434e-04,
    7.32668430744625636189e-06,
];
/// fdlibm's `w0`.
#[allow(clippy::excessive_precision)]
const W0: f64 = 4.18938533204672725052e-01;
/// fdlibm's `w1 ..= w6`.
#[allow(clippy::excessive_precision)]
const W: [f64; 6] = [
    8.33333333333329678849e-02,
    -2.77777777728775536470e-03,
    7.93650558643019558500e-04,
    -5.95187557450339963135e-04,
    8.36339918996282139126e-04,
    -1.63092934096575273989e-03,
];
/// fdlibm's interval bounds, from their high words: `0x3feccccd` (just above 0.9),
/// `0x3fe76944`, `0x3fcda661`, `0x3ffbb4c3`, `0x3ff3b4c4`.
const B09: f64 = f64::from_bits(0x3fec_cccd_0000_0000);
/// See [`B09`].
const B073: f64 = f64::from_bits(0x3fe7_6944_0000_0000);
/// See [`B09`].
const B023: f64 = f64::from_bits(0x3fcd_a661_0000_0000);
/// See [`B09`].
const B173: f64 = f64::from_bits(0x3ffb_b4c3_0000_0000);
/// See [`B09`].
const B123: f64 = f64::from_bits(0x3ff3_b4c4_0000_0000);
/// `2^-70`: below it, `lgamma x = -log |x|`.
const LGAMMA_TINY: f64 = 8.470329472543003e-22;
/// `2^58`: above it, `lgamma x = x (log x - 1)`.
const LGAMMA_HUGE: f64 = 2.8823037615171174e17;

/// `lgamma a` on `(0, 2)`, given `la = log a`.
#[inline(always)]
fn lgamma_small(a: f64, la: f64) -> f64 {
    let le09 = a < B09;
    let r0 = if le09 { -la } else { 0.0 };
    let i0 = if le09 { a >= B073 } else { a >= B173 };
    let i1 = if le09 { a >= B023 } else { a >= B123 };
    let y0 = if le09 { 1.0 - a } else { 2.0 - a };
    let y1 = if le09 { a - (TC - 1.0) } else { a - TC };
    let y2 = if le09 { a } else { a - 1.0 };
    let y = if i0 {
        y0
    } else if i1 {
        y1
    } else {
        y2
    };
    // around 1 and 2
    let z = y * y;
    let p = y * horner(&A_EVEN, z) + z * horner(&A_ODD, z);
    let v0 = p - 0.5 * y;
    // around the minimum
    let w = z * y;
    let p = z * horner(&T0, w) - (TT - w * (horner(&T1, w) + y * horner(&T2, w)));
    let v1 = TF + p;
    // near 0 (with -log a) and near 1 from above
    let v2 = -0.5 * y + (y * horner(&U, y)) / horner(&V, y);
    let v = if i0 {
        v0
    } else if i1 {
        v1
    } else {
        v2
    };
    r0 + v
}

/// `lgamma a` on `[2, 8)` (another `a` gives a finite number).
#[inline(always)]
fn lgamma_mid(a: f64) -> f64 {
    let am = if (2.0..8.0).contains(&a) { a } else { 2.0 };
    let id = (am + TWO52) - TWO52;
    let id = if id > am { id - 1.0 } else { id };
    let y = am - id;
    let r = 0.5 * y + (y * horner(&S, y)) / horner(&R, y);
    let mut z = 1.0;
    z *= if id >= 7.0 { y + 6.0 } else { 1.0 };
    z *= if id >= 6.0 { y + 5.0 } else { 1.0 };
    z *= if id >= 5.0 { y + 4.0 } else { 1.0 };
    z *= if id >= 4.0 { y + 3.0 } else { 1.0 };
    z *= if id >= 3.0 { y + 2.0 } else { 1.0 };
    r + log_f64(z)
}

/// `lgamma x = log |Gamma(x)|` in `f64`.
#[inline(always)]
pub fn lgamma_f64(x: f64) -> f64 {
    let neg = (x.to_bits() >> 63) != 0;
    let a = f64::from_bits(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    let la = log_f64(a);
    let small = lgamma_small(a, la);
    let small = if a == 1.0 || a == 2.0 { 0.0 } else { small };
    let mid = lgamma_mid(a);
    let z = 1.0 / a;
    let w = W0 + z * horner(&W, z * z);
    let big = (a - 0.5) * (la - 1.0) + w;
    let huge = a * (la - 1.0);
    let r = if a < 2.0 {
        small
    } else if a < 8.0 {
        mid
    } else if a < LGAMMA_HUGE {
        big
    } else {
        huge
    };
    // x < 0: log(pi / |x sin(pi x)|) - lgamma |x|
    let n = if a >= TWO52 { a } else { (a + TWO52) - TWO52 };
    let f = a - n;
    let t = f64::from_bits(sin_f64(std::f64::consts::PI * f).to_bits() & 0x7fff_ffff_ffff_ffff);
    let rn = log_f64(std::f64::consts::PI / (t * a)) - r;
    let res = if neg { rn } else { r };
    let res = if neg && f == 0.0 { f64::INFINITY } else { res };
    let res = if a < LGAMMA_TINY { -la } else { res };
    let res = if a == f64::INFINITY { f64::INFINITY } else { res };
    if x.is_nan() {
        x
    } else {
        res
    }
}

/// `lgamma x` in `f32` (computed in `f64`, rounded once).
#[inline(always)]
pub fn lgamma_f32(x: f32) -> f32 {
    lgamma_f64(f64::from(x)) as f32
}

const C_TEXT: &str = r#"static __device__ __forceinline__ double eq_lgamma_small(double a, double la) {
  const bool le09 = a < @B09@;
  const double r0 = eq_sel_f64(le09, -la, 0.0);
  const bool i0 = (le09 & (a >= @B073@)) | (!le09 & (a >= @B173@));
  const bool i1 = (le09 & (a >= @B023@)) | (!le09 & (a >= @B123@));
  const double y0 = eq_sel_f64(le09, 1.0 - a, 2.0 - a);
  const double y1 = eq_sel_f64(le09, a - (@TC@ - 1.0), a - @TC@);
  const double y2 = eq_sel_f64(le09, a, a - 1.0);
  const double y = eq_sel_f64(i0, y0, eq_sel_f64(i1, y1, y2));
  const double z = y * y;
  const double p0 = y * (@A_EVEN@) + z * (@A_ODD@);
  const double v0 = p0 - 0.5 * y;
  const double w = z * y;
  const double p1 = z * (@T0@) - (@TT@ - w * ((@T1@) + y * (@T2@)));
  const double v1 = @TF@ + p1;
  const double v2 = -0.5 * y + (y * (@U@)) / (@V@);
  const double v = eq_sel_f64(i0, v0, eq_sel_f64(i1, v1, v2));
  return r0 + v;
}
static __device__ __forceinline__ double eq_lgamma_mid(double a) {
  const double am = eq_sel_f64((a >= 2.0) & (a < 8.0), a, 2.0);
  const double id0 = (am + @TWO52@) - @TWO52@;
  const double id = eq_sel_f64(id0 > am, id0 - 1.0, id0);
  const double y = am - id;
  const double r = 0.5 * y + (y * (@S@)) / (@R@);
  double z = 1.0;
  z *= eq_sel_f64(id >= 7.0, y + 6.0, 1.0);
  z *= eq_sel_f64(id >= 6.0, y + 5.0, 1.0);
  z *= eq_sel_f64(id >= 5.0, y + 4.0, 1.0);
  z *= eq_sel_f64(id >= 4.0, y + 3.0, 1.0);
  z *= eq_sel_f64(id >= 3.0, y + 2.0, 1.0);
  return r + eq_log_f64(z);
}
static __device__ __forceinline__ double eq_lgamma_f64(double x) {
  const bool neg = ((unsigned long long)__double_as_longlong(x) >> 63) != 0ULL;
  const double a = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(x) & 0x7fffffffffffffffULL));
  const double la = eq_log_f64(a);
  double small = eq_lgamma_small(a, la);
  small = eq_sel_f64((a == 1.0) | (a == 2.0), 0.0, small);
  const double mid = eq_lgamma_mid(a);
  const double z = 1.0 / a;
  const double w = @W0@ + z * (@W@);
  const double big = (a - 0.5) * (la - 1.0) + w;
  const double huge = a * (la - 1.0);
  const double r = eq_sel_f64(a < 2.0, small, eq_sel_f64(a < 8.0, mid, eq_sel_f64(a < @HUGE@, big, huge)));
  const double n = eq_sel_f64(a >= @TWO52@, a, (a + @TWO52@) - @TWO52@);
  const double f = a - n;
  const double t = __longlong_as_double((long long)((unsigned long long)__double_as_longlong(eq_sin_f64(@PI@ * f)) & 0x7fffffffffffffffULL));
  const double rn = eq_log_f64(@PI@ / (t * a)) - r;
  const double inf = __longlong_as_double(0x7ff0000000000000LL);
  double res = eq_sel_f64(neg, rn, r);
  res = eq_sel_f64(neg & (f == 0.0), inf, res);
  res = eq_sel_f64(a < @TINY@, -la, res);
  res = eq_sel_f64(a == inf, inf, res);
  return eq_sel_f64(x != x, x, res);
}
static __device__ __forceinline__ float eq_lgamma_f32(float x) { return (float)eq_lgamma_f64((double)x); }
"#;

/// The C text of `eq_lgamma_*` (after `eq_log_f64` and `eq_sin_f64`).
pub(crate) fn c_source() -> String {
    let h = super::c_horner;
    let t = C_TEXT
        .replace("@A_EVEN@", &h(&A_EVEN, "z"))
        .replace("@A_ODD@", &h(&A_ODD, "z"))
        .replace("@T0@", &h(&T0, "w"))
        .replace("@T1@", &h(&T1, "w"))
        .replace("@T2@", &h(&T2, "w"))
        .replace("@U@", &h(&U, "y"))
        .replace("@V@", &h(&V, "y"))
        .replace("@S@", &h(&S, "y"))
        .replace("@R@", &h(&R, "y"))
        .replace("@W@", &h(&W, "z * z"));
    super::fill(
        &t,
        &[
            ("B09", B09),
            ("B073", B073),
            ("B023", B023),
            ("B173", B173),
            ("B123", B123),
            ("TC", TC),
            ("TT", TT),
            ("TF", TF),
            ("TWO52", TWO52),
            ("W0", W0),
            ("HUGE", LGAMMA_HUGE),
            ("PI", std::f64::consts::PI),
            ("TINY", LGAMMA_TINY),
        ],
    )
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
        assert!(same(lgamma_f64(1.0), 0.0) && same(lgamma_f64(2.0), 0.0));
        for x in [0.0, -0.0, -1.0, -2.0, -17.0, -4503599627370496.0, -1e300, inf, -inf] {
            assert!(same(lgamma_f64(x), inf), "lgamma({x}) = {}", lgamma_f64(x));
        }
        assert!(lgamma_f64(nan).is_nan() && lgamma_f32(f32::NAN).is_nan());
        assert!(same(lgamma_f64(f64::MAX), inf) && lgamma_f64(1e300).is_finite());
        assert!(same(f64::from(lgamma_f32(-3.0)), inf) && same(f64::from(lgamma_f32(0.0)), inf));
        assert!(same(f64::from(lgamma_f32(1.0)), 0.0));
    }

    #[test]
    fn known_values() {
        // from a 50-digit computation; within 4 ulps
        let cases = [
            (0.5, 0.5723649429247001),
            (-0.5, 1.2655121234846454),
            (-3.5, -1.309006684993042),
            (3.0, std::f64::consts::LN_2),
            (10.0, 12.801827480081469),
            (1.5, -0.12078223763524522),
            (0.1, 2.252712651734206),
            (100.0, 359.1342053695754),
            (1e-30, 69.07755278982137),
            (-7.3, -7.779101629826852),
            (1e20, 4.505170185988091e21),
        ];
        for (x, want) in cases {
            let got = lgamma_f64(x);
            assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs(), "lgamma {x}: {got} vs {want}");
        }
    }
}
