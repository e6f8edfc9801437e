//! `eqfuse bench`: the benchmarked programs, their generated inputs, and the timing of the
//! optimised plan, the unfused plan, the hand-written loop (`benches/handwritten.rs`) and a
//! copy of the input bytes (the memory-bandwidth floor), all in one run.
//!
//! Each program is the conformance program of the same name (compiled into the binary), at
//! a size that takes tens of milliseconds on a few cores: 1-d programs 2^24 elements,
//! matrices 4096 × 4096, nbody 4096 bodies, mandelbrot 1024 × 1024. Times are medians of
//! repeated runs, the variants timed interleaved run by run ([`interleaved`]) on the CPU.
//! Before timing, the optimised plan's outputs are checked against the hand-written loop's.

#[path = "../benches/handwritten.rs"]
pub mod handwritten;

use crate::{Arrays, Code, Error, OptimizeOptions, Result, Value};
use std::time::{Duration, Instant};

/// One benchmarked program.
pub struct Program {
    /// Its name (the conformance case's).
    pub name: &'static str,
    /// Its `.eqf` text.
    pub source: &'static str,
}

macro_rules! programs {
    ($($name:literal),* $(,)?) => {
        /// The benchmarked programs, in report order.
        pub const PROGRAMS: &[Program] = &[$(Program {
            name: $name,
            source: include_str!(concat!("../tests/conformance/", $name, "/program.eqf")),
        }),*];
    };
}

programs!(
    "dotp",
    "saxpy",
    "sum_of_squares",
    "map_chain",
    "variance",
    "softmax_rows",
    "matvec",
    "blackscholes",
    "mandelbrot",
    "nbody",
    "filter_reduce",
    "scans",
    "histogram",
);

/// What one benchmark measured (the `bench --json` object of docs/design-decisions.md).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Measurement {
    /// The program.
    pub program: String,
    /// Elements of its largest input (bodies for nbody).
    pub elements: u64,
    /// The backend that ran the plans.
    pub backend: String,
    /// Median seconds of the optimised plan.
    pub fused_s: f64,
    /// Median seconds of the unfused plan (one kernel per operation).
    pub unfused_s: f64,
    /// Median seconds of the hand-written fused loop (CPU; `None` on CUDA, where the
    /// peers — CuPy and JAX, `scripts/gpu/peers.py` — are the baselines).
    pub handwritten_s: Option<f64>,
    /// Median seconds of copying the program's input bytes once (CPU; `None` on CUDA).
    pub copy_s: Option<f64>,
}

/// Options of a benchmark run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Scale of the sizes: 1.0 is the documented size; tests use small fractions.
    pub scale: f64,
    /// Least wall-clock time spent timing one variant (at least `min_runs` runs).
    pub min_time: Duration,
    /// Least number of timed runs per variant.
    pub min_runs: usize,
    /// How the CPU runs kernels (native C, or the VM), as `eqfuse run --cpu-codegen`.
    pub cpu_codegen: eqfuse_exec_cpu::Codegen,
}

impl Default for BenchOptions {
    fn default() -> BenchOptions {
        BenchOptions {
            scale: 1.0,
            min_time: Duration::from_millis(400),
            min_runs: 5,
            cpu_codegen: eqfuse_exec_cpu::Codegen::C,
        }
    }
}

/// A deterministic generator (xorshift64*) of input data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

fn f32s(n: usize, rng: &mut Rng, lo: f64, hi: f64) -> Vec<f32> {
    (0..n).map(|_| rng.uniform(lo, hi) as f32).collect()
}

fn f64s(n: usize, rng: &mut Rng, lo: f64, hi: f64) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(lo, hi)).collect()
}

fn scaled(n: usize, scale: f64) -> usize {
    ((n as f64 * scale).round() as usize).max(1)
}

fn arr1<T: Clone>(v: &[T]) -> ndarray::ArrayD<T> {
    ndarray::Array1::from(v.to_vec()).into_dyn()
}

/// A hand-written loop's output vector as an array, without copying it (the executor's
/// outputs are not copied either).
fn own1<T>(v: Vec<T>) -> ndarray::ArrayD<T> {
    ndarray::Array1::from(v).into_dyn()
}

/// [`own1`] of an `r × c` matrix (a vector when the length does not fit).
fn own2<T: Default + Clone>(v: Vec<T>, r: usize, c: usize) -> ndarray::ArrayD<T> {
    if r.checked_mul(c) != Some(v.len()) {
        return own1(v);
    }
    // cannot fail: the length was checked
    ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&[r, c]), v)
        .unwrap_or_else(|_| ndarray::ArrayD::default(ndarray::IxDyn(&[0])))
}

