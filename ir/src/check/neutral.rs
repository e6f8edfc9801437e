//! The neutral element of a built-in operator.
//!
//! `reduce op ne a` (and `scan`, `scan_exclusive`) require `ne` to be `op`'s neutral
//! element: a backend that splits the work folds `ne` into every piece, so with `(+)` and
//! `ne = 1` the result depends on how many pieces there were. For `(+)` and `(*)` a constant
//! `ne` that is not the identity is an `E-TYPE` error that says what to write instead.
//!
//! `min`, `max`, `(&&)` and `(||)` are idempotent: folding `ne` in once or many times gives
//! the same result, so any constant is accepted (`scan max (-1000000) a` is a running
//! maximum that starts at -1000000), except the absorbing element (`reduce max inf xs` is
//! always `inf`), which is an error too.

use crate::ast::{BinOp, Expr, ExprKind, Item, Lit, Program, UnOp};
use crate::error::{Error, Result};
use crate::types::{ElemType, Type};
use std::collections::HashMap;

/// A constant's value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum K {
    Int(i128),
    Float(f64),
    Bool(bool),
}

impl K {
    /// Equal as numbers (`0` and `-0.0` are), or equal booleans.
    fn same(self, other: K) -> bool {
        match (self, other) {
            (K::Int(a), K::Int(b)) => a == b,
            (K::Int(a), K::Float(b)) | (K::Float(b), K::Int(a)) => a as f64 == b,
            (K::Float(a), K::Float(b)) => a == b,
            (K::Bool(a), K::Bool(b)) => a == b,
            _ => false,
        }
    }
}

/// The value of `e` if it is a constant: a literal, a negation or conversion of one, or a
/// top-level `let` of one (`lets`), not hidden by a local name (`locals`).
fn konst(e: &Expr, lets: &HashMap<&str, &Expr>, locals: &[&str], depth: u32) -> Option<K> {
    if depth > 64 {
        return None;
    }
    match &e.kind {
        ExprKind::Lit(l @ (Lit::Int(_) | Lit::Hex(_))) => Some(K::Int(l.int_value()?)),
        ExprKind::Lit(Lit::Float(v)) => Some(K::Float(*v)),
        ExprKind::Lit(Lit::Bool(b)) => Some(K::Bool(*b)),
        ExprKind::Unary { op: UnOp::Neg, operand } => match konst(operand, lets, locals, depth + 1)? {
            K::Int(v) => Some(K::Int(v.checked_neg()?)),
            K::Float(v) => Some(K::Float(-v)),
            K::Bool(_) => None,
        },
        ExprKind::Var(name) if !locals.contains(&name.as_str()) => {
            konst(lets.get(name.as_str())?, lets, &[], depth + 1)
        }
        _ => None,
    }
}

/// The built-in operators: their name in messages, identity and absorbing element for
/// element type `t`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add,
    Mul,
    And,
    Or,
    Min,
    Max,
}

impl Op {
    fn of(e: &Expr, locals: &[&str]) -> Option<Op> {
        match &e.kind {
            ExprKind::Section(BinOp::Add) => Some(Op::Add),
            ExprKind::Section(BinOp::Mul) => Some(Op::Mul),
            ExprKind::Section(BinOp::And) => Some(Op::And),
            ExprKind::Section(BinOp::Or) => Some(Op::Or),
            ExprKind::Var(n) if n == "min" && !locals.contains(&"min") => Some(Op::Min),
            ExprKind::Var(n) if n == "max" && !locals.contains(&"max") => Some(Op::Max),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Op::Add => "(+)",
            Op::Mul => "(*)",
            Op::And => "(&&)",
            Op::Or => "(||)",
            Op::Min => "min",
            Op::Max => "max",
        }
    }

    /// The identity's text and whether `k` is it.
    fn identity(self, t: ElemType) -> K {
        let (lo, hi) = bounds(t);
        match self {
            Op::Add => K::Int(0),
            Op::Mul => K::Int(1),
            Op::And => K::Bool(true),
            Op::Or => K::Bool(false),
            Op::Min => hi,
            Op::Max => lo,
        }
    }

    /// The absorbing element of an idempotent operator: `ne` equal to it makes the result
    /// that constant whatever the array.
    fn absorbs(self, t: ElemType, k: K) -> bool {
        let (lo, hi) = bounds(t);
        match self {
            Op::And => k.same(K::Bool(false)),
            Op::Or => k.same(K::Bool(true)),
            Op::Min => k.same(lo),
            Op::Max => k.same(hi),
            Op::Add | Op::Mul => false,
        }
    }
}

