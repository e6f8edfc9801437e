//! `eqfuse calibrate`: measures the CPU cost model's parameters on the machine at hand, and
//! stores them per machine.
//!
//! [`measure`] runs a small micro-benchmark (about two seconds, on every core):
//!
//! - **bandwidth**: a map-like pass `dst[i] = src[i] * a + b` over two 128 MiB buffers,
//!   split across the threads; read and written bytes counted; the best of a few passes;
//! - **launch**: the fixed cost of one parallel pass: spawning and joining one scoped thread
//!   per core over a trivial amount of work; the median of many;
//! - **operation throughputs** (all cores together): each thread runs a blocked loop
//!   `out[i] = a[i] op b[i]` over 1024-element blocks that stay in its cache, as the CPU
//!   executor's block VM does, for a fixed time; the best of two runs;
//! - **gather**: elements read through random indices from the 128 MiB buffer, per second;
//! - **gemm**: a 384³ `f32` matrix product through the CPU executor's GEMM (the way it runs
//!   contractions), flops per second, the best of eight.
//!
//! Every result is finite and positive: a measurement that fails falls back to
//! [`CostParams::cpu_default`]'s value, and anything absurd is clamped into a sane range.
//!
//! [`save`] writes the parameters as TOML to [`path`] (`$XDG_CONFIG_HOME/eqfuse/cost-cpu.toml`
//! or `$HOME/.config/eqfuse/cost-cpu.toml`); [`load_cpu`] reads them back, or gives the
//! defaults when there is no file or it cannot be read.

use eqfuse_ir::{Code, Error};
use eqfuse_lower::model::CostParams;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Elements per block of the operation loops (4 KiB of `f32` per array, 8 KiB of `i64`).
const BLOCK: usize = 1024;
/// Elements of each of the two streaming buffers (`f32`: 128 MiB each, well beyond the
/// last-level cache, which can hold a good part of 64 MiB on a server CPU).
const STREAM_ELEMS: usize = 32 << 20;
/// How long one timed run of an operation loop lasts.
const OP_RUN: Duration = Duration::from_millis(90);
/// Timed runs of each operation loop (the best counts).
const OP_RUNS: usize = 2;
/// Streaming passes timed for the bandwidth (the best counts).
const STREAM_PASSES: usize = 5;
/// Most parallel passes timed for the launch cost, and the time they may take.
const LAUNCH_PASSES: usize = 300;
const LAUNCH_BUDGET: Duration = Duration::from_millis(150);
/// Random indices per thread for the gather loop.
const GATHER_INDICES: usize = 1 << 16;

/// Sane ranges: throughputs and bandwidth (per second), and the launch cost (seconds).
const RATE_RANGE: (f64, f64) = (1e6, 1e14);
const LAUNCH_RANGE: (f64, f64) = (1e-8, 1e-1);
/// Sane bounds for a core's own cache, bytes (16 KiB to 1 GiB).
const CACHE_RANGE: (f64, f64) = (16384.0, 1073741824.0);

