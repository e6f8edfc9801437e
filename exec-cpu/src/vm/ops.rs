//! Instructions without nested blocks: constants, elementwise arithmetic, comparisons,
//! calls and conversions as typed loops over columns, reads and `dim`.

use super::read::{dim, read, How};
use super::{opnd, put, slot, ty, Cx, Opnd, VmErr, R};
use crate::col::{take, with_int, with_type, Col, Elem};
use crate::internal;
use crate::num::MulAdd;
use crate::num::{Float, Int, Num};
use crate::program::Op;
use eqfuse_ir::ast::{BinOp, UnOp};
use eqfuse_ir::error::Span;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::types::ElemType;

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

/// An instruction without nested blocks.
pub(super) fn simple(p: &Cx<'_, '_>, op: &Op, regs: &mut [Col], n: usize, contig: Option<usize>) -> R {
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
            ElemType::F32 => mul_add::<f32>(p, regs, *dst, [*a, *b, *c], *form),
            ElemType::F64 => mul_add::<f64>(p, regs, *dst, [*a, *b, *c], *form),
            t => with_int!(t, T => Some(mul_add::<T>(p, regs, *dst, [*a, *b, *c], *form)))
                .unwrap_or_else(|| Err(internal("a multiply-add of bools").into())),
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
        (UnOp::Neg, ElemType::F32) => map1(p, regs, dst, a, <f32 as Num>::neg),
        (UnOp::Neg, ElemType::F64) => map1(p, regs, dst, a, <f64 as Num>::neg),
        (op, t) => with_int!(t, T => Some(int_unary::<T>(p, regs, dst, op, a)))
            .unwrap_or_else(|| Err(internal(format!("`{}` on {t}", op.symbol())).into())),
    }
}

/// `-x` (wrapping) or `!x` (the bitwise complement) on an integer.
fn int_unary<T: Int>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, op: UnOp, a: usize) -> R {
    match op {
        UnOp::Neg => map1(p, regs, dst, a, T::neg),
        UnOp::Not => map1(p, regs, dst, a, T::bnot),
    }
}

/// A bit operation on integers (`& | ^ << >>`), else arithmetic.
fn int_binary<T: Int>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, op: BinOp, a: usize, b: usize) -> R {
    match op {
        BinOp::BitAnd => map2(p, regs, dst, a, b, T::band),
        BinOp::BitOr => map2(p, regs, dst, a, b, T::bor),
        BinOp::BitXor => map2(p, regs, dst, a, b, T::bxor),
        BinOp::Shl => map2(p, regs, dst, a, b, T::shl),
        BinOp::Shr => map2(p, regs, dst, a, b, T::shr),
        _ => arith::<T>(p, regs, dst, op, a, b),
    }
}

/// A call on integers (`min max clamp abs popcount clz`).
fn int_call<T: Int + Ord>(p: &Cx<'_, '_>, regs: &mut [Col], dst: usize, f: ScalarFn, args: &[usize]) -> R {
    let a = *args.first().ok_or_else(|| internal("a call without arguments"))?;
    let b = args.get(1).copied().unwrap_or(a);
    match f {
        ScalarFn::Min => map2(p, regs, dst, a, b, T::vmin),
        ScalarFn::Max => map2(p, regs, dst, a, b, T::vmax),
        ScalarFn::Clamp => {
            let c = args.get(2).copied().ok_or_else(|| internal("`clamp` of two arguments"))?;
            map3(p, regs, dst, [a, b, c], |x: T, lo, hi| Ord::min(Ord::max(x, lo), hi))
        }
        ScalarFn::Abs => map1(p, regs, dst, a, T::abs),
        ScalarFn::Popcount => map1(p, regs, dst, a, T::popcount),
        ScalarFn::Clz => map1(p, regs, dst, a, T::clz),
        other => Err(internal(format!("`{}` on {}", other.name(), T::TY)).into()),
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
        ElemType::F32 => arith::<f32>(p, regs, dst, op, a, b),
        ElemType::F64 => arith::<f64>(p, regs, dst, op, a, b),
        t => with_int!(t, T => Some(int_binary::<T>(p, regs, dst, op, a, b)))
            .unwrap_or_else(|| Err(internal(format!("`{}` on {t}", op.symbol())).into())),
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
    if t.is_int() && !matches!(f, ScalarFn::Convert(_)) {
        return with_int!(t, T => Some(int_call::<T>(p, regs, dst, f, args)))
            .unwrap_or_else(|| Err(internal("an integer call").into()));
    }
    match f {
        ScalarFn::Convert(to) => convert(p, regs, dst, a, t, to),
        ScalarFn::Min => match t {
            ElemType::Bool => map2(p, regs, dst, a, b, |x: bool, y: bool| x & y),
            ElemType::F32 => map2(p, regs, dst, a, b, <f32 as Num>::vmin),
            ElemType::F64 => map2(p, regs, dst, a, b, <f64 as Num>::vmin),
            _ => Err(internal(format!("`min` on {t}")).into()),
        },
        ScalarFn::Max => match t {
            ElemType::Bool => map2(p, regs, dst, a, b, |x: bool, y: bool| x | y),
            ElemType::F32 => map2(p, regs, dst, a, b, <f32 as Num>::vmax),
            ElemType::F64 => map2(p, regs, dst, a, b, <f64 as Num>::vmax),
            _ => Err(internal(format!("`max` on {t}")).into()),
        },
        ScalarFn::Clamp => {
            let c = args.get(2).copied().ok_or_else(|| internal("`clamp` of two arguments"))?;
            let three = [a, b, c];
            match t {
                ElemType::Bool => map3(p, regs, dst, three, |x: bool, lo, hi| (x | lo) & hi),
                ElemType::F32 => map3(p, regs, dst, three, |x: f32, lo, hi| Num::vmin(Num::vmax(x, lo), hi)),
                ElemType::F64 => map3(p, regs, dst, three, |x: f64, lo, hi| Num::vmin(Num::vmax(x, lo), hi)),
                _ => Err(internal(format!("`clamp` on {t}")).into()),
            }
        }
        ScalarFn::Abs => match t {
            ElemType::F32 => map1(p, regs, dst, a, <f32 as Num>::abs),
            ElemType::F64 => map1(p, regs, dst, a, <f64 as Num>::abs),
            _ => Err(internal(format!("`abs` on {t}")).into()),
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
        ScalarFn::IsNan => map1(p, regs, dst, a, |x: T| x.is_nan()),
        ScalarFn::IsInf => map1(p, regs, dst, a, |x: T| x.is_inf()),
        // the other float functions (`log2 erf lgamma ...`): the reference's own, per element
        other if other.arity() == 1 && other.is_transcendental() => map1(p, regs, dst, a, |x: T| {
            other.apply(&[x.scalar()], Span::default()).ok().and_then(T::of_scalar).unwrap_or_default()
        }),
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
