//! The `f32` functions that compute in `f32` (`log`, `sin`, `cos`, `tan`, `tanh`, `atan2`,
//! `log2`, `log10`, `log1p`, `exp2`, `expm1`, `pow`) against their `f64` versions (within
//! one `f64` ulp, about `2^-29` of an `f32` ulp), over every 251st bit pattern of the whole
//! `f32` range (both signs, subnormals, huge arguments, the infinities and NaNs), a fresh
//! random sample of bit patterns (its seed printed; set `EQFUSE_SEED` to replay one), and
//! special values (`pow`: 4 Mi pairs, below). Each function's largest error must stay
//! within the bound `docs/math.md` states.

use eqfuse_ir::math as m;
use eqfuse_ir::math::ulps_f32;

/// A seed from the clock, or `EQFUSE_SEED`; printed so that a failure can be replayed.
fn seed() -> u64 {
    let s = std::env::var("EQFUSE_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    println!("seed {s} (EQFUSE_SEED={s} replays it)");
    s
}

/// A small generator (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Special arguments: zeros, the subnormal and normal edges, the largest float, the
/// infinities and NaN, and the floats next to multiples of `π/2` (and to 1).
fn specials() -> Vec<f32> {
    let mut v = vec![
        0.0,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::INFINITY,
        f32::NAN,
        1.0,
        0.5,
        0.55,
        std::f32::consts::FRAC_PI_4,
        16_367_173.0 * 2f32.powi(72),
    ];
    for k in 1..20_000 {
        let x = (k as f64 * std::f64::consts::FRAC_PI_2) as f32;
        v.extend([x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits() - 1)]);
    }
    for e in -60..=127 {
        v.push(2f32.powi(e) * std::f32::consts::FRAC_PI_2);
    }
    let neg: Vec<f32> = v.iter().map(|x| -x).collect();
    v.extend(neg);
    v
}

/// Every `STRIDE`th bit pattern, then the special values, then `n` random bit patterns.
const STRIDE: usize = 251;

/// The largest error of `f` against `reference` over `xs`, and where.
fn worst(xs: &[f32], f: fn(f32) -> f32, reference: fn(f64) -> f64) -> (f64, f32) {
    let mut w = (0.0f64, 0.0f32);
    for &x in xs {
        let e = ulps_f32(f(x), reference(f64::from(x)));
        if e > w.0 || e.is_nan() {
            w = (e, x);
        }
    }
    w
}

/// A unary function's points in two halves on two threads.
fn measure(name: &str, f: fn(f32) -> f32, reference: fn(f64) -> f64, rng: &mut Rng, bound: f64) -> String {
    let mut xs: Vec<f32> = (0..=u32::MAX).step_by(STRIDE).map(f32::from_bits).collect();
    xs.extend(specials());
    xs.extend((0..1 << 20).map(|_| f32::from_bits(rng.next() as u32)));
    let (a, b) = xs.split_at(xs.len() / 2);
    let (wa, wb) = std::thread::scope(|s| {
        let h = s.spawn(|| worst(a, f, reference));
        let wb = worst(b, f, reference);
        (h.join().expect("thread"), wb)
    });
    let (err, at) = if wb.0 > wa.0 || wb.0.is_nan() { wb } else { wa };
    let line = format!(
        "{name}: {} points, max error {err:.4} ulp at {at:e} ({:#010x}); bound {bound}",
        xs.len(),
        at.to_bits()
    );
    assert!(err <= bound, "{line}: {name}({at:e}) = {:e}, f64 {:e}", f(at), reference(f64::from(at)));
    line
}

/// A function to measure: its name, the `f32` function, its `f64` reference, the bound.
type Case = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f64);

#[test]
fn f32_functions_are_within_their_bounds_against_f64() {
    let mut rng = Rng(seed());
    let cases: [Case; 10] = [
        ("log_f32", m::log_f32, m::log_f64, LOG_BOUND),
        ("sin_f32", m::sin_f32, m::sin_f64, SIN_COS_BOUND),
        ("cos_f32", m::cos_f32, m::cos_f64, SIN_COS_BOUND),
        ("tan_f32", m::tan_f32, m::tan_f64, TAN_BOUND),
        ("tanh_f32", m::tanh_f32, m::tanh_f64, TANH_BOUND),
        ("log2_f32", m::log2_f32, m::log2_f64, V2_BOUND),
        ("log10_f32", m::log10_f32, m::log10_f64, V2_BOUND),
        ("log1p_f32", m::log1p_f32, m::log1p_f64, V2_BOUND),
        ("exp2_f32", m::exp2_f32, m::exp2_f64, V2_BOUND),
        ("expm1_f32", m::expm1_f32, m::expm1_f64, V2_BOUND),
    ];
    let lines: Vec<String> = cases.iter().map(|(n, f, r, b)| measure(n, *f, *r, &mut rng, *b)).collect();
    println!("{}", lines.join("\n"));
}

