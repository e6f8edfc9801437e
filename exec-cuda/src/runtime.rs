//! Running a plan: the values of a run (device buffers and host scalars), host steps, and
//! the launches of each skeleton, over any [`Gpu`] (the CUDA device of [`crate::device`], or
//! the CPU emulator the tests use).
//!
//! Every buffer is padded to a multiple of 8 bytes (at least 8), so that a `bool` element
//! can be updated by a compare-and-swap on the 32-bit word that holds it. Kernels take one
//! parameter, the argument block `EqArgs`: 8-byte fields in the order of
//! [`KernelCode::slots`], built here as a `Vec<u64>`. All work is issued in order.
//!
//! Device errors of the program (index out of bounds, division by zero) are written to an
//! error record on the device; the record is read back before any host step, any download
//! and at the end of the run, and turned into the interpreter's `E-INDEX` / `E-DIV-ZERO`.

use crate::blas::{self, GemmCall};
use crate::host::{self, internal};
use crate::CudaOptions;
use eqfuse_codegen::cuda::{self as codegen, KernelCode, Skeleton, Slot};
use eqfuse_codegen::scalar::reads_fit;
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::plan::contract::Contraction;
use eqfuse_ir::plan::{Arg, Kernel, LaneOp, Origin, PermuteDest, Plan, Step, ValueId};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{Scalar, Value};
use indexmap::IndexMap;
use ndarray::{ArrayD, IxDyn};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Length of the error record, in `i64`s: code, kernel, what, element, count, 8 indices.
pub(crate) const REC_LEN: usize = 16;
const REC_IX: usize = 8;

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

/// One run of a plan.
/// Kernels generated and loaded for one plan, kept across its runs (inputs uploaded once
/// and run several times): keyed by the kernel's number and the generation options (whose
/// `unchecked` says whether its in-space reads go unchecked).
pub(crate) type Codes<M> = std::sync::Mutex<HashMap<(usize, codegen::GenOptions), Made<M>>>;

/// Generated code and its loaded module.
pub(crate) type Made<M> = Arc<(KernelCode, M)>;

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

