//! Random syntax trees for property tests (reusable: include with
//! `#[path = "common/gen_syntax.rs"] mod gen_syntax;`).
//!
//! The trees are syntactically valid (they need not type-check): every [`ExprKind`] occurs
//! (the version 2 forms `LetTuple` and `Loop` included), names come from a small pool that
//! avoids keywords but holds builtin names (`cos`, `sum`, `pi`) and a parser-made name
//! (`arg'0`), literals include negative numbers, `i64::MIN`, hexadecimal literals and their
//! negations down to `-0xffffffffffffffff`, `-0.0`, `±inf`, subnormal, tiny and huge floats;
//! input types use all eleven element types and affine dimensions (`m + 1`, `2 * n`). They respect the invariants the
//! parser establishes, so `parse(print(tree)) == tree` must hold: no `UnOp::Neg` of a
//! non-negative numeric literal (the parser folds it), no NaN, no empty shape, application
//! or parameter list.

#![allow(dead_code)]

use eqfuse_ir::ast::{BinOp, Expr, ExprKind, Item, Lit, LoopForm, Program, UnOp};
use eqfuse_ir::error::Span;
use eqfuse_ir::types::{Dim, ElemType, Type};
use proptest::prelude::*;

/// Names used for variables, parameters, items and sizes (none is a keyword).
pub const NAMES: &[&str] = &[
    "x", "y", "xs", "n", "m", "f", "a'", "_t", "x1", "map", "reduce", "iota", "f32", "inp", "cos", "sum",
    "pi", "arg'0",
];

/// A name from [`NAMES`].
pub fn name() -> impl Strategy<Value = String> {
    prop::sample::select(NAMES).prop_map(str::to_string)
}

/// Two or three distinct names from [`NAMES`], for a tuple pattern.
pub fn pattern() -> impl Strategy<Value = Vec<String>> {
    prop::sample::subsequence(NAMES, 2..=3)
        .prop_shuffle()
        .prop_map(|v| v.into_iter().map(str::to_string).collect())
}

/// A node with a dummy span.
pub fn mk(kind: ExprKind) -> Expr {
    Expr::new(kind, Span::default())
}

/// Floats that stress printing: signed zeros, infinities, subnormals, extremes, and any
/// finite value.
pub fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        prop::sample::select(vec![
            0.0,
            -0.0,
            1.0,
            0.1,
            -2.5,
            1e-7,
            1e16,
            1e300,
            5e-324,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ]),
        any::<f64>().prop_map(|f| if f.is_nan() { 0.5 } else { f }),
    ]
}

/// Any literal.
pub fn lit() -> impl Strategy<Value = Lit> {
    prop_oneof![
        prop::sample::select(vec![0i64, 1, -1, 42, -5, i64::MIN, i64::MAX]).prop_map(|v| Lit::Int(v.into())),
        any::<i64>().prop_map(|v| Lit::Int(v.into())),
        // `-0x...` folds to a negative integer of any 64-bit magnitude
        any::<u64>().prop_map(|v| Lit::Int(-i128::from(v))),
        prop::sample::select(vec![0u64, 0xff, 1 << 63, u64::MAX]).prop_map(Lit::Hex),
        any::<u64>().prop_map(Lit::Hex),
        float().prop_map(Lit::Float),
        any::<bool>().prop_map(Lit::Bool),
    ]
}

/// A binary operator.
pub fn binop() -> impl Strategy<Value = BinOp> {
    prop::sample::select(BinOp::ALL.to_vec())
}

/// A leaf expression.
pub fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        lit().prop_map(|l| mk(ExprKind::Lit(l))),
        name().prop_map(|n| mk(ExprKind::Var(n))),
        binop().prop_map(|op| mk(ExprKind::Section(op))),
        Just(mk(ExprKind::Tuple(Vec::new()))),
    ]
}

/// `-operand` as the parser would make it: a non-negative numeric literal becomes `!`
/// instead of a negation the parser would fold away.
fn unary(op: UnOp, operand: Expr) -> Expr {
    let folds = match operand.kind {
        ExprKind::Lit(Lit::Int(v)) => v >= 0,
        ExprKind::Lit(Lit::Hex(_)) => true,
        ExprKind::Lit(Lit::Float(f)) => !f.is_sign_negative(),
        _ => false,
    };
    let op = if op == UnOp::Neg && folds { UnOp::Not } else { op };
    mk(ExprKind::Unary { op, operand: Box::new(operand) })
}

