//! Running a plan over any [`Gpu`] (the CUDA device of [`crate::device`], or the CPU
//! emulator the tests use): the values of a run (device buffers and host scalars), here;
//! the run as the step walker's executor ([`steps`]), one kernel's launch ([`kernel`]), a
//! row block as one kernel ([`rowblock`]), GEMM calls ([`contract`]), the device's error
//! record ([`record`]) and values as bytes ([`bytes`]) in files of their own.
//!
//! Every buffer is padded to a multiple of 8 bytes (at least 8), so that a `bool` element
//! can be updated by a compare-and-swap on the 32-bit word that holds it. Kernels take one
//! parameter, the argument block `EqArgs`: 8-byte fields in the order of
//! [`KernelCode::slots`], built here as a `Vec<u64>`. All work is issued in order.
//!
//! Device errors of the program (index out of bounds, division by zero) are written to an
//! error record on the device; the record is read back before any host step, any download
//! and at the end of the run, and turned into the interpreter's `E-INDEX` / `E-DIV-ZERO`.

mod bytes;
mod contract;
mod kernel;
mod record;
mod rowblock;
mod steps;

use bytes::scalar_from_bytes;
pub(crate) use bytes::{bytes_value, value_bytes};
pub(crate) use record::REC_LEN;

use crate::blas::GemmCall;
use crate::host::internal;
use crate::CudaOptions;
use eqfuse_codegen::cuda::{self as codegen, KernelCode};
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::plan::{Kernel, KernelId, Origin, Plan, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{Scalar, Value};
use indexmap::IndexMap;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What the runtime needs from a device. Work is issued in order (one stream); `download`
/// waits for everything issued before it.
pub(crate) trait Gpu {
    /// A device buffer.
    type Buf;
    /// A loaded module.
    type Module;
    /// `bytes` of uninitialised memory (`bytes` is a positive multiple of 8).
    fn alloc(&self, bytes: usize) -> Result<Self::Buf>;
    /// `bytes` of zeroed memory.
    fn alloc_zeroed(&self, bytes: usize) -> Result<Self::Buf>;
    /// Copies `bytes` to the start of `buf`.
    fn upload(&self, buf: &mut Self::Buf, bytes: &[u8]) -> Result<()>;
    /// Copies `bytes` bytes from `buf` at `offset`, after the work issued so far.
    fn download(&self, buf: &Self::Buf, offset: usize, bytes: usize) -> Result<Vec<u8>>;
    /// Copies the first `bytes` bytes of `src` to `dst`.
    fn copy(&self, src: &Self::Buf, dst: &mut Self::Buf, bytes: usize) -> Result<()>;
    /// The buffer's device address (for argument blocks).
    fn ptr(&self, buf: &Self::Buf) -> u64;
    /// The module of `code`, compiled and loaded (cached).
    fn module(&self, code: &KernelCode, opts: &CudaOptions) -> Result<Self::Module>;
    /// Launches entry point `entry` of `module` on `grid` blocks of `block` threads, with
    /// the argument block `args` (the fields of `code.slots`, in order).
    fn launch(
        &self,
        module: &Self::Module,
        entry: &str,
        grid: u32,
        block: u32,
        args: &mut [u64],
    ) -> Result<()>;
    /// Streaming multiprocessors (to size grids).
    fn sms(&self) -> u32;
    /// Runs `g` (as cuBLAS defines it) with its operands `X` in `x`, `Y` in `y` and the
    /// result in `c`, after the work issued so far; `Ok(false)` when this device has no BLAS
    /// library (nothing is written: the caller runs the kernel instead).
    fn gemm(&self, g: &GemmCall, x: &Self::Buf, y: &Self::Buf, c: &mut Self::Buf) -> Result<bool>;
}

/// A value of the run.
pub(crate) struct Val<B> {
    elem: ElemType,
    shape: Vec<usize>,
    /// Its value, for a 0-d value known on the host.
    host: Option<Scalar>,
    /// Its device buffer.
    dev: Option<Arc<B>>,
}

impl<B> Clone for Val<B> {
    fn clone(&self) -> Self {
        Val { elem: self.elem, shape: self.shape.clone(), host: self.host, dev: self.dev.clone() }
    }
}

impl<B> Val<B> {
    fn count(&self) -> usize {
        self.shape.iter().product()
    }
    fn bytes(&self) -> usize {
        self.count() * self.elem.size_bytes()
    }
}

/// What the error record needs to name the failing element.
struct Launched {
    kind: &'static str,
    space: Vec<usize>,
    /// The kernel's source position: that of an error whose instruction has none.
    span: Option<Span>,
}

/// Kernels generated and loaded for one plan, kept across its runs (inputs uploaded once
/// and run several times): keyed by what the code is for and the generation options (whose
/// `unchecked` says whether its in-space reads go unchecked).
pub(crate) type Codes<M> = std::sync::Mutex<HashMap<(CodeKey, codegen::GenOptions), Made<M>>>;

/// What a generated code is for: one kernel, or a row block run as one kernel (by its first
/// phase).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CodeKey {
    /// Kernel `id`.
    Kernel(KernelId),
    /// The row block whose first phase is `id`.
    RowBlock(KernelId),
}

