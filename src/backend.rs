//! Backends: where a checked program runs.
//!
//! The reference interpreter runs the program as written. The CPU backend optimises it
//! and runs the optimised plan ([`crate::Optimized`]'s `result.plan`) on `eqfuse-exec-cpu`;
//! [`run_unfused`] runs the unfused plan (one kernel per source operation) instead, the
//! baseline of `--no-opt` and of benchmarks. Every backend binds the inputs the same way
//! ([`eqfuse_ir::bind::bind_inputs`]), so input errors are the same everywhere. The CUDA
//! backend runs the same plans on `eqfuse-exec-cuda`.

use crate::{Arrays, Checked, Code, Error, Limits, OptimizeOptions, Optimized, Result, ValueView};
use eqfuse_ir::plan::Plan;
use indexmap::IndexMap;
use std::fmt;
use std::str::FromStr;

/// Where a program runs.
///
/// ```
/// use eqfuse::Backend;
/// let b: Backend = "cpu".parse()?;
/// assert_eq!(b, Backend::Cpu);
/// assert_eq!(Backend::Reference.to_string(), "reference");
/// // `auto` is the GPU where a CUDA driver and a GPU are present, else the CPU
/// let auto: Backend = "auto".parse()?;
/// assert_eq!(auto, Backend::auto());
/// assert_eq!("tpu".parse::<Backend>().unwrap_err().code, eqfuse::Code::Device);
/// # Ok::<(), eqfuse::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The reference interpreter: direct, unoptimised, the oracle for every other backend.
    Reference,
    /// Fused kernels on CPU threads (rayon): the optimised plan on `eqfuse-exec-cpu`.
    Cpu,
    /// Fused CUDA kernels compiled by NVRTC: the optimised plan on `eqfuse-exec-cuda`
    /// (`E-DEVICE` where there is no CUDA driver or no GPU).
    Cuda,
}

