//! The blocked VM: runs a compiled [`Program`] over a block of `n` elements at once.
//!
//! Every register is a typed column: `n` elements, or one element when the register is
//! uniform (the compiler knows which). Each instruction is one loop over its columns, typed
//! and monomorphised, so that arithmetic, comparisons, conversions and contiguous reads
//! compile to vector code and the instruction dispatch is paid once per block.
//!
//! A *frame* is a register file for a set of elements. The kernel's block runs in frame 0.
//! An `if` whose condition differs across the block runs each branch on the elements that
//! take it: their positions are compacted, the registers the branch reads are gathered into
//! the next frame, the branch runs there, and its result is scattered back — so a branch
//! never runs, and never fails, on an element that does not take it. A small branch that
//! cannot fail is instead run on the whole block and selected (speculation). An `iterate`
//! loop whose counts differ runs in phases: between two distinct counts the set of elements
//! still iterating is fixed, and it runs compacted in the next frame. A loop's elements that
//! reach a fixed point (an iteration leaves their state unchanged, bit for bit) are dropped
//! from it: the rest run compacted in the next frame, and the loop ends early when none is
//! left (the body is a pure function of the state and of registers the loop does not write).
//!
//! Reads of the function's own block indexed by the space's indices take slices of the
//! array (or runs of them) rather than element-by-element gathers; a slice-backed register
//! is the array's slice for the block itself, never copied.
//!
//! An error names the position, in the frame, of an element that fails; each frame maps it
//! back to its parent's position, so that the kernel can say which element failed.

use crate::col::{take, with_type, Col, Elem};
use crate::internal;
use crate::lanes::{GroupLoop, IntoAny, Src};
use crate::num::{pick, MulAdd};
use crate::num::{Float, Num};
use crate::program::{ArrInfo, Block, IfOp, LoopOp, Op, Program};
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::{Error, Span};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// An error at element `pos` of the frame that raised it.
#[derive(Debug)]
pub(crate) struct VmErr {
    pub err: Error,
    pub pos: usize,
}

impl VmErr {
    fn at(err: Error, pos: usize) -> VmErr {
        VmErr { err, pos }
    }
}

impl From<Error> for VmErr {
    fn from(err: Error) -> VmErr {
        VmErr { err, pos: 0 }
    }
}

type R<T = ()> = std::result::Result<T, VmErr>;

/// The registers of one program, for every frame depth it may need.
#[derive(Debug)]
pub(crate) struct Vm {
    frames: Vec<Vec<Col>>,
}

impl Vm {
    /// Empty registers for `p`.
    pub(crate) fn new(p: &Program<'_>) -> Vm {
        // frame 0 now, deeper frames when a compacted block first needs them
        let mut frames = vec![Vec::new(); p.depth + 1];
        if let Some(f) = frames.first_mut() {
            *f = registers(p);
        }
        Vm { frames }
    }

    /// Parameter `k`'s column in frame 0 (an `i64` index parameter), emptied for filling.
    pub(crate) fn index_param(&mut self, k: usize) -> Option<&mut Vec<i64>> {
        let col = self.frames.first_mut()?.get_mut(k)?;
        if !matches!(col, Col::I64(_)) {
            *col = Col::I64(Vec::new());
        }
        let v = i64::vec_mut(col)?;
        v.clear();
        Some(v)
    }

    /// Sets parameter `k` in frame 0.
    pub(crate) fn set_param(&mut self, k: usize, col: Col) -> R {
        let slot =
            self.frames.first_mut().and_then(|f| f.get_mut(k)).ok_or_else(|| internal("no parameter"))?;
        *slot = col;
        Ok(())
    }

    /// Parameter `k`'s column in frame 0, to be refilled (a copy of a value's column).
    pub(crate) fn param_mut(&mut self, k: usize) -> Option<&mut Col> {
        self.frames.first_mut()?.get_mut(k)
    }

    /// Runs the program on `n` elements (`n >= 1`) whose parameters are set. `contig`: the
    /// flat position of the first element when the parameters are a row-major run of the
    /// kernel's space starting there (contiguous reads then read slices).
    pub(crate) fn run(&mut self, p: &Program<'_>, n: usize, contig: Option<usize>) -> R {
        exec(&Cx { p, start: contig, n }, &p.body, &mut self.frames, n, contig)
    }

    /// Result register `r` after a run, and whether it is uniform (one element).
    pub(crate) fn reg(&self, p: &Program<'_>, r: usize) -> R<(&Col, bool)> {
        let col = self.frames.first().and_then(|f| f.get(r)).ok_or_else(|| internal("no result register"))?;
        Ok((col, uniform(p, r)))
    }

    /// Result `k` of the program at element `pos` after a run.
    pub(crate) fn result_at(&self, p: &Program<'_>, k: usize, pos: usize) -> R<Scalar> {
        let r = *p.ret.get(k).ok_or_else(|| internal("no such result"))?;
        let (col, uni) = self.reg(p, r)?;
        col.get(if uni { 0 } else { pos }).ok_or_else(|| internal("a result shorter than its block").into())
    }

    /// Runs a program of scalar parameters on one element: `args` are the parameters.
    pub(crate) fn call(&mut self, p: &Program<'_>, args: &[Scalar]) -> R<()> {
        if args.len() != p.nparams {
            return Err(internal(format!(
                "a function of {} parameters called with {} arguments",
                p.nparams,
                args.len()
            ))
            .into());
        }
        for (k, &a) in args.iter().enumerate() {
            let slot = self.param_mut(k).ok_or_else(|| internal("no parameter"))?;
            if slot.ty() != a.elem_type() {
                return Err(internal(format!(
                    "parameter {k} of type {} given a {}",
                    slot.ty(),
                    a.elem_type()
                ))
                .into());
            }
            slot.clear();
            slot.push(a);
        }
        self.run(p, 1, None)
    }

    /// [`Vm::call`] of a function with one result.
    pub(crate) fn call1(&mut self, p: &Program<'_>, args: &[Scalar]) -> R<Scalar> {
        self.call(p, args)?;
        if p.ret.len() != 1 {
            return Err(internal(format!(
                "a function with {} results used as a scalar function",
                p.ret.len()
            ))
            .into());
        }
        self.result_at(p, 0, 0)
    }
}

/// A register file for `p`: an empty column of each register's type.
fn registers(p: &Program<'_>) -> Vec<Col> {
    p.types.iter().map(|&t| Col::new(t)).collect()
}

/// The next frame, made on first use.
fn next_frame<'f>(p: &Program<'_>, deeper: &'f mut [Vec<Col>], what: &str) -> R<&'f mut Vec<Col>> {
    let sub = deeper.first_mut().ok_or_else(|| internal(format!("no frame for {what}")))?;
    if sub.len() != p.types.len() {
        *sub = registers(p);
    }
    Ok(sub)
}

fn uniform(p: &Program<'_>, r: usize) -> bool {
    p.uniform.get(r).copied().unwrap_or(false)
}

fn ty(p: &Program<'_>, r: usize) -> ElemType {
    p.types.get(r).copied().unwrap_or(ElemType::Bool)
}

