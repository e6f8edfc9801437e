//! One kernel's launch: its code (generated once per plan and kept), its outputs allocated
//! by skeleton, its argument block, and the launch of its skeleton's entry points.

use super::{grid, internal, scalar_from_bytes, tiles, value_bytes, CodeKey, Gpu, Launched, Made, Run, Val};
use eqfuse_codegen::cuda::{self as codegen, KernelCode, Skeleton, Slot};
use eqfuse_codegen::layout::scalar_bits;
use eqfuse_codegen::scalar::reads_fit;
use eqfuse_ir::error::{Error, Result, Span};
use eqfuse_ir::plan::{Arg, Kernel, KernelId, LaneOp, PermuteDest};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::{Scalar, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// What a launch's argument block is built from.
pub(super) struct LaunchVals<B> {
    /// The launch's number in the run ([`Run::launched`]), for the error record.
    pub kid: usize,
    /// The kernel's space.
    pub space: Vec<usize>,
    /// Its point count.
    pub total: usize,
    /// Its row count (the product of the outer dimensions).
    pub rows: usize,
    /// The lanes' output buffers (`Slot::Out`).
    pub outs: Vec<Option<Arc<B>>>,
    /// The skeleton's scratch buffers (`Slot::Scratch`).
    pub scratch: Vec<Arc<B>>,
}

/// The shape of a kernel's space: the space, its outer dimensions (all but the innermost),
/// its innermost extent, its point and row counts.
struct Space {
    space: Vec<usize>,
    outer: Vec<usize>,
    inner: usize,
    total: usize,
    rows: usize,
}

impl<G: Gpu> Run<'_, G> {
    /// Runs kernel `k`, number `id`: as GEMM calls where it is a contraction that can, else
    /// as its generated kernel.
    pub(super) fn kernel(&mut self, id: KernelId, k: &Kernel) -> Result<()> {
        if let Some((dst, view)) = self.view(k) {
            return self.put(dst, view);
        }
        if let Some(c) = &k.contraction {
            if self.contract(k, c)? {
                return Ok(());
            }
        }
        let (space, total) = self.space(k)?;
        let mut loaded = self.code(id, k, self.opts.gen())?;
        if !reads_fit(&loaded.0.in_space, &space, |v| Ok::<_, Error>(self.val(v)?.shape.clone()))? {
            // a read at an index of the space may fall outside its array: every read checked
            loaded = self.code(id, k, codegen::GenOptions { unchecked: false, ..self.opts.gen() })?;
        }
        let (code, module) = (&loaded.0, &loaded.1);
        let kid = self.launched.len();
        self.launched.push(Launched { kind: k.kind.as_str(), space: space.clone(), span: k.span });
        let outer = space[..space.len().saturating_sub(1)].to_vec();
        let inner = space.last().copied().unwrap_or(0);
        let rows: usize = outer.iter().product();
        let sp = Space { space: space.clone(), outer, inner, total, rows };
        let mut l = LaunchVals { kid, space, total, rows, outs: Vec::new(), scratch: Vec::new() };
        let mut vals = self.outputs(k, code, &sp)?;
        l.outs = vals.iter().map(|v| v.dev.clone()).collect();
        if let Some(out) = self.dispatch(k, code, module, &sp, &mut l)? {
            vals.push(out);
        }
        for (lane, v) in k.lanes.iter().zip(vals) {
            self.put(lane.dst, v)?;
        }
        Ok(())
    }

    /// Kernel `k`'s outputs before its launch: generate lanes and scans have the space's
    /// shape, reductions the outer shape, a permute its destination's; a filter's is sized
    /// after counting ([`Run::filter`]), so none here.
    fn outputs(&mut self, k: &Kernel, code: &KernelCode, sp: &Space) -> Result<Vec<Val<G::Buf>>> {
        let mut vals = Vec::with_capacity(k.lanes.len());
        match &code.skeleton {
            Skeleton::Filter { .. } => {}
            Skeleton::Permute { dest: PermuteDest::Array(dest), .. } => vals.push(self.copy_dest(k, *dest)?),
            Skeleton::Permute { dest: PermuteDest::Fill { shape, value, span }, .. } => {
                vals.push(self.fill_dest(k, shape, *value, *span)?)
            }
            _ => {
                // a part lane has its head's shape (a reduction's or a scan's over a group)
                let mut reducing = false;
                for (i, lane) in k.lanes.iter().enumerate() {
                    reducing = match lane.op {
                        LaneOp::Reduce { .. } => true,
                        LaneOp::Part => reducing,
                        _ => false,
                    };
                    let shape = if reducing { sp.outer.clone() } else { sp.space.clone() };
                    vals.push(self.new_output(k, i, shape)?);
                }
            }
        }
        Ok(vals)
    }

    /// Kernel `k`'s result as a view of the value it reshapes ([`Kernel::view_of`]): the
    /// same device buffer in the space's shape. `None` where the kernel must run: not a
    /// reshape, or a space that cannot hold the value's elements (the kernel reports it).
    fn view(&mut self, k: &Kernel) -> Option<(eqfuse_ir::plan::ValueId, Val<G::Buf>)> {
        let (src, dst) = k.view_lane()?;
        let src = self.val(src).ok()?.clone();
        let (shape, total) = self.space(k).ok()?;
        let same = src.dev.is_some()
            && src.shape.iter().product::<usize>() == total
            && self.plan.values.get(dst)?.elem == src.elem;
        same.then(|| (dst, Val { shape, ..src }))
    }

    /// A permute's result starting as a copy of the array `dest`.
    fn copy_dest(&mut self, k: &Kernel, dest: eqfuse_ir::plan::ValueId) -> Result<Val<G::Buf>> {
        let d = self.val(dest)?.clone();
        let mut v = self.new_output(k, 0, d.shape.clone())?;
        if v.elem != d.elem {
            return Err(internal("a permute whose destination has another type"));
        }
        let bytes = d.bytes();
        if bytes > 0 {
            let src = self.device_buf(dest)?;
            let dst = v.dev.take().ok_or_else(|| internal("no output buffer"))?;
            let mut dst = Arc::try_unwrap(dst).map_err(|_| internal("a shared output buffer"))?;
            self.gpu.copy(&src, &mut dst, bytes)?;
            v.dev = Some(Arc::new(dst));
        }
        Ok(v)
    }

    /// A permute's result starting as `fill shape value`, made here, not by a kernel of its
    /// own: zeroed memory, or the value's bytes uploaded.
    fn fill_dest(
        &mut self,
        k: &Kernel,
        shape: &[Arg],
        value: Scalar,
        span: Option<Span>,
    ) -> Result<Val<G::Buf>> {
        let mut loaded = HashMap::new();
        for a in shape {
            if let Arg::Value(v) = a {
                loaded.insert(*v, self.host_scalar(*v)?);
            }
        }
        let (shape, n) = PermuteDest::fill_shape(
            shape,
            span,
            |v| loaded.get(&v).copied().ok_or_else(|| internal("an extent not loaded")),
            |v| self.name(v),
        )?;
        let dst = k.lanes.first().ok_or_else(|| internal("a permute without a lane"))?.dst;
        let elem = self.plan.values.get(dst).ok_or_else(|| internal(format!("no value v{dst}")))?.elem;
        if elem != value.elem_type() {
            return Err(internal("a permute whose fill has another type"));
        }
        self.check_alloc(k.kind.as_str(), elem, n)?;
        let one = value_bytes(&Value::scalar(value));
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
        Ok(Val { elem, shape, host: None, dev: Some(Arc::new(buf)) })
    }

    /// Launches `code`'s entry points for its skeleton; a filter's output, made by its pass.
    fn dispatch(
        &mut self,
        k: &Kernel,
        code: &KernelCode,
        module: &G::Module,
        sp: &Space,
        l: &mut LaunchVals<G::Buf>,
    ) -> Result<Option<Val<G::Buf>>> {
        let (total, rows) = (sp.total, sp.rows);
        let b = self.opts.block() as usize;
        let sms = self.gpu.sms().max(1) as usize;
        match &code.skeleton {
            Skeleton::Map { entry } | Skeleton::Permute { entry, .. } => {
                if total > 0 {
                    let mut a = self.args(code, l)?;
                    self.launch_entry(module, entry, grid(total, b, sms * 16), &mut a)?;
                }
            }
            Skeleton::FullReduce { entry } => {
                let g = grid(total, b, (sms * 8).min(4096));
                l.scratch = self.scratch(code, g)?;
                let mut a = self.args(code, l)?;
                self.launch_entry(module, entry, g, &mut a)?;
            }
            Skeleton::RowReduce { warp, block } => {
                if rows > 0 {
                    let (entry, g) = if sp.inner <= 1024 {
                        (warp, grid(rows, b / 32, sms * 16))
                    } else {
                        (block, grid(rows, 1, sms * 16))
                    };
                    let mut a = self.args(code, l)?;
                    self.launch_entry(module, entry, g, &mut a)?;
                }
            }
            Skeleton::Scan1d { entry, tile } => {
                if total > 0 {
                    let g = tiles(total, *tile)?;
                    l.scratch = self.scratch(code, g)?;
                    let mut a = self.args(code, l)?;
                    self.launch_entry(module, entry, g, &mut a)?;
                }
            }
            Skeleton::ScanRows { entry } => {
                if total > 0 {
                    let mut a = self.args(code, l)?;
                    self.launch_entry(module, entry, grid(rows, 1, sms * 16), &mut a)?;
                }
            }
            Skeleton::Filter { entry, tile } => {
                return self.filter(k, code, module, entry, *tile, l).map(Some)
            }
            Skeleton::RowBlock { .. } => return Err(internal("a row block's code for one kernel")),
        }
        Ok(None)
    }

    /// A filter's pass: room for every element; the pass writes the kept ones and their
    /// count, read once, after it. Its output, of the kept elements.
    fn filter(
        &mut self,
        k: &Kernel,
        code: &KernelCode,
        module: &G::Module,
        entry: &str,
        tile: usize,
        l: &mut LaunchVals<G::Buf>,
    ) -> Result<Val<G::Buf>> {
        let total = l.total;
        let lane = k.lanes.first().ok_or_else(|| internal("a filter with no lane"))?;
        let elem = self.plan.values.get(lane.dst).ok_or_else(|| internal("no filter output"))?.elem;
        self.check_alloc(k.kind.as_str(), elem, total)?;
        if total == 0 {
            return self.new_output(k, 0, vec![0]);
        }
        let mut out = self.new_output(k, 0, vec![total])?;
        let g = tiles(total, tile)?;
        l.scratch = self.scratch(code, g)?;
        l.outs = vec![out.dev.clone()];
        let mut a = self.args(code, l)?;
        self.launch_entry(module, entry, g, &mut a)?;
        let kept_buf = l.scratch.get(4).ok_or_else(|| internal("no filter count"))?.clone();
        let bytes = self.download(&kept_buf, 0, 8)?;
        let kept = match scalar_from_bytes(ElemType::I64, &bytes)? {
            Scalar::I64(c) => usize::try_from(c).map_err(|_| internal("a negative filter count"))?,
            _ => 0,
        };
        if kept > total {
            return Err(internal("a filter that kept more elements than it saw"));
        }
        out.shape = vec![kept];
        Ok(out)
    }

    /// The argument block of a launch.
    pub(super) fn args(&mut self, code: &KernelCode, l: &LaunchVals<G::Buf>) -> Result<Vec<u64>> {
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
    pub(super) fn launch_entry(
        &mut self,
        module: &G::Module,
        entry: &str,
        grid: u32,
        args: &mut [u64],
    ) -> Result<()> {
        self.gpu.launch(module, entry, grid.max(1), self.opts.block(), args)?;
        self.dirty = true;
        Ok(())
    }

    /// Kernel `id`'s code generated with `gen`, and its module: from `codes` when an
    /// earlier run of the plan made them, else made (and kept there).
    fn code(&self, id: KernelId, k: &Kernel, gen: codegen::GenOptions) -> Result<Made<G::Module>> {
        let index = id.index();
        let made = self.cached((CodeKey::Kernel(id), gen), || {
            codegen::generate(self.plan, k, index, gen, &self.host).map(Some)
        })?;
        made.ok_or_else(|| internal("a kernel generated as nothing"))
    }

    /// The code under `key` and its module: from `codes` when an earlier run of the plan
    /// made them, else made by `make` (`None`: there is no such code) and kept there.
    pub(super) fn cached(
        &self,
        key: (CodeKey, codegen::GenOptions),
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