impl Backend {
    /// The names [`FromStr`] takes, in the order messages list them.
    pub const NAMES: [&'static str; 4] = ["auto", "cpu", "cuda", "reference"];

    /// `Ok` where the backend can run here; `E-DEVICE` for [`Backend::Cuda`] on a machine
    /// with no CUDA driver or no GPU. Checked when a program is compiled for a backend
    /// (Python's `eqfuse.compile`), so that the refusal comes before any work, not at the
    /// first run.
    ///
    /// ```
    /// use eqfuse::Backend;
    /// assert!(Backend::Cpu.check_available().is_ok());
    /// assert!(Backend::Reference.check_available().is_ok());
    /// let cuda = Backend::Cuda.check_available();
    /// assert_eq!(cuda.is_ok(), Backend::auto() == Backend::Cuda);
    /// if let Err(e) = cuda {
    ///     assert_eq!(e.code, eqfuse::Code::Device);
    /// }
    /// ```
    pub fn check_available(self) -> Result<()> {
        if self == Backend::Cuda && !eqfuse_exec_cuda::available() {
            return Err(Error::new(
                Code::Device,
                "backend `cuda` is not available: no CUDA driver or no GPU on this machine \
                 (backend `auto` runs on the CPU here)",
            ));
        }
        Ok(())
    }

    /// The best backend present on this machine: CUDA when a GPU is present, else the CPU.
    pub fn auto() -> Backend {
        if eqfuse_exec_cuda::available() {
            Backend::Cuda
        } else {
            Backend::Cpu
        }
    }

    /// The backend's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Reference => "reference",
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Backend {
    type Err = Error;

    /// `reference`, `cpu`, `cuda`, or `auto` (see [`Backend::auto`]).
    fn from_str(s: &str) -> Result<Backend> {
        match s {
            "reference" => Ok(Backend::Reference),
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda),
            "auto" => Ok(Backend::auto()),
            other => {
                let (last, rest) = Backend::NAMES.split_last().unwrap_or((&"", &[]));
                Err(Error::new(
                    Code::Device,
                    format!("unknown backend `{other}`; choose {} or {last}", rest.join(", ")),
                ))
            }
        }
    }
}

/// Runs a checked program on `backend` with `inputs` (by name); returns the outputs in
/// program order. [`Backend::Cpu`] optimises the program (default [`OptimizeOptions`]) and
/// runs the optimised plan. Every failure is an [`Error`] with its code: `E-INPUT` for
/// missing, unknown or mistyped inputs, `E-SHAPE`, `E-INDEX`, `E-DIV-ZERO`, `E-LIMIT` at run
/// time, `E-DEVICE` for a backend that is not available.
///
/// ```
/// use eqfuse::{Arrays, Backend, Code, Value};
/// use ndarray::arr1;
///
/// let checked = eqfuse::check(&eqfuse::parse("
///     input xs : f64[n]
///     input idx : i64[k]
///     let sq = map (\\x -> x * x) xs
///     output total = reduce (+) 0 sq
///     output picked = gather sq idx
/// ")?)?;
/// let mut inputs = Arrays::new();
/// inputs.insert("xs".into(), Value::from(arr1(&[1.0, 2.0, 3.0]).into_dyn()));
/// inputs.insert("idx".into(), Value::from(arr1(&[2i64, 0]).into_dyn()));
///
/// for backend in [Backend::Reference, Backend::Cpu] {
///     let out = eqfuse::run(&checked, backend, &inputs)?;
///     assert_eq!(out["total"], Value::from(ndarray::arr0(14.0).into_dyn()));
///     assert_eq!(out["picked"], Value::from(arr1(&[9.0, 1.0]).into_dyn()));
/// }
///
/// // run-time errors carry the same code on every backend
/// inputs.insert("idx".into(), Value::from(arr1(&[3i64]).into_dyn()));
/// for backend in [Backend::Reference, Backend::Cpu] {
///     assert_eq!(eqfuse::run(&checked, backend, &inputs).unwrap_err().code, Code::Index);
/// }
/// inputs.shift_remove("idx");
/// assert_eq!(eqfuse::run(&checked, Backend::Cpu, &inputs).unwrap_err().code, Code::Input);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn run(checked: &Checked, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    run_with(checked, backend, inputs, &OptimizeOptions::default(), &eqfuse_exec_cpu::RunOptions::default())
}

/// [`run`] with the optimiser's options (its node, iteration and time limits) and the
/// executors' options; `opts.max_array_bytes` bounds every array on every backend, the
/// reference interpreter's included (`E-LIMIT` before allocating).
///
/// ```
/// use eqfuse::{Arrays, Backend, Code, OptimizeOptions};
/// let checked = eqfuse::check(&eqfuse::parse("output y = iota 1000")?)?;
/// let small = eqfuse_exec_cpu::RunOptions { max_array_bytes: 4000, ..Default::default() };
/// for backend in [Backend::Reference, Backend::Cpu] {
///     let err = eqfuse::backend::run_with(&checked, backend, &Arrays::new(), &OptimizeOptions::default(), &small);
///     assert_eq!(err.unwrap_err().code, Code::Limit);
/// }
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn run_with(
    checked: &Checked,
    backend: Backend,
    inputs: &Arrays,
    optimize: &OptimizeOptions,
    opts: &eqfuse_exec_cpu::RunOptions,
) -> Result<Arrays> {
    run_timed(checked, backend, inputs, optimize, opts, false).map(|(out, _)| out)
}

/// Where a run's time went, stage by stage ([`run_timed`], `eqfuse run --timings`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timings {
    /// Optimising (saturation, extraction, lowering); zero for the reference interpreter.
    pub optimise: std::time::Duration,
    /// Compiling the plan's kernels to native code (the CPU backend with `--cpu-codegen c`),
    /// and whether the compiled plan came from the cache; `None` where nothing is compiled
    /// ahead of the run (the reference, the VM; CUDA compiles inside `execute`).
    pub compile: Option<(std::time::Duration, bool)>,
    /// Running the plan (or interpreting the program).
    pub execute: std::time::Duration,
    /// The plan that ran: its [`crate::kernel_count`] and [`crate::plan_digest`]; `None`
    /// where the reference interpreter ran the program.
    pub plan: Option<(usize, String)>,
}