/// Generated code and its loaded module.
pub(crate) type Made<M> = Arc<(KernelCode, M)>;

/// One run of a plan.
struct Run<'p, G: Gpu> {
    plan: &'p Plan,
    gpu: &'p G,
    opts: &'p CudaOptions,
    /// Where generated kernels are kept between runs of the plan, when anywhere.
    codes: Option<&'p Codes<G::Module>>,
    host: HashSet<ValueId>,
    vals: Vec<Option<Val<G::Buf>>>,
    record: G::Buf,
    /// A kernel ran since the record was last read.
    dirty: bool,
    launched: Vec<Launched>,
}

/// Formats a shape as `[3, 4]`.
fn fmt_shape<T: std::fmt::Display>(shape: &[T]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// `ceil(a / b)` clamped to `1 ..= cap`, as a grid size.
/// The grid of a single-pass tile loop: a block per tile of `tile` elements.
fn tiles(total: usize, tile: usize) -> Result<u32> {
    u32::try_from(total.div_ceil(tile.max(1))).map_err(|_| {
        Error::new(
            eqfuse_ir::error::Code::Limit,
            format!("{total} elements are too many tiles for one launch"),
        )
    })
}

fn grid(a: usize, b: usize, cap: usize) -> u32 {
    let g = a.div_ceil(b.max(1)).clamp(1, cap.max(1));
    u32::try_from(g).unwrap_or(u32::MAX)
}

/// Runs `plan` on `gpu`: uploads the inputs, runs, downloads the outputs.
pub(crate) fn run<G: Gpu>(
    gpu: &G,
    plan: &Plan,
    inputs: &IndexMap<String, Value>,
    sizes: &IndexMap<String, i64>,
    opts: &CudaOptions,
) -> Result<IndexMap<String, Value>> {
    let vals = load_inputs(gpu, plan, inputs, sizes)?;
    let outs = run_loaded(gpu, plan, vals, opts, None)?;
    download_outputs(gpu, outs)
}

/// The values of a run before its first step: the inputs (arrays uploaded, scalars on the
/// host) and the sizes. `E-INPUT` for an input that is missing or of the wrong type.
pub(crate) fn load_inputs<G: Gpu>(
    gpu: &G,
    plan: &Plan,
    inputs: &IndexMap<String, Value>,
    sizes: &IndexMap<String, i64>,
) -> Result<Values<G::Buf>> {
    let mut vals: Values<G::Buf> = vec![None; plan.values.len()];
    for (id, info) in plan.values.iter().enumerate() {
        let name = &info.name;
        match info.origin {
            Origin::Input => {
                let v = inputs.get(name).ok_or_else(|| Error::input(format!("missing input `{name}`")))?;
                if v.elem_type() != info.elem || v.shape().len() != info.rank {
                    return Err(Error::input(format!(
                        "input `{name}` is {} of rank {}, the plan expects {} of rank {}",
                        v.elem_type(),
                        v.shape().len(),
                        info.elem,
                        info.rank
                    )));
                }
                let val = if info.rank == 0 {
                    let s = v.get_flat(0).ok_or_else(|| internal(format!("input `{name}` is empty")))?;
                    Val { elem: info.elem, shape: Vec::new(), host: Some(s), dev: None }
                } else {
                    let buf = upload(gpu, &value_bytes(v))?;
                    Val { elem: info.elem, shape: v.shape().to_vec(), host: None, dev: Some(Arc::new(buf)) }
                };
                vals[id] = Some(val);
            }
            Origin::Size => {
                let n = sizes
                    .get(name)
                    .ok_or_else(|| Error::input(format!("size `{name}` is not bound by the inputs")))?;
                if info.elem != ElemType::I64 || info.rank != 0 {
                    return Err(internal(format!("size `{name}` is not a 0-d i64 value")));
                }
                vals[id] = Some(Val {
                    elem: ElemType::I64,
                    shape: Vec::new(),
                    host: Some(Scalar::I64(*n)),
                    dev: None,
                });
            }
            Origin::Computed => {}
        }
    }
    Ok(vals)
}

/// The values of a run, by [`ValueId`] (`None`: not computed yet).
pub(crate) type Values<B> = Vec<Option<Val<B>>>;

/// The outputs of a run, still on the device.
pub(crate) type Outputs<B> = Vec<(String, Val<B>)>;

/// Runs `plan` from `vals` (as [`load_inputs`] gives them, which may be reused across runs:
/// buffers are shared, never written); returns the outputs on the device, after the device
/// has finished (the error record is read). With `codes`, kernels are generated and
/// loaded once for all the runs that share it (which must all run `plan`).
pub(crate) fn run_loaded<G: Gpu>(
    gpu: &G,
    plan: &Plan,
    vals: Values<G::Buf>,
    opts: &CudaOptions,
    codes: Option<&Codes<G::Module>>,
) -> Result<Outputs<G::Buf>> {
    if vals.len() != plan.values.len() {
        return Err(internal("inputs loaded for another plan"));
    }
    let mut r = Run::new(gpu, plan, vals, opts, codes)?;
    eqfuse_ir::plan::exec::run_steps(plan, &mut r)?;
    r.check_errors()?;
    let mut out = Vec::with_capacity(plan.outputs.len());
    for (name, id) in &plan.outputs {
        out.push((name.clone(), r.val(*id)?.clone()));
    }
    Ok(out)
}

/// Downloads outputs.
pub(crate) fn download_outputs<G: Gpu>(gpu: &G, outs: Outputs<G::Buf>) -> Result<IndexMap<String, Value>> {
    let mut out = IndexMap::new();
    for (name, x) in outs {
        let v = match (&x.host, &x.dev) {
            (Some(s), _) if x.shape.is_empty() => Value::scalar(*s),
            (_, Some(buf)) => {
                let bytes = x.bytes();
                let b = if bytes == 0 { Vec::new() } else { gpu.download(buf, 0, bytes)? };
                bytes_value(x.elem, &x.shape, &b)?
            }
            _ => return Err(internal(format!("output `{name}` has no data"))),
        };
        out.insert(name, v);
    }
    Ok(out)
}

/// A buffer holding `bytes` (padded to a multiple of 8, at least 8).
fn upload<G: Gpu>(gpu: &G, bytes: &[u8]) -> Result<G::Buf> {
    let mut buf = gpu.alloc(bytes.len().max(1).div_ceil(8) * 8)?;
    if !bytes.is_empty() {
        gpu.upload(&mut buf, bytes)?;
    }
    Ok(buf)
}

impl<'p, G: Gpu> Run<'p, G> {
    fn new(
        gpu: &'p G,
        plan: &'p Plan,
        vals: Values<G::Buf>,
        opts: &'p CudaOptions,
        codes: Option<&'p Codes<G::Module>>,
    ) -> Result<Run<'p, G>> {
        let record = gpu.alloc_zeroed(REC_LEN * 8)?;
        Ok(Run {
            plan,
            gpu,
            opts,
            codes,
            host: codegen::host_known(plan),
            vals,
            record,
            dirty: false,
            launched: Vec::new(),
        })
    }

    fn name(&self, v: ValueId) -> String {
        self.plan.values.get(v).map(|i| i.name.clone()).unwrap_or_else(|| format!("v{v}"))
    }

    fn val(&self, v: ValueId) -> Result<&Val<G::Buf>> {
        match self.vals.get(v) {
            Some(Some(x)) => Ok(x),
            Some(None) => Err(internal(format!("value `{}` read before it is computed", self.name(v)))),
            None => Err(internal(format!("no value v{v}"))),
        }
    }

    /// Forgets value `v` (a loop's next iteration writes it again).
    fn forget_value(&mut self, v: ValueId) {
        if let Some(slot) = self.vals.get_mut(v) {
            *slot = None;
        }
    }

    fn put(&mut self, v: ValueId, val: Val<G::Buf>) -> Result<()> {
        let info = self.plan.values.get(v).ok_or_else(|| internal(format!("no value v{v}")))?;
        if info.origin != Origin::Computed || info.rank != val.shape.len() || info.elem != val.elem {
            return Err(internal(format!(
                "`{}` written as {} of shape {}",
                info.name,
                val.elem,
                fmt_shape(&val.shape)
            )));
        }
        match self.vals.get_mut(v) {
            Some(slot @ None) => {
                *slot = Some(val);
                Ok(())
            }
            Some(Some(_)) => Err(internal(format!("`{}` is written twice", info.name))),
            None => Err(internal(format!("no value v{v}"))),
        }
    }

    /// Allocates `bytes` (padded to a multiple of 8, at least 8) of uninitialised memory.
    fn alloc(&self, bytes: usize) -> Result<G::Buf> {
        self.gpu.alloc(bytes.max(1).div_ceil(8) * 8)
    }

    /// Allocates `bytes` of zeroed memory (scratch).
    fn alloc_zeroed(&self, bytes: usize) -> Result<G::Buf> {
        self.gpu.alloc_zeroed(bytes.max(1).div_ceil(8) * 8)
    }

    fn upload(&self, bytes: &[u8]) -> Result<G::Buf> {
        upload(self.gpu, bytes)
    }

    /// Reads `bytes` bytes from `buf` at `offset` (after checking the error record).
    fn download(&mut self, buf: &G::Buf, offset: usize, bytes: usize) -> Result<Vec<u8>> {
        self.check_errors()?;
        if bytes == 0 {
            return Ok(Vec::new());
        }
        self.gpu.download(buf, offset, bytes)
    }

    fn ptr(&self, buf: &G::Buf) -> u64 {
        self.gpu.ptr(buf)
    }

    /// A 0-d value on the host (downloaded when it lives on the device).
    fn host_scalar(&mut self, v: ValueId) -> Result<Scalar> {
        let x = self.val(v)?.clone();
        if !x.shape.is_empty() {
            return Err(internal(format!(
                "`{}` of shape {} loaded as a scalar",
                self.name(v),
                fmt_shape(&x.shape)
            )));
        }
        if let Some(s) = x.host {
            return Ok(s);
        }
        let buf = x.dev.ok_or_else(|| internal(format!("`{}` has no data", self.name(v))))?;
        let b = self.download(&buf, 0, x.elem.size_bytes())?;
        let s = scalar_from_bytes(x.elem, &b)?;
        if let Some(Some(val)) = self.vals.get_mut(v) {
            val.host = Some(s);
        }
        Ok(s)
    }

    /// Value `v`'s device buffer (uploaded when it lives on the host only).
    fn device_buf(&mut self, v: ValueId) -> Result<Arc<G::Buf>> {
        let x = self.val(v)?.clone();
        if let Some(b) = x.dev {
            return Ok(b);
        }
        let s = x.host.ok_or_else(|| internal(format!("`{}` has no data", self.name(v))))?;
        let bytes = value_bytes(&Value::scalar(s));
        let b = Arc::new(self.upload(&bytes)?);
        if let Some(Some(val)) = self.vals.get_mut(v) {
            val.dev = Some(b.clone());
        }
        Ok(b)
    }

    /// The kernel's space: `E-SHAPE` for a negative extent, `E-LIMIT` when its size
    /// overflows `i64`.
    fn space(&mut self, k: &Kernel) -> Result<(Vec<usize>, usize)> {
        // the host scalars first (reading one may need `&mut self`), then the shared checks
        let mut loaded = std::collections::HashMap::new();
        for a in &k.space {
            if let eqfuse_ir::plan::Arg::Value(v) = a {
                loaded.insert(*v, self.host_scalar(*v)?);
            }
        }
        k.shape(
            |v| loaded.get(&v).copied().ok_or_else(|| internal(format!("extent v{v} not loaded"))),
            |v| self.name(v),
        )
    }

    /// Refuses an array of `count` elements of `elem` over the limit (before allocating).
    fn check_alloc(&self, kind: &str, elem: ElemType, count: usize) -> Result<()> {
        let max = self.opts.max_array_bytes;
        let bytes = (count as u128) * (elem.size_bytes() as u128);
        if i64::try_from(count).is_err() || bytes > u128::from(max) {
            return Err(Error::limit(format!(
                "`{kind}` would allocate {count} elements of {elem} ({bytes} bytes), over the limit of {max} bytes"
            )));
        }
        Ok(())
    }

    /// A new output value of `shape` for lane `lane` of `k`.
    fn new_output(&self, k: &Kernel, lane: usize, shape: Vec<usize>) -> Result<Val<G::Buf>> {
        let dst = k.lanes.get(lane).ok_or_else(|| internal("a lane out of range"))?.dst;
        let elem = self.plan.values.get(dst).ok_or_else(|| internal(format!("no value v{dst}")))?.elem;
        let count: usize = shape.iter().product();
        self.check_alloc(k.kind.as_str(), elem, count)?;
        let buf = self.alloc(count * elem.size_bytes())?;
        Ok(Val { elem, shape, host: None, dev: Some(Arc::new(buf)) })
    }
}