/// The least and greatest values of `t`.
fn bounds(t: ElemType) -> (K, K) {
    match t.int_range() {
        Some((lo, hi)) => (K::Int(lo), K::Int(hi)),
        None => (K::Float(f64::NEG_INFINITY), K::Float(f64::INFINITY)),
    }
}

fn show_k(k: K) -> String {
    match k {
        K::Int(v) => v.to_string(),
        K::Float(v) if v == f64::INFINITY => "inf".into(),
        K::Float(v) if v == f64::NEG_INFINITY => "-inf".into(),
        K::Float(v) => format!("{v:?}"),
        K::Bool(b) => b.to_string(),
    }
}

/// Refuses every `reduce`, `scan` and `scan_exclusive` of the typed `program` whose built-in
/// operator is given a constant `ne` that makes the result depend on the backend.
pub(crate) fn check_program(program: &Program) -> Result<()> {
    let mut lets = HashMap::new();
    for item in &program.items {
        if let Item::Let { name, value, .. } = item {
            lets.insert(name.as_str(), value);
        }
    }
    let mut locals = Vec::new();
    for item in &program.items {
        if let Item::Let { value: e, .. }
        | Item::LetTuple { value: e, .. }
        | Item::Output { value: Some(e), .. } = item
        {
            walk(e, &lets, &mut locals)?;
        }
    }
    Ok(())
}

fn walk<'p>(e: &'p Expr, lets: &HashMap<&str, &Expr>, locals: &mut Vec<&'p str>) -> Result<()> {
    match &e.kind {
        ExprKind::Let { name, value, body } => {
            walk(value, lets, locals)?;
            locals.push(name);
            let r = walk(body, lets, locals);
            locals.pop();
            return r;
        }
        ExprKind::Lambda { params, body } => {
            let base = locals.len();
            locals.extend(params.iter().map(String::as_str));
            let r = walk(body, lets, locals);
            locals.truncate(base);
            return r;
        }
        ExprKind::Apply { func, args } => {
            if let (ExprKind::Var(f), [op, ne, a]) = (&func.kind, args.as_slice()) {
                if matches!(f.as_str(), "reduce" | "scan" | "scan_exclusive") && !locals.contains(&f.as_str())
                {
                    one(e, f, [op, ne, a], lets, locals)?;
                }
            }
        }
        _ => {}
    }
    for c in e.kind.children() {
        walk(c, lets, locals)?;
    }
    Ok(())
}

/// Checks one application `e` of `f` (`reduce`, `scan`, `scan_exclusive`) to `op`, `ne`
/// and an array.
fn one(
    e: &Expr,
    f: &str,
    [op, ne, a]: [&Expr; 3],
    lets: &HashMap<&str, &Expr>,
    locals: &[&str],
) -> Result<()> {
    if matches!(&op.kind, ExprKind::Var(n) if lets.contains_key(n.as_str())) {
        // the program's own function named as a builtin (`let max = \a b -> ...`)
        return Ok(());
    }
    let Some(op_kind) = Op::of(op, locals) else { return Ok(()) };
    let Some(k) = konst(ne, lets, locals, 0) else { return Ok(()) };
    let Some(Type::Scalar(t)) = &ne.ty else { return Ok(()) };
    let identity = op_kind.identity(*t);
    if k.same(identity) {
        return Ok(());
    }
    let name = op_kind.name();
    let ident = paren(&show_k(identity));
    let ne_text = show_k(k);
    let array_result = matches!(e.ty, Some(Type::Array { .. }));
    let what = if f == "reduce" { "reduction" } else { "scan" };
    let call = super::text::show(e);
    let fixed_call = format!("{f} {} {ident} {}", super::text::show(op), super::hints::atom(a));
    let message = match op_kind {
        Op::Add | Op::Mul => {
            let (verb, sym) = if op_kind == Op::Add { ("add", "+") } else { ("multiply by", "*") };
            let after = if array_result || f != "reduce" {
                format!("map (\\v -> v {sym} {}) ({fixed_call})", paren(&ne_text))
            } else {
                format!("{fixed_call} {sym} {}", paren(&ne_text))
            };
            format!(
                "the neutral element of `{name}` is `{ident}`, not `{ne_text}`: `{f}` may fold `ne` in once per \
                 piece of work, so the result would depend on the backend; {verb} {ne_text} after the {what}: \
                 `{after}`"
            )
        }
        _ if op_kind.absorbs(*t, k) => format!(
            "`{call}` is always {ne_text}: `{ne_text}` absorbs every value under `{name}`; the neutral element of \
             `{name}` is `{ident}`"
        ),
        _ => return Ok(()),
    };
    Err(Error::ty(e.span, message))
}

fn paren(text: &str) -> String {
    if text.starts_with('-') {
        format!("({text})")
    } else {
        text.to_string()
    }
}
