//! Hand-written fused loops: for each benchmarked program, the Rust + rayon code an expert
//! would write for it — one parallel pass, no intermediate arrays, chunked reductions,
//! the same element types and the same arithmetic as the `.eqf` program. `eqfuse bench`
//! times these beside the optimised and the unfused plans; the criterion benches use them
//! too.
//!
//! What makes them an expert's and not a first draft:
//! - **built for the machine**: each chunk's loop is compiled for AVX-512, AVX2 + FMA and
//!   the baseline, and the best the CPU has is picked at run time (`multiversion`), as
//!   eqfuse's own C is compiled with `-march=native`;
//! - **independent accumulators**: a float sum in one accumulator is a chain of dependent
//!   additions that Rust (IEEE, no reassociation) cannot vectorise; the reductions keep
//!   `LANES` (32) partial sums and add them at the end of each chunk;
//! - **outputs written once**: arrays are allocated without being zeroed first and each
//!   element written once ([`fill`]).
//!
//! Every function takes the program's inputs as slices (row-major for matrices) and returns
//! its outputs.

#![allow(dead_code)]

use multiversion::multiversion;
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Elements per parallel chunk of a reduction.
const CHUNK: usize = 1 << 14;

/// Independent partial sums of a float reduction: two 512-bit vectors of `f32`.
const LANES: usize = 32;

/// `n` elements, written in parallel chunks of `chunk` by `write(start, chunk)`, which
/// must write every element of its chunk: the memory is not zeroed first.
pub fn fill_by<T: Copy + Send + Sync>(
    n: usize,
    chunk: usize,
    write: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) -> Vec<T> {
    let chunk = chunk.max(1);
    let mut v: Vec<T> = Vec::with_capacity(n);
    v.spare_capacity_mut()[..n].par_chunks_mut(chunk).enumerate().for_each(|(c, out)| write(c * chunk, out));
    // SAFETY: `write` wrote each of the `n` elements (its contract), inside the capacity
    #[allow(unsafe_code)]
    unsafe {
        v.set_len(n)
    };
    v
}

/// [`fill_by`] in chunks of `CHUNK` (2^14) elements.
pub fn fill<T: Copy + Send + Sync>(n: usize, write: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync) -> Vec<T> {
    fill_by(n, CHUNK, write)
}

/// Two arrays of `n` elements written together, chunk by chunk, as [`fill`] writes one.
pub fn fill2<T: Copy + Send + Sync>(
    n: usize,
    write: impl Fn(usize, &mut [MaybeUninit<T>], &mut [MaybeUninit<T>]) + Sync,
) -> (Vec<T>, Vec<T>) {
    let (mut a, mut b): (Vec<T>, Vec<T>) = (Vec::with_capacity(n), Vec::with_capacity(n));
    a.spare_capacity_mut()[..n]
        .par_chunks_mut(CHUNK)
        .zip(b.spare_capacity_mut()[..n].par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(c, (x, y))| write(c * CHUNK, x, y));
    // SAFETY: `write` wrote each of the `n` elements of both (its contract)
    #[allow(unsafe_code)]
    unsafe {
        a.set_len(n);
        b.set_len(n);
    };
    (a, b)
}

/// `sum (a[i] * b[i])` in [`LANES`] independent partial sums.
#[multiversion(targets = "simd")]
fn dot_chunk(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let (ac, bc) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ar, br) = (ac.remainder(), bc.remainder());
    for (x, y) in ac.zip(bc) {
        for k in 0..LANES {
            acc[k] += x[k] * y[k];
        }
    }
    for (k, (x, y)) in ar.iter().zip(br).enumerate() {
        acc[k] += x * y;
    }
    acc.iter().sum()
}