/// Measures the CPU cost parameters of this machine (about two seconds in a release build).
/// `progress` is told what is being measured and what came out, one line at a time.
pub fn measure(progress: &mut dyn FnMut(&str)) -> CostParams {
    let d = CostParams::cpu_default();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 256);
    progress(&format!("calibrating on {threads} thread(s)"));

    progress("memory bandwidth: streaming over 2 x 128 MiB ...");
    let mut stream = stream_buffers(threads);
    let bandwidth = stream.as_mut().and_then(|(src, dst)| bandwidth(threads, src, dst));
    let bandwidth = settle(bandwidth, d.bandwidth, RATE_RANGE);
    progress(&format!("  bandwidth      {}", human(bandwidth, "B/s")));

    progress("launch cost: spawning and joining one thread per core ...");
    let launch = settle(launch(threads), d.launch, LAUNCH_RANGE);
    progress(&format!("  launch         {}", human_seconds(launch)));

    progress("operation throughputs: blocked loops in cache on every core ...");
    let mut rate = |label: &str, measured: Option<f64>, default: f64, unit: &str| {
        let v = settle(measured, default, RATE_RANGE);
        progress(&format!("  {label:<14} {}", human(v, unit)));
        v
    };
    let flop = rate("flop", throughput(threads, 2.0, f32_init, k_flop), d.flop, "op/s");
    let div = rate("div", throughput(threads, 1.0, f32_init, k_div), d.div, "op/s");
    let sqrt = rate("sqrt", throughput(threads, 1.0, f32_init, k_sqrt), d.sqrt, "op/s");
    let transcendental = rate(
        "transcendental",
        throughput(threads, 2.0, f32_init, k_transcendental),
        d.transcendental,
        "op/s",
    );
    let int = rate("int", throughput(threads, 2.0, i64_init, k_int), d.int, "op/s");
    let compare = rate("compare", throughput(threads, 2.0, f32_init, k_compare), d.compare, "op/s");
    let gathered = stream.as_ref().and_then(|(src, _)| gather(threads, src));
    let gather = rate("gather", gathered, d.gather, "elem/s");
    drop(stream);
    let gemm = rate("gemm (f32)", eqfuse_exec_cpu::gemm_rate(384, 8), d.gemm, "flop/s");
    // what the system reports (exec-cpu's `caches.rs` says why it is read, not timed)
    let cache = match eqfuse_exec_cpu::private_cache_bytes() {
        Some(b) => {
            progress(&format!(
                "  core's cache   {} KiB (the largest cache one core keeps to itself)",
                b >> 10
            ));
            settle(Some(b as f64), d.cache, CACHE_RANGE)
        }
        None => {
            progress(&format!("  core's cache   not reported by the system: {} KiB", d.cache as usize >> 10));
            d.cache
        }
    };

    CostParams {
        name: format!("calibrated on {} {}", hostname(), today()),
        bandwidth,
        launch,
        flop,
        div,
        sqrt,
        transcendental,
        int,
        compare,
        gather,
        // code size is not measured: the default
        code: d.code,
        gemm,
        cache,
    }
}

/// Where this machine's calibration is stored: `$XDG_CONFIG_HOME/eqfuse/cost-cpu.toml`, else
/// `$HOME/.config/eqfuse/cost-cpu.toml`; `None` when neither variable is set.
pub fn path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")))?;
    Some(dir.join("eqfuse").join("cost-cpu.toml"))
}

/// Writes `p` as TOML to [`path`] (creating its folder); returns where. `E-INPUT` when there
/// is no such place or it cannot be written.
pub fn save(p: &CostParams) -> Result<PathBuf, Error> {
    let path = path().ok_or_else(|| {
        Error::new(Code::Input, "nowhere to save the calibration: neither XDG_CONFIG_HOME nor HOME is set")
    })?;
    let text = toml::to_string(p)
        .map_err(|e| Error::new(Code::Input, format!("cannot write the calibration as TOML: {e}")))?;
    let fail = |what: &str, e: std::io::Error| {
        Error::new(Code::Input, format!("cannot {what} the calibration file {}: {e}", path.display()))
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail("create the folder of", e))?;
    }
    // write beside it, then rename: a reader never sees half a file
    let tmp = path.with_extension("toml.tmp");
    std::fs::write(&tmp, format!("# eqfuse calibrate: the CPU cost model's parameters\n{text}"))
        .map_err(|e| fail("write", e))?;
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail("write", e)
    })?;
    Ok(path)
}

