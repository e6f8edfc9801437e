//! `eqfuse calibrate`: measures the cost model's parameters on the machine at hand, the
//! CPU's ([`measure`]) or the GPU's ([`measure_cuda`]), and stores them per machine.
//!
//! [`measure`] runs a small benchmark (a few seconds on every core; the first run also
//! compiles its probes' C, which the code cache keeps):
//!
//! - **bandwidth**: a map-like pass `dst[i] = src[i] * a + b` over two 128 MiB buffers,
//!   split across the threads; read and written bytes counted; the best of a few passes;
//! - **launch**: the fixed cost of one parallel pass: spawning and joining one scoped thread
//!   per core over a trivial amount of work; the median of many;
//! - **gemm**: a 384³ `f32` matrix product through the CPU executor's GEMM (the way it runs
//!   contractions), flops per second, the best of eight;
//! - **cache**: what the system reports of the cache one core keeps to itself;
//! - **operations and access patterns** (`flop` .. `scatter`): through the kernels eqfuse
//!   generates (`kernels`): a probe program per term, optimised, compiled and timed on the
//!   CPU backend; the rates that best explain the probes' times under the model, as a
//!   ratio to what the same probes measured on the machine the defaults were fitted on,
//!   scale the defaults.
//!
//! Every result is finite and positive: a measurement that fails falls back to
//! [`CostParams::cpu_default`]'s value, and anything absurd is clamped into a sane range.
//!
//! [`save`] writes the parameters as TOML to [`path`] (`$XDG_CONFIG_HOME/eqfuse/cost-cpu.toml`
//! or `$HOME/.config/eqfuse/cost-cpu.toml`); [`load_cpu`] reads them back, or gives the
//! defaults when there is no file or it cannot be read.

mod gpu;
mod kernels;

pub use gpu::measure as measure_cuda;

use eqfuse_ir::{Code, Error};
use eqfuse_lower::model::CostParams;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Elements of each of the two streaming buffers (`f32`: 128 MiB each, well beyond the
/// last-level cache, which can hold a good part of 64 MiB on a server CPU).
const STREAM_ELEMS: usize = 32 << 20;
/// Streaming passes timed for the bandwidth (the best counts).
const STREAM_PASSES: usize = 5;
/// Most parallel passes timed for the launch cost, and the time they may take.
const LAUNCH_PASSES: usize = 300;
const LAUNCH_BUDGET: Duration = Duration::from_millis(150);

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
    // the buffers (256 MiB) are freed as soon as the bandwidth is measured
    let bandwidth =
        stream_buffers(threads).and_then(|(mut src, mut dst)| bandwidth(threads, &mut src, &mut dst));
    let bandwidth = settle(bandwidth, d.bandwidth, RATE_RANGE);
    progress(&format!("  bandwidth      {}", human(bandwidth, "B/s")));

    progress("launch cost: spawning and joining one thread per core ...");
    let launch = settle(launch(threads), d.launch, LAUNCH_RANGE);
    progress(&format!("  launch         {}", human_seconds(launch)));

    let gemm = settle(eqfuse_exec_cpu::gemm_rate(384, 8), d.gemm, RATE_RANGE);
    progress(&format!("  gemm (f32)     {}", human(gemm, "flop/s")));
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

    // the operations and access patterns: through the kernels eqfuse generates, priced
    // with what was measured above
    let mut p = CostParams {
        name: format!("calibrated on {} {}", hostname(), today()),
        bandwidth,
        launch,
        gemm,
        cache,
        ..d.clone()
    };
    progress("operations and access patterns: timing generated kernels (compiled once, cached) ...");
    let target = kernels::Target { base: d, scale: 1, relative: true, time: &kernels::time_cpu };
    kernels::measure(&mut p, &target, progress);
    p
}

/// The device a calibration describes: where it is stored and what it falls back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// The CPU backend: `cost-cpu.toml`, [`CostParams::cpu_default`].
    Cpu,
    /// The CUDA backend: `cost-cuda.toml`, [`CostParams::gpu_default`].
    Cuda,
}