/// `sum (f x)` over `f64`s in [`LANES`] / 2 independent partial sums.
#[inline(always)]
fn sum_f64(xs: &[f64], f: impl Fn(f64) -> f64) -> f64 {
    const W: usize = LANES / 2;
    let mut acc = [0.0f64; W];
    let c = xs.chunks_exact(W);
    let r = c.remainder();
    for x in c {
        for k in 0..W {
            acc[k] += f(x[k]);
        }
    }
    for (k, x) in r.iter().enumerate() {
        acc[k] += f(*x);
    }
    acc.iter().sum()
}

#[multiversion(targets = "simd")]
fn sum_chunk(xs: &[f64]) -> f64 {
    sum_f64(xs, |x| x)
}

#[multiversion(targets = "simd")]
fn sq_dev_chunk(xs: &[f64], mean: f64) -> f64 {
    sum_f64(xs, |x| (x - mean) * (x - mean))
}

/// `dot = reduce (+) 0 (map (*) xs ys)`.
pub fn dotp(xs: &[f32], ys: &[f32]) -> f32 {
    xs.par_chunks(CHUNK).zip(ys.par_chunks(CHUNK)).map(|(a, b)| dot_chunk(a, b)).sum()
}

#[multiversion(targets = "simd")]
fn saxpy_chunk(alpha: f32, x: &[f32], y: &[f32], z: &mut [MaybeUninit<f32>]) {
    for ((z, &x), &y) in z.iter_mut().zip(x).zip(y) {
        z.write(alpha * x + y);
    }
}

/// `zs = map (\x y -> alpha * x + y) xs ys`.
pub fn saxpy(alpha: f32, xs: &[f32], ys: &[f32]) -> Vec<f32> {
    let n = xs.len().min(ys.len());
    fill(n, |at, z| saxpy_chunk(alpha, &xs[at..at + z.len()], &ys[at..at + z.len()], z))
}

/// Elements of `iota n` made at a time by [`sum_of_squares`] (they stay in L1).
const IOTA_RUN: usize = 1024;

/// `s = reduce (+) 0 (map (\x -> x * x) (iota n))` (i64, wrapping).
///
/// The loop over `iota n` as written, not its closed form: LLVM turns a plain
/// `(lo..hi).fold(.., |s, i| s + i * i)` into a cubic polynomial, which is no measure of a
/// loop. So the indices are made a run at a time into a small buffer that
/// [`std::hint::black_box`] hides from the optimiser (as if the program's input array were
/// read from L1), then squared and summed in one vectorisable pass.
pub fn sum_of_squares(n: i64) -> i64 {
    let n = n.max(0);
    let chunks = (n as u64).div_ceil(CHUNK as u64) as i64;
    (0..chunks)
        .into_par_iter()
        .map(|c| {
            let (lo, hi) = (c * CHUNK as i64, ((c + 1) * CHUNK as i64).min(n));
            let mut buf = [0i64; IOTA_RUN];
            let mut s = 0i64;
            let mut at = lo;
            while at < hi {
                let len = ((hi - at) as usize).min(IOTA_RUN);
                let run = &mut buf[..len];
                for (k, x) in run.iter_mut().enumerate() {
                    *x = at + k as i64;
                }
                let run = std::hint::black_box(run);
                s = run.iter().fold(s, |s, &i| s.wrapping_add(i.wrapping_mul(i)));
                at += len as i64;
            }
            s
        })
        .reduce(|| 0, i64::wrapping_add)
}

/// `d = sqrt (abs ((xs + 1) * 2 - 3))`, elementwise (as [`saxpy`]).
pub fn map_chain(xs: &[f32]) -> Vec<f32> {
    fill(xs.len(), |at, d| map_chain_chunk(&xs[at..at + d.len()], d))
}

#[multiversion(targets = "simd")]
fn map_chain_chunk(x: &[f32], d: &mut [MaybeUninit<f32>]) {
    for (d, &x) in d.iter_mut().zip(x) {
        d.write((((x + 1.0) * 2.0) - 3.0).abs().sqrt());
    }
}