/// The bytes of a value's elements, little-endian, row-major.
pub(crate) fn value_bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Bool(a) => a.iter().map(|&b| u8::from(b)).collect(),
        Value::I32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::I64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::F32(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
        Value::F64(a) => a.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// A value from its bytes.
pub(crate) fn bytes_value(elem: ElemType, shape: &[usize], bytes: &[u8]) -> Result<Value> {
    let n: usize = shape.iter().product();
    let need = n * elem.size_bytes();
    let b = bytes.get(..need).ok_or_else(|| internal("a download shorter than its array"))?;
    let sh = IxDyn(shape);
    let bad = |_| internal("an array whose elements do not fill its shape");
    macro_rules! num {
        ($t:ty, $v:ident) => {{
            let data: Vec<$t> = b
                .chunks_exact(std::mem::size_of::<$t>())
                .map(|c| {
                    let mut a = [0u8; std::mem::size_of::<$t>()];
                    a.copy_from_slice(c);
                    <$t>::from_le_bytes(a)
                })
                .collect();
            Value::$v(ArrayD::from_shape_vec(sh, data).map_err(bad)?)
        }};
    }
    Ok(match elem {
        ElemType::Bool => {
            Value::Bool(ArrayD::from_shape_vec(sh, b.iter().map(|&x| x != 0).collect()).map_err(bad)?)
        }
        ElemType::I32 => num!(i32, I32),
        ElemType::I64 => num!(i64, I64),
        ElemType::F32 => num!(f32, F32),
        ElemType::F64 => num!(f64, F64),
    })
}

use eqfuse_codegen::layout::scalar_bits;

fn scalar_from_bytes(elem: ElemType, b: &[u8]) -> Result<Scalar> {
    let v = bytes_value(elem, &[1], b)?;
    v.get_flat(0).ok_or_else(|| internal("an empty download"))
}

/// Formats a shape as `[3, 4]`.
fn fmt_shape<T: std::fmt::Display>(shape: &[T]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// The multi-index of row-major position `flat` in `shape`.
fn unflatten(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut ix = vec![0; shape.len()];
    for (slot, &d) in ix.iter_mut().zip(shape).rev() {
        if d > 0 {
            *slot = flat % d;
            flat /= d;
        }
    }
    ix
}

/// How many kernels `steps` hold, in [`Plan::kernels`] order (both branches of an `if`).
fn count_kernels(steps: &[Step]) -> usize {
    steps
        .iter()
        .map(|s| match s {
            Step::Kernel(_) => 1,
            Step::RowBlock { kernels, .. } | Step::SegmentBlock { kernels, .. } => kernels.len(),
            Step::If { then_steps, else_steps, .. } => count_kernels(then_steps) + count_kernels(else_steps),
            Step::Scalar { .. } | Step::Assert { .. } => 0,
        })
        .sum()
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
    r.steps(&plan.steps, 0)?;
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

    /// Reads the error record (when a kernel ran since it was last read): the first error
    /// a kernel recorded, as the interpreter reports it.
    fn check_errors(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        self.dirty = false;
        let bytes = self.gpu.download(&self.record, 0, REC_LEN * 8)?;
        let rec: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                i64::from_le_bytes(a)
            })
            .collect();
        if rec.first().copied().unwrap_or(0) == 0 {
            return Ok(());
        }
        Err(self.decode(&rec))
    }

    /// The error a record describes, at the failing instruction's source position (packed
    /// with the code, [`eqfuse_codegen::site::site_code`]) else its kernel's.
    fn decode(&self, rec: &[i64]) -> Error {
        let get = |i: usize| rec.get(i).copied().unwrap_or(0);
        let (code, site) = eqfuse_codegen::site::site_of(get(0));
        let site = site.map(|(line, col)| Span { start: 0, end: 0, line, col });
        let launch = usize::try_from(get(1)).ok().and_then(|k| self.launched.get(k));
        self.decode_here(code, rec).or_at(site).or_at(launch.and_then(|l| l.span))
    }

    fn decode_here(&self, code: i64, rec: &[i64]) -> Error {
        let get = |i: usize| rec.get(i).copied().unwrap_or(0);
        let (kid, what, elem, n) = (get(1), get(2), get(3), get(4));
        let ix: Vec<i64> = (0..(n.clamp(0, REC_IX as i64) as usize)).map(|k| get(5 + k)).collect();
        let launch = usize::try_from(kid).ok().and_then(|k| self.launched.get(k));
        let at = |msg: String| -> String {
            match (launch, usize::try_from(elem)) {
                (Some(l), Ok(e)) => {
                    format!("{msg}, in `{}` at element {}", l.kind, fmt_shape(&unflatten(&l.space, e)))
                }
                _ => msg,
            }
        };
        let shown = |ix: &[i64]| match ix {
            [i] => i.to_string(),
            _ => fmt_shape(ix),
        };
        let value = usize::try_from(what).ok();
        let shape_of = |v: Option<usize>| -> Vec<usize> {
            v.and_then(|v| self.vals.get(v))
                .and_then(|x| x.as_ref())
                .map(|x| x.shape.clone())
                .unwrap_or_default()
        };
        let name_of = |v: Option<usize>| v.map(|v| self.name(v)).unwrap_or_else(|| "?".into());
        match code {
            1 => {
                let shape = shape_of(value);
                let bounds = match shape.as_slice() {
                    [n] => format!("of length {n}"),
                    _ => format!("of shape {}", fmt_shape(&shape)),
                };
                let idx = match ix.as_slice() {
                    [i] => format!("index {i}"),
                    _ => format!("index {}", fmt_shape(&ix)),
                };
                Error::index(
                    Span::default(),
                    at(format!("{idx} out of bounds for `{}` {bounds}", name_of(value))),
                )
            }
            2 => {
                let shape = shape_of(value);
                Error::index(
                    Span::default(),
                    at(format!(
                        "`size`: dimension {} out of bounds for `{}` of rank {} (shape {})",
                        ix.first().copied().unwrap_or(0),
                        name_of(value),
                        shape.len(),
                        fmt_shape(&shape)
                    )),
                )
            }
            3 | 4 => {
                let (word, sym) = if code == 3 { ("division", "/") } else { ("remainder", "%") };
                let ty = if what == 32 { "i32" } else { "i64" };
                let x = ix.first().copied().unwrap_or(0);
                Error::div_zero(Span::default(), at(format!("integer {word} by zero: `{x} {sym} 0` on {ty}")))
            }
            5 => {
                let shape = shape_of(value);
                let from = match (launch, usize::try_from(elem)) {
                    (Some(l), Ok(e)) => fmt_shape(&unflatten(&l.space, e)),
                    _ => "?".into(),
                };
                Error::index(
                    Span::default(),
                    format!(
                        "permute: target {} out of bounds for `{}` of shape {} (from element {from} of the source)",
                        shown(&ix),
                        name_of(value),
                        fmt_shape(&shape)
                    ),
                )
            }
            _ => internal(format!("an unknown device error code {code}")),
        }
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

    /// Runs kernel `k`, number `index`; its errors at its position (a device error as it is).
    fn run_kernel(&mut self, k: &Kernel, index: usize) -> Result<()> {
        self.kernel(k, index).map_err(|e| {
            if e.code == eqfuse_ir::error::Code::Device {
                e
            } else {
                e.or_at(k.span)
            }
        })
    }

    /// Runs `steps`; `first` is the number of their first kernel in [`Plan::kernels`].
    fn steps(&mut self, steps: &[Step], first: usize) -> Result<()> {
        let mut index = first;
        for step in steps {
            match step {
                Step::Scalar { dst, body } => {
                    self.check_errors()?;
                    let s = host::call1(body, &[], &mut Env(self))?;
                    let elem = s.elem_type();
                    self.put(*dst, Val { elem, shape: Vec::new(), host: Some(s), dev: None })?;
                }
                Step::Assert { cond, code, message, shown, span } => {
                    self.check_errors()?;
                    match host::call1(cond, &[], &mut Env(self))? {
                        Scalar::Bool(true) => {}
                        Scalar::Bool(false) => {
                            let mut load = |v| self.host_scalar(v);
                            return Err(eqfuse_ir::plan::assert_error(
                                *code, message, shown, *span, &mut load,
                            ));
                        }
                        other => {
                            return Err(internal(format!(
                                "an assert condition that is {}",
                                other.elem_type()
                            )))
                        }
                    }
                }
                Step::Kernel(k) => {
                    self.run_kernel(k, index)?;
                    index += 1;
                }
                // one kernel, a block per row, where it can be; else the phases one after
                // the other
                Step::RowBlock { kernels, local } => {
                    if !self.row_block(kernels, local, index)? {
                        for (i, k) in kernels.iter().enumerate() {
                            self.run_kernel(k, index + i)?;
                        }
                    }
                    index += kernels.len();
                }
                // the phases one after the other (what it keeps per segment is written
                // whole): the GPU has no scan–scatter kernel yet
                Step::SegmentBlock { kernels, .. } => {
                    for (i, k) in kernels.iter().enumerate() {
                        self.run_kernel(k, index + i)?;
                    }
                    index += kernels.len();
                }
                Step::If { cond, then_steps, then_value, else_steps, else_value, dst } => {
                    let taken = match self.host_scalar(*cond)? {
                        Scalar::Bool(b) => b,
                        other => {
                            return Err(internal(format!("an `if` condition that is {}", other.elem_type())))
                        }
                    };
                    let n_then = count_kernels(then_steps);
                    if taken {
                        self.steps(then_steps, index)?;
                    } else {
                        self.steps(else_steps, index + n_then)?;
                    }
                    index += n_then + count_kernels(else_steps);
                    let v = if taken { *then_value } else { *else_value };
                    let val = self.val(v)?.clone();
                    self.put(*dst, val)?;
                }
            }
        }
        Ok(())
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

    /// The argument block of a launch.
    fn args(&mut self, code: &KernelCode, l: &LaunchVals<G::Buf>) -> Result<Vec<u64>> {
        let mut out = Vec::with_capacity(code.slots.len());
        for slot in &code.slots {
            out.push(match *slot {
                Slot::ErrRecord => self.ptr(&self.record),
                Slot::KernelId => l.kid as u64,
                Slot::Extent(k) => l.space.get(k).copied().unwrap_or(0) as u64,
                Slot::Total => l.total as u64,
                Slot::Rows => l.rows as u64,
                Slot::Narrow => {
                    let fits = |x: usize| x < (1usize << 32);
                    u64::from(l.space.iter().all(|&d| fits(d)) && fits(l.total) && fits(l.rows))
                }
                Slot::Array(v) => {
                    let b = self.device_buf(v)?;
                    self.ptr(&b)
                }
                Slot::Dim(v, k) => self.val(v)?.shape.get(k).copied().unwrap_or(0) as u64,
                Slot::HostScalar(v) => scalar_bits(self.host_scalar(v)?),
                Slot::Out(k) => match l.outs.get(k).and_then(|o| o.as_ref()) {
                    Some(b) => self.ptr(b),
                    None => 0,
                },
                Slot::Scratch(k) => match l.scratch.get(k) {
                    Some(b) => self.ptr(b),
                    None => return Err(internal("a scratch buffer out of range")),
                },
            });
        }
        Ok(out)
    }

    /// Launches `entry` of `module` on `grid` blocks with the argument block `args`.
    fn launch(&mut self, module: &G::Module, entry: &str, grid: u32, args: &mut [u64]) -> Result<()> {
        self.gpu.launch(module, entry, grid.max(1), self.opts.block(), args)?;
        self.dirty = true;
        Ok(())
    }

    /// Runs the phases `kernels` of a row block (the first numbered `first`) as one kernel,
    /// a block of threads per row ([`codegen::rowblock`]); `Ok(false)` when they must run
    /// one by one instead: rows shorter than a block, a phase that is not a row phase (or
    /// an outer one over one outer dimension), one that could fail, a read not in bounds,
    /// or `EQFUSE_NO_ROWBLOCK` set (for comparison).
    fn row_block(&mut self, kernels: &[Kernel], local: &[ValueId], first: usize) -> Result<bool> {
        if std::env::var_os("EQFUSE_NO_ROWBLOCK").is_some() {
            return Ok(false);
        }
        let Some(k0) = kernels.first() else { return Ok(false) };
        let (space, total) = self.space(k0)?;
        let r = space.len();
        let inner = space.last().copied().unwrap_or(0);
        if r < 2 || inner < self.opts.block() as usize {
            return Ok(false);
        }
        let outer = space[..r - 1].to_vec();
        let rows: usize = outer.iter().product();
        if rows == 0 {
            return Ok(false);
        }
        // each result's shape, before anything is allocated
        let mut shapes: Vec<(ValueId, Vec<usize>)> = Vec::new();
        for k in kernels {
            let (sp, _) = self.space(k)?;
            let row_phase = sp == space;
            if !(row_phase || (r == 2 && sp == outer)) {
                return Ok(false);
            }
            for lane in &k.lanes {
                let shape = match lane.op {
                    LaneOp::Generate => sp.clone(),
                    LaneOp::Reduce { .. } if row_phase => outer.clone(),
                    _ => return Ok(false),
                };
                shapes.push((lane.dst, shape));
            }
        }
        let gen = self.opts.gen();
        // (kernels are kept under their numbers; a row block under a number none has)
        let made = self.cached((usize::MAX - first, gen), || {
            codegen::rowblock::generate(self.plan, kernels, local, first, gen, &self.host)
        })?;
        let Some(loaded) = made else { return Ok(false) };
        let (code, module) = (&loaded.0, &loaded.1);
        let shape_of = |v: ValueId| -> Result<Vec<usize>> {
            match shapes.iter().find(|(d, _)| *d == v) {
                Some((_, s)) => Ok(s.clone()),
                None => Ok(self.val(v)?.shape.clone()),
            }
        };
        if !reads_fit(&code.in_space, &space, shape_of)? {
            return Ok(false);
        }
        // what the block keeps in shared memory gets no buffer of its own: nothing after
        // the block reads it (`local`), so its value keeps only its shape
        let kept = codegen::rowblock::kept(self.plan, kernels, local);
        let in_shared = codegen::rowblock::kept_fit(&kept, inner);
        for (dst, shape) in shapes {
            let elem = self.plan.values.get(dst).ok_or_else(|| internal(format!("no value v{dst}")))?.elem;
            let count: usize = shape.iter().product();
            let buf = if in_shared && kept.iter().any(|(v, _)| *v == dst) {
                self.alloc(8)?
            } else {
                self.check_alloc("row block", elem, count)?;
                self.alloc(count * elem.size_bytes())?
            };
            self.put(dst, Val { elem, shape, host: None, dev: Some(Arc::new(buf)) })?;
        }
        let kid = self.launched.len();
        self.launched.push(Launched { kind: "row block", space: space.clone(), span: k0.span });
        let l = LaunchVals { kid, space, total, rows, outs: Vec::new(), scratch: Vec::new() };
        let mut a = self.args(code, &l)?;
        let Skeleton::RowBlock { entry } = &code.skeleton else {
            return Err(internal("a row block generated with another skeleton"));
        };
        let sms = self.gpu.sms().max(1) as usize;
        self.launch(module, entry, grid(rows, 1, sms * 16), &mut a)?;
        Ok(true)
    }

    /// Runs kernel `k`, a contraction, as GEMM calls; `Ok(false)` when it must run as its
    /// kernel instead: GEMM turned off, a read out of bounds (the kernel reports it), a
    /// layout cuBLAS cannot take as it is, or no BLAS library.
    fn contract(&mut self, k: &Kernel, c: &Contraction) -> Result<bool> {
        if !self.opts.gemm {
            return Ok(false);
        }
        let (space, _) = self.space(k)?;
        let (a, b) = (self.val(c.a.array)?.clone(), self.val(c.b.array)?.clone());
        let (oa, ob) = c.offsets(|v| self.host_scalar(v))?;
        let Some(layout) = c.layout(&space, (&a.shape, &oa), (&b.shape, &ob)) else { return Ok(false) };
        let dst = k.lanes.first().ok_or_else(|| internal("a contraction with no lane"))?.dst;
        let elem = self.plan.values.get(dst).ok_or_else(|| internal(format!("no value v{dst}")))?.elem;
        let shape = space[..space.len().saturating_sub(1)].to_vec();
        let count: usize = shape.iter().product();
        self.check_alloc(k.kind.as_str(), elem, count)?;
        let bytes = count * elem.size_bytes();
        let alpha = c.alpha(elem, |v| self.host_scalar(v))?;
        let Some(calls) = blas::calls(&layout, alpha) else { return Ok(false) };
        let out = if count == 0 || layout.k == 0 {
            // no products: every element is the neutral element, +0.0
            self.alloc_zeroed(bytes)?
        } else {
            let (x, y) = (self.device_buf(c.b.array)?, self.device_buf(c.a.array)?);
            let mut out = self.alloc(bytes)?;
            for g in &calls {
                // the library reads and writes no element outside the three buffers
                let fits =
                    g.needs().is_some_and(|(nx, ny, nc)| nx <= b.count() && ny <= a.count() && nc <= count);
                if !fits {
                    return Err(internal(format!("a GEMM call outside its operands: {g:?}")));
                }
                if !self.gpu.gemm(g, &x, &y, &mut out)? {
                    return Ok(false);
                }
            }
            out
        };
        self.put(dst, Val { elem, shape, host: None, dev: Some(Arc::new(out)) })?;
        Ok(true)
    }

    /// Runs kernel number `index` (in [`Plan::kernels`] order).
    fn kernel(&mut self, k: &Kernel, index: usize) -> Result<()> {
        if let Some(c) = &k.contraction {
            if self.contract(k, c)? {
                return Ok(());
            }
        }
        let (space, total) = self.space(k)?;
        let mut loaded = self.code(k, index, self.opts.gen())?;
        if !reads_fit(&loaded.0.in_space, &space, |v| Ok::<_, Error>(self.val(v)?.shape.clone()))? {
            // a read at an index of the space may fall outside its array: every read checked
            loaded = self.code(k, index, codegen::GenOptions { unchecked: false, ..self.opts.gen() })?;
        }
        let (code, module) = (&loaded.0, &loaded.1);
        let kid = self.launched.len();
        self.launched.push(Launched { kind: k.kind.as_str(), space: space.clone(), span: k.span });
        let rank = space.len();
        let outer = space[..rank.saturating_sub(1)].to_vec();
        let inner = space.last().copied().unwrap_or(0);
        let rows: usize = outer.iter().product();
        let b = self.opts.block() as usize;
        let sms = self.gpu.sms().max(1) as usize;
        let mut l =
            LaunchVals { kid, space: space.clone(), total, rows, outs: Vec::new(), scratch: Vec::new() };
        // Outputs: generate lanes and scans have the space's shape, reductions the outer
        // shape, a permute its destination's, a filter is sized after counting.
        let mut vals = Vec::with_capacity(k.lanes.len());
        match &code.skeleton {
            Skeleton::Filter { .. } => {}
            Skeleton::Permute { dest: PermuteDest::Array(dest), .. } => {
                let d = self.val(*dest)?.clone();
                let mut v = self.new_output(k, 0, d.shape.clone())?;
                if v.elem != d.elem {
                    return Err(internal("a permute whose destination has another type"));
                }
                let bytes = d.bytes();
                if bytes > 0 {
                    let src = self.device_buf(*dest)?;
                    let dst = v.dev.take().ok_or_else(|| internal("no output buffer"))?;
                    let mut dst = Arc::try_unwrap(dst).map_err(|_| internal("a shared output buffer"))?;
                    self.gpu.copy(&src, &mut dst, bytes)?;
                    v.dev = Some(Arc::new(dst));
                }
                vals.push(v);
            }
            Skeleton::Permute { dest: PermuteDest::Fill { shape, value, span }, .. } => {
                // the fill is made here, not by a kernel of its own: zeroed memory, or the
                // value's bytes uploaded
                let mut loaded = HashMap::new();
                for a in shape {
                    if let Arg::Value(v) = a {
                        loaded.insert(*v, self.host_scalar(*v)?);
                    }
                }
                let (shape, n) = PermuteDest::fill_shape(
                    shape,
                    *span,
                    |v| loaded.get(&v).copied().ok_or_else(|| internal("an extent not loaded")),
                    |v| self.name(v),
                )?;
                let dst = k.lanes.first().ok_or_else(|| internal("a permute without a lane"))?.dst;
                let elem =
                    self.plan.values.get(dst).ok_or_else(|| internal(format!("no value v{dst}")))?.elem;
                if elem != value.elem_type() {
                    return Err(internal("a permute whose fill has another type"));
                }
                self.check_alloc(k.kind.as_str(), elem, n)?;
                let one = value_bytes(&Value::scalar(*value));
                let bytes = n * one.len();
                let buf = if one.iter().all(|&b| b == 0) {
                    self.alloc_zeroed(bytes)?
                } else {
                    let mut b = self.alloc(bytes)?;
                    if bytes > 0 {
                        self.gpu.upload(&mut b, &one.repeat(n))?;
                    }
                    b
                };
                vals.push(Val { elem, shape, host: None, dev: Some(Arc::new(buf)) });
            }
            _ => {
                for (i, lane) in k.lanes.iter().enumerate() {
                    let shape = match lane.op {
                        LaneOp::Reduce { .. } => outer.clone(),
                        _ => space.clone(),
                    };
                    vals.push(self.new_output(k, i, shape)?);
                }
            }
        }
        l.outs = vals.iter().map(|v| v.dev.clone()).collect();
        match &code.skeleton {
            Skeleton::Map { entry } | Skeleton::Permute { entry, .. } => {
                if total > 0 {
                    let mut a = self.args(code, &l)?;
                    self.launch(module, entry, grid(total, b, sms * 16), &mut a)?;
                }
            }
            Skeleton::FullReduce { entry } => {
                let g = grid(total, b, (sms * 8).min(4096));
                l.scratch = self.scratch(code, g)?;
                let mut a = self.args(code, &l)?;
                self.launch(module, entry, g, &mut a)?;
            }
            Skeleton::RowReduce { warp, block } => {
                if rows > 0 {
                    let (entry, g) = if inner <= 1024 {
                        (warp, grid(rows, b / 32, sms * 16))
                    } else {
                        (block, grid(rows, 1, sms * 16))
                    };
                    let mut a = self.args(code, &l)?;
                    self.launch(module, entry, g, &mut a)?;
                }
            }
            Skeleton::Scan1d { entry, tile } => {
                if total > 0 {
                    let g = tiles(total, *tile)?;
                    l.scratch = self.scratch(code, g)?;
                    let mut a = self.args(code, &l)?;
                    self.launch(module, entry, g, &mut a)?;
                }
            }
            Skeleton::ScanRows { entry } => {
                if total > 0 {
                    let mut a = self.args(code, &l)?;
                    self.launch(module, entry, grid(rows, 1, sms * 16), &mut a)?;
                }
            }
            Skeleton::Filter { entry, tile } => {
                let lane = k.lanes.first().ok_or_else(|| internal("a filter with no lane"))?;
                let elem = self.plan.values.get(lane.dst).ok_or_else(|| internal("no filter output"))?.elem;
                self.check_alloc(k.kind.as_str(), elem, total)?;
                if total == 0 {
                    vals.push(self.new_output(k, 0, vec![0])?);
                } else {
                    // room for every element; the pass writes the kept ones and their count,
                    // read once, after it
                    let mut out = self.new_output(k, 0, vec![total])?;
                    let g = tiles(total, *tile)?;
                    l.scratch = self.scratch(code, g)?;
                    l.outs = vec![out.dev.clone()];
                    let mut a = self.args(code, &l)?;
                    self.launch(module, entry, g, &mut a)?;
                    let kept_buf = l.scratch.get(4).ok_or_else(|| internal("no filter count"))?.clone();
                    let bytes = self.download(&kept_buf, 0, 8)?;
                    let kept = match scalar_from_bytes(ElemType::I64, &bytes)? {
                        Scalar::I64(c) => {
                            usize::try_from(c).map_err(|_| internal("a negative filter count"))?
                        }
                        _ => 0,
                    };
                    if kept > total {
                        return Err(internal("a filter that kept more elements than it saw"));
                    }
                    out.shape = vec![kept];
                    vals.push(out);
                }
            }
            Skeleton::RowBlock { .. } => return Err(internal("a row block's code for one kernel")),
        }
        for (lane, v) in k.lanes.iter().zip(vals) {
            self.put(lane.dst, v)?;
        }
        Ok(())
    }

    /// Kernel `index`'s code generated with `gen`, and its module: from `codes` when an
    /// earlier run of the plan made them, else made (and kept there).
    fn code(
        &self,
        k: &Kernel,
        index: usize,
        gen: codegen::GenOptions,
    ) -> Result<Arc<(KernelCode, G::Module)>> {
        let made =
            self.cached((index, gen), || codegen::generate(self.plan, k, index, gen, &self.host).map(Some))?;
        made.ok_or_else(|| internal("a kernel generated as nothing"))
    }

    /// The code under `key` and its module: from `codes` when an earlier run of the plan
    /// made them, else made by `make` (`None`: there is no such code) and kept there.
    fn cached(
        &self,
        key: (usize, codegen::GenOptions),
        make: impl FnOnce() -> std::result::Result<Option<KernelCode>, String>,
    ) -> Result<Option<Made<G::Module>>> {
        if let Some(hit) = self.codes.and_then(|c| c.lock().ok()?.get(&key).cloned()) {
            return Ok(Some(hit));
        }
        let Some(code) = make().map_err(internal)? else { return Ok(None) };
        let module = self.gpu.module(&code, self.opts)?;
        let made = Arc::new((code, module));
        if let Some(mut c) = self.codes.and_then(|c| c.lock().ok()) {
            c.insert(key, made.clone());
        }
        Ok(Some(made))
    }

    /// The kernel's scratch buffers for a grid of `g` blocks (zeroed).
    fn scratch(&self, code: &KernelCode, g: u32) -> Result<Vec<Arc<G::Buf>>> {
        code.scratch
            .iter()
            .map(|s| self.alloc_zeroed(s.fixed + s.per_block * g as usize).map(Arc::new))
            .collect()
    }
}

/// What a launch's argument block is built from.
struct LaunchVals<B> {
    kid: usize,
    space: Vec<usize>,
    total: usize,
    rows: usize,
    outs: Vec<Option<Arc<B>>>,
    scratch: Vec<Arc<B>>,
}

/// The host steps' view of the run's values.
struct Env<'r, 'p, G: Gpu>(&'r mut Run<'p, G>);

impl<G: Gpu> host::Env for Env<'_, '_, G> {
    fn load(&mut self, v: ValueId) -> Result<Scalar> {
        self.0.host_scalar(v)
    }

    fn read(&mut self, v: ValueId, ix: &[i64]) -> Result<Scalar> {
        let x = self.0.val(v)?.clone();
        let name = self.0.name(v);
        if ix.len() != x.shape.len() {
            return Err(internal(format!(
                "`{name}` of rank {} read with {} indices",
                x.shape.len(),
                ix.len()
            )));
        }
        let mut flat = 0usize;
        let mut ok = true;
        for (&d, &i) in x.shape.iter().zip(ix) {
            match usize::try_from(i).ok().filter(|&i| i < d) {
                Some(i) => flat = flat * d + i,
                None => ok = false,
            }
        }
        if !ok {
            let shown = match ix {
                [i] => format!("index {i}"),
                _ => format!("index {}", fmt_shape(ix)),
            };
            let bounds = match x.shape.as_slice() {
                [n] => format!("of length {n}"),
                _ => format!("of shape {}", fmt_shape(&x.shape)),
            };
            return Err(Error::index(
                Span::default(),
                format!("{shown} out of bounds for `{name}` {bounds}"),
            ));
        }
        if x.shape.is_empty() {
            return self.0.host_scalar(v);
        }
        let buf = x.dev.ok_or_else(|| internal(format!("`{name}` has no data")))?;
        let size = x.elem.size_bytes();
        let b = self.0.download(&buf, flat * size, size)?;
        scalar_from_bytes(x.elem, &b)
    }

    fn dim(&mut self, v: ValueId, axis: i64) -> Result<Scalar> {
        let x = self.0.val(v)?;
        match usize::try_from(axis).ok().and_then(|k| x.shape.get(k)) {
            Some(&d) => {
                Ok(Scalar::I64(i64::try_from(d).map_err(|_| Error::limit("a dimension overflows i64"))?))
            }
            None => Err(Error::index(
                Span::default(),
                format!(
                    "`size`: dimension {axis} out of bounds for `{}` of rank {} (shape {})",
                    self.0.name(v),
                    x.shape.len(),
                    fmt_shape(&x.shape)
                ),
            )),
        }
    }
}
