//! The plan's steps, in order: `Step::Scalar`, `Step::Assert` and `Step::If` run on the
//! host as the plan interpreter runs them; a kernel runs as GEMM calls (a contraction), as
//! native code ([`crate::native`]), else on the VM ([`crate::kernel`]); a row block runs
//! block by block, and a scan block segment by segment, where its phases are native code,
//! else kernel after kernel.

use crate::internal;
use crate::kernel;
use crate::native::Prepared;
use crate::store::{host, scalar_buf, to_value, Buf, Results, Store, StoreRef};
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Kernel, Plan, Step, ValueId};
use eqfuse_ir::value::{AsValueView, Scalar, Value};
use indexmap::IndexMap;
use std::sync::Arc;

/// How a plan runs: the VM's settings and the plan compiled to native code, when it could
/// be ([`crate::RunOptions::codegen`]).
pub(crate) struct Ctx {
    pub vm: kernel::Ctx,
    pub native: Option<Arc<Prepared>>,
}

/// Runs the whole plan (on the calling thread, which is a worker of the pool).
pub(crate) fn run_plan<V: AsValueView>(
    plan: &Plan,
    inputs: &IndexMap<String, V>,
    sizes: &IndexMap<String, i64>,
    ctx: &Ctx,
) -> Result<IndexMap<String, Value>> {
    let mut store = Store::new(plan, inputs, sizes)?;
    let mut kidx = 0usize;
    run_steps(&mut store, &plan.steps, &mut kidx, ctx)?;
    let mut bufs = Vec::with_capacity(plan.outputs.len());
    for (name, id) in &plan.outputs {
        bufs.push((name.clone(), Arc::clone(store.get_arc(*id)?)));
    }
    drop(store);
    let mut out = IndexMap::new();
    for (name, buf) in bufs {
        let buf = Arc::try_unwrap(buf)
            .unwrap_or_else(|shared| Buf { shape: shared.shape.clone(), data: shared.data.clone() });
        out.insert(name, to_value(buf)?);
    }
    Ok(out)
}

/// Runs kernel `k`, number `kidx` (which it advances): as GEMM calls (a contraction), as
/// native code, else on the VM.
fn kernel_step(store: &mut Store<'_>, k: &Kernel, kidx: &mut usize, ctx: &Ctx) -> Result<()> {
    let gemm = match &k.contraction {
        Some(c) => crate::gemm::run(store, k, c, ctx.vm.threads, ctx.vm.max_bytes)
            .map_err(|e| e.or_at(k.span))?
            .map(|r| vec![r]),
        None => None,
    };
    let done = match (gemm, &ctx.native) {
        (Some(r), _) => Some(r),
        (None, Some(p)) => crate::native::run_kernel(p, store, k, ctx.vm.max_bytes, ctx.vm.block)
            .map_err(|e| e.or_at(k.span))?,
        (None, None) => None,
    };
    let results = match done {
        Some(r) => r,
        None => kernel::run(&StoreRef(store), k, *kidx, &ctx.vm).map_err(|e| e.or_at(k.span))?,
    };
    put_results(store, k, results, &[], *kidx)?;
    *kidx += 1;
    Ok(())
}

/// Puts kernel `k`'s results in the store, but for those in `kept` (a row block kept them
/// per block: nothing after it reads them).
fn put_results(
    store: &mut Store<'_>,
    k: &Kernel,
    results: Results,
    kept: &[ValueId],
    kidx: usize,
) -> Result<()> {
    if results.len() != k.lanes.len() {
        return Err(internal(format!(
            "kernel k{kidx}: {} results for {} lanes",
            results.len(),
            k.lanes.len()
        )));
    }
    for (lane, (shape, col)) in k.lanes.iter().zip(results).filter(|(l, _)| !kept.contains(&l.dst)) {
        store.put(lane.dst, Arc::new(Buf { shape, data: col.into_data() }))?;
    }
    Ok(())
}

fn run_steps(store: &mut Store<'_>, steps: &[Step], kidx: &mut usize, ctx: &Ctx) -> Result<()> {
    for step in steps {
        match step {
            Step::Scalar { dst, body } => {
                let s = host(store, body)?;
                store.put(*dst, Arc::new(scalar_buf(s)))?;
            }
            Step::Kernel(k) => kernel_step(store, k, kidx, ctx)?,
            Step::RowBlock { kernels, local } | Step::SegmentBlock { kernels, local } => {
                // block by block (segment by segment) where the phases are native code,
                // else one after the other
                let done = match (&ctx.native, kernels.first()) {
                    (Some(p), Some(first)) => {
                        let r = if matches!(step, Step::SegmentBlock { .. }) {
                            crate::native::run_segment_block(
                                p,
                                store,
                                kernels,
                                local,
                                ctx.vm.max_bytes,
                                ctx.vm.block,
                            )
                        } else {
                            crate::native::run_row_block(p, store, kernels, local, ctx.vm.max_bytes)
                        };
                        r.map_err(|e| e.or_at(first.span))?
                    }
                    _ => None,
                };
                match done {
                    Some(results) => {
                        for (k, r) in kernels.iter().zip(results) {
                            put_results(store, k, r, local, *kidx)?;
                            *kidx += 1;
                        }
                    }
                    None => {
                        for k in kernels {
                            kernel_step(store, k, kidx, ctx)?;
                        }
                    }
                }
            }
            Step::Assert { cond, code, message, shown, span } => match host(store, cond)? {
                Scalar::Bool(true) => {}
                Scalar::Bool(false) => {
                    return Err(eqfuse_ir::plan::assert_error(*code, message, shown, *span, |v| {
                        store.load(v)
                    }))
                }
                other => {
                    return Err(internal(format!("an assert's condition is {}, not bool", other.elem_type())))
                }
            },
            Step::If { cond, then_steps, then_value, else_steps, else_value, dst } => {
                let taken = match store.load(*cond)? {
                    Scalar::Bool(b) => b,
                    other => {
                        return Err(internal(format!("an `if` condition that is {}", other.elem_type())))
                    }
                };
                let (steps, v) = if taken { (then_steps, then_value) } else { (else_steps, else_value) };
                run_steps(store, steps, kidx, ctx)?;
                let buf = Arc::clone(store.get_arc(*v)?);
                store.put(*dst, buf)?;
            }
        }
    }
    Ok(())
}