/// A program running on a frame of `n` elements; `start`: the flat position of the first
/// when the frame is a contiguous run of the kernel's space (the function's own block).
pub(crate) struct Cx<'a, 's> {
    p: &'a Program<'s>,
    start: Option<usize>,
    n: usize,
}

impl<'a, 's> Cx<'a, 's> {
    /// The same program on a compacted frame of `n` elements.
    fn sub(&self, n: usize) -> Cx<'a, 's> {
        Cx { p: self.p, start: None, n }
    }
}

impl<'s> std::ops::Deref for Cx<'_, 's> {
    type Target = Program<'s>;
    fn deref(&self) -> &Program<'s> {
        self.p
    }
}

/// An operand: one element broadcast, or a column.
#[derive(Clone, Copy)]
enum Opnd<'a, T> {
    S(T),
    V(&'a [T]),
}

impl<T: Copy> Opnd<'_, T> {
    fn at(&self, k: usize) -> Option<T> {
        match self {
            Opnd::S(x) => Some(*x),
            Opnd::V(v) => v.get(k).copied(),
        }
    }
}

fn opnd<'a, T: Elem>(p: &'a Cx<'_, '_>, regs: &'a [Col], r: usize) -> R<Opnd<'a, T>> {
    if let Some(&Some(arr)) = p.slice.get(r) {
        // a contiguous read that was never copied: the array's slice for this block
        let a = p.arrays.get(arr).ok_or_else(|| internal("an array slot out of range"))?;
        let data = T::of_ref(a.data).ok_or_else(|| internal(format!("register r{r} is not {}", T::TY)))?;
        let start = p.start.ok_or_else(|| internal("a slice read outside a contiguous block"))?;
        let s = start.checked_add(p.n).and_then(|end| data.get(start..end));
        return s.map(Opnd::V).ok_or_else(|| internal("a contiguous read past the array").into());
    }
    let v =
        regs.get(r).and_then(T::vec).ok_or_else(|| internal(format!("register r{r} is not {}", T::TY)))?;
    if uniform(p, r) {
        v.first()
            .map(|&x| Opnd::S(x))
            .ok_or_else(|| internal(format!("uniform register r{r} is empty")).into())
    } else {
        Ok(Opnd::V(v))
    }
}

fn slot(regs: &mut [Col], r: usize) -> R<&mut Col> {
    regs.get_mut(r).ok_or_else(|| internal(format!("register r{r} out of range")).into())
}

/// Writes `out` into register `dst`.
fn put<T: Elem>(regs: &mut [Col], dst: usize, out: Vec<T>) -> R {
    *slot(regs, dst)? = T::wrap(out);
    Ok(())
}

/// `dst = f(a)` elementwise.
#[inline(always)]
fn map1<A: Elem, O: Elem>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, a: usize, f: impl Fn(A) -> O) -> R {
    let mut out = take::<O>(slot(regs, dst)?);
    out.clear();
    match opnd::<A>(p, regs, a)? {
        Opnd::S(x) => out.push(f(x)),
        Opnd::V(xs) => out.extend(xs.iter().map(|&x| f(x))),
    }
    put(regs, dst, out)
}

/// `dst = f(a, b)` elementwise.
#[inline(always)]
fn map2<A: Elem, B: Elem, O: Elem>(
    p: &Cx<'_, '_>,
    regs: &mut [Col],
    dst: usize,
    a: usize,
    b: usize,
    f: impl Fn(A, B) -> O,
) -> R {
    let mut out = take::<O>(slot(regs, dst)?);
    out.clear();
    match (opnd::<A>(p, regs, a)?, opnd::<B>(p, regs, b)?) {
        (Opnd::V(xs), Opnd::V(ys)) => out.extend(xs.iter().zip(ys).map(|(&x, &y)| f(x, y))),
        (Opnd::V(xs), Opnd::S(y)) => out.extend(xs.iter().map(|&x| f(x, y))),
        (Opnd::S(x), Opnd::V(ys)) => out.extend(ys.iter().map(|&y| f(x, y))),
        (Opnd::S(x), Opnd::S(y)) => out.push(f(x, y)),
    }
    put(regs, dst, out)
}

/// `dst = a * b + c` and its kin ([`MulAdd`]).
fn mul_add<T: Num>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, args: [usize; 3], form: MulAdd) -> R {
    match form {
        MulAdd::ProdPlus => map3::<T>(p, regs, dst, args, |x, y, z| T::add(T::mul(x, y), z)),
        MulAdd::PlusProd => map3::<T>(p, regs, dst, args, |x, y, z| T::add(z, T::mul(x, y))),
        MulAdd::ProdMinus => map3::<T>(p, regs, dst, args, |x, y, z| T::sub(T::mul(x, y), z)),
        MulAdd::MinusProd => map3::<T>(p, regs, dst, args, |x, y, z| T::sub(z, T::mul(x, y))),
    }
}

/// `dst = f(a, b, c)` elementwise (`clamp`, multiply-add), one loop per mix of broadcast
/// and column operands; a uniform result (every operand uniform) is one value, as in
/// [`map2`].
#[inline(always)]
fn map3<T: Elem>(
    p: &Cx<'_, '_>,
    regs: &mut [Col],
    dst: usize,
    args: [usize; 3],
    f: impl Fn(T, T, T) -> T,
) -> R {
    let mut out = take::<T>(slot(regs, dst)?);
    out.clear();
    let [a, b, c] = args;
    let (x, y, z) = (opnd::<T>(p, regs, a)?, opnd::<T>(p, regs, b)?, opnd::<T>(p, regs, c)?);
    // a broadcast operand is captured by the loop's closure, not zipped in as a
    // `repeat`: a zip with `repeat` does not vectorise, a zip of slices does
    match (x, y, z) {
        (Opnd::V(xs), Opnd::V(ys), Opnd::V(zs)) => {
            out.extend(xs.iter().zip(ys).zip(zs).map(|((&x, &y), &z)| f(x, y, z)))
        }
        (Opnd::V(xs), Opnd::V(ys), Opnd::S(z)) => out.extend(xs.iter().zip(ys).map(|(&x, &y)| f(x, y, z))),
        (Opnd::V(xs), Opnd::S(y), Opnd::V(zs)) => out.extend(xs.iter().zip(zs).map(|(&x, &z)| f(x, y, z))),
        (Opnd::S(x), Opnd::V(ys), Opnd::V(zs)) => out.extend(ys.iter().zip(zs).map(|(&y, &z)| f(x, y, z))),
        (Opnd::V(xs), Opnd::S(y), Opnd::S(z)) => out.extend(xs.iter().map(|&x| f(x, y, z))),
        (Opnd::S(x), Opnd::V(ys), Opnd::S(z)) => out.extend(ys.iter().map(|&y| f(x, y, z))),
        (Opnd::S(x), Opnd::S(y), Opnd::V(zs)) => out.extend(zs.iter().map(|&z| f(x, y, z))),
        (Opnd::S(x), Opnd::S(y), Opnd::S(z)) => out.push(f(x, y, z)),
    }
    put(regs, dst, out)
}