#[test]
fn atan2_f32_is_within_its_bound_against_f64() {
    let mut rng = Rng(seed());
    let sp = specials();
    let few: Vec<f32> = sp.iter().step_by(97).copied().chain([0.0, -0.0, f32::INFINITY, -1.0]).collect();
    let mut pairs: Vec<(f32, f32)> = few.iter().flat_map(|&y| few.iter().map(move |&x| (y, x))).collect();
    let n = 600;
    for i in 0..n {
        for j in 0..n {
            pairs.push((-10.0 + 20.0 * i as f32 / n as f32, -10.0 + 20.0 * j as f32 / n as f32));
        }
    }
    while pairs.len() < 4 << 20 {
        let x = f32::from_bits(rng.next() as u32);
        let y = match rng.next() % 3 {
            0 => f32::from_bits(rng.next() as u32),
            // y = x t, t across the reduction's intervals
            _ => x * (((rng.next() >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0),
        };
        pairs.push((y, x));
    }
    let mut w = (0.0f64, (0.0f32, 0.0f32));
    for &(y, x) in &pairs {
        let e = ulps_f32(m::atan2_f32(y, x), m::atan2_f64(f64::from(y), f64::from(x)));
        if e > w.0 || e.is_nan() {
            w = (e, (y, x));
        }
    }
    let (err, (y, x)) = w;
    println!(
        "atan2_f32: {} pairs, max error {err:.4} ulp at ({y:e}, {x:e}); bound {ATAN2_BOUND}",
        pairs.len()
    );
    assert!(err <= ATAN2_BOUND, "atan2_f32({y:e}, {x:e}) = {:e}", m::atan2_f32(y, x));
}

/// Pairs `(x, y)` for `pow`: every pair of a few special values, positive `x` of any
/// magnitude with `|y log2 x| <= 160`, `x` in `[0.05, 3.05]` with `|y log2 x| <= 160`,
/// negative `x` with integer `y`, and `x` within `2^-15` of 1 with `|y| < 2^28`.
fn pow_pairs(rng: &mut Rng, n: usize) -> Vec<(f32, f32)> {
    let sp: Vec<f32> = [0.0, 0.5, 1.0, 2.0, 3.0, 0.25, 1e-45, 1e-40, f32::MAX, f32::INFINITY, f32::NAN]
        .into_iter()
        .chain([
            2f32.powi(23),
            2f32.powi(24) - 1.0,
            2f32.powi(24) + 2.0,
            1e10,
            2f32.powi(64),
            127.5,
            149.0,
            150.0,
        ])
        .flat_map(|v| [v, -v])
        .collect();
    let mut v: Vec<(f32, f32)> = sp.iter().flat_map(|&x| sp.iter().map(move |&y| (x, y))).collect();
    let mut unit = || (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    while v.len() < n {
        let (u, w) = (unit(), unit());
        let pair = match v.len() % 4 {
            0 => {
                let x = f32::from_bits((w * f64::from(0x7f80_0000u32)) as u32);
                let l = f64::from(x).log2().abs().max(1e-3);
                (x, ((2.0 * u - 1.0) * (160.0 / l).min(1e10)) as f32)
            }
            1 => {
                let x = (0.05 + 3.0 * u) as f32;
                (x, ((2.0 * w - 1.0) * 160.0 / f64::from(x).log2().abs().max(1e-3)) as f32)
            }
            2 => (-(0.1 + 10.0 * u) as f32, (w * 81.0).floor() as f32 - 40.0),
            _ => (
                1.0 + ((w * 64.0).floor() as f32 - 32.0) * 2f32.powi(-20),
                ((2.0 * u - 1.0) * 2f64.powi(28)) as f32,
            ),
        };
        v.push(pair);
    }
    v
}

#[test]
fn pow_f32_is_within_its_bound_against_f64() {
    let mut rng = Rng(seed());
    let pairs = pow_pairs(&mut rng, 4 << 20);
    let worst = |ps: &[(f32, f32)]| {
        let mut w = (0.0f64, (0.0f32, 0.0f32));
        for &(x, y) in ps {
            let e = ulps_f32(m::pow_f32(x, y), m::pow_f64(f64::from(x), f64::from(y)));
            if e > w.0 || e.is_nan() {
                w = (e, (x, y));
            }
        }
        w
    };
    let (a, b) = pairs.split_at(pairs.len() / 2);
    let (wa, wb) = std::thread::scope(|s| {
        let h = s.spawn(|| worst(a));
        let wb = worst(b);
        (h.join().expect("thread"), wb)
    });
    let (err, (x, y)) = if wb.0 > wa.0 || wb.0.is_nan() { wb } else { wa };
    println!("pow_f32: {} pairs, max error {err:.4} ulp at ({x:e}, {y:e}); bound {V2_BOUND}", pairs.len());
    assert!(err <= V2_BOUND, "pow_f32({x:e}, {y:e}) = {:e}", m::pow_f32(x, y));
}

#[test]
fn the_c_text_of_the_f32_functions_computes_in_f32() {
    let src = m::c_source();
    // (`sin`, `cos`, `tan` reduce and evaluate their kernels in `f64`: FreeBSD's `f32`
    // kernels, issue 43)
    for (name, args) in [("log", "float x")]
        .into_iter()
        .chain([("tanh", "float x"), ("atan2", "float y, float x"), ("pow", "float x, float y")])
        .chain(["log2", "log10", "log1p", "exp2", "expm1"].map(|n| (n, "float x")))
    {
        let head = format!("float eq_{name}_f32({args}) {{");
        let at = src.find(&head).unwrap_or_else(|| panic!("no {head}"));
        let body = &src[at..at + src[at..].find("\n}\n").expect("the function's end")];
        assert!(!body.contains(&format!("eq_{name}_f64")), "{name}_f32 calls the f64 function: {body}");
        assert!(!body.contains("(double)x"), "{name}_f32 widens its argument: {body}");
    }
}

/// The body of the C function whose head (up to its `{`) is `head`.
fn c_body<'a>(src: &'a str, head: &str) -> &'a str {
    let at = src.find(head).unwrap_or_else(|| panic!("no {head}"));
    &src[at..at + src[at..].find("\n}\n").expect("the function's end")]
}

/// What keeps the `f32` loops fast (docs/math.md, issue 43): the reduction of `sin`, `cos`,
/// `tan` reads no memory (a table read is a gather, emulated lane by lane by gcc on AVX-512)
/// and converts no 64-bit integer to a float (which gcc does not vectorise on AVX2); `tanh`
/// and `tan` divide once.
#[test]
fn the_c_text_of_the_f32_loops_keeps_out_of_gathers_and_slow_operations() {
    let src = m::c_source();
    let red = c_body(src, "eq_red32 eq_reduce_pio2_f32(float x) {");
    assert!(!red.contains('['), "the f32 reduction reads a table: {red}");
    for wide in ["(double)(long long)", "(double)(unsigned long long)", "(double)hi", "(double)g"] {
        assert!(!red.contains(wide), "the f32 reduction converts a 64-bit integer ({wide}): {red}");
    }
    // `tan`'s one division is in its kernel (`tan r` or `-1 / tan r`), which it calls once
    for (name, head) in
        [("tanh", "float eq_tanh_f32(float x) {"), ("tan", "double eq_k_tan32(double x, bool odd) {")]
    {
        let body = c_body(src, head);
        assert_eq!(body.matches(" / ").count(), 1, "{name} divides more than once: {body}");
    }
    let tan = c_body(src, "float eq_tan_f32(float x) {");
    assert!(!tan.contains(" / ") && tan.matches("eq_k_tan32(").count() == 1, "tan: {tan}");
}

/// The bounds of `docs/math.md` (ulps), each the largest error measured rounded up.
const LOG_BOUND: f64 = 1.0;
const SIN_COS_BOUND: f64 = 1.0;
const TAN_BOUND: f64 = 1.0;
const TANH_BOUND: f64 = 1.0;
const ATAN2_BOUND: f64 = 2.0;
/// The bound of `log2`, `log10`, `log1p`, `exp2`, `expm1` and `pow` on `f32`.
const V2_BOUND: f64 = 1.0;