/// `(mean, var)` of `xs` (two passes: the mean, then the squared deviations).
pub fn variance(xs: &[f64]) -> (f64, f64) {
    let len = xs.len() as f64;
    let mean = xs.par_chunks(CHUNK).map(sum_chunk).sum::<f64>() / len;
    let var = xs.par_chunks(CHUNK).map(|c| sq_dev_chunk(c, mean)).sum::<f64>() / len;
    (mean, var)
}

/// Row-wise softmax of an `r × c` matrix: per row, the max, then `exp (x - max)` written to
/// the output row while summing, then the row divided by the sum (the row stays in cache).
pub fn softmax_rows(m: &[f32], c: usize) -> Vec<f32> {
    if c == 0 {
        return vec![0.0f32; m.len()];
    }
    fill_by(m.len(), c, |at, o| softmax_row(&m[at..at + o.len()], o))
}

#[multiversion(targets = "simd")]
fn softmax_row(row: &[f32], o: &mut [MaybeUninit<f32>]) {
    let pick = |a: f32, b: f32| if b > a || a.is_nan() { b } else { a };
    let mut mx = [f32::NEG_INFINITY; LANES];
    let chunks = row.chunks_exact(LANES);
    for (k, &x) in chunks.remainder().iter().enumerate() {
        mx[k] = pick(mx[k], x);
    }
    for x in chunks {
        for k in 0..LANES {
            mx[k] = pick(mx[k], x[k]);
        }
    }
    let mx = mx.iter().fold(f32::NEG_INFINITY, |a, &b| pick(a, b));
    let mut s = [0.0f32; LANES];
    for (i, (o, x)) in o.iter_mut().zip(row).enumerate() {
        let e = (x - mx).exp();
        o.write(e);
        s[i % LANES] += e;
    }
    let s: f32 = s.iter().sum();
    for o in o.iter_mut() {
        // SAFETY: written by the loop above
        #[allow(unsafe_code)]
        let e = unsafe { o.assume_init() };
        o.write(e / s);
    }
}

/// `y = m v` for an `r × c` matrix.
pub fn matvec(m: &[f32], v: &[f32]) -> Vec<f32> {
    let c = v.len();
    if c == 0 {
        return vec![0.0; m.len()];
    }
    m.par_chunks(c).map(|row| dot_chunk(row, v)).collect()
}

/// `(total, count, kept)` of the positive elements.
pub fn filter_reduce(xs: &[f32]) -> (f32, i64, Vec<f32>) {
    let parts: Vec<Vec<f32>> =
        xs.par_chunks(CHUNK).map(|c| c.iter().copied().filter(|x| *x > 0.0).collect()).collect();
    let total = parts.par_iter().map(|p| p.iter().sum::<f32>()).sum::<f32>();
    let count = parts.iter().map(|p| p.len() as i64).sum();
    let kept = parts.concat();
    (total, count, kept)
}

/// Inclusive `+` scan, exclusive `+` scan and running max (from -1000000) of `a`: per-chunk
/// scans in parallel, then the carries.
pub fn scans(a: &[i64]) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let mut inc = vec![0i64; a.len()];
    let mut runmax = vec![0i64; a.len()];
    inc.par_chunks_mut(CHUNK).zip(runmax.par_chunks_mut(CHUNK)).zip(a.par_chunks(CHUNK)).for_each(
        |((i, r), x)| {
            let (mut s, mut m) = (0i64, -1_000_000i64);
            for ((i, r), x) in i.iter_mut().zip(r.iter_mut()).zip(x) {
                s = s.wrapping_add(*x);
                m = m.max(*x);
                *i = s;
                *r = m;
            }
        },
    );
    let (mut carry, mut mcarry) = (0i64, -1_000_000i64);
    let carries: Vec<(i64, i64)> = inc
        .chunks(CHUNK)
        .zip(runmax.chunks(CHUNK))
        .map(|(i, r)| {
            let c = (carry, mcarry);
            carry = carry.wrapping_add(*i.last().unwrap_or(&0));
            mcarry = mcarry.max(*r.last().unwrap_or(&-1_000_000));
            c
        })
        .collect();
    inc.par_chunks_mut(CHUNK).zip(runmax.par_chunks_mut(CHUNK)).zip(carries).for_each(|((i, r), (c, m))| {
        for v in i.iter_mut() {
            *v = v.wrapping_add(c);
        }
        for v in r.iter_mut() {
            *v = (*v).max(m);
        }
    });
    let mut exc = vec![0i64; a.len()];
    if !a.is_empty() {
        exc[1..].copy_from_slice(&inc[..a.len() - 1]);
    }
    (inc, exc, runmax)
}