/// Runs `block` on `n` elements in `frames[0]` (deeper frames for compacted branches).
pub(crate) fn exec(
    p: &Cx<'_, '_>,
    block: &Block,
    frames: &mut [Vec<Col>],
    n: usize,
    contig: Option<usize>,
) -> R {
    for op in &block.ops {
        exec_op(p, op, frames, n, contig)?;
    }
    Ok(())
}

/// One instruction of a block.
#[inline]
fn exec_op(p: &Cx<'_, '_>, op: &Op, frames: &mut [Vec<Col>], n: usize, contig: Option<usize>) -> R {
    match op {
        Op::If(i) => exec_if(p, i, frames, n, contig),
        Op::Loop(l) => exec_loop(p, l, frames, n, contig),
        _ => {
            let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
            simple(p, op, regs, n, contig).map_err(|mut e| {
                e.err = p.p.locate(e.err, op.dst());
                e
            })
        }
    }
}

/// An instruction without nested blocks.
fn simple(p: &Cx<'_, '_>, op: &Op, regs: &mut [Col], n: usize, contig: Option<usize>) -> R {
    match op {
        Op::Const { dst, value } => {
            let s = slot(regs, *dst)?;
            if s.ty() != value.elem_type() {
                *s = Col::new(value.elem_type());
            }
            s.clear();
            s.push(*value);
            Ok(())
        }
        Op::Unary { dst, op, a } => unary(p, regs, *dst, *op, *a),
        Op::Binary { dst, op, a, b } => binary(p, regs, *dst, *op, *a, *b),
        Op::Call { dst, f, args } => call(p, regs, *dst, *f, args),
        Op::MulAdd { dst, a, b, c, form } => match ty(p, *dst) {
            ElemType::I32 => mul_add::<i32>(p, regs, *dst, [*a, *b, *c], *form),
            ElemType::I64 => mul_add::<i64>(p, regs, *dst, [*a, *b, *c], *form),
            ElemType::F32 => mul_add::<f32>(p, regs, *dst, [*a, *b, *c], *form),
            ElemType::F64 => mul_add::<f64>(p, regs, *dst, [*a, *b, *c], *form),
            ElemType::Bool => Err(internal("a multiply-add of bools").into()),
        },
        Op::Read { dst, arr, index, contiguous, params } => {
            let a = p.arrays.get(*arr).ok_or_else(|| internal("an array slot out of range"))?;
            let how = match contig {
                Some(start) if *contiguous => How::Slice(start),
                Some(start) if *params => How::Runs(start),
                _ => How::Gather,
            };
            with_type!(a.ty(), T => read::<T>(p, regs, *dst, a, index, n, how))
        }
        Op::Dim { dst, arr, axis } => {
            let a = p.arrays.get(*arr).ok_or_else(|| internal("an array slot out of range"))?;
            let out = match opnd::<i64>(p, regs, *axis)? {
                Opnd::S(k) => vec![dim(a, k).map_err(|e| VmErr::at(e, 0))?],
                Opnd::V(ks) => {
                    let mut out = Vec::with_capacity(ks.len());
                    for (pos, &k) in ks.iter().enumerate() {
                        out.push(dim(a, k).map_err(|e| VmErr::at(e, pos))?);
                    }
                    out
                }
            };
            put(regs, *dst, out)
        }
        Op::If(_) | Op::Loop(_) => Err(internal("a nested block run as a simple instruction").into()),
    }
}

fn unary(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, op: UnOp, a: usize) -> R {
    match (op, ty(p, a)) {
        (UnOp::Not, ElemType::Bool) => map1(p, regs, dst, a, |x: bool| !x),
        (UnOp::Neg, ElemType::I32) => map1(p, regs, dst, a, <i32 as Num>::neg),
        (UnOp::Neg, ElemType::I64) => map1(p, regs, dst, a, <i64 as Num>::neg),
        (UnOp::Neg, ElemType::F32) => map1(p, regs, dst, a, <f32 as Num>::neg),
        (UnOp::Neg, ElemType::F64) => map1(p, regs, dst, a, <f64 as Num>::neg),
        (op, t) => Err(internal(format!("`{}` on {t}", op.symbol())).into()),
    }
}

fn binary(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, op: BinOp, a: usize, b: usize) -> R {
    let t = ty(p, a);
    if op.is_comparison() {
        return with_type!(t, T => compare::<T>(p, regs, dst, op, a, b));
    }
    match t {
        ElemType::Bool => match op {
            BinOp::And => map2(p, regs, dst, a, b, |x: bool, y: bool| x && y),
            BinOp::Or => map2(p, regs, dst, a, b, |x: bool, y: bool| x || y),
            _ => Err(internal(format!("`{}` on bool", op.symbol())).into()),
        },
        ElemType::I32 => arith::<i32>(p, regs, dst, op, a, b),
        ElemType::I64 => arith::<i64>(p, regs, dst, op, a, b),
        ElemType::F32 => arith::<f32>(p, regs, dst, op, a, b),
        ElemType::F64 => arith::<f64>(p, regs, dst, op, a, b),
    }
}

fn compare<T: Elem>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, op: BinOp, a: usize, b: usize) -> R {
    match op {
        BinOp::Eq => map2(p, regs, dst, a, b, |x: T, y: T| x == y),
        BinOp::Ne => map2(p, regs, dst, a, b, |x: T, y: T| x != y),
        BinOp::Lt => map2(p, regs, dst, a, b, |x: T, y: T| x < y),
        BinOp::Le => map2(p, regs, dst, a, b, |x: T, y: T| x <= y),
        BinOp::Gt => map2(p, regs, dst, a, b, |x: T, y: T| x > y),
        _ => map2(p, regs, dst, a, b, |x: T, y: T| x >= y),
    }
}

fn arith<T: Num>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, op: BinOp, a: usize, b: usize) -> R {
    match op {
        BinOp::Add => map2(p, regs, dst, a, b, T::add),
        BinOp::Sub => map2(p, regs, dst, a, b, T::sub),
        BinOp::Mul => map2(p, regs, dst, a, b, T::mul),
        BinOp::Div | BinOp::Rem => {
            if T::INT {
                check_divisor::<T>(p, regs, op, a, b)?;
            }
            if op == BinOp::Div {
                map2(p, regs, dst, a, b, T::div)
            } else {
                map2(p, regs, dst, a, b, T::rem)
            }
        }
        _ => Err(internal(format!("`{}` on {}", op.symbol(), T::TY)).into()),
    }
}

/// Integer division: the first element whose divisor is 0 fails, with the reference's
/// message.
fn check_divisor<T: Num>(p: &Cx<'_, '_>, regs: &[Col], op: BinOp, a: usize, b: usize) -> R {
    let pos = match opnd::<T>(p, regs, b)? {
        Opnd::S(y) => y.is_zero().then_some(0),
        Opnd::V(ys) => ys.iter().position(|y| y.is_zero()),
    };
    let Some(pos) = pos else { return Ok(()) };
    let x = opnd::<T>(p, regs, a)?.at(pos).ok_or_else(|| internal("a register shorter than its block"))?;
    let y = opnd::<T>(p, regs, b)?.at(pos).ok_or_else(|| internal("a register shorter than its block"))?;
    match eqfuse_ir::interp::scalar::binary(op, x.scalar(), y.scalar(), Span::default()) {
        Err(e) => Err(VmErr::at(e, pos)),
        Ok(_) => Err(internal("a division by zero that did not fail").into()),
    }
}

