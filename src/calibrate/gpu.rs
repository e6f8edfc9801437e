//! `eqfuse calibrate --backend cuda`: the GPU's cost parameters measured on the device, as
//! the CPU's are on the host, and stored beside them (`cost-cuda.toml`), where `eqfuse
//! run --backend cuda`, `Backend::auto()` on a GPU, `explain --backend cuda`, `bench` and
//! Python find them ([`super::load_gpu`]).
//!
//! Every measurement is a program run through the CUDA backend with its inputs on the
//! device, each run waiting for the device ([`eqfuse_exec_cuda::run_uploaded`]):
//!
//! - **bandwidth**: a map over 2^27 `f32` (one read and one write per element);
//! - **launch**: the same map over 1024 elements;
//! - **gemm**: a 2048³ `f32` matrix product (cuBLAS, as the backend runs contractions);
//! - **operations and access patterns**: the CPU's probes over 32 times their elements,
//!   the rates fitted the same way, taken as they come (no reference to scale by: the GPU
//!   defaults are an H100-class estimate, not a fit).
//!
//! A row block runs phase by phase on the GPU's parameters (`cache` stays 0).

use super::kernels::{self, least_time, Target};
use super::{hostname, human, human_seconds, settle, today, LAUNCH_RANGE, RATE_RANGE};
use crate::Arrays;
use eqfuse_ir::plan::Plan;
use eqfuse_ir::{Code, Error};
use eqfuse_lower::model::CostParams;
use indexmap::IndexMap;

/// Elements of the bandwidth probe's array (512 MiB of `f32` read, as much written).
const STREAM: i64 = 1 << 27;
/// The side of the GEMM probe's matrices.
const GEMM_SIDE: i64 = 2048;

/// Times `plan` on the GPU: inputs uploaded once, the least time of runs that each wait
/// for the device.
fn time_cuda(plan: &Plan, inputs: &Arrays, sizes: &IndexMap<String, i64>) -> crate::Result<f64> {
    let opts = eqfuse_exec_cuda::CudaOptions::default();
    let up = eqfuse_exec_cuda::upload(plan, inputs, sizes, &opts)?;
    least_time(|| eqfuse_exec_cuda::run_uploaded(plan, &up, &opts).map(drop))
}

/// Measures the GPU's cost parameters (a few seconds, and NVRTC's compiles on the first
/// run). `E-DEVICE` when there is no GPU, its driver or NVRTC.
pub fn measure(progress: &mut dyn FnMut(&str)) -> crate::Result<CostParams> {
    if !eqfuse_exec_cuda::available() {
        return Err(Error::new(
            Code::Device,
            "calibrate --backend cuda: no CUDA driver or no GPU on this machine (libcuda.so and a device are needed)",
        ));
    }
    let d = CostParams::gpu_default();
    let target = Target { base: d.clone(), scale: 32, relative: false, time: &time_cuda };
    let map = "input xs : f32[n]\noutput y = map (\\x -> x * 2.0 + 1.0) xs";
    progress("memory bandwidth: a map over 2^27 f32 on the device ...");
    let t = kernels::time_program(map, &[("n", STREAM)], &target)?;
    let bandwidth = settle(Some(8.0 * STREAM as f64 / t), d.bandwidth, RATE_RANGE);
    progress(&format!("  bandwidth      {}", human(bandwidth, "B/s")));
    progress("launch cost: the same map over 1024 elements ...");
    let launch = settle(Some(kernels::time_program(map, &[("n", 1024)], &target)?), d.launch, LAUNCH_RANGE);
    progress(&format!("  launch         {}", human_seconds(launch)));
    let product = "input a : f32[n, k]\ninput b : f32[k, m]\noutput c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))";
    let s = GEMM_SIDE;
    let t = kernels::time_program(product, &[("n", s), ("k", s), ("m", s)], &target)?;
    let gemm = settle(Some(2.0 * (s * s * s) as f64 / t), d.gemm, RATE_RANGE);
    progress(&format!("  gemm (f32)     {}", human(gemm, "flop/s")));
    let mut p = CostParams {
        name: format!("calibrated on {} (GPU) {}", hostname(), today()),
        bandwidth,
        launch,
        gemm,
        ..d
    };
    progress("operations and access patterns: timing generated kernels on the device ...");
    kernels::measure(&mut p, &target, progress);
    Ok(p)
}
