//! The plan's steps, in order, through the step walker ([`eqfuse_ir::plan::exec`]): the CPU
//! executor is an [`Executor`] whose kernel runs as GEMM calls (a contraction), as native
//! code ([`crate::native`]), else on the VM ([`crate::kernel`]); a row block runs block by
//! block, and a scan block segment by segment, where its phases are native code, else
//! kernel after kernel. The cancel flag is polled before every step.

use crate::internal;
use crate::kernel;
use crate::native::Prepared;
use crate::store::{host, scalar_buf, to_value, Buf, Results, Store, StoreRef};
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::exec::{run_steps, Executor, KernelId, Phases};
use eqfuse_ir::plan::{Func, Kernel, Plan, ValueId};
use eqfuse_ir::value::{AsValueView, Scalar, Value};
use indexmap::IndexMap;
use std::sync::Arc;

/// How a plan runs: the VM's settings and the plan compiled to native code, when it could
/// be ([`crate::RunOptions::codegen`]).
pub(crate) struct Ctx {
    pub vm: kernel::Ctx,
    pub native: Option<Arc<Prepared>>,
    /// [`crate::RunOptions::row_blocks`].
    pub row_blocks: bool,
    /// [`crate::RunOptions::segment_blocks`].
    pub segment_blocks: bool,
}

/// Runs the whole plan (on the calling thread, which is a worker of the pool).
pub(crate) fn run_plan<V: AsValueView>(
    plan: &Plan,
    inputs: &IndexMap<String, V>,
    sizes: &IndexMap<String, i64>,
    ctx: &Ctx,
) -> Result<IndexMap<String, Value>> {
    let mut run = Cpu { store: Store::new(plan, inputs, sizes)?, ctx };
    run_steps(plan, &mut run)?;
    let store = run.store;
    let mut bufs = Vec::with_capacity(plan.outputs.len());
    for (name, id) in &plan.outputs {
        bufs.push((name.clone(), Arc::clone(store.get_arc(*id)?)));
    }
    drop(store);
    let mut out = IndexMap::new();
    for (name, buf) in bufs {
        let buf = Arc::try_unwrap(buf)
            .unwrap_or_else(|shared| Buf { shape: shared.shape.clone(), data: Arc::clone(&shared.data) });
        out.insert(name, to_value(buf)?);
    }
    Ok(out)
}

/// The CPU executor over one run's values.
struct Cpu<'s, 'a> {
    store: Store<'a>,
    ctx: &'s Ctx,
}

impl Executor for Cpu<'_, '_> {
    /// A cancelled run stops between steps (and inside a kernel between its blocks).
    fn before_step(&mut self) -> Result<()> {
        self.ctx.vm.cancel.check()
    }

    fn launch(&mut self, id: KernelId, k: &Kernel) -> Result<()> {
        kernel_step(&mut self.store, id, k, self.ctx)
    }

    fn row_block(&mut self, phases: Phases<'_>) -> Result<()> {
        self.block(phases, false)
    }

    fn segment_block(&mut self, phases: Phases<'_>) -> Result<()> {
        self.block(phases, true)
    }

    fn host(&mut self, f: &Func) -> Result<Scalar> {
        host(&self.store, f)
    }

    fn load(&mut self, v: ValueId) -> Result<Scalar> {
        self.store.load(v)
    }

    fn put_scalar(&mut self, dst: ValueId, s: Scalar) -> Result<()> {
        self.store.put(dst, Arc::new(scalar_buf(s)))
    }

    fn alias(&mut self, dst: ValueId, src: ValueId) -> Result<()> {
        let buf = Arc::clone(self.store.get_arc(src)?);
        self.store.put(dst, buf)
    }

    fn shape(&mut self, v: ValueId) -> Result<Vec<usize>> {
        Ok(self.store.get(v)?.shape.clone())
    }

    fn forget(&mut self, v: ValueId) -> Result<()> {
        self.store.forget(v);
        Ok(())
    }

    fn rebind(&mut self, dst: &[ValueId], src: &[ValueId], spares: bool) -> Result<()> {
        self.store.rebind(dst, src, spares)
    }
}