fn arr2<T: Clone>(v: &[T], r: usize, c: usize) -> Result<ndarray::ArrayD<T>> {
    ndarray::Array2::from_shape_vec((r, c), v.to_vec())
        .map(|a| a.into_dyn())
        .map_err(|e| eqfuse_ir::error::internal(format!("bench input shape: {e}")))
}

/// The inputs of benchmark `name` at `scale`, and a hand-written run of it that returns its
/// outputs.
pub type Handwritten = Box<dyn Fn() -> Arrays + Send + Sync>;

/// Inputs, the element count reported, and the hand-written loop of program `name`.
pub fn setup(name: &str, scale: f64) -> Result<(Arrays, u64, Handwritten)> {
    use handwritten as h;
    let mut rng = Rng(0x5EED_BE4C);
    let n1 = scaled(1 << 24, scale);
    let mut inputs = Arrays::new();
    let v = |x: ndarray::ArrayD<f32>| Value::F32(x);
    let out = |pairs: Vec<(&str, Value)>| -> Arrays {
        pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    };
    let hw: Handwritten = match name {
        "dotp" => {
            let (xs, ys) = (f32s(n1, &mut rng, -1.0, 1.0), f32s(n1, &mut rng, -1.0, 1.0));
            inputs.insert("xs".into(), v(arr1(&xs)));
            inputs.insert("ys".into(), v(arr1(&ys)));
            Box::new(move || out(vec![("dot", Value::scalar(crate::Scalar::F32(h::dotp(&xs, &ys))))]))
        }
        "saxpy" => {
            let (xs, ys) = (f32s(n1, &mut rng, -1.0, 1.0), f32s(n1, &mut rng, -1.0, 1.0));
            inputs.insert("alpha".into(), Value::scalar(crate::Scalar::F32(1.5)));
            inputs.insert("xs".into(), v(arr1(&xs)));
            inputs.insert("ys".into(), v(arr1(&ys)));
            Box::new(move || out(vec![("zs", v(own1(h::saxpy(1.5, &xs, &ys))))]))
        }
        "sum_of_squares" => {
            let n = n1 as i64;
            inputs.insert("n".into(), Value::scalar(crate::Scalar::I64(n)));
            Box::new(move || out(vec![("s", Value::scalar(crate::Scalar::I64(h::sum_of_squares(n))))]))
        }
        "map_chain" => {
            let xs = f32s(n1, &mut rng, -4.0, 4.0);
            inputs.insert("xs".into(), v(arr1(&xs)));
            Box::new(move || out(vec![("d", v(own1(h::map_chain(&xs))))]))
        }
        "variance" => {
            let xs = f64s(n1, &mut rng, -1.0, 1.0);
            inputs.insert("xs".into(), Value::F64(arr1(&xs)));
            Box::new(move || {
                let (m, var) = h::variance(&xs);
                out(vec![
                    ("m", Value::scalar(crate::Scalar::F64(m))),
                    ("var", Value::scalar(crate::Scalar::F64(var))),
                ])
            })
        }
        "softmax_rows" | "matvec" => {
            let (r, c) = (scaled(4096, scale.sqrt()), scaled(4096, scale.sqrt()));
            let m = f32s(r * c, &mut rng, -4.0, 4.0);
            inputs.insert("m".into(), v(arr2(&m, r, c)?));
            if name == "matvec" {
                let vv = f32s(c, &mut rng, -1.0, 1.0);
                inputs.insert("v".into(), v(arr1(&vv)));
                Box::new(move || out(vec![("y", v(own1(h::matvec(&m, &vv))))]))
            } else {
                Box::new(move || {
                    let sm = h::softmax_rows(&m, c);
                    out(vec![("sm", v(own2(sm, r, c)))])
                })
            }
        }
        "blackscholes" => {
            let (s, x, t) = (
                f32s(n1, &mut rng, 5.0, 30.0),
                f32s(n1, &mut rng, 1.0, 100.0),
                f32s(n1, &mut rng, 0.25, 10.0),
            );
            inputs.insert("s".into(), v(arr1(&s)));
            inputs.insert("x".into(), v(arr1(&x)));
            inputs.insert("t".into(), v(arr1(&t)));
            Box::new(move || {
                let (c, p) = h::blackscholes(&s, &x, &t);
                out(vec![("call", v(own1(c))), ("put", v(own1(p)))])
            })
        }
        "mandelbrot" => {
            let (hh, w) = (scaled(1024, scale.sqrt()), scaled(1024, scale.sqrt()));
            let mut cr = Vec::with_capacity(hh * w);
            let mut ci = Vec::with_capacity(hh * w);
            for i in 0..hh {
                for j in 0..w {
                    cr.push(-2.0 + 3.0 * j as f64 / w as f64);
                    ci.push(-1.5 + 3.0 * i as f64 / hh as f64);
                }
            }
            inputs.insert("cr".into(), Value::F64(arr2(&cr, hh, w)?));
            inputs.insert("ci".into(), Value::F64(arr2(&ci, hh, w)?));
            Box::new(move || {
                let n = h::mandelbrot(&cr, &ci, 24);
                out(vec![("count", Value::I64(own2(n, hh, w)))])
            })
        }
        "nbody" => {
            let n = scaled(4096, scale.sqrt());
            let (px, py, pz) =
                (f32s(n, &mut rng, -1.0, 1.0), f32s(n, &mut rng, -1.0, 1.0), f32s(n, &mut rng, -1.0, 1.0));
            let mass = f32s(n, &mut rng, 0.5, 1.5);
            for (k, a) in [("px", &px), ("py", &py), ("pz", &pz), ("mass", &mass)] {
                inputs.insert(k.into(), v(arr1(a)));
            }
            Box::new(move || {
                let (ax, ay, az) = h::nbody(&px, &py, &pz, &mass);
                out(vec![("ax", v(own1(ax))), ("ay", v(own1(ay))), ("az", v(own1(az)))])
            })
        }
        "filter_reduce" => {
            let xs = f32s(n1, &mut rng, -1.0, 1.0);
            inputs.insert("xs".into(), v(arr1(&xs)));
            Box::new(move || {
                let (total, count, kept) = h::filter_reduce(&xs);
                out(vec![
                    ("total", Value::scalar(crate::Scalar::F32(total))),
                    ("count", Value::scalar(crate::Scalar::I64(count))),
                    ("kept", v(own1(kept))),
                ])
            })
        }
        "scans" => {
            let a: Vec<i64> = (0..n1).map(|_| (rng.next() % 2001) as i64 - 1000).collect();
            inputs.insert("a".into(), Value::I64(arr1(&a)));
            Box::new(move || {
                let (inc, exc, runmax) = h::scans(&a);
                out(vec![
                    ("inc", Value::I64(own1(inc))),
                    ("exc", Value::I64(own1(exc))),
                    ("runmax", Value::I64(own1(runmax))),
                ])
            })
        }
        "histogram" => {
            let bins: Vec<i64> = (0..n1).map(|_| (rng.next() % 16) as i64).collect();
            inputs.insert("bins".into(), Value::I64(arr1(&bins)));
            Box::new(move || {
                let hst = h::histogram(&bins).unwrap_or_default();
                out(vec![("h", Value::I64(own1(hst)))])
            })
        }
        other => return Err(Error::new(Code::Input, format!("no benchmark called `{other}`"))),
    };
    // sum_of_squares' input is the count itself
    let elements = if name == "sum_of_squares" {
        n1 as u64
    } else {
        inputs.values().map(|v| v.len() as u64).max().unwrap_or(0)
    };
    Ok((inputs, elements, hw))
}

