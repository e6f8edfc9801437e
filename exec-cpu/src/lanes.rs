//! Loops run a small group of elements at a time, with their registers in L1.
//!
//! The blocked VM runs a loop body one instruction at a time over the whole frame, and
//! drops converged elements by compacting the frame: every iteration streams each register
//! of the frame through the cache, and an element that stops changing still costs until
//! enough others have stopped too. A loop whose body cannot fail — pure arithmetic,
//! comparisons, calls and `if`s of such branches (run as selects), no reads, no integer
//! division, no nested loops — runs instead on groups of [`W`] consecutive elements: the
//! body is flattened once, at compile time, into a list of typed functions over
//! `W`-element arrays (one array per register, all of a group's registers together), and
//! each group iterates on its own, stopping as soon as an iteration leaves every element's
//! state unchanged (bit for bit: the body is a pure function of the state and of registers
//! the loop does not write, so every later iteration would leave it unchanged too).
//!
//! The results are the blocked VM's, bit for bit: the same scalar operations
//! ([`crate::num`]) on the same values; an element past the end of the frame is filled with
//! a copy of the group's first element, and its results are dropped. Elements whose counts
//! differ iterate with a mask: an element past its own count keeps its state.

use crate::col::{with_int, with_type, Col, Elem};
use crate::num::{pick, Float, Int, MulAdd, Num};
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::types::ElemType;
use eqfuse_ir::value::Scalar;

/// Elements per group.
pub(crate) const W: usize = 32;

/// The registers of one group: per element type, one `W`-array per slot.
#[derive(Debug, Default)]
pub(crate) struct Banks {
    b: Vec<[bool; W]>,
    i8: Vec<[i8; W]>,
    i16: Vec<[i16; W]>,
    i32: Vec<[i32; W]>,
    i64: Vec<[i64; W]>,
    u8: Vec<[u8; W]>,
    u16: Vec<[u16; W]>,
    u32: Vec<[u32; W]>,
    u64: Vec<[u64; W]>,
    f32: Vec<[f32; W]>,
    f64: Vec<[f64; W]>,
}

/// An element type with a bank.
pub(crate) trait Lane: Elem {
    fn bank(b: &mut Banks) -> &mut Vec<[Self; W]>;
    /// Its bits (equal bits: the same value, bit for bit).
    fn bits(self) -> u64;
}

macro_rules! lane_impl {
    ($t:ty, $f:ident, $bits:expr) => {
        impl Lane for $t {
            #[inline(always)]
            fn bank(b: &mut Banks) -> &mut Vec<[Self; W]> {
                &mut b.$f
            }
            #[inline(always)]
            fn bits(self) -> u64 {
                let f: fn($t) -> u64 = $bits;
                f(self)
            }
        }
    };
}
lane_impl!(bool, b, u64::from);
lane_impl!(i8, i8, |x| u64::from(x as u8));
lane_impl!(i16, i16, |x| u64::from(x as u16));
lane_impl!(i32, i32, |x| u64::from(x as u32));
lane_impl!(i64, i64, |x| x as u64);
lane_impl!(u8, u8, u64::from);
lane_impl!(u16, u16, u64::from);
lane_impl!(u32, u32, u64::from);
lane_impl!(u64, u64, |x| x);
lane_impl!(f32, f32, |x| u64::from(x.to_bits()));
lane_impl!(f64, f64, f64::to_bits);

/// The slot `d` to write and the slots `a`, `b` to read of one bank (`d` differs from both:
/// the flattening checks it).
#[inline(always)]
fn parts<T>(bank: &mut [[T; W]], d: u32, a: u32, b: u32) -> (&mut [T; W], &[T; W], &[T; W]) {
    let (d, a, b) = (d as usize, a as usize, b as usize);
    let (lo, hi) = bank.split_at_mut(d);
    let (dst, hi) = hi.split_first_mut().expect("a slot in range");
    let pick = |k: usize| -> &[T; W] {
        if k < d {
            &lo[k]
        } else {
            &hi[k - d - 1]
        }
    };
    (dst, pick(a), pick(b))
}

/// The slots an instruction uses: its result `d`, its operands `a`, `b`, `c`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Args {
    pub(crate) d: u32,
    pub(crate) a: u32,
    pub(crate) b: u32,
    pub(crate) c: u32,
}

/// One flattened instruction.
pub(crate) type LFn = fn(&mut Banks, &Args);