/// Runs a checked program as [`run_with`] does (or its unfused plan, as
/// [`run_unfused_with`] does), and says where the time went: optimising, compiling native
/// code (the CPU backend compiles before the run, so the run itself does not), running.
///
/// ```
/// use eqfuse::{Arrays, Backend, Value};
/// let checked = eqfuse::check(&eqfuse::parse("input xs : f64[n]\noutput s = reduce (+) 0 xs")?)?;
/// let mut inputs = Arrays::new();
/// inputs.insert("xs".into(), Value::from(ndarray::arr1(&[1.0, 2.0]).into_dyn()));
/// let opts = (eqfuse::OptimizeOptions::default(), eqfuse_exec_cpu::RunOptions::default());
/// let (out, t) = eqfuse::backend::run_timed(&checked, Backend::Cpu, &inputs, &opts.0, &opts.1, false)?;
/// assert_eq!(out["s"], Value::from(ndarray::arr0(3.0).into_dyn()));
/// assert!(t.optimise > std::time::Duration::ZERO);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn run_timed(
    checked: &Checked,
    backend: Backend,
    inputs: &Arrays,
    optimize: &OptimizeOptions,
    opts: &eqfuse_exec_cpu::RunOptions,
    unfused: bool,
) -> Result<(Arrays, Timings)> {
    let limits = Limits { max_array_bytes: opts.max_array_bytes, ..Limits::default() };
    let mut t = Timings::default();
    match backend {
        Backend::Reference => {
            let start = std::time::Instant::now();
            let out = eqfuse_ir::interp::interpret_with(checked, inputs, &limits)?;
            t.execute = start.elapsed();
            Ok((out, t))
        }
        Backend::Cpu | Backend::Cuda => {
            // input errors first, as every backend reports them
            eqfuse_ir::bind::bind_inputs(checked, inputs, &limits)?;
            let start = std::time::Instant::now();
            // one deadline for optimising and compiling (`--time-limit-ms`): a C compiler
            // still running then is stopped and the kernels run on the VM
            let deadline = opts.compile_deadline.or_else(|| start.checked_add(optimize.time_limit));
            let opts = &eqfuse_exec_cpu::RunOptions { compile_deadline: deadline, ..opts.clone() };
            let optimize = OptimizeOptions { no_fusion: unfused || optimize.no_fusion, ..optimize.clone() };
            let opt = match crate::optimize_checked(checked.clone(), &optimize) {
                Err(e) if eqfuse_optimize::is_unsupported(&e) => {
                    // a version-2 form the optimiser cannot take yet: the reference
                    // interpreter runs it, and says so once per process
                    say_interpreted(&e, backend);
                    let start = std::time::Instant::now();
                    let out = eqfuse_ir::interp::interpret_with(checked, inputs, &limits)?;
                    t.execute = start.elapsed();
                    return Ok((out, t));
                }
                other => other?,
            };
            t.optimise = start.elapsed();
            let plan = if unfused { &opt.result.unfused_plan } else { &opt.result.plan };
            t.plan = Some((crate::kernel_count(plan), crate::plan_digest(plan)));
            if backend == Backend::Cpu && opts.codegen == eqfuse_exec_cpu::Codegen::C {
                let start = std::time::Instant::now();
                let report = eqfuse_exec_cpu::compile_plan(plan, opts);
                t.compile = Some((start.elapsed(), report.cached));
            }
            let start = std::time::Instant::now();
            let out = run_plan_with(plan, checked, backend, inputs, opts)?;
            t.execute = start.elapsed();
            Ok((out, t))
        }
    }
}