/// Untimed runs before each measurement (at least this many, for at least
/// [`WARM_UP_TIME`]): the first runs of a variant pay for what later runs reuse (the
/// allocator growing its heap and faulting in fresh pages, the thread pool starting), and
/// whichever variant was timed first looked up to 2× slower (scans).
const WARM_UP_RUNS: usize = 2;
/// See [`WARM_UP_RUNS`].
const WARM_UP_TIME: Duration = Duration::from_millis(500);

/// The median of repeated runs of `f` (at least `opts.min_runs`, for at least
/// `opts.min_time`), after untimed warm-up runs (at least 2, for at least 500 ms).
pub fn median<T>(opts: &BenchOptions, f: impl FnMut() -> T) -> f64 {
    spread(opts, f).1
}

/// The least, median and greatest time of repeated runs of `f`, as [`median`] times them.
pub fn spread<T>(opts: &BenchOptions, mut f: impl FnMut() -> T) -> (f64, f64, f64) {
    let mut run = || {
        std::hint::black_box(f());
    };
    interleaved(opts, &mut [&mut run])[0]
}

/// The least, median and greatest time of each of `fs`, timed interleaved: each warmed up
/// as [`median`] warms it, then rounds that run every one of them once, in the order given,
/// until each has `opts.min_runs` runs and the rounds took `opts.min_time` per function (at
/// least one round, at most 1000). A busy period of the machine then falls on all
/// of them alike, where timing one after the other lets it fall on whichever ran then.
///
/// The order is the same in every round, so every function finds the caches as the same
/// function left them and at the same distance from its own last run: a run pays for what
/// the run before it left behind (a plan run right after a 32 MiB copy ran 25% slower), and
/// one run twice in a row finds its arrays still in the cache (an 8M-element map: 0.87 ms
/// against 1.2 ms). Orders shuffled each round made both a matter of luck: reductions over
/// 32 MiB measured up to 1.4× apart by how often they happened to run two apart.
pub fn interleaved(opts: &BenchOptions, fs: &mut [&mut dyn FnMut()]) -> Vec<(f64, f64, f64)> {
    for f in fs.iter_mut() {
        let warming = Instant::now();
        let mut warm = 0;
        while warm < WARM_UP_RUNS || (warming.elapsed() < WARM_UP_TIME && warm < 1000) {
            f();
            warm += 1;
        }
    }
    let min_time = opts.min_time.saturating_mul(u32::try_from(fs.len()).unwrap_or(u32::MAX));
    let started = Instant::now();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); fs.len()];
    let mut rounds = 0;
    while rounds == 0 || ((rounds < opts.min_runs || started.elapsed() < min_time) && rounds < MAX_RUNS) {
        for (f, ts) in fs.iter_mut().zip(&mut times) {
            let t = Instant::now();
            f();
            ts.push(t.elapsed().as_secs_f64());
        }
        rounds += 1;
    }
    times
        .iter_mut()
        .map(|ts| {
            ts.sort_by(f64::total_cmp);
            (ts[0], ts[ts.len() / 2], ts[ts.len() - 1])
        })
        .collect()
}

