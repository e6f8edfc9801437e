//! Hand-written fused loops: for each benchmarked program, the Rust + rayon code an expert
//! would write for it — one parallel pass, no intermediate arrays, chunked reductions,
//! the same element types and the same arithmetic as the `.eqf` program. `eqfuse bench`
//! times these beside the optimised and the unfused plans; the criterion benches use them
//! too.
//!
//! Every function takes the program's inputs as slices (row-major for matrices) and returns
//! its outputs.

#![allow(dead_code)]

use rayon::prelude::*;

/// Elements per parallel chunk of a reduction.
const CHUNK: usize = 1 << 14;

/// `dot = reduce (+) 0 (map (*) xs ys)`.
pub fn dotp(xs: &[f32], ys: &[f32]) -> f32 {
    xs.par_chunks(CHUNK)
        .zip(ys.par_chunks(CHUNK))
        .map(|(a, b)| a.iter().zip(b).fold(0.0f32, |s, (x, y)| s + x * y))
        .sum()
}

/// `zs = map (\x y -> alpha * x + y) xs ys`: chunks of the output (zeroed by the allocator,
/// not by a pass) written in parallel by plain loops that vectorise.
pub fn saxpy(alpha: f32, xs: &[f32], ys: &[f32]) -> Vec<f32> {
    let mut zs = vec![0.0f32; xs.len().min(ys.len())];
    zs.par_chunks_mut(CHUNK).zip(xs.par_chunks(CHUNK).zip(ys.par_chunks(CHUNK))).for_each(|(z, (x, y))| {
        for ((z, &x), &y) in z.iter_mut().zip(x).zip(y) {
            *z = alpha * x + y;
        }
    });
    zs
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
    let mut d = vec![0.0f32; xs.len()];
    d.par_chunks_mut(CHUNK).zip(xs.par_chunks(CHUNK)).for_each(|(d, x)| {
        for (d, &x) in d.iter_mut().zip(x) {
            *d = (((x + 1.0) * 2.0) - 3.0).abs().sqrt();
        }
    });
    d
}

/// `(mean, var)` of `xs` (two passes: the mean, then the squared deviations).
pub fn variance(xs: &[f64]) -> (f64, f64) {
    let len = xs.len() as f64;
    let mean = xs.par_chunks(CHUNK).map(|c| c.iter().sum::<f64>()).sum::<f64>() / len;
    let var =
        xs.par_chunks(CHUNK).map(|c| c.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>()).sum::<f64>()
            / len;
    (mean, var)
}

/// Row-wise softmax of an `r × c` matrix: per row, the max, then `exp (x - max)` written to
/// the output row while summing, then the row divided by the sum (the row stays in cache).
pub fn softmax_rows(m: &[f32], c: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m.len()];
    if c == 0 {
        return out;
    }
    out.par_chunks_mut(c).zip(m.par_chunks(c)).for_each(|(o, row)| {
        let mx = row.iter().fold(f32::NEG_INFINITY, |a, &b| if b > a || a.is_nan() { b } else { a });
        let mut s = 0.0f32;
        for (o, x) in o.iter_mut().zip(row) {
            let e = (x - mx).exp();
            *o = e;
            s += e;
        }
        for o in o.iter_mut() {
            *o /= s;
        }
    });
    out
}

/// `y = m v` for an `r × c` matrix.
pub fn matvec(m: &[f32], v: &[f32]) -> Vec<f32> {
    let c = v.len();
    if c == 0 {
        return vec![0.0; m.len()];
    }
    m.par_chunks(c).map(|row| row.iter().zip(v).fold(0.0f32, |s, (a, b)| s + a * b)).collect()
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
    let n = s.len();
    let (mut call, mut put) = (vec![0.0f32; n], vec![0.0f32; n]);
    call.par_chunks_mut(CHUNK)
        .zip(put.par_chunks_mut(CHUNK))
        .zip(s.par_chunks(CHUNK).zip(x.par_chunks(CHUNK)).zip(t.par_chunks(CHUNK)))
        .for_each(|((c, p), ((s, x), t))| {
            for i in 0..c.len() {
                let (s, x, t) = (s[i], x[i], t[i]);
                let sq = t.sqrt();
                let d1 = ((s / x).ln() + (0.02 + 0.5 * 0.3 * 0.3) * t) / (0.3 * sq);
                let d2 = d1 - 0.3 * sq;
                let e = x * (-0.02 * t).exp();
                let (c1, c2) = (cnd(d1), cnd(d2));
                c[i] = s * c1 - e * c2;
                p[i] = e * (1.0 - c2) - s * (1.0 - c1);
            }
        });
    (call, put)
}

/// Escape counts after `steps` steps of the Mandelbrot recurrence (the program's 24).
pub fn mandelbrot(cr: &[f64], ci: &[f64], steps: usize) -> Vec<i64> {
    let mut out = vec![0i64; cr.len()];
    out.par_chunks_mut(CHUNK).zip(cr.par_chunks(CHUNK).zip(ci.par_chunks(CHUNK))).for_each(|(o, (a, b))| {
        for ((o, &cr), &ci) in o.iter_mut().zip(a).zip(b) {
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
            *o = n;
        }
    });
    out
}

/// All-pairs accelerations (softening 0.01), one pass per body.
pub fn nbody(px: &[f32], py: &[f32], pz: &[f32], mass: &[f32]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let acc: Vec<(f32, f32, f32)> = (0..px.len())
        .into_par_iter()
        .map(|i| {
            let (mut ax, mut ay, mut az) = (0.0f32, 0.0f32, 0.0f32);
            for j in 0..px.len() {
                let (dx, dy, dz) = (px[j] - px[i], py[j] - py[i], pz[j] - pz[i]);
                let d2 = dx * dx + dy * dy + dz * dz + 0.01;
                let w = mass[j] * (1.0 / (d2 * d2.sqrt()));
                ax += w * dx;
                ay += w * dy;
                az += w * dz;
            }
            (ax, ay, az)
        })
        .collect();
    let ax = acc.iter().map(|a| a.0).collect();
    let ay = acc.iter().map(|a| a.1).collect();
    let az = acc.iter().map(|a| a.2).collect();
    (ax, ay, az)
}

/// Copies `bytes` bytes once, in parallel: the memory-bandwidth floor.
pub fn copy_floor(src: &[u8], dst: &mut [u8]) {
    dst.par_chunks_mut(1 << 20).zip(src.par_chunks(1 << 20)).for_each(|(d, s)| d.copy_from_slice(s));
}
