//! Kernels: a plan kernel's index space split into blocks across rayon threads.
//!
//! - **Generate and reduce lanes** (any mix: a multi-output kernel) run in one pass: each
//!   block runs the element function once for all lanes. Blocks are either groups of whole
//!   rows (many short rows: each row is reduced inside its block, in parallel over blocks)
//!   or chunks of one long row (few long rows: each chunk gives a partial, and a row's
//!   partials are combined in order). A full reduction (1-d space) is one long row.
//!   A reduction over a group (a head lane and its parts) folds its `w` components together,
//!   its partials combined in order too.
//! - **Scans** along the innermost dimension: rows in parallel, or for long rows a scan per
//!   chunk, a scan of the chunks' totals (the carries), and a parallel fix-up; over a group
//!   alike, `w` components at a time.
//! - **Filters**: each block keeps its elements; the blocks' results are concatenated in
//!   order.
//! - **Permutes**: each thread combines its share of the elements into a partial result
//!   (with a mark of the targets it touched), and the partials are merged into a copy of
//!   `dest` with the operator (associative and commutative). Small permutes run in one
//!   pass straight into the copy.
//!
//! Errors: blocks run in parallel, and a block that fails is run again element by element,
//! in the plan interpreter's order, so that the error reported is the first failing
//! element's of the first failing block — the interpreter's error.

mod comb;
mod filter;
mod fold;
mod grouped;
mod permute;
mod scan;

use crate::cancel::Cancel;
use crate::col::{with_type, Col, ColMut, Elem};
use crate::internal;
use crate::program::{Env, Program};
use crate::store::{host, Results, StoreRef};
use crate::vm::{fmt_shape, Vm, VmErr};
use eqfuse_ir::error::{Error, Result};
use eqfuse_ir::plan::eval::{at_element, unflatten};
use eqfuse_ir::plan::{Func, Kernel, LaneOp};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use filter::filter;
use fold::folds;
use grouped::group_scan;
use permute::permute;
use scan::scan;
use std::borrow::Cow;

/// How kernels run.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub threads: usize,
    pub block: usize,
    pub max_bytes: u64,
    /// Polled before each block: a set flag ends the kernel with `E-LIMIT: interrupted`.
    pub cancel: Cancel,
}

/// Runs kernel number `kidx`.
pub(crate) fn run(env: &StoreRef<'_, '_>, k: &Kernel, kidx: usize, ctx: &Ctx) -> Result<Results> {
    let (shape, total) = space(env, k)?;
    if k.elem.ret.len() != k.lanes.len() {
        return Err(internal(format!(
            "kernel k{kidx}: an element function of {} results for {} lanes",
            k.elem.ret.len(),
            k.lanes.len()
        )));
    }
    if k.elem.params.len() != shape.len() || k.elem.params.iter().any(|&t| t != ElemType::I64) {
        return Err(internal(format!(
            "kernel k{kidx}: an element function of parameters {:?} over a space of rank {}",
            k.elem.params,
            shape.len()
        )));
    }
    match k.lanes.as_slice() {
        [] => Err(internal(format!("kernel k{kidx} has no lanes"))),
        [lane] => match &lane.op {
            LaneOp::Filter { pred } => Ok(vec![filter(env, k, lane, pred, &shape, total, ctx)?]),
            LaneOp::Permute { op, dest, target } => {
                Ok(vec![permute(env, k, lane, op, dest, target, &shape, total, ctx)?])
            }
            LaneOp::Scan { op, ne, exclusive } => {
                Ok(vec![scan(env, k, lane, op, ne, *exclusive, &shape, total, ctx)?])
            }
            _ => folds(env, k, kidx, &shape, total, ctx),
        },
        [head, ..] => match &head.op {
            // a scan over a group: its head and parts are the kernel's only lanes
            LaneOp::Scan { op, ne, exclusive } if k.groups().is_some_and(|g| g.len() == 1) => {
                group_scan(env, k, op, ne, *exclusive, &shape, total, ctx)
            }
            _ => folds(env, k, kidx, &shape, total, ctx),
        },
    }
}

/// The kernel's space: `E-SHAPE` for a negative extent, `E-LIMIT` when the element count
/// overflows `i64`.
fn space(env: &StoreRef<'_, '_>, k: &Kernel) -> Result<(Vec<usize>, usize)> {
    k.shape(|v| env.load(v), |v| env.0.name(v))
}

/// The product of `dims`, checked (`E-LIMIT` when it overflows `i64`).
fn count(kind: &str, dims: &[usize]) -> Result<usize> {
    let mut n: i64 = 1;
    for &d in dims {
        n = i64::try_from(d).ok().and_then(|d| n.checked_mul(d)).ok_or_else(|| {
            Error::limit(format!("`{kind}`: the size of shape {} overflows i64", fmt_shape(dims)))
        })?;
    }
    usize::try_from(n).map_err(|_| Error::limit(format!("`{kind}`: size {n} does not fit in memory")))
}

/// The fewest blocks one rayon task runs in a row: enough that a kernel makes about 16
/// tasks per thread (each task split costs about as much as a small block).
fn min_len(blocks: usize, threads: usize) -> usize {
    (blocks / (threads.max(1) * 16)).max(1)
}

/// The block length for a program of `nregs` registers: at most `block`, shorter for
/// programs with many registers (their columns should stay in cache).
fn block_len(block: usize, nregs: usize) -> usize {
    const REGISTER_BYTES: usize = 1 << 20;
    if block <= 256 {
        return block.max(1);
    }
    block.min((REGISTER_BYTES / (8 * nregs.max(1))).max(256))
}