/// The CPU cost parameters: those [`save`]d for this machine when the file exists and
/// parses, else [`CostParams::cpu_default`]. Never fails: a missing, unreadable or malformed
/// file gives the defaults, and a saved value that is not finite and positive is replaced by
/// its default.
pub fn load_cpu() -> CostParams {
    let d = CostParams::cpu_default();
    let Some(path) = path() else { return d };
    let Ok(text) = std::fs::read_to_string(&path) else { return d };
    let Ok(p) = toml::from_str::<CostParams>(&text) else { return d };
    let ok = |v: f64, default: f64| if v.is_finite() && v > 0.0 { v } else { default };
    CostParams {
        name: p.name,
        bandwidth: ok(p.bandwidth, d.bandwidth),
        launch: ok(p.launch, d.launch),
        flop: ok(p.flop, d.flop),
        div: ok(p.div, d.div),
        sqrt: ok(p.sqrt, d.sqrt),
        transcendental: ok(p.transcendental, d.transcendental),
        int: ok(p.int, d.int),
        compare: ok(p.compare, d.compare),
        gather: ok(p.gather, d.gather),
        code: ok(p.code, d.code),
        gemm: ok(p.gemm, d.gemm),
        cache: ok(p.cache, d.cache),
    }
}

// ------------------------------------------------------------------------- measurements

/// A measurement when finite and positive, clamped into `range`; else `default`.
fn settle(measured: Option<f64>, default: f64, range: (f64, f64)) -> f64 {
    match measured {
        Some(v) if v.is_finite() && v > 0.0 => v.clamp(range.0, range.1),
        _ => default,
    }
}

/// Runs `f(t)` for `t in 0..threads` on scoped threads (`t = 0` on the calling thread);
/// `None` when a thread cannot be started or panics.
fn parallel<R: Send>(threads: usize, f: impl Fn(usize) -> R + Sync) -> Option<Vec<R>> {
    std::thread::scope(|s| {
        let f = &f;
        let mut handles = Vec::with_capacity(threads.saturating_sub(1));
        for t in 1..threads {
            match std::thread::Builder::new().spawn_scoped(s, move || f(t)) {
                Ok(h) => handles.push(h),
                Err(_) => {
                    // join the ones started, then give up
                    for h in handles {
                        let _ = h.join();
                    }
                    return None;
                }
            }
        }
        let first = f(0);
        let mut out = vec![first];
        for h in handles {
            out.push(h.join().ok()?);
        }
        Some(out)
    })
}

/// Runs `f(k, &mut a[k*chunk..], &mut b[k*chunk..])` for every chunk of `a` and `b` (of
/// equal length), one scoped thread per chunk; `false` when a thread cannot be started.
fn chunked<A: Send, B: Send>(
    a: &mut [A],
    b: &mut [B],
    chunk: usize,
    f: impl Fn(usize, &mut [A], &mut [B]) + Sync,
) -> bool {
    let f = &f;
    std::thread::scope(|s| {
        for (k, (x, y)) in a.chunks_mut(chunk.max(1)).zip(b.chunks_mut(chunk.max(1))).enumerate() {
            if std::thread::Builder::new().spawn_scoped(s, move || f(k, x, y)).is_err() {
                return false;
            }
        }
        true
    })
}

/// The two streaming buffers, filled in parallel, so no page is faulted in while timing.
/// `None` when the memory cannot be had.
fn stream_buffers(threads: usize) -> Option<(Vec<f32>, Vec<f32>)> {
    let mut src: Vec<f32> = Vec::new();
    let mut dst: Vec<f32> = Vec::new();
    src.try_reserve_exact(STREAM_ELEMS).ok()?;
    dst.try_reserve_exact(STREAM_ELEMS).ok()?;
    src.resize(STREAM_ELEMS, 0.0);
    dst.resize(STREAM_ELEMS, 0.0);
    let chunk = STREAM_ELEMS.div_ceil(threads);
    let filled = chunked(&mut src, &mut dst, chunk, |k, a, b| {
        for (i, (x, y)) in a.iter_mut().zip(b.iter_mut()).enumerate() {
            *x = ((k * chunk + i) % 1000) as f32 * 0.001;
            *y = 1.0;
        }
    });
    filled.then_some((src, dst))
}

