//! Kernels: a plan kernel's index space split into blocks across rayon threads.
//!
//! - **Generate and reduce lanes** (any mix: a multi-output kernel) run in one pass: each
//!   block runs the element function once for all lanes. Blocks are either groups of whole
//!   rows (many short rows: each row is reduced inside its block, in parallel over blocks)
//!   or chunks of one long row (few long rows: each chunk gives a partial, and a row's
//!   partials are combined in order). A full reduction (1-d space) is one long row.
//! - **Scans** along the innermost dimension: rows in parallel, or for long rows a scan per
//!   chunk, a scan of the chunks' totals (the carries), and a parallel fix-up.
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

use crate::col::{with_type, Col, ColMut, Elem};
use crate::compile::compile;
use crate::internal;
use crate::num::{self, OpKind};
use crate::program::{Env, Program};
use crate::store::{check_alloc, host, Results, StoreRef};
use crate::vm::{fmt_i64s, fmt_shape, Vm, VmErr};
use eqfuse_ir::ast::BinOp;
use eqfuse_ir::error::{Code, Error, Result, Span};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::plan::{Func, Inst, Kernel, Lane, LaneOp, PermuteDest};
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use rayon::prelude::*;
use std::borrow::Cow;
use std::ops::Range;

/// How kernels run.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub threads: usize,
    pub block: usize,
    pub max_bytes: u64,
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
        _ => folds(env, k, kidx, &shape, total, ctx),
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