/// Fills the index parameters of `p` with the multi-indices of flat positions
/// `start .. start + n` of `shape` (each parameter that the program reads).
fn fill_params(vm: &mut Vm, p: &Program<'_>, shape: &[usize], start: usize, n: usize) -> Result<()> {
    let end = start.checked_add(n).ok_or_else(|| internal("a block past the space"))?;
    for (d, &dim) in shape.iter().enumerate() {
        if !p.param_used.get(d).copied().unwrap_or(false) {
            continue;
        }
        if dim == 0 {
            return Err(internal("index parameters of an empty space"));
        }
        let period: usize = shape.get(d + 1..).map_or(1, |s| s.iter().product());
        let col = vm.index_param(d).ok_or_else(|| internal("no index parameter"))?;
        col.reserve(n);
        let mut f = start;
        if period == 1 {
            while f < end {
                let v0 = f % dim;
                let len = (end - f).min(dim - v0);
                col.extend((v0..v0 + len).map(|v| v as i64));
                f += len;
            }
        } else {
            while f < end {
                let q = f / period;
                let v = (q % dim) as i64;
                let run_end = end.min((q + 1) * period);
                col.extend(std::iter::repeat_n(v, run_end - f));
                f = run_end;
            }
        }
    }
    Ok(())
}

/// Runs the element function on the block `start .. start + n`.
fn run_block(
    vm: &mut Vm,
    p: &Program<'_>,
    shape: &[usize],
    start: usize,
    n: usize,
) -> std::result::Result<(), VmErr> {
    fill_params(vm, p, shape, start, n)?;
    vm.run(p, n, Some(start))
}

/// After a block failed: runs its elements one by one and returns the first one's error (in
/// the interpreter's order), with its position. `more` runs what follows the element
/// function for one element (a predicate, a target), given the element's flat position, and
/// returns its error as reported (it names the element itself).
#[allow(clippy::too_many_arguments)]
fn first_error(
    vm: &mut Vm,
    p: &Program<'_>,
    shape: &[usize],
    kind: &str,
    start: usize,
    n: usize,
    failed: VmErr,
    more: &mut dyn FnMut(&mut Vm, usize) -> Result<()>,
) -> Error {
    for k in 0..n {
        let f = start + k;
        if let Err(e) = run_block(vm, p, shape, f, 1) {
            return at_element(e.err, kind, shape, f);
        }
        if let Err(e) = more(vm, f) {
            return e;
        }
    }
    at_element(failed.err, kind, shape, start + failed.pos)
}

/// A column of `n` elements: `col` itself, or its one element repeated.
fn full(col: &Col, uni: bool, n: usize) -> Result<Cow<'_, Col>> {
    if !uni {
        return Ok(Cow::Borrowed(col));
    }
    let x = col.get(0).ok_or_else(|| internal("an empty uniform register"))?;
    Ok(Cow::Owned(with_type!(col.ty(), T => {
        let x = T::of_scalar(x).ok_or_else(|| internal("a register of another type"))?;
        T::wrap(vec![x; n])
    })))
}

/// Copies `src` into `dst` (same length and type).
fn write(dst: &mut ColMut<'_>, src: &Col) -> Result<()> {
    with_type!(src.ty(), T => {
        let d = T::of_mut(dst).ok_or_else(|| internal("an output of another type"))?;
        let s = T::vec(src).ok_or_else(|| internal("a column of another type"))?;
        if d.len() != s.len() {
            return Err(internal("a block result of another length than its block"));
        }
        d.copy_from_slice(s);
        Ok(())
    })
}

/// The result register of lane `li` must have the lane's element type.
fn check_ret(p: &Program<'_>, li: usize, ty: ElemType, kind: &str) -> Result<usize> {
    let r = *p.ret.get(li).ok_or_else(|| internal(format!("`{kind}`: no result for lane {li}")))?;
    match p.types.get(r) {
        Some(&t) if t == ty => Ok(r),
        Some(&t) => Err(internal(format!("`{kind}`: lane {li} of type {ty} computed as {t}"))),
        None => Err(internal("a result register out of range")),
    }
}

/// A neutral element, of type `ty`.
fn neutral(env: &StoreRef<'_, '_>, ne: &Func, ty: ElemType) -> Result<Scalar> {
    let s = host(env.0, ne)?;
    if s.elem_type() != ty {
        return Err(internal(format!("a neutral element of type {} for a lane of type {ty}", s.elem_type())));
    }
    Ok(s)
}

/// How a space of `rows` rows of `inner` elements is cut into blocks.
struct Blocks {
    /// Each block: flat start, length, first row, rows it holds whole (0: a chunk of one row).
    list: Vec<(usize, usize, usize, usize)>,
    /// Chunks per row when rows are cut into chunks (0: blocks of whole rows).
    chunks_per_row: usize,
}

fn blocks(rows: usize, inner: usize, bs: usize) -> Result<Blocks> {
    let mut list = Vec::new();
    if inner >= bs {
        let cpr = inner.div_ceil(bs);
        list.reserve(rows.saturating_mul(cpr).min(1 << 24));
        for r in 0..rows {
            for c in 0..cpr {
                let off = c * bs;
                list.push((r * inner + off, bs.min(inner - off), r, 0));
            }
        }
        Ok(Blocks { list, chunks_per_row: cpr })
    } else {
        let rpb = (bs / inner.max(1)).max(1);
        let mut r = 0;
        while r < rows {
            let nr = rpb.min(rows - r);
            list.push((r * inner, nr * inner, r, nr));
            r += nr;
        }
        Ok(Blocks { list, chunks_per_row: 0 })
    }
}