/// A 16-bin histogram of `bins` (per-thread histograms, then merged).
pub fn histogram(bins: &[i64]) -> Result<Vec<i64>, i64> {
    bins.par_chunks(CHUNK)
        .map(|c| {
            let mut h = vec![0i64; 16];
            for &b in c {
                match usize::try_from(b).ok().and_then(|b| h.get_mut(b)) {
                    Some(x) => *x += 1,
                    None if b == -1 => {}
                    None => return Err(b),
                }
            }
            Ok(h)
        })
        .try_reduce(
            || vec![0i64; 16],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                Ok(a)
            },
        )
}

/// The cumulative normal distribution of the Black–Scholes program.
#[inline]
fn cnd(d: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.2316419 * d.abs());
    let w = 0.398_942_3
        * (-0.5 * d * d).exp()
        * (k * (0.319_381_54 + k * (-0.356_563_78 + k * (1.781_477_9 + k * (-1.821_256 + k * 1.330_274_5)))));
    if d > 0.0 {
        1.0 - w
    } else {
        w
    }
}

/// Call and put prices (r = 0.02, v = 0.3), one pass.
pub fn blackscholes(s: &[f32], x: &[f32], t: &[f32]) -> (Vec<f32>, Vec<f32>) {
    fill2(s.len(), |at, c, p| {
        let n = c.len();
        blackscholes_chunk(&s[at..at + n], &x[at..at + n], &t[at..at + n], c, p)
    })
}

#[multiversion(targets = "simd")]
fn blackscholes_chunk(
    s: &[f32],
    x: &[f32],
    t: &[f32],
    c: &mut [MaybeUninit<f32>],
    p: &mut [MaybeUninit<f32>],
) {
    for i in 0..c.len() {
        let (s, x, t) = (s[i], x[i], t[i]);
        let sq = t.sqrt();
        let d1 = ((s / x).ln() + (0.02 + 0.5 * 0.3 * 0.3) * t) / (0.3 * sq);
        let d2 = d1 - 0.3 * sq;
        let e = x * (-0.02 * t).exp();
        let (c1, c2) = (cnd(d1), cnd(d2));
        c[i].write(s * c1 - e * c2);
        p[i].write(e * (1.0 - c2) - s * (1.0 - c1));
    }
}

/// Escape counts after `steps` steps of the Mandelbrot recurrence (the program's 24).
pub fn mandelbrot(cr: &[f64], ci: &[f64], steps: usize) -> Vec<i64> {
    fill(cr.len(), |at, o| mandelbrot_chunk(&cr[at..at + o.len()], &ci[at..at + o.len()], steps, o))
}

