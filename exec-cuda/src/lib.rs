//! # eqfuse-exec-cuda
//!
//! The CUDA executor: every kernel of an [`eqfuse_ir::plan::Plan`] becomes a self-contained
//! CUDA C file generated from a small set of skeletons (the table below: grid-stride
//! elementwise loops in 16-byte tiles, one-launch full reductions, warp- or block-per-row
//! reductions, single-pass scans and filters, atomic permutes), compiled at run time by
//! NVRTC ([`nvrtc`]) into a cubin for the device's architecture (PTX as a fallback), cached
//! by the hash of (source, architecture, options) in memory and on disk, and launched
//! through cudarc's driver API. Host steps of the plan (scalars, asserts, the conditions of
//! `if`s over arrays) run on the host with the reference semantics.
//!
//! cudarc loads the driver and NVRTC at run time (`dynamic-loading`), so this crate builds
//! and its tests pass on a machine with no CUDA at all; there, [`available`] is `false` and
//! [`run`] fails with `E-DEVICE` ("no CUDA driver found" / "no GPU"), never a panic.
//!
//! Results follow the plan interpreter ([`eqfuse_ir::plan::eval`]): integer arithmetic wraps,
//! `MIN / -1 == MIN`, `MIN % -1 == 0`, float to integer conversions saturate with NaN to 0,
//! float `min`/`max` propagate NaN, `round` rounds half away from zero, and NVRTC is given
//! `--fmad=false` so that no multiply-add is contracted (unless [`CudaOptions::fast_math`]).
//! Reductions and scans combine in an order of their own (the language leaves it free); the
//! transcendental functions (`exp`, `log`, `sin`, `pow`, ...) are eqfuse's own
//! ([`eqfuse_ir::math`]), the same operations as on the host, so they give the host's bits.
//! An index out of bounds, a permute target out of bounds and an integer division by zero
//! are recorded on the device (the first one wins) and reported as `E-INDEX` / `E-DIV-ZERO`
//! naming the array, as the interpreter does.
//!
//! | kernel | skeleton |
//! | --- | --- |
//! | generate lanes (`map`, `gather`, ...) | grid-stride loop, multi-index from the flat index; over a 1-d space, tiles of 16-byte loads and stores |
//! | reduce over a 1-d space | one launch: threads fold (in tiles when the operator commutes), warp shuffles, the last block combines |
//! | reduce along rows | a warp per row (rows up to 1024 long) or a block per row |
//! | scan | one pass with decoupled look-back (1-d), a block per row (rank >= 2) |
//! | filter | one pass with decoupled look-back into room for every element; the count read after it |
//!
//! Reads at the indices of the kernel's space (`xs[i]` over `[n]`, `m[i, j]` over `[r, c]`)
//! carry no bounds check: before the launch the host checks each such array's shape against
//! the space, and generates the kernel with every read checked where one does not cover it.
//! | permute | atomics: `atomicAdd`, `atomicMin`/`Max`, compare-and-swap loops |
//!
//! ```
//! use eqfuse_exec_cuda::{kernel_sources, CudaOptions};
//! let src = "input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)";
//! let checked = eqfuse_ir::check::check(&eqfuse_ir::parse::parse(src)?)?;
//! let plan = eqfuse_optimize::optimize(&checked, &eqfuse_optimize::OptimizeOptions::default())?.plan;
//! let files = kernel_sources(&plan, &CudaOptions::default());
//! assert_eq!(files[0].0, "k0_reduce.cu");
//! assert!(files[0].1.contains("extern \"C\" __global__"));
//! # Ok::<(), eqfuse_ir::Error>(())
//! ```

mod blas;
pub mod cache;
use eqfuse_codegen::cuda as codegen;
mod device;
#[cfg(test)]
mod emulate;
mod host;
mod key;
mod libs;
pub mod nvrtc;
mod runtime;

use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Plan, Step};
use eqfuse_ir::value::Value;
use indexmap::IndexMap;
use std::path::PathBuf;

