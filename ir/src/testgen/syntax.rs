//! Syntax helpers: expression nodes, guarded arithmetic (clamps, minus one) and literals of
//! each element type, built without spans.

use super::{D, S};
use crate::ast::{BinOp, Expr, ExprKind, Lit, UnOp};
use crate::error::Span;
use crate::types::ElemType;

pub(super) fn mk(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}

pub(super) fn var(name: &str) -> Expr {
    mk(ExprKind::Var(name.to_string()))
}

pub(super) fn int(v: i64) -> Expr {
    mk(ExprKind::Lit(Lit::Int(i128::from(v))))
}

pub(super) fn float(v: f64) -> Expr {
    mk(ExprKind::Lit(Lit::Float(v)))
}

pub(super) fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    mk(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) })
}

pub(super) fn app(f: &str, args: Vec<Expr>) -> Expr {
    mk(ExprKind::Apply { func: Box::new(var(f)), args })
}

pub(super) fn app_e(f: Expr, args: Vec<Expr>) -> Expr {
    mk(ExprKind::Apply { func: Box::new(f), args })
}

pub(super) fn ifx(c: Expr, t: Expr, e: Expr) -> Expr {
    mk(ExprKind::If { cond: Box::new(c), then_: Box::new(t), else_: Box::new(e) })
}

pub(super) fn lam(params: Vec<String>, body: Expr) -> Expr {
    mk(ExprKind::Lambda { params, body: Box::new(body) })
}

pub(super) fn shape(dims: Vec<Expr>) -> Expr {
    mk(ExprKind::Shape(dims))
}

pub(super) fn index(a: &str, ix: Vec<Expr>) -> Expr {
    mk(ExprKind::Index { array: Box::new(var(a)), indices: ix })
}

/// `-e`, folded into a literal as the parser folds it.
pub(super) fn neg(e: Expr) -> Expr {
    match e.kind {
        ExprKind::Lit(Lit::Int(v)) => mk(ExprKind::Lit(Lit::Int(v.wrapping_neg()))),
        ExprKind::Lit(Lit::Float(v)) => float(-v),
        _ => mk(ExprKind::Unary { op: UnOp::Neg, operand: Box::new(e) }),
    }
}

pub(super) fn not(e: Expr) -> Expr {
    mk(ExprKind::Unary { op: UnOp::Not, operand: Box::new(e) })
}

/// `e - 1`
pub(super) fn minus1(e: &Expr) -> Expr {
    bin(BinOp::Sub, e.clone(), int(1))
}

/// `clamp i 0 (len - 1)`
pub(super) fn clamp_to(i: Expr, len: &Expr) -> Expr {
    app("clamp", vec![i, int(0), minus1(len)])
}

pub(super) fn zero_of(t: ElemType) -> Expr {
    match t {
        ElemType::Bool => mk(ExprKind::Lit(Lit::Bool(false))),
        ElemType::F32 | ElemType::F64 => float(0.0),
        _ => int(0),
    }
}

pub(super) fn one_of(t: ElemType) -> Expr {
    match t {
        ElemType::Bool => mk(ExprKind::Lit(Lit::Bool(true))),
        ElemType::F32 | ElemType::F64 => float(1.0),
        _ => int(1),
    }
}

pub(super) fn tuple(es: Vec<Expr>) -> Expr {
    mk(ExprKind::Tuple(es))
}

pub(super) fn product(x: &D, y: &D) -> D {
    D { key: format!("({})*({})", x.key, y.key), e: bin(BinOp::Mul, x.e.clone(), y.e.clone()) }
}

/// `s` as an expression certain to have type `t`: converted when only its literals would
/// decide its type.
pub(super) fn commit(t: ElemType, s: S) -> Expr {
    // a bool expression has type bool whatever its literals
    if s.pinned || t == ElemType::Bool {
        s.e
    } else {
        app(t.name(), vec![s.e])
    }
}

/// An integer literal of any value an element type holds (`Lit::Hex` above `i64::MAX`, as
/// the parser reads it).
pub(super) fn big_int(v: i128) -> Expr {
    match u64::try_from(v) {
        Ok(u) if v > i128::from(i64::MAX) => mk(ExprKind::Lit(Lit::Hex(u))),
        _ => mk(ExprKind::Lit(Lit::Int(v))),
    }
}

/// The smallest and largest value of `t` as literals (`-inf`, `inf` for floats).
pub(super) fn bounds_of(t: ElemType) -> (Expr, Expr) {
    match t.int_range() {
        Some((lo, hi)) => (big_int(lo), big_int(hi)),
        None => (float(f64::NEG_INFINITY), float(f64::INFINITY)),
    }
}

/// `let (a, b, ..) = value in body`
pub(super) fn let_tuple(names: Vec<String>, value: Expr, body: Expr) -> Expr {
    mk(ExprKind::LetTuple { names, value: Box::new(value), body: Box::new(body) })
}

/// `loop pat = init for var < count do body` (`count: Some`) or `... while cond do body`.
pub(super) fn loop_x(pat: Vec<String>, init: Expr, form: crate::ast::LoopForm, body: Expr) -> Expr {
    let tuple = pat.len() > 1;
    mk(ExprKind::Loop { pat, tuple, init: Box::new(init), form, body: Box::new(body) })
}