/// `var = active ? tmp : var` for one state register; whether an element changed.
pub(crate) type UFn = fn(&mut Banks, u32, u32, &[bool; W], bool) -> bool;

/// A loop flattened for groups.
#[derive(Debug)]
pub(crate) struct GroupLoop {
    /// Slots per element type (in the order of `ElemType::ALL`).
    pub(crate) sizes: [usize; TYPES],
    /// Registers read from the frame at the start of a group, with their slots.
    pub(crate) loads: Vec<(usize, u32)>,
    /// Constants, set once per group.
    pub(crate) consts: Vec<(u32, Scalar)>,
    /// The body.
    pub(crate) ops: Vec<(LFn, Args)>,
    /// Per state register: `tmp = next` (all first), then the update.
    pub(crate) moves: Vec<(LFn, Args)>,
    pub(crate) updates: Vec<(UFn, u32, u32)>,
    /// Per state register: its register and its slot (read back after the group).
    pub(crate) vars: Vec<(usize, u32)>,
}

/// How many element types there are (banks of a group).
pub(crate) const TYPES: usize = ElemType::ALL.len();

/// The index of an element type in [`GroupLoop::sizes`] (its place in `ElemType::ALL`).
pub(crate) fn ty_index(t: ElemType) -> usize {
    ElemType::ALL.iter().position(|x| *x == t).unwrap_or(0)
}

/// A source of a group's register: one element, or a column of the frame.
#[derive(Clone, Copy)]
pub(crate) enum Src<'a, T> {
    S(T),
    V(&'a [T]),
}

impl<T: Lane> Src<'_, T> {
    /// Fills `slot` with elements `g0 .. g0 + len` (padded with the first).
    #[inline]
    fn load(&self, b: &mut Banks, slot: u32, g0: usize, len: usize) {
        let Some(dst) = T::bank(b).get_mut(slot as usize) else { return };
        match self {
            Src::S(x) => *dst = [*x; W],
            Src::V(xs) => {
                let src = xs.get(g0..g0 + len).unwrap_or(&[]);
                let first = src.first().copied().unwrap_or_default();
                *dst = [first; W];
                dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s);
            }
        }
    }
}