impl Device {
    fn file(self) -> &'static str {
        match self {
            Device::Cpu => "cost-cpu.toml",
            Device::Cuda => "cost-cuda.toml",
        }
    }

    /// The parameters used when nothing was saved.
    pub fn defaults(self) -> CostParams {
        match self {
            Device::Cpu => CostParams::cpu_default(),
            Device::Cuda => CostParams::gpu_default(),
        }
    }
}

/// Where this machine's CPU calibration is stored ([`path_for`] the CPU).
pub fn path() -> Option<PathBuf> {
    path_for(Device::Cpu)
}

/// Where this machine's calibration of `device` is stored:
/// `$XDG_CONFIG_HOME/eqfuse/cost-cpu.toml` (`cost-cuda.toml`), else
/// `$HOME/.config/eqfuse/...`; `None` when neither variable is set.
pub fn path_for(device: Device) -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = var("XDG_CONFIG_HOME").or_else(|| var("HOME").map(|h| h.join(".config")))?;
    Some(dir.join("eqfuse").join(device.file()))
}

/// Writes `p` as the CPU's calibration ([`save_for`] the CPU).
pub fn save(p: &CostParams) -> Result<PathBuf, Error> {
    save_for(p, Device::Cpu)
}

/// Writes `p` as TOML to [`path_for`] `device` (creating its folder); returns where.
/// `E-INPUT` when there is no such place or it cannot be written.
pub fn save_for(p: &CostParams, device: Device) -> Result<PathBuf, Error> {
    let path = path_for(device).ok_or_else(|| {
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
    let what = match device {
        Device::Cpu => "CPU",
        Device::Cuda => "GPU",
    };
    std::fs::write(&tmp, format!("# eqfuse calibrate: the {what} cost model's parameters\n{text}"))
        .map_err(|e| fail("write", e))?;
    std::fs::rename(&tmp, &path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail("write", e)
    })?;
    Ok(path)
}

/// The CPU cost parameters ([`load`] for the CPU).
pub fn load_cpu() -> CostParams {
    load(Device::Cpu)
}

/// The GPU cost parameters ([`load`] for CUDA): what `eqfuse calibrate --backend cuda`
/// saved, else the H100-class defaults.
pub fn load_gpu() -> CostParams {
    load(Device::Cuda)
}

/// The cost parameters of `device`: those [`save_for`]d for this machine when the file
/// exists and parses, else [`Device::defaults`]. Never fails: a missing, unreadable or
/// malformed file gives the defaults, and a saved value that is not finite and positive is
/// replaced by its default (a `cache` of 0 is the GPU's: it runs row blocks phase by
/// phase).
pub fn load(device: Device) -> CostParams {
    let d = device.defaults();
    let Some(path) = path_for(device) else { return d };
    let Ok(text) = std::fs::read_to_string(&path) else { return d };
    let Ok(mut p) = toml::from_str::<CostParams>(&text) else { return d };
    let ok = |v: f64, default: f64| if v.is_finite() && v > 0.0 { v } else { default };
    for ((_, v), (_, default)) in p.rates_mut().into_iter().zip(d.rates()) {
        *v = ok(*v, default);
    }
    CostParams {
        bandwidth: ok(p.bandwidth, d.bandwidth),
        launch: ok(p.launch, d.launch),
        code: ok(p.code, d.code),
        gemm: ok(p.gemm, d.gemm),
        cache: if d.cache == 0.0 && p.cache == 0.0 { 0.0 } else { ok(p.cache, d.cache) },
        ..p
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

/// The unit of a rate of [`CostParams::rates`]: operations, or elements of an access
/// pattern, per second.
pub fn rate_unit(term: &str) -> &'static str {
    if matches!(term, "gather" | "strided" | "compact" | "scan" | "scatter") {
        "elem/s"
    } else {
        "op/s"
    }
}

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