/// Bytes per second of `dst[i] = src[i] * a + b` over all threads (read plus written): the
/// best of [`STREAM_PASSES`] passes after one that warms up.
fn bandwidth(threads: usize, src: &mut [f32], dst: &mut [f32]) -> Option<f64> {
    let chunk = src.len().div_ceil(threads);
    let bytes = (std::mem::size_of_val(src) * 2) as f64;
    let mut best = f64::INFINITY;
    for pass in 0..=STREAM_PASSES {
        let t0 = Instant::now();
        let ok = chunked(src, dst, chunk, |_, a, b| {
            let (k, c) = black_box((1.0001f32, 0.5f32));
            for (y, x) in b.iter_mut().zip(a.iter()) {
                *y = *x * k + c;
            }
            black_box(b);
        });
        let dt = t0.elapsed().as_secs_f64();
        if !ok {
            return None;
        }
        if pass > 0 {
            best = best.min(dt);
        }
    }
    Some(bytes / best)
}

/// Seconds for one parallel pass over (almost) nothing: one scoped thread per core spawned
/// and joined; the median of many.
fn launch(threads: usize) -> Option<f64> {
    let mut times = Vec::with_capacity(LAUNCH_PASSES);
    let start = Instant::now();
    let tiny = [1.0f32; 64];
    let tiny = &tiny;
    while times.len() < LAUNCH_PASSES && (times.len() < 10 || start.elapsed() < LAUNCH_BUDGET) {
        let t0 = Instant::now();
        let ok = std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(threads);
            for _ in 0..threads {
                let work = move || black_box(black_box(tiny).iter().sum::<f32>());
                match std::thread::Builder::new().spawn_scoped(s, work) {
                    Ok(h) => handles.push(h),
                    Err(_) => return false,
                }
            }
            handles.into_iter().all(|h| h.join().is_ok())
        });
        if !ok {
            return None;
        }
        times.push(t0.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied()
}

/// Operations per second over all threads: every thread runs `kernel` over blocks of
/// [`BLOCK`] elements in its cache for [`OP_RUN`]; `ops` operations per element; the best
/// of [`OP_RUNS`] runs.
fn throughput<T: Copy + Send>(
    threads: usize,
    ops: f64,
    init: fn(usize, u64) -> T,
    kernel: fn(&[T], &[T], &mut [T]),
) -> Option<f64> {
    let mut best: Option<f64> = None;
    for _ in 0..OP_RUNS {
        let t0 = Instant::now();
        let deadline = t0 + OP_RUN;
        let counts = parallel(threads, |t| {
            let seed = t as u64 * 2 + 1;
            let a: Vec<T> = (0..BLOCK).map(|i| init(i, seed)).collect();
            let b: Vec<T> = (0..BLOCK).map(|i| init(i, seed + 1)).collect();
            let mut out = a.clone();
            let mut blocks = 0u64;
            loop {
                for _ in 0..16 {
                    kernel(black_box(&a[..]), black_box(&b[..]), black_box(&mut out[..]));
                }
                blocks += 16;
                if Instant::now() >= deadline {
                    break;
                }
            }
            black_box(&out);
            blocks
        })?;
        let dt = t0.elapsed().as_secs_f64();
        let total: u64 = counts.iter().sum();
        let r = total as f64 * BLOCK as f64 * ops / dt;
        best = Some(best.map_or(r, |b| b.max(r)));
    }
    best
}

/// Elements per second read through random indices from `table` (larger than any cache),
/// over all threads; the best of [`OP_RUNS`] runs.
fn gather(threads: usize, table: &[f32]) -> Option<f64> {
    if table.is_empty() {
        return None;
    }
    let mut best: Option<f64> = None;
    for run in 0..OP_RUNS {
        let t0 = Instant::now();
        let deadline = t0 + OP_RUN;
        let counts = parallel(threads, |t| {
            let mut rng = SplitMix(0x5EED + (run * 1000 + t) as u64);
            let len = table.len() as u64;
            let idx: Vec<u32> = (0..GATHER_INDICES).map(|_| (rng.next() % len) as u32).collect();
            let mut sum = 0.0f32;
            let mut reads = 0u64;
            loop {
                for &i in black_box(&idx[..]) {
                    sum += table.get(i as usize).copied().unwrap_or(0.0);
                }
                reads += idx.len() as u64;
                if Instant::now() >= deadline {
                    break;
                }
            }
            black_box(sum);
            reads
        })?;
        let dt = t0.elapsed().as_secs_f64();
        let r = counts.iter().sum::<u64>() as f64 / dt;
        best = Some(best.map_or(r, |b| b.max(r)));
    }
    best
}

