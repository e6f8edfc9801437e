//! A row block as one kernel, a block of threads per row ([`codegen::rowblock`]), where its
//! phases allow it.

use super::kernel::LaunchVals;
use super::{grid, internal, CodeKey, Gpu, Launched, Run, Val};
use eqfuse_codegen::cuda::{self as codegen, Skeleton};
use eqfuse_codegen::scalar::reads_fit;
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::exec::Phases;
use eqfuse_ir::plan::{LaneOp, ValueId};
use std::sync::Arc;

impl<G: Gpu> Run<'_, G> {
    /// Runs the phases of a row block as one kernel,
    /// a block of threads per row ([`codegen::rowblock`]); `Ok(false)` when they must run
    /// one by one instead: rows shorter than a block, a phase that is not a row phase (or
    /// an outer one over one outer dimension), one that could fail, a read not in bounds,
    /// or row blocks switched off ([`crate::CudaOptions::row_blocks`], for comparison).
    pub(super) fn row_block_kernel(&mut self, phases: Phases<'_>) -> Result<bool> {
        let Phases { first, kernels, local } = phases;
        if !self.opts.row_blocks {
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
                    // a component of the reduction over a group before it
                    LaneOp::Part if row_phase => outer.clone(),
                    _ => return Ok(false),
                };
                shapes.push((lane.dst, shape));
            }
        }
        let gen = self.opts.gen();
        let made = self.cached((CodeKey::RowBlock(first), gen), || {
            codegen::rowblock::generate(self.plan, kernels, local, first.index(), gen, &self.host)
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
        self.launch_entry(module, entry, grid(rows, 1, sms * 16), &mut a)?;
        Ok(true)
    }
}
