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

mod branch;
mod iterate;
mod ops;
mod read;

use crate::col::{take, with_type, Col, Elem};
use crate::internal;
use crate::program::{Block, Op, Program};
use branch::exec_if;
use eqfuse_ir::error::Error;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;
use iterate::exec_loop;
use ops::simple;

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

/// The plan interpreter's formatting of shapes and indices, and its row-major position, so
/// that the VM's messages read as the reference's.
pub(crate) use eqfuse_ir::plan::eval::{flat_index, fmt_i64s, fmt_shape};

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