/// Typed sources.
pub(crate) enum AnySrc<'a> {
    B(Src<'a, bool>),
    I8(Src<'a, i8>),
    I16(Src<'a, i16>),
    I32(Src<'a, i32>),
    I64(Src<'a, i64>),
    U8(Src<'a, u8>),
    U16(Src<'a, u16>),
    U32(Src<'a, u32>),
    U64(Src<'a, u64>),
    F32(Src<'a, f32>),
    F64(Src<'a, f64>),
}

impl AnySrc<'_> {
    fn load(&self, b: &mut Banks, slot: u32, g0: usize, len: usize) {
        match self {
            AnySrc::B(s) => s.load(b, slot, g0, len),
            AnySrc::I8(s) => s.load(b, slot, g0, len),
            AnySrc::I16(s) => s.load(b, slot, g0, len),
            AnySrc::I32(s) => s.load(b, slot, g0, len),
            AnySrc::I64(s) => s.load(b, slot, g0, len),
            AnySrc::U8(s) => s.load(b, slot, g0, len),
            AnySrc::U16(s) => s.load(b, slot, g0, len),
            AnySrc::U32(s) => s.load(b, slot, g0, len),
            AnySrc::U64(s) => s.load(b, slot, g0, len),
            AnySrc::F32(s) => s.load(b, slot, g0, len),
            AnySrc::F64(s) => s.load(b, slot, g0, len),
        }
    }
}

/// Makes an [`AnySrc`] of a typed source.
pub(crate) trait IntoAny<'a> {
    fn any(self) -> AnySrc<'a>;
}

macro_rules! into_any {
    ($t:ty, $v:ident) => {
        impl<'a> IntoAny<'a> for Src<'a, $t> {
            fn any(self) -> AnySrc<'a> {
                AnySrc::$v(self)
            }
        }
    };
}
into_any!(bool, B);
into_any!(i8, I8);
into_any!(i16, I16);
into_any!(i32, I32);
into_any!(i64, I64);
into_any!(u8, U8);
into_any!(u16, U16);
into_any!(u32, U32);
into_any!(u64, U64);
into_any!(f32, F32);
into_any!(f64, F64);

impl GroupLoop {
    /// Runs the loop on a frame of `n` elements: `srcs` are the sources of
    /// [`GroupLoop::loads`], in order, `counts` the iteration counts; the final state of
    /// each of [`GroupLoop::vars`] is appended to `outs` (columns of its type).
    pub(crate) fn run(&self, srcs: &[AnySrc<'_>], counts: Src<'_, i64>, n: usize, outs: &mut [Col]) {
        let mut b = Banks {
            b: vec![[bool::default(); W]; self.sizes[0]],
            i8: vec![[i8::default(); W]; self.sizes[1]],
            i16: vec![[i16::default(); W]; self.sizes[2]],
            i32: vec![[i32::default(); W]; self.sizes[3]],
            i64: vec![[i64::default(); W]; self.sizes[4]],
            u8: vec![[u8::default(); W]; self.sizes[5]],
            u16: vec![[u16::default(); W]; self.sizes[6]],
            u32: vec![[u32::default(); W]; self.sizes[7]],
            u64: vec![[u64::default(); W]; self.sizes[8]],
            f32: vec![[f32::default(); W]; self.sizes[9]],
            f64: vec![[f64::default(); W]; self.sizes[10]],
        };
        let mut g0 = 0;
        while g0 < n {
            let len = W.min(n - g0);
            for ((_, slot), src) in self.loads.iter().zip(srcs) {
                src.load(&mut b, *slot, g0, len);
            }
            for (slot, value) in &self.consts {
                set_const(&mut b, *slot, *value);
            }
            // the counts: one for all, or per element (a mask)
            let mut cnt = [0i64; W];
            let (iters, masked) = match counts {
                Src::S(c) => (c, false),
                Src::V(cs) => {
                    let src = cs.get(g0..g0 + len).unwrap_or(&[]);
                    let first = src.first().copied().unwrap_or(0);
                    cnt = [first; W];
                    cnt.iter_mut().zip(src).for_each(|(d, &s)| *d = s);
                    let lo = cnt.iter().copied().min().unwrap_or(0);
                    let hi = cnt.iter().copied().max().unwrap_or(0);
                    (hi, lo != hi)
                }
            };
            let mut active = [true; W];
            for it in 0..iters.max(0) {
                if masked {
                    active.iter_mut().zip(&cnt).for_each(|(a, &c)| *a = it < c);
                }
                for (f, args) in &self.ops {
                    f(&mut b, args);
                }
                for (f, args) in &self.moves {
                    f(&mut b, args);
                }
                let mut changed = false;
                for &(f, var, tmp) in &self.updates {
                    changed |= f(&mut b, var, tmp, &active, masked);
                }
                if !changed {
                    break;
                }
            }
            for ((_, slot), out) in self.vars.iter().zip(outs.iter_mut()) {
                with_type!(out.ty(), T => {
                    if let (Some(o), Some(v)) = (T::vec_mut(out), T::bank(&mut b).get(*slot as usize)) {
                        o.extend_from_slice(v.get(..len).unwrap_or(&[]));
                    }
                });
            }
            g0 += len;
        }
    }
}

fn set_const(b: &mut Banks, slot: u32, v: Scalar) {
    fn put<T: Lane>(b: &mut Banks, slot: u32, x: T) {
        if let Some(d) = T::bank(b).get_mut(slot as usize) {
            *d = [x; W];
        }
    }
    match v {
        Scalar::Bool(x) => put(b, slot, x),
        Scalar::I8(x) => put(b, slot, x),
        Scalar::I16(x) => put(b, slot, x),
        Scalar::I32(x) => put(b, slot, x),
        Scalar::I64(x) => put(b, slot, x),
        Scalar::U8(x) => put(b, slot, x),
        Scalar::U16(x) => put(b, slot, x),
        Scalar::U32(x) => put(b, slot, x),
        Scalar::U64(x) => put(b, slot, x),
        Scalar::F32(x) => put(b, slot, x),
        Scalar::F64(x) => put(b, slot, x),
    }
}

#[inline(always)]
fn m1<A: Lane, O: Lane>(b: &mut Banks, x: &Args, f: impl Fn(A) -> O) {
    let p = A::bank(b)[x.a as usize];
    let mut o = [O::default(); W];
    o.iter_mut().zip(&p).for_each(|(o, &p)| *o = f(p));
    O::bank(b)[x.d as usize] = o;
}

/// [`m1`] within one bank (no copies).
#[inline(always)]
fn s1<T: Lane>(b: &mut Banks, x: &Args, f: impl Fn(T) -> T) {
    let (o, p, _) = parts(T::bank(b), x.d, x.a, x.a);
    k1(o, p, f);
}

/// The loop of [`s1`] (its arguments cannot alias: it vectorises).
#[inline(always)]
fn k1<T: Copy>(o: &mut [T; W], p: &[T; W], f: impl Fn(T) -> T) {
    for k in 0..W {
        o[k] = f(p[k]);
    }
}

/// The loop of [`s2`].
#[inline(always)]
fn k2<T: Copy>(o: &mut [T; W], p: &[T; W], q: &[T; W], f: impl Fn(T, T) -> T) {
    for k in 0..W {
        o[k] = f(p[k], q[k]);
    }
}

/// `d = f(a, b)` into another bank (comparisons).
#[inline(always)]
fn m2<A: Lane, O: Lane>(b: &mut Banks, x: &Args, f: impl Fn(A, A) -> O) {
    let bank = A::bank(b);
    let (p, q) = (&bank[x.a as usize], &bank[x.b as usize]);
    let mut o = [O::default(); W];
    o.iter_mut().zip(p.iter().zip(q)).for_each(|(o, (&p, &q))| *o = f(p, q));
    O::bank(b)[x.d as usize] = o;
}

/// `d = f(a, b)` within one bank.
#[inline(always)]
fn s2<T: Lane>(b: &mut Banks, x: &Args, f: impl Fn(T, T) -> T) {
    let (o, p, q) = parts(T::bank(b), x.d, x.a, x.b);
    k2(o, p, q, f);
}

#[inline(always)]
fn m3<T: Lane>(b: &mut Banks, x: &Args, f: impl Fn(T, T, T) -> T) {
    let r = T::bank(b)[x.c as usize];
    let (o, p, q) = parts(T::bank(b), x.d, x.a, x.b);
    k3(o, p, q, &r, f);
}

/// The loop of [`m3`].
#[inline(always)]
fn k3<T: Copy>(o: &mut [T; W], p: &[T; W], q: &[T; W], r: &[T; W], f: impl Fn(T, T, T) -> T) {
    for k in 0..W {
        o[k] = f(p[k], q[k], r[k]);
    }
}

/// `d = c ? a : b` (`c` a bool slot).
pub(crate) fn select<T: Lane>(b: &mut Banks, x: &Args) {
    let c = b.b[x.c as usize];
    let (o, t, e) = parts(T::bank(b), x.d, x.a, x.b);
    ksel(o, &c, t, e);
}

#[inline(always)]
fn ksel<T: Copy>(o: &mut [T; W], c: &[bool; W], t: &[T; W], e: &[T; W]) {
    for k in 0..W {
        o[k] = pick(c[k], t[k], e[k]);
    }
}

/// `d = a`.
pub(crate) fn mov<T: Lane>(b: &mut Banks, x: &Args) {
    let (o, p, _) = parts(T::bank(b), x.d, x.a, x.a);
    o.copy_from_slice(p);
}

pub(crate) fn update<T: Lane>(b: &mut Banks, var: u32, tmp: u32, active: &[bool; W], masked: bool) -> bool {
    let (old, new, _) = parts(T::bank(b), var, tmp, tmp);
    if masked {
        kupd_masked(old, new, active) != 0
    } else {
        kupd(old, new) != 0
    }
}

/// `old = new`; whether some element's bits changed (non-zero).
#[inline(always)]
fn kupd<T: Lane>(old: &mut [T; W], new: &[T; W]) -> u64 {
    let mut diff = 0u64;
    for k in 0..W {
        diff |= old[k].bits() ^ new[k].bits();
        old[k] = new[k];
    }
    diff
}

/// [`kupd`] of the active elements only.
#[inline(always)]
fn kupd_masked<T: Lane>(old: &mut [T; W], new: &[T; W], active: &[bool; W]) -> u64 {
    let mut diff = 0u64;
    for k in 0..W {
        let nw = if active[k] { new[k] } else { old[k] };
        diff |= old[k].bits() ^ nw.bits();
        old[k] = nw;
    }
    diff
}

macro_rules! lf {
    ($body:expr) => {{
        let f: LFn = $body;
        f
    }};
}

pub(crate) fn unary_fn(op: UnOp, t: ElemType) -> Option<LFn> {
    Some(match (op, t) {
        (UnOp::Not, ElemType::Bool) => lf!(|b, x| s1(b, x, |p: bool| !p)),
        (UnOp::Neg, ElemType::F32) => lf!(|b, x| s1(b, x, <f32 as Num>::neg)),
        (UnOp::Neg, ElemType::F64) => lf!(|b, x| s1(b, x, <f64 as Num>::neg)),
        (_, t) if t.is_int() => return with_int!(t, T => int_unary::<T>(op)),
        _ => return None,
    })
}

fn mul_add_of<T: Lane + Num>(form: MulAdd) -> LFn {
    match form {
        MulAdd::ProdPlus => lf!(|b, x| m3(b, x, |p: T, q, r| T::add(T::mul(p, q), r))),
        MulAdd::PlusProd => lf!(|b, x| m3(b, x, |p: T, q, r| T::add(r, T::mul(p, q)))),
        MulAdd::ProdMinus => lf!(|b, x| m3(b, x, |p: T, q, r| T::sub(T::mul(p, q), r))),
        MulAdd::MinusProd => lf!(|b, x| m3(b, x, |p: T, q, r| T::sub(r, T::mul(p, q)))),
    }
}

pub(crate) fn mul_add_fn(form: MulAdd, t: ElemType) -> Option<LFn> {
    Some(match t {
        ElemType::F32 => mul_add_of::<f32>(form),
        ElemType::F64 => mul_add_of::<f64>(form),
        ElemType::Bool => return None,
        t => return with_int!(t, T => Some(mul_add_of::<T>(form))),
    })
}

fn compare_fn<T: Lane>(op: BinOp) -> Option<LFn> {
    Some(match op {
        BinOp::Eq => lf!(|b, x| m2(b, x, |p: T, q: T| p == q)),
        BinOp::Ne => lf!(|b, x| m2(b, x, |p: T, q: T| p != q)),
        BinOp::Lt => lf!(|b, x| m2(b, x, |p: T, q: T| p < q)),
        BinOp::Le => lf!(|b, x| m2(b, x, |p: T, q: T| p <= q)),
        BinOp::Gt => lf!(|b, x| m2(b, x, |p: T, q: T| p > q)),
        BinOp::Ge => lf!(|b, x| m2(b, x, |p: T, q: T| p >= q)),
        _ => return None,
    })
}

fn arith_fn<T: Lane + Num>(op: BinOp) -> Option<LFn> {
    Some(match op {
        BinOp::Add => lf!(|b, x| s2(b, x, T::add)),
        BinOp::Sub => lf!(|b, x| s2(b, x, T::sub)),
        BinOp::Mul => lf!(|b, x| s2(b, x, T::mul)),
        // integer division may fail: not here
        BinOp::Div if !T::INT => lf!(|b, x| s2(b, x, T::div)),
        BinOp::Rem if !T::INT => lf!(|b, x| s2(b, x, T::rem)),
        _ => return None,
    })
}

pub(crate) fn binary_fn(op: BinOp, t: ElemType) -> Option<LFn> {
    if op.is_comparison() {
        return with_type!(t, T => compare_fn::<T>(op));
    }
    match t {
        ElemType::Bool => Some(match op {
            BinOp::And => lf!(|b, x| s2(b, x, |p: bool, q: bool| p && q)),
            BinOp::Or => lf!(|b, x| s2(b, x, |p: bool, q: bool| p || q)),
            _ => return None,
        }),
        ElemType::F32 => arith_fn::<f32>(op),
        ElemType::F64 => arith_fn::<f64>(op),
        t => with_int!(t, T => int_binary::<T>(op)),
    }
}

/// An integer binary operator: arithmetic, or a bit operation.
fn int_binary<T: Lane + Int>(op: BinOp) -> Option<LFn> {
    Some(match op {
        BinOp::BitAnd => lf!(|b, x| s2(b, x, T::band)),
        BinOp::BitOr => lf!(|b, x| s2(b, x, T::bor)),
        BinOp::BitXor => lf!(|b, x| s2(b, x, T::bxor)),
        BinOp::Shl => lf!(|b, x| s2(b, x, T::shl)),
        BinOp::Shr => lf!(|b, x| s2(b, x, T::shr)),
        _ => return arith_fn::<T>(op),
    })
}

/// An integer unary operator: `-` wraps, `!` complements.
fn int_unary<T: Lane + Int>(op: UnOp) -> Option<LFn> {
    Some(match op {
        UnOp::Neg => lf!(|b, x| s1(b, x, T::neg)),
        UnOp::Not => lf!(|b, x| s1(b, x, T::bnot)),
    })
}

/// An integer call: `min max abs clamp popcount clz`.
fn int_call<T: Lane + Int + Ord>(f: ScalarFn) -> Option<LFn> {
    Some(match f {
        ScalarFn::Clamp => lf!(|b, x| m3(b, x, |p: T, lo, hi| Ord::min(Ord::max(p, lo), hi))),
        ScalarFn::Popcount => lf!(|b, x| m1(b, x, T::popcount)),
        ScalarFn::Clz => lf!(|b, x| m1(b, x, T::clz)),
        _ => return num_call::<T>(f),
    })
}

fn num_call<T: Lane + Num>(f: ScalarFn) -> Option<LFn> {
    Some(match f {
        ScalarFn::Min => lf!(|b, x| s2(b, x, T::vmin)),
        ScalarFn::Max => lf!(|b, x| s2(b, x, T::vmax)),
        ScalarFn::Abs => lf!(|b, x| s1(b, x, T::abs)),
        _ => return None,
    })
}

fn float_call<T: Lane + Float>(f: ScalarFn) -> Option<LFn> {
    Some(match f {
        ScalarFn::Clamp => lf!(|b, x| m3(b, x, |p: T, lo, hi| Num::vmin(Num::vmax(p, lo), hi))),
        ScalarFn::Sqrt => lf!(|b, x| s1(b, x, T::sqrt)),
        ScalarFn::Exp => lf!(|b, x| s1(b, x, T::exp)),
        ScalarFn::Log => lf!(|b, x| s1(b, x, T::ln)),
        ScalarFn::Sin => lf!(|b, x| s1(b, x, T::sin)),
        ScalarFn::Cos => lf!(|b, x| s1(b, x, T::cos)),
        ScalarFn::Tan => lf!(|b, x| s1(b, x, T::tan)),
        ScalarFn::Tanh => lf!(|b, x| s1(b, x, T::tanh)),
        ScalarFn::Floor => lf!(|b, x| s1(b, x, T::floor)),
        ScalarFn::Ceil => lf!(|b, x| s1(b, x, T::ceil)),
        ScalarFn::Round => lf!(|b, x| s1(b, x, T::round)),
        ScalarFn::Pow => lf!(|b, x| s2(b, x, T::powf)),
        ScalarFn::Atan2 => lf!(|b, x| s2(b, x, T::atan2)),
        ScalarFn::IsNan => lf!(|b, x| m1(b, x, |p: T| p.is_nan())),
        ScalarFn::IsInf => lf!(|b, x| m1(b, x, |p: T| p.is_inf())),
        other => return num_call::<T>(other),
    })
}

/// A call's function: its arguments of type `t`, its result of type `out`.
pub(crate) fn call_fn(f: ScalarFn, t: ElemType, out: ElemType, arity: usize) -> Option<LFn> {
    if arity != f.arity() {
        return None;
    }
    if let ScalarFn::Convert(to) = f {
        return if to == out { convert_fn(t, to) } else { None };
    }
    match t {
        ElemType::Bool => Some(match f {
            ScalarFn::Min => lf!(|b, x| s2(b, x, |p: bool, q: bool| p & q)),
            ScalarFn::Max => lf!(|b, x| s2(b, x, |p: bool, q: bool| p | q)),
            ScalarFn::Clamp => lf!(|b, x| m3(b, x, |p: bool, lo, hi| (p | lo) & hi)),
            _ => return None,
        }),
        ElemType::F32 => float_call::<f32>(f),
        ElemType::F64 => float_call::<f64>(f),
        t => with_int!(t, T => int_call::<T>(f)),
    }
}

/// Conversions, exactly the VM's (Rust's `as`).
#[allow(clippy::cast_lossless)]
fn convert_fn(from: ElemType, to: ElemType) -> Option<LFn> {
    macro_rules! cv {
        ($S:ty, $D:ty, $f:expr) => {
            lf!(|b, x| m1::<$S, $D>(b, x, $f))
        };
    }
    Some(conversions!(from, to, cv))
}