/// Says, once per process and reason, that a program runs on the reference interpreter
/// because the optimiser cannot take one of its forms yet (`e` names it).
pub fn say_interpreted(e: &eqfuse_ir::Error, backend: Backend) {
    let what = e.message.strip_prefix(eqfuse_optimize::UNSUPPORTED).unwrap_or(&e.message);
    eqfuse_codegen::cache::say(&format!(
        "{what} is not compiled for the {backend} backend yet: this program runs on the reference interpreter"
    ));
}

/// Runs the unfused plan of a checked program (one kernel per source operation, nothing
/// fused: `--no-opt`) on `backend`. The reference interpreter never fuses: for it this is
/// [`run`].
///
/// ```
/// use eqfuse::{Arrays, Backend, Value};
/// let checked = eqfuse::check(&eqfuse::parse("input xs : i64[n]\noutput s = reduce (+) 0 (map (\\x -> x * 3) xs)")?)?;
/// let mut inputs = Arrays::new();
/// inputs.insert("xs".into(), Value::from(ndarray::arr1(&[1i64, 2, 3]).into_dyn()));
/// let fused = eqfuse::run(&checked, Backend::Cpu, &inputs)?;
/// let unfused = eqfuse::backend::run_unfused(&checked, Backend::Cpu, &inputs)?;
/// assert_eq!(fused, unfused);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn run_unfused(checked: &Checked, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    run_unfused_with(
        checked,
        backend,
        inputs,
        &OptimizeOptions::default(),
        &eqfuse_exec_cpu::RunOptions::default(),
    )
}

/// [`run_unfused`] with the optimiser's and the executors' options (see [`run_with`]);
/// `optimize.no_fusion` is set whatever it says.
pub fn run_unfused_with(
    checked: &Checked,
    backend: Backend,
    inputs: &Arrays,
    optimize: &OptimizeOptions,
    opts: &eqfuse_exec_cpu::RunOptions,
) -> Result<Arrays> {
    run_timed(checked, backend, inputs, optimize, opts, true).map(|(out, _)| out)
}

/// Runs a plan of `checked` (its optimised or unfused plan) on `backend`: the inputs are
/// bound against the program, then the plan runs. [`Backend::Reference`] runs the plan
/// interpreter ([`eqfuse_ir::plan::eval`]), the oracle for plans.
///
/// ```
/// use eqfuse::{Arrays, Backend, OptimizeOptions, Value};
/// let prog = eqfuse::parse("input xs : f32[n]\noutput y = map (\\x -> x + 1) (reverse xs)")?;
/// let opt = eqfuse::optimize(&prog, &OptimizeOptions::default())?;
/// let mut inputs = Arrays::new();
/// inputs.insert("xs".into(), Value::from(ndarray::arr1(&[1.0f32, 2.0]).into_dyn()));
/// let plan = &opt.result.plan;              // an `ir::plan::Plan`: one kernel here
/// let on_cpu = eqfuse::backend::run_plan(plan, opt.source(), Backend::Cpu, &inputs)?;
/// let interpreted = eqfuse::backend::run_plan(plan, opt.source(), Backend::Reference, &inputs)?;
/// assert_eq!(on_cpu, interpreted);
/// assert_eq!(on_cpu["y"], Value::from(ndarray::arr1(&[3.0f32, 2.0]).into_dyn()));
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn run_plan(plan: &Plan, checked: &Checked, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    run_plan_with(plan, checked, backend, inputs, &eqfuse_exec_cpu::RunOptions::default())
}

/// [`run_plan`] with the CPU executor's options (threads, block size, memory limit; the
/// plan interpreter uses the memory limit only).
pub fn run_plan_with(
    plan: &Plan,
    checked: &Checked,
    backend: Backend,
    inputs: &Arrays,
    opts: &eqfuse_exec_cpu::RunOptions,
) -> Result<Arrays> {
    let limits = Limits { max_array_bytes: opts.max_array_bytes, ..Limits::default() };
    let bound = eqfuse_ir::bind::bind_inputs(checked, inputs, &limits)?;
    match backend {
        Backend::Reference => eqfuse_ir::plan::eval::eval_with(plan, inputs, &bound.sizes, &limits),
        Backend::Cpu => eqfuse_exec_cpu::run(plan, inputs, &bound.sizes, opts),
        Backend::Cuda => {
            let copts =
                eqfuse_exec_cuda::CudaOptions { max_array_bytes: opts.max_array_bytes, ..Default::default() };
            eqfuse_exec_cuda::run(plan, inputs, &bound.sizes, &copts)
        }
    }
}

