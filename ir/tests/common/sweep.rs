//! Sweeps of an `f32` function over bit patterns against an `f64` reference, on every core:
//! the largest error in `f32` ulps and where it is.

#![allow(dead_code)] // each test binary uses part of it

use eqfuse_ir::math::ulps_f32;

/// Which bit patterns of a range a sweep checks: every `stride`-th from `offset` (modulo
/// the stride).
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// Every `stride`-th pattern (1: all of them).
    pub stride: u32,
    /// The first pattern's remainder modulo `stride`.
    pub offset: u32,
}

/// Every bit pattern.
pub const EVERY: Step = Step { stride: 1, offset: 0 };

/// The largest error of `f` against `g` and its argument over the bit patterns `lo..hi`
/// that `step` picks.
fn worst(f: fn(f32) -> f32, g: fn(f64) -> f64, lo: u32, hi: u32, step: Step) -> (f64, f32) {
    let mut w = (0.0f64, 0.0f32);
    let s = step.stride.max(1);
    let first = lo.saturating_add((step.offset % s + s - lo % s) % s);
    for b in (first..hi).step_by(s as usize) {
        let x = f32::from_bits(b);
        let e = ulps_f32(f(x), g(f64::from(x)));
        if e > w.0 || e.is_nan() {
            w = (e, x);
        }
    }
    w
}

/// [`worst`] over `lo..hi` on every core (at most 8), in 64 slices.
pub fn worst_parallel(f: fn(f32) -> f32, g: fn(f64) -> f64, lo: u32, hi: u32, step: Step) -> (f64, f32) {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 8) as u32;
    let jobs = 64u32;
    let chunk = (hi - lo).div_ceil(jobs);
    let next = std::sync::atomic::AtomicU32::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let j = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if j >= jobs {
                    break;
                }
                let a = lo.saturating_add(j * chunk).min(hi);
                let b = lo.saturating_add((j + 1) * chunk).min(hi);
                let w = worst(f, g, a, b, step);
                results.lock().expect("results").push(w);
            });
        }
    });
    let results = results.into_inner().expect("results");
    assert_eq!(results.len(), jobs as usize);
    results.into_iter().fold((0.0f64, 0.0f32), |a, b| if b.0 > a.0 || b.0.is_nan() { b } else { a })
}