fn f32_init(i: usize, seed: u64) -> f32 {
    // in [0.5, 1.5): no overflow, no denormals, no division by zero
    0.5 + ((i as u64 * 7919 + seed * 104_729) % 1000) as f32 * 0.001
}

fn i64_init(i: usize, seed: u64) -> i64 {
    (i as i64 * 7919 + seed as i64 * 104_729) % 100_003 + 1
}

/// Two flops per element: a multiply and an add.
fn k_flop(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = *x * *y + *x;
    }
}

fn k_div(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = *x / *y;
    }
}

fn k_sqrt(a: &[f32], _b: &[f32], out: &mut [f32]) {
    for (o, x) in out.iter_mut().zip(a) {
        *o = x.sqrt();
    }
}

/// Two transcendentals per element: an `exp` and a `sin`.
fn k_transcendental(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x.exp() + y.sin();
    }
}

/// Two integer operations per element: a multiply and an add.
fn k_int(a: &[i64], b: &[i64], out: &mut [i64]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = x.wrapping_mul(*y).wrapping_add(*x);
    }
}

/// Two per element: a comparison and a select.
fn k_compare(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, x), y) in out.iter_mut().zip(a).zip(b) {
        *o = if *x < *y { *x } else { *y };
    }
}

/// splitmix64, for the gather's indices.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

// ------------------------------------------------------------------------- naming

/// This machine's host name, or `this machine`.
fn hostname() -> String {
    let from_file = std::fs::read_to_string("/etc/hostname").ok().map(|s| s.trim().to_string());
    let from_env = || std::env::var("HOSTNAME").or_else(|_| std::env::var("COMPUTERNAME")).ok();
    from_file
        .filter(|s| !s.is_empty())
        .or_else(from_env)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s.len() <= 253)
        .unwrap_or_else(|| "this machine".to_string())
}

/// Today's date (UTC) as `YYYY-MM-DD`, or `unix time 0` when the clock is before 1970.
fn today() -> String {
    let Ok(since) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) else {
        return "unix time 0".to_string();
    };
    let (y, m, d) = civil_from_days((since.as_secs() / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date of `days` since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

// ------------------------------------------------------------------------- display

/// `12.3 GB/s`, `850 Mop/s`: a rate with an SI prefix.
pub fn human(v: f64, unit: &str) -> String {
    let (scale, prefix) = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
        .into_iter()
        .find(|(s, _)| v >= *s)
        .unwrap_or((1.0, ""));
    format!("{:.3} {prefix}{unit}", v / scale)
}

/// `21.4 µs`: a duration in seconds.
pub fn human_seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else if s >= 1e-6 {
        format!("{:.3} µs", s * 1e6)
    } else {
        format!("{:.3} ns", s * 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn settling() {
        assert_eq!(settle(None, 5.0, RATE_RANGE), 5.0);
        assert_eq!(settle(Some(f64::NAN), 5.0, RATE_RANGE), 5.0);
        assert_eq!(settle(Some(f64::INFINITY), 5.0, RATE_RANGE), 5.0);
        assert_eq!(settle(Some(-1.0), 5.0, RATE_RANGE), 5.0);
        assert_eq!(settle(Some(1e20), 5.0, RATE_RANGE), 1e14);
        assert_eq!(settle(Some(10.0), 5.0, RATE_RANGE), 1e6);
        assert_eq!(settle(Some(2e9), 5.0, RATE_RANGE), 2e9);
    }

    #[test]
    fn human_units() {
        assert_eq!(human(1.23e10, "B/s"), "12.300 GB/s");
        assert_eq!(human(5.0, "op/s"), "5.000 op/s");
        assert_eq!(human_seconds(2.1e-5), "21.000 µs");
    }
}