/// Any expression, at most about `depth` levels deep.
pub fn expr_with_depth(depth: u32) -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(depth, 96, 4, |inner| {
        let list = |lo: usize, hi: usize| prop::collection::vec(inner.clone(), lo..=hi);
        prop_oneof![
            (name(), inner.clone(), inner.clone()).prop_map(|(name, v, b)| mk(ExprKind::Let {
                name,
                value: Box::new(v),
                body: Box::new(b)
            })),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(c, t, e)| mk(ExprKind::If {
                cond: Box::new(c),
                then_: Box::new(t),
                else_: Box::new(e)
            })),
            (prop::collection::vec(name(), 1..=3), inner.clone())
                .prop_map(|(params, b)| mk(ExprKind::Lambda { params, body: Box::new(b) })),
            (binop(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| mk(ExprKind::Binary {
                op,
                lhs: Box::new(l),
                rhs: Box::new(r)
            })),
            (binop(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| mk(ExprKind::Binary {
                op,
                lhs: Box::new(l),
                rhs: Box::new(r)
            })),
            (prop::sample::select(vec![UnOp::Neg, UnOp::Not]), inner.clone())
                .prop_map(|(op, e)| unary(op, e)),
            (inner.clone(), list(1, 3)).prop_map(|(f, args)| mk(ExprKind::Apply { func: Box::new(f), args })),
            (inner.clone(), list(1, 3))
                .prop_map(|(a, indices)| mk(ExprKind::Index { array: Box::new(a), indices })),
            list(1, 3).prop_map(|es| mk(ExprKind::Tuple(es))),
            list(1, 3).prop_map(|es| mk(ExprKind::Shape(es))),
            (pattern(), inner.clone(), inner.clone()).prop_map(|(names, v, b)| mk(ExprKind::LetTuple {
                names,
                value: Box::new(v),
                body: Box::new(b)
            })),
            (loop_pattern(), inner.clone(), loop_form(inner.clone()), inner.clone()).prop_map(
                |((pat, tuple), init, form, body)| mk(ExprKind::Loop {
                    pat,
                    tuple,
                    init: Box::new(init),
                    form,
                    body: Box::new(body)
                })
            ),
        ]
    })
}

/// A loop's state pattern: one name, or a tuple of two or three.
pub fn loop_pattern() -> impl Strategy<Value = (Vec<String>, bool)> {
    prop_oneof![name().prop_map(|n| (vec![n], false)), pattern().prop_map(|p| (p, true))]
}

/// `for var < count` or `while cond`, over expressions from `inner`.
pub fn loop_form(inner: impl Strategy<Value = Expr> + Clone) -> impl Strategy<Value = LoopForm> {
    prop_oneof![
        (name(), inner.clone()).prop_map(|(var, count)| LoopForm::For { var, count: Box::new(count) }),
        inner.prop_map(|cond| LoopForm::While { cond: Box::new(cond) }),
    ]
}

/// Any expression of moderate depth.
pub fn expr() -> impl Strategy<Value = Expr> {
    expr_with_depth(6)
}

/// An affine dimension `mul * name + add` as the parser makes it (`m + 1`, `n - 3`, `2 * n`,
/// `4 * n - 1`): never `1 * name + 0`, which is [`Dim::Size`].
pub fn affine_dim() -> impl Strategy<Value = Dim> {
    let mul = prop_oneof![Just(1i64), 2i64..=8, 1i64..=i64::MAX];
    let add = prop_oneof![-3i64..=3, Just(i64::MIN), Just(i64::MAX), any::<i64>()];
    (name(), mul, add).prop_map(|(name, mul, add)| {
        let add = if mul == 1 && add == 0 { 1 } else { add };
        Dim::Affine { name, mul, add }
    })
}

/// A declared input type: a scalar, or an array of literal, named and affine dimensions.
pub fn input_type() -> impl Strategy<Value = Type> {
    let elem = prop::sample::select(ElemType::ALL.to_vec());
    let dim = prop_oneof![(0i64..=i64::MAX).prop_map(Dim::Known), name().prop_map(Dim::Size), affine_dim()];
    prop_oneof![
        elem.clone().prop_map(Type::Scalar),
        (elem, prop::collection::vec(dim, 1..=3)).prop_map(|(elem, shape)| Type::Array { elem, shape }),
    ]
}

/// Any item.
pub fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        (name(), input_type()).prop_map(|(name, ty)| Item::Input { name, ty, span: Span::default() }),
        (name(), expr()).prop_map(|(name, value)| Item::Let { name, value, span: Span::default() }),
        (pattern(), expr()).prop_map(|(names, value)| Item::LetTuple { names, value, span: Span::default() }),
        (name(), prop::option::of(expr())).prop_map(|(name, value)| Item::Output {
            name,
            value,
            span: Span::default()
        }),
    ]
}

/// A program of up to 6 items.
pub fn program() -> impl Strategy<Value = Program> {
    prop::collection::vec(item(), 0..=6).prop_map(|items| Program { items })
}