impl Cpu<'_, '_> {
    /// Runs a row block (`segment`: a segment block) block by block (segment by segment)
    /// where its phases are native code, else one after the other.
    fn block(&mut self, phases: Phases<'_>, segment: bool) -> Result<()> {
        let (store, ctx) = (&mut self.store, self.ctx);
        let Phases { kernels, local, .. } = phases;
        let blocked = if segment { ctx.segment_blocks } else { ctx.row_blocks };
        let done = match (&ctx.native, kernels.first()) {
            (Some(p), Some(k0)) if blocked => {
                let (max, cancel) = (ctx.vm.max_bytes, &ctx.vm.cancel);
                let r = if segment {
                    crate::native::run_segment_block(p, store, phases, max, ctx.vm.block, cancel)
                } else {
                    crate::native::run_row_block(p, store, phases, max, cancel)
                };
                r.map_err(|e| e.or_at(k0.span))?
            }
            _ => None,
        };
        match done {
            Some(results) => {
                for ((id, k), r) in phases.iter().zip(results) {
                    put_results(store, id, k, r, local)?;
                }
            }
            None => {
                for (id, k) in phases.iter() {
                    ctx.vm.cancel.check()?;
                    kernel_step(store, id, k, ctx)?;
                }
            }
        }
        Ok(())
    }
}

/// Runs kernel `k`, number `id`: as GEMM calls (a contraction), as native code, else on the
/// VM.
fn kernel_step(store: &mut Store<'_>, id: KernelId, k: &Kernel, ctx: &Ctx) -> Result<()> {
    if let Some(view) = view(store, k) {
        let dst = k.lanes.first().map(|l| l.dst).ok_or_else(|| internal(format!("kernel {id}: no lane")))?;
        return store.put(dst, Arc::new(view));
    }
    let gemm = match &k.contraction {
        Some(c) => crate::gemm::run(store, k, c, ctx.vm.threads, ctx.vm.max_bytes)
            .map_err(|e| e.or_at(k.span))?
            .map(|r| vec![r]),
        None => None,
    };
    let done = match (gemm, &ctx.native) {
        (Some(r), _) => Some(r),
        (None, Some(p)) => {
            crate::native::run_kernel(p, store, id, k, ctx.vm.max_bytes, ctx.vm.block, &ctx.vm.cancel)
                .map_err(|e| e.or_at(k.span))?
        }
        (None, None) => None,
    };
    let results = match done {
        Some(r) => r,
        None => {
            // a native launch that was cancelled gave up: the VM does not start it again
            ctx.vm.cancel.check()?;
            kernel::run(&StoreRef(store), k, id.index(), &ctx.vm).map_err(|e| e.or_at(k.span))?
        }
    };
    put_results(store, id, k, results, &[])
}

/// Kernel `k`'s result as a view of the value it reshapes ([`Kernel::view_of`]): a buffer of
/// the space's shape over that value's elements. `None` where the kernel must run: not a
/// reshape, or a space that cannot hold the value's elements (the kernel reports it).
fn view<'a>(store: &Store<'a>, k: &Kernel) -> Option<Buf<'a>> {
    let (src, dst) = k.view_lane()?;
    let src = store.get(src).ok()?;
    let (shape, total) = k.shape(|v| store.load(v), |v| store.name(v)).ok()?;
    let same = total == src.data.len() && store.elem(dst).ok()? == src.data.ty();
    same.then(|| Buf { shape, data: Arc::clone(&src.data) })
}

/// Puts kernel `k`'s results in the store, but for those in `kept` (a row block kept them
/// per block: nothing after it reads them).
fn put_results(
    store: &mut Store<'_>,
    id: KernelId,
    k: &Kernel,
    results: Results,
    kept: &[ValueId],
) -> Result<()> {
    if results.len() != k.lanes.len() {
        return Err(internal(format!("kernel {id}: {} results for {} lanes", results.len(), k.lanes.len())));
    }
    for (lane, (shape, col)) in k.lanes.iter().zip(results).filter(|(l, _)| !kept.contains(&l.dst)) {
        store.put(lane.dst, Arc::new(Buf::new(shape, col.into_data())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{run, Codegen, RunOptions};
    use eqfuse_ir::plan::fixtures::malformed_else;
    use eqfuse_ir::value::Value;
    use indexmap::IndexMap;

    #[test]
    fn a_kernel_of_an_else_branch_is_named_as_explain_names_it() {
        let plan = malformed_else();
        let inputs: IndexMap<String, Value> = IndexMap::new();
        for codegen in [Codegen::Vm, Codegen::C] {
            let opts = RunOptions { codegen, cache_dir: None, ..RunOptions::default() };
            let e = match run(&plan, &inputs, &IndexMap::new(), &opts) {
                Ok(out) => panic!("a malformed kernel ran: {out:?}"),
                Err(e) => e,
            };
            // the kernel's id is its place in `Plan::kernels` (k1), not a count of the
            // kernels run so far (k0)
            assert!(e.message.contains("kernel k1:"), "{codegen:?}: {}", e.message);
        }
    }
}