/// How the CUDA executor compiles and runs.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaOptions {
    /// The device's ordinal.
    pub device: usize,
    /// Let NVRTC contract `a * b + c` into FMAs (`--fmad=true`) and let permutes use the
    /// hardware `f32` atomic add (which flushes subnormals). Off: results are IEEE-exact per
    /// operation.
    pub fast_math: bool,
    /// Threads per block: a multiple of 32 from 32 to 1024 (others are rounded into range).
    pub block_size: u32,
    /// The architecture to compile for, as `XY` of `sm_XY` (e.g. 90). `None`: the device's.
    pub arch: Option<u32>,
    /// Keep compiled modules on disk between runs.
    pub disk_cache: bool,
    /// The disk cache's folder (`None`: `$XDG_CACHE_HOME/eqfuse/cuda`, else
    /// `$HOME/.cache/eqfuse/cuda`), used only while it is private to this user (see
    /// [`cache`]).
    pub cache_dir: Option<PathBuf>,
    /// The most bytes one array may take, checked before it is allocated (`E-LIMIT`).
    pub max_array_bytes: u64,
    /// Run matrix products (the plan's `contract` kernels) through cuBLAS when the library
    /// is found; off, or without it, they run as the reductions they are defined as.
    pub gemm: bool,
    /// Run a row block as one kernel, a block of threads per row; off, its phases run one
    /// after the other (for comparison). Default: on, unless `EQFUSE_NO_ROWBLOCK` is set.
    pub row_blocks: bool,
}

impl Default for CudaOptions {
    fn default() -> CudaOptions {
        CudaOptions {
            device: 0,
            fast_math: false,
            block_size: 256,
            arch: None,
            disk_cache: true,
            cache_dir: None,
            max_array_bytes: eqfuse_ir::ast::Limits::default().max_array_bytes,
            gemm: true,
            row_blocks: std::env::var_os("EQFUSE_NO_ROWBLOCK").is_none(),
        }
    }
}

impl CudaOptions {
    /// The block size rounded to a multiple of 32 within 32 ..= 1024.
    pub fn block(&self) -> u32 {
        (self.block_size.clamp(32, 1024) / 32) * 32
    }

    pub(crate) fn gen(&self) -> codegen::GenOptions {
        codegen::GenOptions { block: self.block(), fast_math: self.fast_math, unchecked: true }
    }
}

/// Whether a CUDA driver and at least one GPU are present (NVRTC is checked when a kernel
/// is first compiled). Never panics.
pub fn available() -> bool {
    device::available()
}

/// Whether cuBLAS can be loaded (the loader's usual search, else `$EQFUSE_CUBLAS`, the
/// library file or its folder, or a CUDA installation): matrix products (`contract` kernels)
/// then run through it ([`CudaOptions::gemm`]). Needs no GPU; never panics.
pub fn blas_available() -> bool {
    device::blas_available()
}

/// The CUDA source of every kernel of `plan`, in [`Plan::kernels`] order, as
/// `(file name, source)`: `k0_reduce.cu`, `k1_map.cu`, ..., then each row block that runs as
/// one kernel, named after its first phase (`k0_rowblock.cu`). Each file compiles under
/// NVRTC on its own. A kernel that cannot be generated (a malformed plan) gets a file whose
/// `#error` says why.
pub fn kernel_sources(plan: &Plan, opts: &CudaOptions) -> Vec<(String, String)> {
    let host = codegen::host_known(plan);
    let mut files: Vec<(String, String)> = plan
        .kernels()
        .into_iter()
        .enumerate()
        .map(|(i, k)| match codegen::generate(plan, k, i, opts.gen(), &host) {
            Ok(code) => (code.file, code.source),
            Err(why) => (codegen::file_name(i, k), codegen::error_source(i, &why)),
        })
        .collect();
    for (first, step) in eqfuse_ir::plan::exec::kernel_steps(plan) {
        let Step::RowBlock { kernels, local } = step else { continue };
        let first = first.index();
        match codegen::rowblock::generate(plan, kernels, local, first, opts.gen(), &host) {
            Ok(Some(code)) => files.push((code.file, code.source)),
            Ok(None) => {}
            Err(why) => files.push((codegen::rowblock::file_name(first), codegen::error_source(first, &why))),
        }
    }
    files
}

/// The exact C spelling of an `f32` constant in generated code (for tests).
#[doc(hidden)]
pub fn float_literal_for_tests(v: f32) -> String {
    eqfuse_codegen::scalar::literal(eqfuse_ir::value::Scalar::F32(v), eqfuse_codegen::Dialect::Cuda)
}