/// [`run_plan_with`] on inputs borrowed where they lie ([`ValueView`]s: NumPy arrays from
/// Python). The CPU reads row-major, contiguous inputs in place; the plan interpreter and the
/// GPU take an owned copy (the GPU copies its inputs to the device anyway).
///
/// ```
/// use eqfuse::{Backend, ValueView};
/// let opt = eqfuse::optimize(&eqfuse::parse("input xs : f64[n]\noutput s = reduce (+) 0 xs")?, &Default::default())?;
/// let data = [1.0, 2.0, 3.5];
/// let mut inputs = indexmap::IndexMap::new();
/// inputs.insert("xs".to_string(), ValueView::F64(ndarray::ArrayView1::from(&data[..]).into_dyn()));
/// let opts = eqfuse_exec_cpu::RunOptions::default();
/// let out = eqfuse::backend::run_plan_views(&opt.result.plan, opt.source(), Backend::Cpu, &inputs, &opts)?;
/// assert_eq!(out["s"], eqfuse::Value::from(ndarray::arr0(6.5).into_dyn()));
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn run_plan_views(
    plan: &Plan,
    checked: &Checked,
    backend: Backend,
    inputs: &IndexMap<String, ValueView<'_>>,
    opts: &eqfuse_exec_cpu::RunOptions,
) -> Result<Arrays> {
    if backend != Backend::Cpu {
        let owned: Arrays = inputs.iter().map(|(k, v)| (k.clone(), v.to_value())).collect();
        return run_plan_with(plan, checked, backend, &owned, opts);
    }
    let limits = Limits { max_array_bytes: opts.max_array_bytes, ..Limits::default() };
    let bound = eqfuse_ir::bind::bind_inputs(checked, inputs, &limits)?;
    eqfuse_exec_cpu::run(plan, inputs, &bound.sizes, opts)
}

/// [`run_plan_views`] on the CPU with a plan compiled once ([`eqfuse_exec_cpu::CompiledPlan`]):
/// what a program called many times (from Python) runs, so that no call generates or looks
/// up its code again. Setting `cancel` from another thread stops the run (`E-LIMIT:
/// interrupted`): Python's Ctrl-C.
pub fn run_compiled_views(
    compiled: &eqfuse_exec_cpu::CompiledPlan,
    checked: &Checked,
    inputs: &IndexMap<String, ValueView<'_>>,
    max_array_bytes: u64,
    cancel: &eqfuse_exec_cpu::Cancel,
) -> Result<Arrays> {
    let limits = Limits { max_array_bytes, ..Limits::default() };
    let bound = eqfuse_ir::bind::bind_inputs(checked, inputs, &limits)?;
    compiled.run_cancellable(inputs, &bound.sizes, cancel)
}

/// Runs an optimised program: the reference interpreter runs the decoded optimised program,
/// the CPU its plan (what [`Optimized::run`] does).
pub fn run_optimized(opt: &Optimized, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    match backend {
        Backend::Reference => {
            // the optimised program may nest deeper than its source (fused map chains)
            let limits = Limits { max_depth: eqfuse_egraph::decode::DECODED_MAX_DEPTH, ..Limits::default() };
            let checked = eqfuse_ir::check::check_with(opt.program(), &limits)?;
            eqfuse_ir::interp::interpret(&checked, inputs)
        }
        Backend::Cpu | Backend::Cuda => run_plan(&opt.result.plan, opt.source(), backend, inputs),
    }
}