/// The most timed runs of one function in [`interleaved`].
const MAX_RUNS: usize = 1000;

/// `plan` made ready to time on the GPU as a peer's arrays live there: its inputs uploaded
/// once, and a first run, whose error is reported, that compiles the kernels. Returns that
/// run's seconds (upload included) and a run of the plan on the uploaded inputs, its outputs
/// left on the device and returning when the device has finished (its result, which the
/// timed runs do not look at, discarded).
pub fn device_run<'a>(
    plan: &'a eqfuse_ir::plan::Plan,
    inputs: &Arrays,
    sizes: &indexmap::IndexMap<String, i64>,
) -> Result<(f64, Box<dyn FnMut() + 'a>)> {
    let copts = eqfuse_exec_cuda::CudaOptions::default();
    let first = Instant::now();
    let up = eqfuse_exec_cuda::upload(plan, inputs, sizes, &copts)?;
    eqfuse_exec_cuda::run_uploaded(plan, &up, &copts)?;
    let first_s = first.elapsed().as_secs_f64();
    Ok((
        first_s,
        Box::new(move || {
            let _ = std::hint::black_box(eqfuse_exec_cuda::run_uploaded(plan, &up, &copts));
        }),
    ))
}

/// Times `plan` on the GPU ([`device_run`]): the first run's seconds, then the least,
/// median and greatest of the runs [`spread`] times.
pub fn on_device(
    plan: &eqfuse_ir::plan::Plan,
    inputs: &Arrays,
    sizes: &indexmap::IndexMap<String, i64>,
    opts: &BenchOptions,
) -> Result<(f64, (f64, f64, f64))> {
    let (first_s, run) = device_run(plan, inputs, sizes)?;
    Ok((first_s, spread(opts, run)))
}

/// The bytes of `v`'s elements.
fn bytes_of(v: &Value) -> usize {
    v.len() * v.elem_type().size_bytes()
}

/// Benchmarks program `p` on the CPU.
pub fn bench_cpu(p: &Program, opts: &BenchOptions) -> Result<Measurement> {
    bench(p, opts, crate::Backend::Cpu)
}