fn call(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, f: ScalarFn, args: &[usize]) -> R {
    let a = *args.first().ok_or_else(|| internal("a call without arguments"))?;
    let t = ty(p, a);
    let b = args.get(1).copied().unwrap_or(a);
    match f {
        ScalarFn::Convert(to) => convert(p, regs, dst, a, t, to),
        ScalarFn::Min => match t {
            ElemType::Bool => map2(p, regs, dst, a, b, |x: bool, y: bool| x & y),
            ElemType::I32 => map2(p, regs, dst, a, b, <i32 as Num>::vmin),
            ElemType::I64 => map2(p, regs, dst, a, b, <i64 as Num>::vmin),
            ElemType::F32 => map2(p, regs, dst, a, b, <f32 as Num>::vmin),
            ElemType::F64 => map2(p, regs, dst, a, b, <f64 as Num>::vmin),
        },
        ScalarFn::Max => match t {
            ElemType::Bool => map2(p, regs, dst, a, b, |x: bool, y: bool| x | y),
            ElemType::I32 => map2(p, regs, dst, a, b, <i32 as Num>::vmax),
            ElemType::I64 => map2(p, regs, dst, a, b, <i64 as Num>::vmax),
            ElemType::F32 => map2(p, regs, dst, a, b, <f32 as Num>::vmax),
            ElemType::F64 => map2(p, regs, dst, a, b, <f64 as Num>::vmax),
        },
        ScalarFn::Clamp => {
            let c = args.get(2).copied().ok_or_else(|| internal("`clamp` of two arguments"))?;
            let three = [a, b, c];
            match t {
                ElemType::Bool => map3(p, regs, dst, three, |x: bool, lo, hi| (x | lo) & hi),
                ElemType::I32 => map3(p, regs, dst, three, |x: i32, lo, hi| Ord::min(Ord::max(x, lo), hi)),
                ElemType::I64 => map3(p, regs, dst, three, |x: i64, lo, hi| Ord::min(Ord::max(x, lo), hi)),
                ElemType::F32 => map3(p, regs, dst, three, |x: f32, lo, hi| Num::vmin(Num::vmax(x, lo), hi)),
                ElemType::F64 => map3(p, regs, dst, three, |x: f64, lo, hi| Num::vmin(Num::vmax(x, lo), hi)),
            }
        }
        ScalarFn::Abs => match t {
            ElemType::I32 => map1(p, regs, dst, a, <i32 as Num>::abs),
            ElemType::I64 => map1(p, regs, dst, a, <i64 as Num>::abs),
            ElemType::F32 => map1(p, regs, dst, a, <f32 as Num>::abs),
            ElemType::F64 => map1(p, regs, dst, a, <f64 as Num>::abs),
            ElemType::Bool => Err(internal("`abs` on bool").into()),
        },
        _ => match t {
            ElemType::F32 => float_call::<f32>(p, regs, dst, f, a, b),
            ElemType::F64 => float_call::<f64>(p, regs, dst, f, a, b),
            _ => Err(internal(format!("`{}` on {t}", f.name())).into()),
        },
    }
}

fn float_call<T: Float>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, f: ScalarFn, a: usize, b: usize) -> R {
    match f {
        ScalarFn::Sqrt => map1(p, regs, dst, a, T::sqrt),
        ScalarFn::Exp => map1(p, regs, dst, a, T::exp),
        ScalarFn::Log => map1(p, regs, dst, a, T::ln),
        ScalarFn::Sin => map1(p, regs, dst, a, T::sin),
        ScalarFn::Cos => map1(p, regs, dst, a, T::cos),
        ScalarFn::Tan => map1(p, regs, dst, a, T::tan),
        ScalarFn::Tanh => map1(p, regs, dst, a, T::tanh),
        ScalarFn::Floor => map1(p, regs, dst, a, T::floor),
        ScalarFn::Ceil => map1(p, regs, dst, a, T::ceil),
        ScalarFn::Round => map1(p, regs, dst, a, T::round),
        ScalarFn::Pow => map2(p, regs, dst, a, b, T::powf),
        ScalarFn::Atan2 => map2(p, regs, dst, a, b, T::atan2),
        other => Err(internal(format!("`{}` on {}", other.name(), T::TY)).into()),
    }
}

/// Conversions: Rust's `as` (truncating toward zero, saturating, NaN to 0), exactly the
/// reference's `convert`.
#[allow(clippy::cast_lossless)]
fn convert(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, a: usize, from: ElemType, to: ElemType) -> R {
    macro_rules! cv {
        ($S:ty, $D:ty, $f:expr) => {
            map1::<$S, $D>(p, regs, dst, a, $f)
        };
    }
    conversions!(from, to, cv)
}

