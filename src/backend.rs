//! Backends: where a checked program runs.
//!
//! The reference interpreter runs the program as written. The CPU backend optimises it
//! and runs the optimised plan ([`crate::Optimized`]'s `result.plan`) on `eqfuse-exec-cpu`;
//! [`run_unfused`] runs the unfused plan (one kernel per source operation) instead, the
//! baseline of `--no-opt` and of benchmarks. Every backend binds the inputs the same way
//! ([`eqfuse_ir::bind::bind_inputs`]), so input errors are the same everywhere. The CUDA
//! backend runs the same plans on `eqfuse-exec-cuda`.

use crate::{Arrays, Checked, Code, Error, Limits, OptimizeOptions, Optimized, Result};
use eqfuse_ir::plan::Plan;
use std::fmt;
use std::str::FromStr;

/// Where a program runs.
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
            other => Err(Error::new(
                Code::Device,
                format!("unknown backend `{other}`; choose auto, cpu, cuda or reference"),
            )),
        }
    }
}

/// Runs a checked program on `backend` with `inputs` (by name); returns the outputs in
/// program order. [`Backend::Cpu`] optimises the program (default [`OptimizeOptions`]) and
/// runs the optimised plan. Every failure is an [`Error`] with its code: `E-INPUT` for
/// missing, unknown or mistyped inputs, `E-SHAPE`, `E-INDEX`, `E-DIV-ZERO`, `E-LIMIT` at run
/// time, `E-DEVICE` for a backend that is not available.
pub fn run(checked: &Checked, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    match backend {
        Backend::Reference => eqfuse_ir::interp::interpret(checked, inputs),
        Backend::Cpu | Backend::Cuda => {
            // input errors first, as every backend reports them
            eqfuse_ir::bind::bind_inputs(checked, inputs, &Limits::default())?;
            let opt = crate::optimize_checked(checked.clone(), &OptimizeOptions::default())?;
            run_plan(&opt.result.plan, checked, backend, inputs)
        }
    }
}

/// Runs the unfused plan of a checked program (one kernel per source operation, nothing
/// fused: `--no-opt`) on `backend`. The reference interpreter never fuses: for it this is
/// [`run`].
pub fn run_unfused(checked: &Checked, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    match backend {
        Backend::Reference => eqfuse_ir::interp::interpret(checked, inputs),
        Backend::Cpu | Backend::Cuda => {
            eqfuse_ir::bind::bind_inputs(checked, inputs, &Limits::default())?;
            let opts = OptimizeOptions { no_fusion: true, ..OptimizeOptions::default() };
            let opt = crate::optimize_checked(checked.clone(), &opts)?;
            run_plan(&opt.result.unfused_plan, checked, backend, inputs)
        }
    }
}

/// Runs a plan of `checked` (its optimised or unfused plan) on `backend`: the inputs are
/// bound against the program, then the plan runs. [`Backend::Reference`] runs the plan
/// interpreter ([`eqfuse_ir::plan::eval`]), the oracle for plans.
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

/// Runs an optimised program: the reference interpreter runs the decoded optimised program,
/// the CPU its plan (what [`Optimized::run`] does).
pub fn run_optimized(opt: &Optimized, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    match backend {
        Backend::Reference => {
            let checked = crate::check(opt.program())?;
            eqfuse_ir::interp::interpret(&checked, inputs)
        }
        Backend::Cpu | Backend::Cuda => run_plan(&opt.result.plan, opt.source(), backend, inputs),
    }
}
