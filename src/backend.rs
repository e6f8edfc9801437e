//! Backends: where a checked program runs.

use crate::{Arrays, Checked, Code, Error, Result};
use std::fmt;
use std::str::FromStr;

/// Where a program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The reference interpreter: direct, unoptimised, the oracle for every other backend.
    Reference,
    /// Fused kernels on CPU threads (rayon). Not built yet in this version.
    Cpu,
    /// Fused CUDA kernels compiled by NVRTC. Not built yet in this version.
    Cuda,
}

impl Backend {
    /// The best backend present on this machine. Until the CPU and CUDA executors exist that
    /// is the reference interpreter; afterwards CUDA when a GPU is present, else the CPU.
    pub fn auto() -> Backend {
        Backend::Reference
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
/// program order. Every failure is an [`Error`] with its code: `E-INPUT` for missing,
/// unknown or mistyped inputs, `E-SHAPE`, `E-INDEX`, `E-DIV-ZERO`, `E-LIMIT` at run time,
/// `E-DEVICE` for a backend that is not available.
pub fn run(checked: &Checked, backend: Backend, inputs: &Arrays) -> Result<Arrays> {
    match backend {
        Backend::Reference => eqfuse_ir::interp::interpret(checked, inputs),
        Backend::Cpu | Backend::Cuda => Err(Error::new(
            Code::Device,
            format!("the `{backend}` backend is not available in this version of eqfuse; use `reference`"),
        )),
    }
}