/// Formats a shape as `[3, 4]`.
pub(crate) fn fmt_shape(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// Formats `i64`s as `[3, -4]`.
pub(crate) fn fmt_i64s(ix: &[i64]) -> String {
    let parts: Vec<String> = ix.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

/// The reference's message for a read out of bounds.
fn out_of_bounds(a: &ArrInfo<'_>, ix: &[i64]) -> Error {
    let shown = match ix {
        [i] => format!("index {i}"),
        _ => format!("index {}", fmt_i64s(ix)),
    };
    let bounds = match a.shape.as_slice() {
        [n] => format!("of length {n}"),
        _ => format!("of shape {}", fmt_shape(&a.shape)),
    };
    Error::index(Span::default(), format!("{shown} out of bounds for `{}` {bounds}", a.name))
}

/// `size a axis`, with the reference's message for an axis out of range.
fn dim(a: &ArrInfo<'_>, axis: i64) -> Result<i64, Error> {
    match usize::try_from(axis).ok().and_then(|k| a.shape.get(k)) {
        Some(&d) => i64::try_from(d).map_err(|_| Error::limit("a dimension overflows i64")),
        None => Err(Error::index(
            Span::default(),
            format!(
                "`size`: dimension {axis} out of bounds for `{}` of rank {} (shape {})",
                a.name,
                a.shape.len(),
                fmt_shape(&a.shape)
            ),
        )),
    }
}

/// The index of element `pos` (for an error message).
fn index_at(p: &Cx<'_, '_>, regs: &[Col], index: &[usize], pos: usize) -> R<Vec<i64>> {
    let mut ix = Vec::with_capacity(index.len());
    for &r in index {
        let v =
            opnd::<i64>(p, regs, r)?.at(pos).ok_or_else(|| internal("a register shorter than its block"))?;
        ix.push(v);
    }
    Ok(ix)
}

/// How a read finds its elements.
#[derive(Clone, Copy)]
enum How {
    /// A slice of the array, from this flat position (the index is the parameters, in
    /// order, into an array of the space's shape).
    Slice(usize),
    /// Runs along the innermost dimension of the space, from this flat position (every
    /// index is a parameter).
    Runs(usize),
    /// Element by element.
    Gather,
}

/// `dst = a[index]`.
fn read<T: Elem>(
    p: &Cx<'_, '_>,
    regs: &mut [Col],
    dst: usize,
    a: &ArrInfo<'_>,
    index: &[usize],
    n: usize,
    how: How,
) -> R {
    let data = T::of_ref(a.data).ok_or_else(|| internal("an array of another type"))?;
    let mut out = take::<T>(slot(regs, dst)?);
    out.clear();
    let res = match how {
        How::Runs(start) if !uniform(p, dst) => read_runs(p, &mut out, data, a, index, start, n),
        How::Slice(start) if !uniform(p, dst) => {
            read_into(p, regs, &mut out, data, a, index, false, n, Some(start))
        }
        _ => read_into(p, regs, &mut out, data, a, index, uniform(p, dst), n, None),
    };
    put(regs, dst, out)?;
    res
}

/// A read whose every index is a parameter of the function (an index of the space), on a
/// contiguous block from flat position `start`: along each run of the innermost dimension
/// the outer parameters are constant and the innermost one counts up, so each run reads a
/// slice of the array (`v[j]`, `m[i, j]`), a strided run (`m[j, i]`) or one element
/// repeated (`v[i]`), with the bounds checked once per run.
fn read_runs<T: Elem>(
    p: &Cx<'_, '_>,
    out: &mut Vec<T>,
    data: &[T],
    a: &ArrInfo<'_>,
    index: &[usize],
    start: usize,
    n: usize,
) -> R {
    let space = p.space.as_deref().ok_or_else(|| internal("a parameter read without a space"))?;
    let (&inner, _) = space.split_last().ok_or_else(|| internal("a parameter read over an empty space"))?;
    let last = space.len() - 1;
    if inner == 0 || index.len() != a.shape.len() || index.iter().any(|&d| d > last) {
        return Err(internal("a parameter read that does not fit its space").into());
    }
    // the multi-index of the run's first element
    let mut ix = vec![0usize; space.len()];
    let mut flat = start;
    for (slot, &d) in ix.iter_mut().zip(space).rev() {
        *slot = flat % d;
        flat /= d;
    }
    out.reserve(n);
    let mut done = 0;
    while done < n {
        let pos_inner = ix.get(last).copied().unwrap_or(0);
        let run = (n - done).min(inner - pos_inner);
        let (mut base, mut step, mut bad) = (0usize, 0usize, None::<usize>);
        for ((&d, &dim), &stride) in index.iter().zip(&a.shape).zip(&a.strides) {
            let v = ix.get(d).copied().unwrap_or(0);
            if d == last {
                if v + run > dim {
                    let k = dim.saturating_sub(v);
                    bad = Some(bad.map_or(k, |b: usize| b.min(k)));
                }
                step += stride;
            } else if v >= dim {
                bad = Some(0);
            }
            base += v * stride;
        }
        if let Some(k) = bad {
            let ix: Vec<i64> = index
                .iter()
                .map(|&d| {
                    let v = ix.get(d).copied().unwrap_or(0) + if d == last { k } else { 0 };
                    v as i64
                })
                .collect();
            return Err(VmErr::at(out_of_bounds(a, &ix), done + k));
        }
        let past = || internal("a read past the array");
        if step == 1 {
            out.extend_from_slice(data.get(base..base + run).ok_or_else(past)?);
        } else if step == 0 {
            let x = *data.get(base).ok_or_else(past)?;
            out.extend(std::iter::repeat_n(x, run));
        } else {
            let end = base + (run - 1) * step;
            if end >= data.len() {
                return Err(past().into());
            }
            out.extend((0..run).map(|k| data[base + k * step]));
        }
        done += run;
        // the next run starts at the next row
        if let Some(v) = ix.get_mut(last) {
            *v += run;
        }
        for d in (1..space.len()).rev() {
            if ix.get(d).copied().unwrap_or(0) < space.get(d).copied().unwrap_or(1) {
                break;
            }
            if let Some(v) = ix.get_mut(d) {
                *v = 0;
            }
            if let Some(v) = ix.get_mut(d - 1) {
                *v += 1;
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn read_into<T: Elem>(
    p: &Cx<'_, '_>,
    regs: &[Col],
    out: &mut Vec<T>,
    data: &[T],
    a: &ArrInfo<'_>,
    index: &[usize],
    uni: bool,
    n: usize,
    contig: Option<usize>,
) -> R {
    if uni {
        let ix = index_at(p, regs, index, 0)?;
        let v = flat_index(&a.shape, &ix).and_then(|f| data.get(f)).ok_or_else(|| out_of_bounds(a, &ix))?;
        out.push(*v);
        return Ok(());
    }
    if let Some(start) = contig {
        // the index function reads its own element: a slice of the array
        let s = start.checked_add(n).and_then(|end| data.get(start..end));
        out.extend_from_slice(s.ok_or_else(|| internal("a contiguous read past the array"))?);
        return Ok(());
    }
    out.reserve(n);
    if let [r] = index {
        let Opnd::V(ix) = opnd::<i64>(p, regs, *r)? else {
            return Err(internal("a varying read of a uniform index").into());
        };
        for (pos, &i) in ix.iter().enumerate() {
            match usize::try_from(i).ok().and_then(|u| data.get(u)) {
                Some(&v) => out.push(v),
                None => return Err(VmErr::at(out_of_bounds(a, &[i]), pos)),
            }
        }
        return Ok(());
    }
    // several dimensions: row-major offsets, checked dimension by dimension
    let mut flat = vec![0usize; n];
    for ((&r, &d), &stride) in index.iter().zip(&a.shape).zip(&a.strides) {
        let bad = match opnd::<i64>(p, regs, r)? {
            Opnd::S(i) => match usize::try_from(i).ok().filter(|&u| u < d) {
                Some(u) => {
                    let off = u * stride;
                    flat.iter_mut().for_each(|f| *f += off);
                    None
                }
                None => Some(0),
            },
            Opnd::V(ix) => {
                let mut bad = None;
                for (pos, (f, &i)) in flat.iter_mut().zip(ix).enumerate() {
                    match usize::try_from(i).ok().filter(|&u| u < d) {
                        Some(u) => *f += u * stride,
                        None => {
                            bad = Some(pos);
                            break;
                        }
                    }
                }
                bad
            }
        };
        if let Some(pos) = bad {
            let ix = index_at(p, regs, index, pos)?;
            return Err(VmErr::at(out_of_bounds(a, &ix), pos));
        }
    }
    for &f in &flat {
        out.push(*data.get(f).ok_or_else(|| internal("a read past the array"))?);
    }
    Ok(())
}

/// The row-major position of `ix` in `shape` (`None`: out of bounds).
pub(crate) fn flat_index(shape: &[usize], ix: &[i64]) -> Option<usize> {
    if shape.len() != ix.len() {
        return None;
    }
    let mut flat = 0usize;
    for (&d, &i) in shape.iter().zip(ix) {
        let i = usize::try_from(i).ok().filter(|&i| i < d)?;
        flat = flat.checked_mul(d)?.checked_add(i)?;
    }
    Some(flat)
}

/// `dst = src` (broadcast to `n` when `src` is uniform and `dst` is not).
fn assign(p: &Cx<'_, '_>, regs: &mut [Col], src: usize, dst: usize, n: usize) -> R {
    if src == dst {
        return Ok(());
    }
    with_type!(ty(p, src), T => {
        let mut out = take::<T>(slot(regs, dst)?);
        out.clear();
        match opnd::<T>(p, regs, src)? {
            Opnd::S(x) if uniform(p, dst) => out.push(x),
            Opnd::S(x) => out.resize(n, x),
            Opnd::V(xs) => out.extend_from_slice(xs),
        }
        put(regs, dst, out)
    })
}

/// Copies `src`'s elements at `pos` into `dst` (the whole of a uniform one).
fn gather(src: &Col, uni: bool, pos: &[u32], dst: &mut Col) -> R {
    with_type!(src.ty(), T => {
        let s = T::vec(src).ok_or_else(|| internal("a column of another type"))?;
        let mut d = take::<T>(dst);
        d.clear();
        if uni {
            d.extend(s.first().copied());
        } else {
            if pos.last().is_some_and(|&k| k as usize >= s.len()) {
                return Err(internal("a gather past the column").into());
            }
            d.extend(pos.iter().map(|&k| s[k as usize]));
        }
        *dst = T::wrap(d);
        Ok(())
    })
}

/// `out[pos[j]] = src[j]` (every `out[pos[j]] = src` when `src` is uniform).
fn scatter<T: Elem>(src: Opnd<'_, T>, pos: &[u32], out: &mut [T]) -> R {
    if pos.last().is_some_and(|&k| k as usize >= out.len()) {
        return Err(internal("a scatter past the column").into());
    }
    match src {
        Opnd::S(x) => pos.iter().for_each(|&k| out[k as usize] = x),
        Opnd::V(xs) => {
            if xs.len() != pos.len() {
                return Err(internal("a scatter of a column of another length").into());
            }
            pos.iter().zip(xs).for_each(|(&k, &x)| out[k as usize] = x)
        }
    }
    Ok(())
}

/// Maps an error at a compacted frame's position to the parent's.
fn remap(pos: &[u32]) -> impl Fn(VmErr) -> VmErr + '_ {
    move |mut e| {
        e.pos = pos.get(e.pos).map_or(0, |&k| k as usize);
        e
    }
}

fn exec_if(p: &Cx<'_, '_>, i: &IfOp, frames: &mut [Vec<Col>], n: usize, contig: Option<usize>) -> R {
    let regs = frames.first().ok_or_else(|| internal("no frame"))?;
    let taken = match opnd::<bool>(p, regs, i.cond)? {
        Opnd::S(c) => Some(c),
        Opnd::V(cs) => {
            let t = cs.iter().filter(|&&c| c).count();
            if t == n {
                Some(true)
            } else if t == 0 {
                Some(false)
            } else {
                None
            }
        }
    };
    if let Some(c) = taken {
        let br = if c { &i.then_ } else { &i.else_ };
        exec(p, &br.block, frames, n, contig)?;
        let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
        // the branch's own result register is dead after the `if`: move its column
        let own = !br.free.contains(&br.ret)
            && uniform(p, br.ret) == uniform(p, i.dst)
            && !matches!(p.slice.get(br.ret), Some(Some(_)));
        if own && br.ret != i.dst && br.ret < regs.len() && i.dst < regs.len() {
            regs.swap(br.ret, i.dst);
            return Ok(());
        }
        return assign(p, regs, br.ret, i.dst, n);
    }
    if i.speculate {
        exec(p, &i.then_.block, frames, n, contig)?;
        exec(p, &i.else_.block, frames, n, contig)?;
        let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
        return with_type!(ty(p, i.dst), T => select::<T>(p, regs, i));
    }
    with_type!(ty(p, i.dst), T => compacted_if::<T>(p, i, frames, n))
}

/// `dst = cond ? then : else`, both computed on every element.
fn select<T: Elem>(p: &Cx<'_, '_>, regs: &mut [Col], i: &IfOp) -> R {
    let mut out = take::<T>(slot(regs, i.dst)?);
    out.clear();
    let Opnd::V(cs) = opnd::<bool>(p, regs, i.cond)? else {
        return Err(internal("a select on a uniform condition").into());
    };
    match (opnd::<T>(p, regs, i.then_.ret)?, opnd::<T>(p, regs, i.else_.ret)?) {
        (Opnd::V(t), Opnd::V(e)) => out.extend(cs.iter().zip(t).zip(e).map(|((&c, &t), &e)| pick(c, t, e))),
        (Opnd::V(t), Opnd::S(e)) => out.extend(cs.iter().zip(t).map(|(&c, &t)| pick(c, t, e))),
        (Opnd::S(t), Opnd::V(e)) => out.extend(cs.iter().zip(e).map(|(&c, &e)| pick(c, t, e))),
        (Opnd::S(t), Opnd::S(e)) => out.extend(cs.iter().map(|&c| pick(c, t, e))),
    }
    put(regs, i.dst, out)
}

/// An `if` whose condition differs across the elements: each branch runs on the elements
/// that take it, compacted into the next frame.
fn compacted_if<T: Elem>(p: &Cx<'_, '_>, i: &IfOp, frames: &mut [Vec<Col>], n: usize) -> R {
    let (regs, deeper) = frames.split_first_mut().ok_or_else(|| internal("no frame"))?;
    let (tpos, epos) = {
        let Opnd::V(cs) = opnd::<bool>(p, regs, i.cond)? else {
            return Err(internal("a compacted if on a uniform condition").into());
        };
        partition(cs)
    };
    let mut out = take::<T>(slot(regs, i.dst)?);
    out.clear();
    out.resize(n, T::default());
    let res = (|| -> R {
        for (br, pos) in [(&i.then_, &tpos), (&i.else_, &epos)] {
            if br.block.ops.is_empty() {
                scatter_at(p, regs, br.ret, pos, &mut out)?;
                continue;
            }
            let sub = next_frame(p, deeper, "a branch")?;
            for &r in &br.free {
                let src = regs.get(r).ok_or_else(|| internal("no register"))?;
                let dst = sub.get_mut(r).ok_or_else(|| internal("no register"))?;
                gather(src, uniform(p, r), pos, dst)?;
            }
            exec(&p.sub(pos.len()), &br.block, deeper, pos.len(), None).map_err(remap(pos))?;
            let sub = deeper.first().ok_or_else(|| internal("no frame for a branch"))?;
            scatter(opnd::<T>(p, sub, br.ret)?, pos, &mut out)?;
        }
        Ok(())
    })();
    put(regs, i.dst, out)?;
    res
}

/// The positions whose condition holds and those whose condition does not, without a
/// branch per element (conditions are often unpredictable).
fn partition(cs: &[bool]) -> (Vec<u32>, Vec<u32>) {
    let n = cs.len();
    let (mut t, mut e) = (vec![0u32; n], vec![0u32; n]);
    let (mut i, mut j) = (0usize, 0usize);
    for (k, &c) in cs.iter().enumerate() {
        // both slots exist: i + j == k < n
        if let (Some(ti), Some(ej)) = (t.get_mut(i), e.get_mut(j)) {
            *ti = k as u32;
            *ej = k as u32;
        }
        i += usize::from(c);
        j += usize::from(!c);
    }
    t.truncate(i);
    e.truncate(j);
    (t, e)
}

/// `out[pos[j]] = reg[pos[j]]` (a branch with no code of its own).
fn scatter_at<T: Elem>(p: &Cx<'_, '_>, regs: &[Col], r: usize, pos: &[u32], out: &mut [T]) -> R {
    match opnd::<T>(p, regs, r)? {
        Opnd::S(x) => scatter(Opnd::S(x), pos, out),
        Opnd::V(xs) => {
            if xs.len() != out.len() || pos.last().is_some_and(|&k| k as usize >= xs.len()) {
                return Err(internal("a register of another length than its block").into());
            }
            pos.iter().for_each(|&k| out[k as usize] = xs[k as usize]);
            Ok(())
        }
    }
}

fn exec_loop(p: &Cx<'_, '_>, l: &LoopOp, frames: &mut [Vec<Col>], n: usize, contig: Option<usize>) -> R {
    let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
    for (&v, &init) in l.vars.iter().zip(&l.inits) {
        assign(p, regs, init, v, n)?;
    }
    if let Some(g) = &l.group {
        group_loop(p, l, g, regs, n)?;
        for (&d, &v) in l.dsts.iter().zip(&l.vars) {
            assign(p, regs, v, d, n)?;
        }
        return Ok(());
    }
    let counts: Option<Vec<i64>> = match opnd::<i64>(p, regs, l.count)? {
        Opnd::S(c) => {
            iterate(p, l, frames, n, c, contig, true)?;
            None
        }
        Opnd::V(cs) => Some(cs.to_vec()),
    };
    if let Some(counts) = counts {
        let lo = counts.iter().copied().min().unwrap_or(0);
        let hi = counts.iter().copied().max().unwrap_or(0);
        if lo == hi {
            iterate(p, l, frames, n, hi, contig, true)?;
        } else {
            phases(p, l, frames, n, &counts, contig)?;
        }
    }
    let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
    for (&d, &v) in l.dsts.iter().zip(&l.vars) {
        assign(p, regs, v, d, n)?;
    }
    Ok(())
}

/// A loop whose body cannot fail, run on small groups of elements ([`crate::lanes`]).
fn group_loop(p: &Cx<'_, '_>, l: &LoopOp, g: &GroupLoop, regs: &mut [Col], n: usize) -> R {
    let mut outs: Vec<Col> = Vec::with_capacity(g.vars.len());
    for &(v, _) in &g.vars {
        outs.push(with_type!(ty(p, v), T => T::wrap(Vec::with_capacity(n))));
    }
    {
        let mut srcs = Vec::with_capacity(g.loads.len());
        for &(r, _) in &g.loads {
            srcs.push(with_type!(ty(p, r), T => src::<T>(p, regs, r)?.any()));
        }
        let counts = src::<i64>(p, regs, l.count)?;
        g.run(&srcs, counts, n, &mut outs);
    }
    for (&(v, _), col) in g.vars.iter().zip(outs) {
        if col.len() != n {
            return Err(internal("a loop state of another length than its block").into());
        }
        *slot(regs, v)? = col;
    }
    Ok(())
}

/// Register `r` as a group's source.
fn src<'a, T: Elem>(p: &'a Cx<'_, '_>, regs: &'a [Col], r: usize) -> R<Src<'a, T>> {
    Ok(match opnd::<T>(p, regs, r)? {
        Opnd::S(x) => Src::S(x),
        Opnd::V(xs) => Src::V(xs),
    })
}

/// A loop whose counts differ: between two distinct counts the elements still iterating
/// are a fixed set, run compacted (or in place when it is every element).
fn phases(
    p: &Cx<'_, '_>,
    l: &LoopOp,
    frames: &mut [Vec<Col>],
    n: usize,
    counts: &[i64],
    contig: Option<usize>,
) -> R {
    let mut steps: Vec<i64> = counts.iter().copied().filter(|&c| c > 0).collect();
    steps.sort_unstable();
    steps.dedup();
    let mut done = 0i64;
    for th in steps {
        let pos: Vec<u32> =
            counts.iter().enumerate().filter(|(_, &c)| c >= th).map(|(k, _)| k as u32).collect();
        let iters = th - done;
        done = th;
        if pos.len() == n {
            iterate(p, l, frames, n, iters, contig, true)?;
            continue;
        }
        let (regs, deeper) = frames.split_first_mut().ok_or_else(|| internal("no frame"))?;
        {
            let sub = next_frame(p, deeper, "a loop")?;
            for &r in &l.free {
                let src = regs.get(r).ok_or_else(|| internal("no register"))?;
                let dst = sub.get_mut(r).ok_or_else(|| internal("no register"))?;
                gather(src, uniform(p, r), &pos, dst)?;
            }
        }
        iterate(&p.sub(pos.len()), l, deeper, pos.len(), iters, None, false).map_err(remap(&pos))?;
        let sub = deeper.first().ok_or_else(|| internal("no frame for a loop"))?;
        for &v in &l.vars {
            with_type!(ty(p, v), T => {
                let mut out = take::<T>(slot(regs, v)?);
                let r = scatter(opnd::<T>(p, sub, v)?, &pos, &mut out);
                put(regs, v, out)?;
                r?;
            });
        }
    }
    Ok(())
}

/// Most iterations between two convergence checks of a loop whose elements keep changing.
const CONVERGE_MAX_GAP: i64 = 8;

/// Whether a compacted set of `m` elements of which `active` still change is worth
/// compacting again (a quarter or more have converged).
fn worth_compacting(active: usize, m: usize) -> bool {
    active < m - m / 4
}

/// Runs the loop body `iters` times on every element of the frame (state in `vars`).
///
/// With `converge` (the next frame is free for it), elements whose state an iteration
/// leaves unchanged, bit for bit, are at a fixed point: the body is a pure function of the
/// state and of registers the loop does not write, so every later iteration would leave
/// them unchanged too (and cannot fail on them, as this one did not). Once enough have
/// converged, the rest iterate compacted in the next frame ([`converged_iterate`]); when
/// all have, the loop stops early. The checks back off while no element converges.
#[allow(clippy::too_many_arguments)]
fn iterate(
    p: &Cx<'_, '_>,
    l: &LoopOp,
    frames: &mut [Vec<Col>],
    n: usize,
    iters: i64,
    contig: Option<usize>,
    converge: bool,
) -> R {
    let mut tmp: Vec<(usize, Col)> = Vec::new();
    let mut mask: Vec<bool> = Vec::new();
    let iters = Ord::max(iters, 0);
    let converge = converge && !l.vars.is_empty() && frames.len() > 1;
    let (mut gap, mut next_check) = (1i64, 1i64);
    for it in 0..iters {
        exec(p, &l.body, frames, n, contig)?;
        let regs = frames.first_mut().ok_or_else(|| internal("no frame"))?;
        let check = converge && it + 1 < iters && it + 1 >= next_check;
        if check {
            changed(p, l, regs, n, &mut mask)?;
        }
        step(p, l, regs, n, &mut tmp)?;
        if check {
            let active = mask.iter().filter(|&&c| c).count();
            if active == 0 {
                return Ok(());
            }
            if worth_compacting(active, n) {
                return converged_iterate(p, l, frames, &mask, iters - it - 1);
            }
            gap = if active == n { Ord::min(gap * 2, CONVERGE_MAX_GAP) } else { 1 };
            next_check = it + 1 + gap;
        }
    }
    Ok(())
}

/// The registers a compacted loop carries: its free registers and its state.
fn carried(l: &LoopOp) -> impl Iterator<Item = usize> + '_ {
    l.free.iter().copied().chain(l.vars.iter().copied().filter(|v| !l.free.contains(v)))
}

/// The rest of [`iterate`] (`rest` iterations) once some elements have converged: the
/// elements still changing (`mask`) iterate in the next frame, compacted again whenever
/// enough more converge; each element's state is written back to this frame.
fn converged_iterate(p: &Cx<'_, '_>, l: &LoopOp, frames: &mut [Vec<Col>], mask: &[bool], rest: i64) -> R {
    let (regs, deeper) = frames.split_first_mut().ok_or_else(|| internal("no frame"))?;
    let mut pos: Vec<u32> = mask.iter().enumerate().filter(|(_, &c)| c).map(|(k, _)| k as u32).collect();
    {
        let sub = next_frame(p, deeper, "a loop")?;
        for r in carried(l) {
            let src = regs.get(r).ok_or_else(|| internal("no register"))?;
            let dst = sub.get_mut(r).ok_or_else(|| internal("no register"))?;
            gather(src, uniform(p, r), &pos, dst)?;
        }
    }
    let mut tmp: Vec<(usize, Col)> = Vec::new();
    let mut keep: Vec<bool> = Vec::new();
    let (mut gap, mut next_check) = (1i64, 1i64);
    for it in 0..rest {
        let m = pos.len();
        exec(&p.sub(m), &l.body, deeper, m, None).map_err(remap(&pos))?;
        let sub = deeper.first_mut().ok_or_else(|| internal("no frame for a loop"))?;
        let check = it + 1 < rest && it + 1 >= next_check;
        if check {
            changed(p, l, sub, m, &mut keep)?;
        }
        step(p, l, sub, m, &mut tmp)?;
        if check {
            let active = keep.iter().filter(|&&c| c).count();
            if worth_compacting(active, m) {
                write_back(p, l, regs, sub, &pos)?;
                if active == 0 {
                    return Ok(());
                }
                for r in carried(l) {
                    if !uniform(p, r) {
                        with_type!(ty(p, r), T => {
                            let v = slot(sub, r).ok().and_then(T::vec_mut)
                                .ok_or_else(|| internal("a loop register of another type"))?;
                            retain(v, &keep)?;
                        });
                    }
                }
                retain(&mut pos, &keep)?;
            }
            gap = if active == m { Ord::min(gap * 2, CONVERGE_MAX_GAP) } else { 1 };
            next_check = it + 1 + gap;
        }
    }
    let sub = deeper.first().ok_or_else(|| internal("no frame for a loop"))?;
    write_back(p, l, regs, sub, &pos)
}

/// Keeps the elements of `v` whose `keep` is set.
fn retain<T: Copy>(v: &mut Vec<T>, keep: &[bool]) -> R {
    if v.len() != keep.len() {
        return Err(internal("a compaction of a column of another length").into());
    }
    let mut k = 0;
    v.retain(|_| {
        let c = keep.get(k).copied().unwrap_or(false);
        k += 1;
        c
    });
    Ok(())
}

/// Scatters the compacted frame's loop state `sub` back to `regs` at `pos`.
fn write_back(p: &Cx<'_, '_>, l: &LoopOp, regs: &mut [Col], sub: &[Col], pos: &[u32]) -> R {
    for &v in &l.vars {
        with_type!(ty(p, v), T => {
            let mut out = take::<T>(slot(regs, v)?);
            let r = scatter(opnd::<T>(p, sub, v)?, pos, &mut out);
            put(regs, v, out)?;
            r?;
        });
    }
    Ok(())
}

/// `mask[k]`: whether the iteration just run changes element `k`'s state (its next value
/// differs from its state, bit for bit, in some state register).
fn changed(p: &Cx<'_, '_>, l: &LoopOp, regs: &[Col], n: usize, mask: &mut Vec<bool>) -> R {
    mask.clear();
    mask.resize(n, false);
    for (&v, &nx) in l.vars.iter().zip(&l.nexts) {
        with_type!(ty(p, v), T => {
            let Opnd::V(old) = opnd::<T>(p, regs, v)? else {
                return Err(internal("a uniform loop state").into());
            };
            if old.len() != n {
                return Err(internal("a loop state of another length than its block").into());
            }
            match opnd::<T>(p, regs, nx)? {
                Opnd::V(new) => {
                    if new.len() != n {
                        return Err(internal("a next value of another length than its block").into());
                    }
                    mask.iter_mut().zip(old).zip(new).for_each(|((m, &a), &b)| *m |= !a.same(b));
                }
                Opnd::S(b) => mask.iter_mut().zip(old).for_each(|(m, &a)| *m |= !a.same(b)),
            }
        });
    }
    Ok(())
}

/// `vars = nexts`, all at once, on a frame of `n` elements.
fn step(p: &Cx<'_, '_>, l: &LoopOp, regs: &mut [Col], n: usize, tmp: &mut Vec<(usize, Col)>) -> R {
    // copy the nexts that are read elsewhere (other state, registers outside the body,
    // uniform ones) first, then swap in the body's own
    tmp.clear();
    for ((&v, &nx), &swap) in l.vars.iter().zip(&l.nexts).zip(&l.swap) {
        if !swap {
            let col = regs.get(nx).ok_or_else(|| internal("no register"))?;
            tmp.push((v, col.clone()));
        }
    }
    for ((&v, &nx), &swap) in l.vars.iter().zip(&l.nexts).zip(&l.swap) {
        if swap {
            if v >= regs.len() || nx >= regs.len() {
                return Err(internal("a loop register out of range").into());
            }
            regs.swap(v, nx);
        }
    }
    for (v, col) in tmp.drain(..) {
        let slot = slot(regs, v)?;
        *slot = col;
        if slot.len() != n {
            // broadcast a uniform next value to the (varying) state
            with_type!(ty(p, v), T => {
                let s = T::vec_mut(slot).ok_or_else(|| internal("a state of another type"))?;
                let x = s.first().copied().ok_or_else(|| internal("an empty uniform register"))?;
                s.clear();
                s.resize(n, x);
            });
        }
    }
    Ok(())
}