/// Benchmarks program `p` with its plans on `backend` (`Cpu` or `Cuda`).
pub fn bench(p: &Program, opts: &BenchOptions, backend: crate::Backend) -> Result<Measurement> {
    let prog = crate::parse(p.source)?;
    let checked = crate::check(&prog)?;
    let (inputs, elements, hw) = setup(p.name, opts.scale)?;
    let cuda = backend == crate::Backend::Cuda;
    // the plan `eqfuse run` and Python run: the backend's cost model, the default sizes
    let oopts = crate::plan_options(backend, OptimizeOptions::default());
    let opt = crate::optimize_checked(checked.clone(), &oopts)?;
    let bound = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &eqfuse_ir::Limits::default())?;
    let ropts =
        eqfuse_exec_cpu::RunOptions { codegen: opts.cpu_codegen, ..eqfuse_exec_cpu::RunOptions::default() };
    let copts = eqfuse_exec_cuda::CudaOptions::default();
    let run = |plan: &eqfuse_ir::plan::Plan| {
        if cuda {
            eqfuse_exec_cuda::run(plan, &inputs, &bound.sizes, &copts)
        } else {
            eqfuse_exec_cpu::run(plan, &inputs, &bound.sizes, &ropts)
        }
    };
    // check before timing: the optimised plan against the hand-written loop
    let got = run(&opt.result.plan)?;
    let want = hw();
    let tol = eqfuse_ir::value::Tolerance { rtol: 1e-3, atol: 1e-3, mismatch_fraction: 1e-3 };
    for (k, w) in &want {
        let g = got.get(k).ok_or_else(|| Error::new(Code::Limit, format!("{}: no output `{k}`", p.name)))?;
        eqfuse_ir::value::compare(g, w, &tol).map_err(|m| {
            Error::new(
                Code::Limit,
                format!("{}: the plan and the hand-written loop differ on `{k}`: {m}", p.name),
            )
        })?;
    }
    let (fused_s, unfused_s, handwritten_s, copy_s) = if cuda {
        // as a peer's arrays live on the device: inputs uploaded once per plan, outputs
        // left there; each run returns when the device has finished
        let median_on_device =
            |plan| -> Result<f64> { Ok(on_device(plan, &inputs, &bound.sizes, opts)?.1 .1) };
        (median_on_device(&opt.result.plan)?, median_on_device(&opt.result.unfused_plan)?, None, None)
    } else {
        // the plans and the hand-written loop timed interleaved: a busy period falls on all
        // of them
        let total: usize = inputs.values().map(bytes_of).sum();
        let src = vec![1u8; total.max(1)];
        let mut dst = vec![0u8; total.max(1)];
        let mut fused = || {
            let _ = std::hint::black_box(run(&opt.result.plan));
        };
        let mut unfused = || {
            let _ = std::hint::black_box(run(&opt.result.unfused_plan));
        };
        let mut hand = || {
            std::hint::black_box(hw());
        };
        let t = interleaved(opts, &mut [&mut fused, &mut unfused, &mut hand]);
        // the floor on its own: whatever ran right after a copy of every input byte would
        // pay for the copy's writes
        let copy = median(opts, || handwritten::copy_floor(&src, &mut dst));
        (t[0].1, t[1].1, Some(t[2].1), Some(copy))
    };
    Ok(Measurement {
        program: p.name.to_string(),
        elements,
        backend: backend.name().into(),
        fused_s,
        unfused_s,
        handwritten_s,
        copy_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// Every function gets its runs, a slower one measures slower, and the rounds run them
    /// in one order: each right after the same other one, never twice in a row.
    #[test]
    fn interleaved_times_each_function_in_rounds_of_one_order() {
        let opts =
            BenchOptions { min_time: Duration::from_millis(20), min_runs: 40, ..BenchOptions::default() };
        let log = RefCell::new(Vec::new());
        let spin = |d: Duration| {
            let t = Instant::now();
            while t.elapsed() < d {
                std::hint::spin_loop();
            }
        };
        let (mut a, mut b, mut c) = (
            || {
                log.borrow_mut().push(0);
                spin(Duration::from_micros(20));
            },
            || {
                log.borrow_mut().push(1);
                spin(Duration::from_micros(400));
            },
            || {
                log.borrow_mut().push(2);
                spin(Duration::from_micros(20));
            },
        );
        let t = interleaved(&opts, &mut [&mut a, &mut b, &mut c]);
        assert_eq!(t.len(), 3);
        for (lo, med, hi) in &t {
            assert!(0.0 < *lo && lo <= med && med <= hi, "{t:?}");
        }
        assert!(t[1].0 > t[0].0 && t[1].0 > t[2].0, "the slow one measures slower: {t:?}");
        let log = log.into_inner();
        // after the warm-up runs (each function's together), rounds of one run of each in
        // the order given: the log ends in at least `min_runs` rounds of `0 1 2`
        let rounds = log.rchunks(3).position(|r| r != [0, 1, 2]).unwrap_or(log.len() / 3);
        assert!(rounds >= 40, "{rounds} rounds of 0 1 2 at the end of {log:?}");
        // the warm-up: each function's runs together, first to last
        let warm = &log[..log.len() - 3 * rounds];
        assert!(warm.windows(2).all(|w| w[0] <= w[1]), "{warm:?}");
    }
}
