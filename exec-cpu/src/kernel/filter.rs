//! Filter lanes: each block keeps the elements whose predicate holds; the blocks' results
//! are concatenated in order.

use super::{at_element, block_len, check_ret, first_error, full, min_len, run_block, Ctx};
use crate::col::{with_type, Col, Elem};
use crate::compile::compile;
use crate::internal;
use crate::program::Program;
use crate::store::{check_alloc, StoreRef};
use crate::vm::{Vm, VmErr};
use eqfuse_ir::error::Result;
use eqfuse_ir::plan::{Func, Kernel, Lane};
use eqfuse_ir::types::ElemType;
use rayon::prelude::*;

/// A filter lane (1-d space): the elements whose predicate holds, in order.
pub(super) fn filter(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    lane: &Lane,
    pred: &Func,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<(Vec<usize>, Col)> {
    let kind = k.kind.as_str();
    if shape.len() != 1 {
        return Err(internal(format!("a filter over a space of rank {}", shape.len())));
    }
    let ty = env.0.elem(lane.dst)?;
    check_alloc(kind, ty, total, ctx.max_bytes)?;
    let prog = compile(&k.elem, env, Some(shape))?;
    check_ret(&prog, 0, ty, kind)?;
    let pprog = compile(pred, env, None)?;
    if pprog.nparams != 1 || pprog.types.first() != Some(&ty) || pprog.ret.len() != 1 {
        return Err(internal("a filter predicate that does not take the element"));
    }
    check_ret(&pprog, 0, ElemType::Bool, kind)?;
    let bs = block_len(ctx.block, prog.live + pprog.live);
    let starts: Vec<usize> = (0..total).step_by(bs).collect();
    let results: Vec<Result<Col>> = starts
        .par_iter()
        .with_min_len(min_len(starts.len(), ctx.threads))
        .map_init(
            || (Vm::new(&prog), Vm::new(&pprog)),
            |(vm, pvm), &start| {
                ctx.cancel.check()?;
                let len = bs.min(total - start);
                filter_block(&prog, &pprog, shape, kind, vm, pvm, start, len)
            },
        )
        .collect();
    let mut out = Col::new(ty);
    for r in results {
        if !out.extend_from(&r?) {
            return Err(internal("a filter block of another type"));
        }
    }
    Ok((vec![out.len()], out))
}

#[allow(clippy::too_many_arguments)]
fn filter_block(
    prog: &Program<'_>,
    pprog: &Program<'_>,
    shape: &[usize],
    kind: &str,
    vm: &mut Vm,
    pvm: &mut Vm,
    start: usize,
    len: usize,
) -> Result<Col> {
    let r = *prog.ret.first().ok_or_else(|| internal("no result register"))?;
    let mut failed = run_block(vm, prog, shape, start, len).err();
    if failed.is_none() {
        let (col, uni) = vm.reg(prog, r).map_err(|e| e.err)?;
        let x = full(col, uni, len)?.into_owned();
        pvm.set_param(0, x).map_err(|e| e.err)?;
        match pvm.run(pprog, len, None) {
            Ok(()) => {
                let (col, _) = vm.reg(prog, r).map_err(|e| e.err)?;
                let x = full(col, uni, len)?;
                let pr = *pprog.ret.first().ok_or_else(|| internal("no predicate result"))?;
                let (flags, funi) = pvm.reg(pprog, pr).map_err(|e| e.err)?;
                let flags = full(flags, funi, len)?;
                let flags = bool::vec(&flags).ok_or_else(|| internal("a predicate that is not bool"))?;
                return with_type!(x.ty(), T => {
                    let xs = T::vec(&x).ok_or_else(|| internal("a column of another type"))?;
                    let kept: Vec<T> = xs.iter().zip(flags).filter(|(_, &f)| f).map(|(&v, _)| v).collect();
                    Ok(T::wrap(kept))
                });
            }
            Err(e) => failed = Some(VmErr { err: e.err, pos: e.pos }),
        }
    }
    let failed = failed.unwrap_or_else(|| VmErr { err: internal("a filter block failed"), pos: 0 });
    let mut more = |vm: &mut Vm, f: usize| -> Result<()> {
        let x = vm.result_at(prog, 0, 0).map_err(|e| e.err)?;
        pvm.call(pprog, &[x]).map_err(|e| at_element(e.err, kind, shape, f))
    };
    Err(first_error(vm, prog, shape, kind, start, len, failed, &mut more))
}