/// The recurrence for a chunk of points, eight at a time: every lane runs all `steps` steps
/// and counts the steps before it escaped (a masked count, so the loop vectorises); the
/// remainder one by one.
#[multiversion(targets = "simd")]
fn mandelbrot_chunk(cr: &[f64], ci: &[f64], steps: usize, o: &mut [MaybeUninit<i64>]) {
    const W: usize = 8;
    let mut i = 0;
    while i + W <= o.len() {
        let (mut zr, mut zi, mut n, mut live) = ([0.0f64; W], [0.0f64; W], [0i64; W], [true; W]);
        zr.copy_from_slice(&cr[i..i + W]);
        zi.copy_from_slice(&ci[i..i + W]);
        for _ in 0..steps {
            for k in 0..W {
                // as the scalar loop: a NaN never escapes
                let escaped = zr[k] * zr[k] + zi[k] * zi[k] > 4.0;
                live[k] &= !escaped;
                let t = zr[k] * zr[k] - zi[k] * zi[k] + cr[i + k];
                let u = 2.0 * zr[k] * zi[k] + ci[i + k];
                zr[k] = if live[k] { t } else { zr[k] };
                zi[k] = if live[k] { u } else { zi[k] };
                n[k] += i64::from(live[k]);
            }
            if !live.iter().any(|&l| l) {
                break;
            }
        }
        for k in 0..W {
            o[i + k].write(n[k]);
        }
        i += W;
    }
    for j in i..o.len() {
        let (cr, ci) = (cr[j], ci[j]);
        let (mut zr, mut zi, mut n) = (cr, ci, 0i64);
        for _ in 0..steps {
            if zr * zr + zi * zi > 4.0 {
                break;
            }
            let t = zr * zr - zi * zi + cr;
            zi = 2.0 * zr * zi + ci;
            zr = t;
            n += 1;
        }
        o[j].write(n);
    }
}

/// All-pairs accelerations (softening 0.01), one pass per body.
pub fn nbody(px: &[f32], py: &[f32], pz: &[f32], mass: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let acc: Vec<(f32, f32, f32)> =
        (0..px.len()).into_par_iter().map(|i| nbody_body(px, py, pz, mass, i)).collect();
    let ax = acc.iter().map(|a| a.0).collect();
    let ay = acc.iter().map(|a| a.1).collect();
    let az = acc.iter().map(|a| a.2).collect();
    (ax, ay, az)
}

/// Body `i`'s acceleration, summed over the other bodies in [`LANES`] / 2 independent
/// partial sums per axis.
#[multiversion(targets = "simd")]
fn nbody_body(px: &[f32], py: &[f32], pz: &[f32], mass: &[f32], i: usize) -> (f32, f32, f32) {
    const W: usize = LANES / 2;
    let (mut ax, mut ay, mut az) = ([0.0f32; W], [0.0f32; W], [0.0f32; W]);
    let (xi, yi, zi) = (px[i], py[i], pz[i]);
    // one length for the four, so that the loop below has no bounds checks
    let n = px.len().min(py.len()).min(pz.len()).min(mass.len());
    let (px, py, pz, mass) = (&px[..n], &py[..n], &pz[..n], &mass[..n]);
    let one = |x: f32, y: f32, z: f32, m: f32| {
        let (dx, dy, dz) = (x - xi, y - yi, z - zi);
        let d2 = dx * dx + dy * dy + dz * dz + 0.01;
        let w = m * (1.0 / (d2 * d2.sqrt()));
        (w * dx, w * dy, w * dz)
    };
    let chunks = px.chunks_exact(W).zip(py.chunks_exact(W)).zip(pz.chunks_exact(W)).zip(mass.chunks_exact(W));
    for (((x, y), z), m) in chunks {
        for k in 0..W {
            let (x, y, z) = one(x[k], y[k], z[k], m[k]);
            ax[k] += x;
            ay[k] += y;
            az[k] += z;
        }
    }
    let full = n - n % W;
    for j in full..n {
        let (x, y, z) = one(px[j], py[j], pz[j], mass[j]);
        ax[j - full] += x;
        ay[j - full] += y;
        az[j - full] += z;
    }
    (ax.iter().sum(), ay.iter().sum(), az.iter().sum())
}

/// Copies `bytes` bytes once, in parallel: the memory-bandwidth floor.
pub fn copy_floor(src: &[u8], dst: &mut [u8]) {
    dst.par_chunks_mut(1 << 20).zip(src.par_chunks(1 << 20)).for_each(|(d, s)| d.copy_from_slice(s));
}