/// Adds "in `kind` at element [i, j]" to a run-time error raised at one element.
fn at_element(mut err: Error, kind: &str, shape: &[usize], flat: usize) -> Error {
    if matches!(err.code, Code::DivZero | Code::Index) && !err.message.contains(" at element ") {
        err.message =
            format!("{}, in `{kind}` at element {}", err.message, fmt_shape(&unflatten(shape, flat)));
    }
    err
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

/// A combining operator: a known one runs as typed loops, any other through the VM.
enum Comb<'s> {
    Known(OpKind),
    Generic(Box<Program<'s>>),
}

/// Recognises `op(a, b) { c = a + b } -> c` and its kin (`*`, `min`, `max`, `&&`, `||`) of
/// element type `ty`.
fn recognise(op: &Func, ty: ElemType) -> Option<OpKind> {
    if op.params.len() != 2 || op.params.iter().any(|&t| t != ty) {
        return None;
    }
    let ([inst], [ret]) = (op.body.insts.as_slice(), op.ret.as_slice()) else { return None };
    if op.reg_types.get(*ret as usize) != Some(&ty) {
        return None;
    }
    let numeric = ty != ElemType::Bool;
    match inst {
        Inst::Binary { dst, op, a: 0, b: 1 } if dst == ret => match op {
            BinOp::Add if numeric => Some(OpKind::Add),
            BinOp::Mul if numeric => Some(OpKind::Mul),
            BinOp::And if !numeric => Some(OpKind::And),
            BinOp::Or if !numeric => Some(OpKind::Or),
            _ => None,
        },
        Inst::Call { dst, f, args } if dst == ret && args.as_slice() == [0, 1] => match f {
            ScalarFn::Min => Some(OpKind::Min),
            ScalarFn::Max => Some(OpKind::Max),
            _ => None,
        },
        // the sections `(&&)` and `(||)`: `if a then b else false`, `if a then true else b`
        Inst::If { dst, cond: 0, then_block, then_ret, else_block, else_ret } if dst == ret && !numeric => {
            let is_const = |b: &eqfuse_ir::plan::Block, r: u32, v: bool| matches!(b.insts.as_slice(), [Inst::Const { dst, value: Scalar::Bool(x) }] if *dst == r && *x == v);
            if then_block.insts.is_empty() && *then_ret == 1 && is_const(else_block, *else_ret, false) {
                Some(OpKind::And)
            } else if else_block.insts.is_empty() && *else_ret == 1 && is_const(then_block, *then_ret, true) {
                Some(OpKind::Or)
            } else {
                None
            }
        }
        _ => None,
    }
}

impl<'s> Comb<'s> {
    fn new(op: &Func, ty: ElemType, env: &dyn Env<'s>) -> Result<Comb<'s>> {
        if let Some(k) = recognise(op, ty) {
            return Ok(Comb::Known(k));
        }
        let p = compile(op, env, None)?;
        if p.nparams != 2 || p.ret.len() != 1 {
            return Err(internal(format!(
                "an operator of {} parameters and {} results",
                p.nparams,
                p.ret.len()
            )));
        }
        Ok(Comb::Generic(Box::new(p)))
    }

    /// `a op b`.
    fn apply(&self, vm: &mut Option<Vm>, a: Scalar, b: Scalar) -> Result<Scalar> {
        match self {
            Comb::Known(k) => with_type!(a.elem_type(), T => {
                match (T::of_scalar(a), T::of_scalar(b)) {
                    (Some(x), Some(y)) => Ok(<T as num::Comb>::comb(*k, x, y).scalar()),
                    _ => Err(internal("an operator applied to values of two types")),
                }
            }),
            Comb::Generic(p) => {
                let vm = vm.get_or_insert_with(|| Vm::new(p));
                vm.call1(p, &[a, b]).map_err(|e| e.err)
            }
        }
    }

    /// `acc op col[range]...`, folded from `acc`.
    fn fold(&self, vm: &mut Option<Vm>, acc: Scalar, col: &Col, range: Range<usize>) -> Result<Scalar> {
        match self {
            Comb::Known(k) => with_type!(col.ty(), T => {
                let xs = T::vec(col).and_then(|v| v.get(range)).ok_or_else(|| internal("a fold past its column"))?;
                let acc = T::of_scalar(acc).ok_or_else(|| internal("a neutral element of another type"))?;
                Ok(num::fold(*k, acc, xs).scalar())
            }),
            Comb::Generic(_) => {
                let mut acc = acc;
                for i in range {
                    let x = col.get(i).ok_or_else(|| internal("a fold past its column"))?;
                    acc = self.apply(vm, acc, x)?;
                }
                Ok(acc)
            }
        }
    }

    /// `out[r] = ne op row r` for the rows of length `inner` of `col`.
    fn fold_rows(
        &self,
        vm: &mut Option<Vm>,
        ne: Scalar,
        col: &Col,
        inner: usize,
        out: &mut ColMut<'_>,
    ) -> Result<()> {
        if inner == 0 || out.len().checked_mul(inner) != Some(col.len()) {
            return Err(internal("rows that do not fill their block"));
        }
        match self {
            Comb::Known(k) => with_type!(col.ty(), T => {
                let xs = T::vec(col).ok_or_else(|| internal("a column of another type"))?;
                let out = T::of_mut(out).ok_or_else(|| internal("an output of another type"))?;
                let ne = T::of_scalar(ne).ok_or_else(|| internal("a neutral element of another type"))?;
                for (o, row) in out.iter_mut().zip(xs.chunks_exact(inner)) {
                    *o = num::fold(*k, ne, row);
                }
                Ok(())
            }),
            Comb::Generic(_) => {
                for r in 0..out.len() {
                    let v = self.fold(vm, ne, col, r * inner..(r + 1) * inner)?;
                    if !out.set(r, v) {
                        return Err(internal("a row result of another type"));
                    }
                }
                Ok(())
            }
        }
    }

    /// Scans `col[range]` from `acc` into `out[range]`; returns the total.
    fn scan(
        &self,
        vm: &mut Option<Vm>,
        acc: Scalar,
        col: &Col,
        range: Range<usize>,
        out: &mut ColMut<'_>,
        exclusive: bool,
    ) -> Result<Scalar> {
        match self {
            Comb::Known(k) => with_type!(col.ty(), T => {
                let xs = T::vec(col).and_then(|v| v.get(range.clone())).ok_or_else(|| internal("a scan past its column"))?;
                let out = T::of_mut(out).and_then(|o| o.get_mut(range)).ok_or_else(|| internal("a scan past its output"))?;
                let acc = T::of_scalar(acc).ok_or_else(|| internal("a neutral element of another type"))?;
                Ok(num::scan(*k, acc, xs, out, exclusive).scalar())
            }),
            Comb::Generic(_) => {
                let mut acc = acc;
                for i in range {
                    let x = col.get(i).ok_or_else(|| internal("a scan past its column"))?;
                    if exclusive {
                        out.set(i, acc);
                    }
                    acc = self.apply(vm, acc, x)?;
                    if !exclusive {
                        out.set(i, acc);
                    }
                }
                Ok(acc)
            }
        }
    }

    /// `out[i] = carry op out[i]`.
    fn fix_up(&self, vm: &mut Option<Vm>, carry: Scalar, out: &mut ColMut<'_>) -> Result<()> {
        match self {
            Comb::Known(k) => with_type!(carry.elem_type(), T => {
                let out = T::of_mut(out).ok_or_else(|| internal("an output of another type"))?;
                let carry = T::of_scalar(carry).ok_or_else(|| internal("a carry of another type"))?;
                num::fix_up(*k, carry, out);
                Ok(())
            }),
            Comb::Generic(_) => {
                for i in 0..out.len() {
                    let x = out.get(i).ok_or_else(|| internal("a fix-up past its output"))?;
                    let v = self.apply(vm, carry, x)?;
                    out.set(i, v);
                }
                Ok(())
            }
        }
    }
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

/// One block's work in a generate/reduce pass.
struct FoldItem<'o> {
    start: usize,
    len: usize,
    rows: usize,
    gens: Vec<ColMut<'o>>,
    reds: Vec<ColMut<'o>>,
}

/// Generate and reduce lanes, in one pass over the space.
fn folds(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    kidx: usize,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<Results> {
    let kind = k.kind.as_str();
    let (&inner, outer) =
        shape.split_last().ok_or_else(|| internal(format!("kernel k{kidx} over an empty space")))?;
    let rows = count(kind, outer)?;
    let prog = compile(&k.elem, env, Some(shape))?;
    // per lane: its type and, for a reduction, its operator and neutral element
    let mut lanes: Vec<(ElemType, Option<(Comb<'_>, Scalar)>)> = Vec::with_capacity(k.lanes.len());
    for (li, lane) in k.lanes.iter().enumerate() {
        let ty = env.0.elem(lane.dst)?;
        check_ret(&prog, li, ty, kind)?;
        match &lane.op {
            LaneOp::Generate => {
                check_alloc(kind, ty, total, ctx.max_bytes)?;
                lanes.push((ty, None));
            }
            LaneOp::Reduce { op, ne } => {
                let ne = neutral(env, ne, ty)?;
                check_alloc(kind, ty, rows, ctx.max_bytes)?;
                lanes.push((ty, Some((Comb::new(op, ty, env)?, ne))));
            }
            _ => {
                return Err(internal(format!(
                    "kernel k{kidx} has several lanes that are not all generate or reduce"
                )))
            }
        }
    }
    let mut gen_cols: Vec<Col> = Vec::new();
    let mut red_cols: Vec<Col> = Vec::new();
    for (ty, red) in &lanes {
        match red {
            None => gen_cols.push(Col::zeros(*ty, total)),
            Some((_, ne)) => {
                let mut c = Col::new(*ty);
                for _ in 0..rows {
                    c.push(*ne);
                }
                red_cols.push(c);
            }
        }
    }
    if total > 0 {
        let bs = block_len(ctx.block, prog.live);
        let b = blocks(rows, inner, bs)?;
        let lens: Vec<usize> = b.list.iter().map(|x| x.1).collect();
        let mut gen_parts = Vec::with_capacity(gen_cols.len());
        for c in &mut gen_cols {
            let parts =
                c.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past an output"))?;
            gen_parts.push(parts.into_iter());
        }
        let mut red_parts = Vec::with_capacity(red_cols.len());
        if b.chunks_per_row == 0 {
            for c in &mut red_cols {
                let parts = c
                    .as_mut()
                    .split(b.list.iter().map(|x| x.3))
                    .ok_or_else(|| internal("blocks past a reduction's output"))?;
                red_parts.push(parts.into_iter());
            }
        }
        let mut items = Vec::with_capacity(b.list.len());
        for &(start, len, _, nrows) in &b.list {
            let gens = gen_parts.iter_mut().map(Iterator::next).collect::<Option<Vec<_>>>();
            let reds = red_parts.iter_mut().map(Iterator::next).collect::<Option<Vec<_>>>();
            match (gens, reds) {
                (Some(gens), Some(reds)) => items.push(FoldItem { start, len, rows: nrows, gens, reds }),
                _ => return Err(internal("fewer output parts than blocks")),
            }
        }
        let chunked = b.chunks_per_row > 0;
        let min = min_len(items.len(), ctx.threads);
        let results: Vec<Result<Vec<Scalar>>> = items
            .into_par_iter()
            .with_min_len(min)
            .map_init(
                || (Vm::new(&prog), lanes.iter().map(|_| None).collect::<Vec<Option<Vm>>>()),
                |(vm, cvms), item| fold_block(&prog, &lanes, shape, kind, inner, chunked, vm, cvms, item),
            )
            .collect();
        let mut partials = Vec::with_capacity(results.len());
        for r in results {
            partials.push(r?);
        }
        if chunked {
            // combine each row's partials, in order
            let cpr = b.chunks_per_row;
            let mut vm = None;
            let mut j = 0;
            for (_, red) in &lanes {
                let Some((comb, _)) = red else { continue };
                let out = red_cols.get_mut(j).ok_or_else(|| internal("no reduction output"))?;
                let mut out = out.as_mut();
                for r in 0..rows {
                    let mut acc: Option<Scalar> = None;
                    for c in 0..cpr {
                        let p = partials
                            .get(r * cpr + c)
                            .and_then(|v| v.get(j))
                            .copied()
                            .ok_or_else(|| internal("a missing partial result"))?;
                        acc = Some(match acc {
                            None => p,
                            Some(a) => comb.apply(&mut vm, a, p)?,
                        });
                    }
                    if let Some(a) = acc {
                        out.set(r, a);
                    }
                }
                j += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(lanes.len());
    let (mut gi, mut ri) = (gen_cols.into_iter(), red_cols.into_iter());
    for (_, red) in &lanes {
        let next = if red.is_some() {
            ri.next().map(|c| (outer.to_vec(), c))
        } else {
            gi.next().map(|c| (shape.to_vec(), c))
        };
        out.push(next.ok_or_else(|| internal("a lane without its output"))?);
    }
    Ok(out)
}

/// One block of a generate/reduce pass: returns the partial result of each reduction when
/// the block is a chunk of a row (`chunked`), else writes the block's rows.
#[allow(clippy::too_many_arguments)]
fn fold_block(
    prog: &Program<'_>,
    lanes: &[(ElemType, Option<(Comb<'_>, Scalar)>)],
    shape: &[usize],
    kind: &str,
    inner: usize,
    chunked: bool,
    vm: &mut Vm,
    cvms: &mut [Option<Vm>],
    mut item: FoldItem<'_>,
) -> Result<Vec<Scalar>> {
    if let Err(e) = run_block(vm, prog, shape, item.start, item.len) {
        return Err(first_error(vm, prog, shape, kind, item.start, item.len, e, &mut |_, _| Ok(())));
    }
    let mut partials = Vec::new();
    let (mut gi, mut ri) = (0, 0);
    for (li, ((_, red), cvm)) in lanes.iter().zip(cvms.iter_mut()).enumerate() {
        let r = *prog.ret.get(li).ok_or_else(|| internal("no result register"))?;
        let (col, uni) = vm.reg(prog, r).map_err(|e| e.err)?;
        let col = full(col, uni, item.len)?;
        match red {
            None => {
                let dst = item.gens.get_mut(gi).ok_or_else(|| internal("no generate output"))?;
                write(dst, &col)?;
                gi += 1;
            }
            Some((comb, ne)) => {
                if chunked {
                    partials.push(comb.fold(cvm, *ne, &col, 0..item.len)?);
                } else {
                    let dst = item.reds.get_mut(ri).ok_or_else(|| internal("no reduction output"))?;
                    if dst.len() != item.rows {
                        return Err(internal("a reduction output of another length than its rows"));
                    }
                    comb.fold_rows(cvm, *ne, &col, inner, dst)?;
                    ri += 1;
                }
            }
        }
    }
    Ok(partials)
}

/// A scan lane along the innermost dimension.
#[allow(clippy::too_many_arguments)]
fn scan(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    lane: &Lane,
    op: &Func,
    ne: &Func,
    exclusive: bool,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<(Vec<usize>, Col)> {
    let kind = k.kind.as_str();
    let (&inner, outer) = shape.split_last().ok_or_else(|| internal("a scan over an empty space"))?;
    let rows = count(kind, outer)?;
    let ty = env.0.elem(lane.dst)?;
    let ne = neutral(env, ne, ty)?;
    check_alloc(kind, ty, total, ctx.max_bytes)?;
    let prog = compile(&k.elem, env, Some(shape))?;
    check_ret(&prog, 0, ty, kind)?;
    let comb = Comb::new(op, ty, env)?;
    let mut out = Col::zeros(ty, total);
    if total == 0 {
        return Ok((shape.to_vec(), out));
    }
    let bs = block_len(ctx.block, prog.live);
    let b = blocks(rows, inner, bs)?;
    let lens: Vec<usize> = b.list.iter().map(|x| x.1).collect();
    let parts = out.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past the output"))?;
    let chunked = b.chunks_per_row > 0;
    let min = min_len(b.list.len(), ctx.threads);
    let results: Vec<Result<Scalar>> = b
        .list
        .par_iter()
        .zip(parts)
        .with_min_len(min)
        .map_init(
            || (Vm::new(&prog), None),
            |(vm, cvm), (&(start, len, _, nrows), mut dst)| -> Result<Scalar> {
                if let Err(e) = run_block(vm, &prog, shape, start, len) {
                    return Err(first_error(vm, &prog, shape, kind, start, len, e, &mut |_, _| Ok(())));
                }
                let r = *prog.ret.first().ok_or_else(|| internal("no result register"))?;
                let (col, uni) = vm.reg(&prog, r).map_err(|e| e.err)?;
                let col = full(col, uni, len)?;
                if chunked {
                    comb.scan(cvm, ne, &col, 0..len, &mut dst, exclusive)
                } else {
                    for row in 0..nrows {
                        comb.scan(cvm, ne, &col, row * inner..(row + 1) * inner, &mut dst, exclusive)?;
                    }
                    Ok(ne)
                }
            },
        )
        .collect();
    let mut totals = Vec::with_capacity(results.len());
    for r in results {
        totals.push(r?);
    }
    if chunked {
        // carries: the scan of the chunks' totals, row by row; then the fix-up
        let cpr = b.chunks_per_row;
        let mut carries = Vec::with_capacity(totals.len());
        let mut vm = None;
        for row in totals.chunks(cpr) {
            let mut carry = ne;
            for (c, &t) in row.iter().enumerate() {
                carries.push(carry);
                if c + 1 < row.len() {
                    carry = comb.apply(&mut vm, carry, t)?;
                }
            }
        }
        let parts =
            out.as_mut().split(lens.iter().copied()).ok_or_else(|| internal("blocks past the output"))?;
        let fixed: Vec<Result<()>> = parts
            .into_par_iter()
            .zip(carries)
            .enumerate()
            .with_min_len(min)
            .map_init(
                || None,
                |cvm, (i, (mut dst, carry))| {
                    if i % cpr == 0 {
                        return Ok(());
                    }
                    comb.fix_up(cvm, carry, &mut dst)
                },
            )
            .collect();
        for r in fixed {
            r?;
        }
    }
    Ok((shape.to_vec(), out))
}

/// A filter lane (1-d space): the elements whose predicate holds, in order.
fn filter(
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

/// Where a permute drops an element.
const DROP: usize = usize::MAX;

/// Formats indices as `5` or `[3, 7]`.
fn fmt_indices(ix: &[i64]) -> String {
    match ix {
        [i] => i.to_string(),
        _ => fmt_i64s(ix),
    }
}

/// What a permute needs to know of its destination.
struct Dest<'a> {
    shape: &'a [usize],
    name: String,
}

impl Dest<'_> {
    /// The flat target of `t` (`DROP` for `-1` into a rank-1 destination), or the
    /// interpreter's error.
    fn flat(&self, t: &[i64], src_shape: &[usize], flat_src: usize) -> Result<usize> {
        if self.shape.len() == 1 && t == [-1] {
            return Ok(DROP);
        }
        crate::vm::flat_index(self.shape, t).ok_or_else(|| {
            Error::index(
                Span::default(),
                format!(
                    "permute: target {} out of bounds for `{}` of shape {} (from element {} of the source)",
                    fmt_indices(t),
                    self.name,
                    fmt_shape(self.shape),
                    fmt_shape(&unflatten(src_shape, flat_src))
                ),
            )
        })
    }
}

/// A permute lane: a copy of `dest` into which every element is combined at its target.
#[allow(clippy::too_many_arguments)]
fn permute(
    env: &StoreRef<'_, '_>,
    k: &Kernel,
    lane: &Lane,
    op: &Func,
    dest: &PermuteDest,
    target: &Func,
    shape: &[usize],
    total: usize,
    ctx: &Ctx,
) -> Result<(Vec<usize>, Col)> {
    let kind = k.kind.as_str();
    let ty = env.0.elem(lane.dst)?;
    let (dshape, mut out) = crate::store::permute_start(env.0, kind, ty, dest, ctx.max_bytes)?;
    let dlen = out.len();
    let dst = Dest { shape: &dshape, name: env.0.name(lane.dst) };
    let prog = compile(&k.elem, env, Some(shape))?;
    check_ret(&prog, 0, ty, kind)?;
    let tprog = compile(target, env, Some(shape))?;
    if tprog.nparams != shape.len()
        || tprog.ret.len() != dshape.len()
        || tprog.ret.iter().any(|&r| tprog.types.get(r) != Some(&ElemType::I64))
    {
        return Err(internal(format!(
            "a permute target of {} results into `{}` of rank {}",
            tprog.ret.len(),
            dst.name,
            dshape.len()
        )));
    }
    let comb = Comb::new(op, ty, env)?;
    if total == 0 {
        return Ok((dshape.clone(), out));
    }
    let bs = block_len(ctx.block, prog.live + tprog.live);
    let nblocks = total.div_ceil(bs);
    let tasks = if ctx.threads > 1 && nblocks > 1 && dlen <= total { ctx.threads.min(nblocks) } else { 1 };
    let w = PermWork { prog: &prog, tprog: &tprog, comb: &comb, dst: &dst, shape, kind, bs, total };
    if tasks == 1 {
        let mut st = PermState::new(&w);
        for b in 0..nblocks {
            st.block(&w, b, &mut out, None)?;
        }
        return Ok((dshape.clone(), out));
    }
    for _ in 0..tasks {
        check_alloc(kind, ty, dlen, ctx.max_bytes)?;
    }
    let per = nblocks.div_ceil(tasks);
    let partials: Vec<Result<(Col, Vec<bool>)>> = (0..tasks)
        .into_par_iter()
        .map(|t| {
            let mut st = PermState::new(&w);
            let blocks = t * per..((t + 1) * per).min(nblocks);
            if let Some(id) = identity(&comb, ty) {
                // a partial starting at the operator's identity needs no first touches
                let mut partial = with_type!(ty, T => {
                    T::wrap(vec![T::of_scalar(id).ok_or_else(|| internal("an identity of another type"))?; dlen])
                });
                for b in blocks {
                    st.block(&w, b, &mut partial, None)?;
                }
                return Ok((partial, vec![true; dlen]));
            }
            let mut partial = Col::zeros(ty, dlen);
            let mut touched = vec![false; dlen];
            for b in blocks {
                st.block(&w, b, &mut partial, Some(&mut touched))?;
            }
            Ok((partial, touched))
        })
        .collect();
    let mut vm = None;
    for r in partials {
        let (partial, touched) = r?;
        merge(&comb, &mut vm, &mut out, &partial, &touched)?;
    }
    Ok((dshape.clone(), out))
}

/// The identity of a known operator on an integer or boolean type (`x op id == x` for
/// every `x`, exactly); none for floats (`0.0 + -0.0` is `0.0`) and other operators.
fn identity(comb: &Comb<'_>, ty: ElemType) -> Option<Scalar> {
    let Comb::Known(k) = comb else {
        return None;
    };
    Some(match (ty, k) {
        (ElemType::I32, OpKind::Add) => Scalar::I32(0),
        (ElemType::I32, OpKind::Mul) => Scalar::I32(1),
        (ElemType::I32, OpKind::Min) => Scalar::I32(i32::MAX),
        (ElemType::I32, OpKind::Max) => Scalar::I32(i32::MIN),
        (ElemType::I64, OpKind::Add) => Scalar::I64(0),
        (ElemType::I64, OpKind::Mul) => Scalar::I64(1),
        (ElemType::I64, OpKind::Min) => Scalar::I64(i64::MAX),
        (ElemType::I64, OpKind::Max) => Scalar::I64(i64::MIN),
        (ElemType::Bool, OpKind::Min | OpKind::And) => Scalar::Bool(true),
        (ElemType::Bool, OpKind::Max | OpKind::Or) => Scalar::Bool(false),
        _ => return None,
    })
}

/// `out[i] = out[i] op partial[i]` where `touched[i]`.
fn merge(comb: &Comb<'_>, vm: &mut Option<Vm>, out: &mut Col, partial: &Col, touched: &[bool]) -> Result<()> {
    if let Comb::Known(k) = comb {
        return with_type!(out.ty(), T => {
            let o = T::vec_mut(out).ok_or_else(|| internal("a permute output of another type"))?;
            let p = T::vec(partial).ok_or_else(|| internal("a partial of another type"))?;
            for ((o, &p), &t) in o.iter_mut().zip(p).zip(touched) {
                if t {
                    *o = <T as num::Comb>::comb(*k, *o, p);
                }
            }
            Ok(())
        });
    }
    let mut o = out.as_mut();
    for (i, &t) in touched.iter().enumerate() {
        if t {
            let (a, b) = match (o.get(i), partial.get(i)) {
                (Some(a), Some(b)) => (a, b),
                _ => return Err(internal("a partial of another length")),
            };
            let v = comb.apply(vm, a, b)?;
            o.set(i, v);
        }
    }
    Ok(())
}

/// What every block of a permute shares.
struct PermWork<'w, 's> {
    prog: &'w Program<'s>,
    tprog: &'w Program<'s>,
    comb: &'w Comb<'s>,
    dst: &'w Dest<'w>,
    shape: &'w [usize],
    kind: &'w str,
    bs: usize,
    total: usize,
}

/// One thread's registers for a permute.
struct PermState {
    vm: Vm,
    tvm: Vm,
    cvm: Option<Vm>,
    flats: Vec<usize>,
}

impl PermState {
    fn new(w: &PermWork<'_, '_>) -> PermState {
        PermState { vm: Vm::new(w.prog), tvm: Vm::new(w.tprog), cvm: None, flats: Vec::new() }
    }

    /// Block `b`: every element combined into `out` at its target (with `touched`: a
    /// partial result, whose first element at a target is stored as it is).
    fn block(
        &mut self,
        w: &PermWork<'_, '_>,
        b: usize,
        out: &mut Col,
        touched: Option<&mut [bool]>,
    ) -> Result<()> {
        let start = b * w.bs;
        let len = w.bs.min(w.total - start);
        let failed = match run_block(&mut self.vm, w.prog, w.shape, start, len) {
            Err(e) => Some(e),
            Ok(()) => run_block(&mut self.tvm, w.tprog, w.shape, start, len).err(),
        };
        if let Some(failed) = failed {
            let (tvm, tprog, dst, shape, kind) = (&mut self.tvm, w.tprog, w.dst, w.shape, w.kind);
            let mut more = |_: &mut Vm, f: usize| -> Result<()> {
                run_block(tvm, tprog, shape, f, 1).map_err(|e| at_element(e.err, kind, shape, f))?;
                let t = (0..tprog.ret.len())
                    .map(|k| match tvm.result_at(tprog, k, 0).map_err(|e| e.err)? {
                        Scalar::I64(v) => Ok(v),
                        _ => Err(internal("a target that is not i64")),
                    })
                    .collect::<Result<Vec<i64>>>()?;
                dst.flat(&t, shape, f).map(|_| ())
            };
            return Err(first_error(&mut self.vm, w.prog, w.shape, w.kind, start, len, failed, &mut more));
        }
        if let (Comb::Known(k), [tr], [_]) = (w.comb, w.tprog.ret.as_slice(), w.dst.shape) {
            let r = *w.prog.ret.first().ok_or_else(|| internal("no result register"))?;
            let (tcol, tuni) = self.tvm.reg(w.tprog, *tr).map_err(|e| e.err)?;
            let (xcol, xuni) = self.vm.reg(w.prog, r).map_err(|e| e.err)?;
            let ts = i64::vec(tcol).ok_or_else(|| internal("a target that is not i64"))?;
            if !tuni && ts.len() == len {
                let done = with_type!(out.ty(), T => {
                    let o = T::vec_mut(out).ok_or_else(|| internal("a permute output of another type"))?;
                    if touched.as_ref().is_some_and(|t| t.len() != o.len()) {
                        return Err(internal("a permute's first touches of another length"));
                    }
                    let xs = T::vec(xcol).ok_or_else(|| internal("elements of another type"))?;
                    match (xuni, xs.as_slice()) {
                        (true, &[x]) => combine_at(*k, o, touched, ts, |_| x),
                        (false, xs) if xs.len() == len => combine_at(*k, o, touched, ts, |pos| xs[pos]),
                        _ => return Err(internal("a permute's elements of another length than its block")),
                    }
                });
                return done.map_err(|pos| {
                    let t = ts.get(pos).copied().unwrap_or(0);
                    w.dst.flat(&[t], w.shape, start + pos).err().unwrap_or_else(|| internal("a target"))
                });
            }
        }
        // the targets, checked in order
        self.flats.clear();
        let mut cols = Vec::with_capacity(w.tprog.ret.len());
        for &r in &w.tprog.ret {
            let (col, uni) = self.tvm.reg(w.tprog, r).map_err(|e| e.err)?;
            cols.push(full(col, uni, len)?);
        }
        let cols: Vec<&[i64]> = cols
            .iter()
            .map(|c| i64::vec(c).map(Vec::as_slice))
            .collect::<Option<_>>()
            .ok_or_else(|| internal("a target that is not i64"))?;
        if let ([t0], [dlen]) = (cols.as_slice(), w.dst.shape) {
            // a rank-1 destination: -1 drops, anything else out of range fails
            for (pos, &t) in t0.iter().enumerate() {
                let f = match usize::try_from(t) {
                    Ok(f) if f < *dlen => f,
                    _ if t == -1 => DROP,
                    _ => {
                        return Err(w
                            .dst
                            .flat(&[t], w.shape, start + pos)
                            .err()
                            .unwrap_or_else(|| internal("a target")))
                    }
                };
                self.flats.push(f);
            }
        } else {
            let mut t = vec![0i64; cols.len()];
            for pos in 0..len {
                for (slot, c) in t.iter_mut().zip(&cols) {
                    *slot = c.get(pos).copied().ok_or_else(|| internal("a target column too short"))?;
                }
                self.flats.push(w.dst.flat(&t, w.shape, start + pos)?);
            }
        }
        let r = *w.prog.ret.first().ok_or_else(|| internal("no result register"))?;
        let (col, uni) = self.vm.reg(w.prog, r).map_err(|e| e.err)?;
        let xs = full(col, uni, len)?;
        apply(w.comb, &mut self.cvm, out, touched, &self.flats, &xs)
    }
}

/// [`apply`] for a known operator into a rank-1 destination `o`, in one pass over the
/// targets `ts` (`x(pos)`: element `pos`): `-1` drops an element; `Err(pos)`: the first
/// element whose target is out of range (the elements before it are combined already).
fn combine_at<T: num::Comb>(
    k: OpKind,
    o: &mut [T],
    touched: Option<&mut [bool]>,
    ts: &[i64],
    x: impl Fn(usize) -> T,
) -> std::result::Result<(), usize> {
    let dlen = o.len();
    match touched {
        None => {
            for (pos, &t) in ts.iter().enumerate() {
                match usize::try_from(t) {
                    Ok(f) if f < dlen => o[f] = <T as num::Comb>::comb(k, o[f], x(pos)),
                    _ if t == -1 => {}
                    _ => return Err(pos),
                }
            }
        }
        Some(seen) => {
            // (the caller checks that `seen` is as long as `o`)
            for (pos, &t) in ts.iter().enumerate() {
                match usize::try_from(t) {
                    Ok(f) if f < dlen => match seen.get_mut(f) {
                        Some(s) if *s => o[f] = <T as num::Comb>::comb(k, o[f], x(pos)),
                        Some(s) => {
                            *s = true;
                            o[f] = x(pos);
                        }
                        None => return Err(pos),
                    },
                    _ if t == -1 => {}
                    _ => return Err(pos),
                }
            }
        }
    }
    Ok(())
}

/// `out[f] = out[f] op x` for each element `x` and its flat target `f` (a first touch of a
/// partial stores `x`).
fn apply(
    comb: &Comb<'_>,
    vm: &mut Option<Vm>,
    out: &mut Col,
    mut touched: Option<&mut [bool]>,
    flats: &[usize],
    xs: &Col,
) -> Result<()> {
    if let Comb::Known(k) = comb {
        return with_type!(out.ty(), T => {
            let o = T::vec_mut(out).ok_or_else(|| internal("a permute output of another type"))?;
            let xs = T::vec(xs).ok_or_else(|| internal("elements of another type"))?;
            let k = *k;
            match touched {
                None => {
                    for (&f, &x) in flats.iter().zip(xs) {
                        if f != DROP {
                            let slot = o.get_mut(f).ok_or_else(|| internal("a target past the output"))?;
                            *slot = <T as num::Comb>::comb(k, *slot, x);
                        }
                    }
                }
                Some(seen) => {
                    for (&f, &x) in flats.iter().zip(xs) {
                        if f != DROP {
                            match (o.get_mut(f), seen.get_mut(f)) {
                                (Some(slot), Some(s)) if *s => *slot = <T as num::Comb>::comb(k, *slot, x),
                                (Some(slot), Some(s)) => {
                                    *s = true;
                                    *slot = x;
                                }
                                _ => return Err(internal("a target past the output")),
                            }
                        }
                    }
                }
            }
            Ok(())
        });
    }
    let mut o = out.as_mut();
    for (pos, &f) in flats.iter().enumerate() {
        if f == DROP {
            continue;
        }
        let x = xs.get(pos).ok_or_else(|| internal("elements too short"))?;
        let first = match touched.as_deref_mut().and_then(|t| t.get_mut(f)) {
            Some(seen) if !*seen => {
                *seen = true;
                true
            }
            _ => false,
        };
        let v = if first {
            x
        } else {
            let old = o.get(f).ok_or_else(|| internal("a target past the output"))?;
            comb.apply(vm, old, x)?
        };
        o.set(f, v);
    }
    Ok(())
}