/// Runs `plan` on the GPU: uploads `inputs` (by name, as bound by
/// [`eqfuse_ir::bind::bind_inputs`], with the size names in `sizes`), runs the host steps on
/// the host and the kernels on the device, and downloads the outputs, in the plan's order
/// (scalars as 0-d values).
///
/// Errors: the interpreter's (`E-INDEX`, `E-DIV-ZERO`, `E-SHAPE`, `E-LIMIT`, `E-INPUT`), and
/// `E-DEVICE` when there is no driver or no GPU, a kernel does not compile, or the device
/// runs out of memory.
///
/// ```
/// use eqfuse_exec_cuda::{available, run, CudaOptions};
/// use eqfuse_ir::value::Value;
///
/// let src = "input xs : f32[n]\ninput ys : f32[n]\noutput dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)";
/// let checked = eqfuse_ir::check::check(&eqfuse_ir::parse::parse(src)?)?;
/// let plan = eqfuse_optimize::optimize(&checked, &Default::default())?.plan;
/// let mut inputs = indexmap::IndexMap::new();
/// inputs.insert("xs".to_string(), Value::F32(ndarray::arr1(&[1.0, 2.0, 3.0]).into_dyn()));
/// inputs.insert("ys".to_string(), Value::F32(ndarray::arr1(&[4.0, 5.0, 6.0]).into_dyn()));
/// let bound = eqfuse_ir::bind::bind_inputs(&checked, &inputs, &Default::default())?;
/// match run(&plan, &inputs, &bound.sizes, &CudaOptions::default()) {
///     Ok(out) => assert_eq!(out["dot"], Value::F32(ndarray::arr0(32.0).into_dyn())),
///     // no CUDA driver, no GPU or no NVRTC here: an error, never a panic
///     Err(e) => assert_eq!(e.code, eqfuse_ir::Code::Device, "available: {}", available()),
/// }
/// # Ok::<(), eqfuse_ir::Error>(())
/// ```
pub fn run(
    plan: &Plan,
    inputs: &IndexMap<String, Value>,
    sizes: &IndexMap<String, i64>,
    opts: &CudaOptions,
) -> Result<IndexMap<String, Value>> {
    let dev = device::Device::get(opts.device)?;
    device::guarded("CUDA", || runtime::run(&*dev, plan, inputs, sizes, opts))
}

/// A plan's inputs uploaded to the GPU once ([`upload`]), to run the plan several times
/// ([`run_uploaded`]) without copying them again: what a benchmark times is then the
/// kernels, as for a library whose arrays live on the device.
pub struct DeviceInputs {
    dev: std::sync::Arc<device::Device>,
    vals: runtime::Values<cudarc::driver::CudaSlice<u8>>,
    /// The plan's kernels, generated and loaded by the first run (no code is generated or
    /// hashed again at later runs).
    codes: runtime::Codes<device::Loaded>,
}

/// The outputs of [`run_uploaded`], still on the GPU.
pub struct DeviceOutputs {
    dev: std::sync::Arc<device::Device>,
    outs: runtime::Outputs<cudarc::driver::CudaSlice<u8>>,
}

/// Uploads `plan`'s inputs (as for [`run`]) to device `opts.device`.
pub fn upload(
    plan: &Plan,
    inputs: &IndexMap<String, Value>,
    sizes: &IndexMap<String, i64>,
    opts: &CudaOptions,
) -> Result<DeviceInputs> {
    let dev = device::Device::get(opts.device)?;
    let vals = device::guarded("CUDA", || runtime::load_inputs(&*dev, plan, inputs, sizes))?;
    Ok(DeviceInputs { dev, vals, codes: Default::default() })
}

/// Runs `plan` (the plan `inputs` were uploaded for) on the inputs already on the device;
/// returns when the device has finished, with the outputs left on it. Errors as [`run`].
pub fn run_uploaded(plan: &Plan, inputs: &DeviceInputs, opts: &CudaOptions) -> Result<DeviceOutputs> {
    let dev = inputs.dev.clone();
    let outs = device::guarded("CUDA", || {
        runtime::run_loaded(&*dev, plan, inputs.vals.clone(), opts, Some(&inputs.codes))
    })?;
    Ok(DeviceOutputs { dev, outs })
}

impl DeviceOutputs {
    /// Copies the outputs to the host, in the plan's order.
    pub fn download(self) -> Result<IndexMap<String, Value>> {
        let DeviceOutputs { dev, outs } = self;
        device::guarded("CUDA", || runtime::download_outputs(&*dev, outs))
    }
}
