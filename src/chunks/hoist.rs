//! The mechanics of the split: every reduction or scan over the chunked axis of data that
//! depends on the chunked inputs is lifted out of its expression.
//!
//! - `reduce op ne a` (a rank-1 array along the axis) becomes a *partial* `__pK`: each block
//!   computes `reduce op ne a` over its rows, and the partials of all blocks are combined with
//!   the same `op` and `ne`. The expression reads `__pK`, a scalar.
//! - `scan op ne a` (and `scan_exclusive`) becomes `map (\__v -> op __cK __v) (scan op ne a)`
//!   over the block's rows: `__cK`, the block's *carry*, is the exclusive scan (with `op`,
//!   from `ne`) of the totals `__tK = reduce op ne a` of the blocks before it.
//! - `length a` and `size a 0` of such an array become the axis's size name: the whole
//!   length, which every sub-program receives as an `i64` input.
//!
//! What may stay in a block is decided in `legality.rs`; what each sub-program holds, in
//! `mod.rs`.

use super::names::{builtin, free_vars};
use super::Scope;
use eqfuse_ir::ast::{Expr, ExprKind, Lit};
use eqfuse_ir::error::Result;
use eqfuse_ir::types::{Dim, ElemType, Type};

/// A value lifted out of the program: a partial (`carry: None`) or a scan's block total and
/// the carry made from it.
#[derive(Clone, Debug)]
pub struct Hoisted {
    /// `__pK` (a partial) or `__tK` (a scan's block total).
    pub name: String,
    /// `__cK` for a scan's total; `None` for a partial.
    pub carry: Option<String>,
    /// The combining operator, as written.
    pub op: Expr,
    /// Its neutral element, as written.
    pub ne: Expr,
    /// What one block reduces: the array expression, inside the local `let`s it uses.
    pub arg: Expr,
    /// The element type of the result.
    pub elem: ElemType,
    /// The partial's shape: empty for a scalar; `[c]` for a column reduction (a rank-2
    /// array whose inner dimension is the axis, reduced along it: the blocks' rows of
    /// partials are combined element by element).
    pub shape: Vec<Dim>,
}

/// The outer dimension of a rank-2 array whose inner dimension is `axis` and outer one is
/// not: what a column reduction's partial has (a size name or a literal).
pub fn column_dim(ty: Option<&Type>, axis: &str) -> Option<Dim> {
    match ty {
        Some(Type::Array { shape, .. }) if shape.len() == 2 => match (&shape[0], &shape[1]) {
            (Dim::Size(s), Dim::Size(a)) if a == axis && s != axis => Some(shape[0].clone()),
            (Dim::Known(_), Dim::Size(a)) if a == axis => Some(shape[0].clone()),
            _ => None,
        },
        _ => None,
    }
}

/// The position of `axis` among the dimensions of `ty`, an array.
pub fn axis_position(ty: Option<&Type>, axis: &str) -> Option<usize> {
    match ty {
        Some(Type::Array { shape, .. }) => shape.iter().position(|d| matches!(d, Dim::Size(s) if s == axis)),
        _ => None,
    }
}

/// Is `ty` an array whose outermost dimension is the chunked axis (and of what rank)?
pub fn along_axis(ty: Option<&Type>, axis: &str) -> Option<usize> {
    match ty {
        Some(Type::Array { shape, .. }) if matches!(shape.first(), Some(Dim::Size(s)) if s == axis) => {
            Some(shape.len())
        }
        _ => None,
    }
}

fn node(kind: ExprKind, like: &Expr, ty: Option<Type>) -> Expr {
    let mut e = Expr::new(kind, like.span);
    e.ty = ty;
    e
}

fn var(name: &str, like: &Expr, ty: Option<Type>) -> Expr {
    node(ExprKind::Var(name.to_string()), like, ty)
}

fn apply(f: &str, args: Vec<Expr>, like: &Expr, ty: Option<Type>) -> Expr {
    node(ExprKind::Apply { func: Box::new(var(f, like, None)), args }, like, ty)
}

/// `op a b` for an operator argument of `reduce`/`scan`: a section, `min`/`max` or a named
/// function, or a lambda (its parameters bound by `let`s around its body).
pub fn call_op(op: &Expr, a: Expr, b: Expr) -> Expr {
    match &op.kind {
        ExprKind::Section(bin) => {
            node(ExprKind::Binary { op: *bin, lhs: Box::new(a), rhs: Box::new(b) }, op, None)
        }
        ExprKind::Lambda { params, body } if params.len() == 2 => {
            let inner = node(
                ExprKind::Let { name: params[1].clone(), value: Box::new(b), body: body.clone() },
                op,
                None,
            );
            node(
                ExprKind::Let { name: params[0].clone(), value: Box::new(a), body: Box::new(inner) },
                op,
                None,
            )
        }
        _ => node(ExprKind::Apply { func: Box::new(op.clone()), args: vec![a, b] }, op, None),
    }
}

/// The size name of a block's rows in the block programs (bound by the chunked inputs'
/// first dimension, or given as an input).
pub const BLOCK_ROWS: &str = "__rows";

/// The row of the whole array where a block starts (an input of the block programs).
pub const BLOCK_OFFSET: &str = "__offset";

/// In the body of a `generate` along the axis, whose first parameter `row` numbers a block's
/// rows: reads of the blocks' arrays at `[row, ...]` stay, and every other use of `row` reads
/// `row + __offset`, the row of the whole array. (`legality.rs` refuses reads of the blocks'
/// arrays at any other first index.)
fn offset_row_uses(body: &Expr, row: &str, scope: &Scope<'_>) -> Expr {
    fn go(e: &Expr, row: &str, scope: &Scope<'_>) -> Expr {
        match &e.kind {
            ExprKind::Var(n) if n == row => {
                let i64t = Some(Type::Scalar(ElemType::I64));
                node(
                    ExprKind::Binary {
                        op: eqfuse_ir::ast::BinOp::Add,
                        lhs: Box::new(e.clone()),
                        rhs: Box::new(var(BLOCK_OFFSET, e, i64t.clone())),
                    },
                    e,
                    i64t,
                )
            }
            // shadowed: the name is another value from here on
            ExprKind::Let { name, value, body } if name == row => {
                let v = go(value, row, scope);
                node(
                    ExprKind::Let { name: name.clone(), value: Box::new(v), body: body.clone() },
                    e,
                    e.ty.clone(),
                )
            }
            ExprKind::Lambda { params, .. } if params.iter().any(|p| p == row) => e.clone(),
            ExprKind::Index { array, indices }
                if scope.is_row(array)
                    && matches!(indices.first().map(|i| &i.kind), Some(ExprKind::Var(n)) if n == row) =>
            {
                let mut idx: Vec<Expr> = indices.iter().map(|i| go(i, row, scope)).collect();
                idx[0] = indices[0].clone();
                node(ExprKind::Index { array: array.clone(), indices: idx }, e, e.ty.clone())
            }
            _ => {
                let mut c = e.clone();
                for child in c.kind.children_mut() {
                    let new = go(child, row, scope);
                    *child = new;
                }
                c
            }
        }
    }
    go(body, row, scope)
}

/// Rewrites `e`, lifting what [`Hoisted`] describes into `out`.
pub fn rewrite(e: &Expr, scope: &mut Scope<'_>, out: &mut Vec<Hoisted>) -> Result<Expr> {
    let axis = scope.axis;
    if let Some((f, args)) = builtin(e) {
        match (f, args) {
            ("reduce" | "scan" | "scan_exclusive", [op, ne, a]) => {
                let a2 = rewrite(a, scope, out)?;
                let column = if f == "reduce" { column_dim(a.ty.as_ref(), axis) } else { None };
                if (along_axis(a.ty.as_ref(), axis) == Some(1) || column.is_some()) && scope.is_row(&a2) {
                    let elem = match &e.ty {
                        Some(Type::Scalar(t) | Type::Array { elem: t, .. }) => *t,
                        _ => {
                            return Err(eqfuse_ir::error::internal(format!("`{f}` without an element type")))
                        }
                    };
                    for (what, x) in [("operator", op), ("neutral element", ne)] {
                        if let Some(n) = free_vars(x).into_iter().find(|n| scope.is_value(n)) {
                            return Err(scope.refuse(
                                &format!("the {what} of `{f}` uses `{n}`: only constants and functions can combine blocks"),
                                e,
                            ));
                        }
                    }
                    let k = out.len();
                    let arg = scope.wrap_locals(a2.clone());
                    let scalar = Some(Type::Scalar(elem));
                    if f == "reduce" {
                        let name = format!("__p{k}");
                        let shape: Vec<Dim> = column.into_iter().collect();
                        out.push(Hoisted {
                            name: name.clone(),
                            carry: None,
                            op: op.clone(),
                            ne: ne.clone(),
                            arg,
                            elem,
                            shape,
                        });
                        scope.hoisted.insert(name.clone());
                        return Ok(var(&name, e, e.ty.clone()));
                    }
                    let (total, carry) = (format!("__t{k}"), format!("__c{k}"));
                    out.push(Hoisted {
                        name: total,
                        carry: Some(carry.clone()),
                        op: op.clone(),
                        ne: ne.clone(),
                        arg,
                        elem,
                        shape: Vec::new(),
                    });
                    scope.carries.insert(carry.clone());
                    // the block's rows, scanned, then combined with the carry of the blocks before
                    let local = apply(f, vec![op.clone(), ne.clone(), a2], e, e.ty.clone());
                    let v = var("__v", e, scalar.clone());
                    let body = call_op(op, var(&carry, e, scalar), v);
                    let lam =
                        node(ExprKind::Lambda { params: vec!["__v".into()], body: Box::new(body) }, e, None);
                    return Ok(apply("map", vec![lam, local], e, e.ty.clone()));
                }
            }
            ("generate" | "fill", [shape, f_or_x])
                if along_axis(e.ty.as_ref(), axis).is_some()
                    || (f == "generate"
                        && column_dim(e.ty.as_ref(), axis).is_some()
                        && scope.is_row(f_or_x)) =>
            {
                // the block's rows: `[__rows, ...]` (`[c, __rows]` for the columns of a column
                // reduction); the generate's index along the axis is the block's row, so a use
                // of it as a number is offset to the whole array's row
                let ExprKind::Shape(dims) = &shape.kind else { return rewrite_default(e, scope, out) };
                let at = axis_position(e.ty.as_ref(), axis).unwrap_or(0);
                let mut dims2 = Vec::with_capacity(dims.len());
                for (k, d) in dims.iter().enumerate() {
                    dims2.push(if k == at {
                        var(BLOCK_ROWS, d, d.ty.clone())
                    } else {
                        rewrite(d, scope, out)?
                    });
                }
                let shape2 = node(ExprKind::Shape(dims2), shape, shape.ty.clone());
                let second = match (f, &f_or_x.kind) {
                    ("generate", ExprKind::Lambda { params, body }) if params.len() > at => {
                        let body = offset_row_uses(body, &params[at], scope);
                        let lam = node(
                            ExprKind::Lambda { params: params.clone(), body: Box::new(body) },
                            f_or_x,
                            f_or_x.ty.clone(),
                        );
                        rewrite(&lam, scope, out)?
                    }
                    _ => rewrite(f_or_x, scope, out)?,
                };
                return Ok(apply(f, vec![shape2, second], e, e.ty.clone()));
            }
            ("iota", [_]) if along_axis(e.ty.as_ref(), axis).is_some() => {
                // `iota n` over a block: its rows' numbers in the whole array
                let i64t = Some(Type::Scalar(ElemType::I64));
                let local = apply("iota", vec![var(BLOCK_ROWS, e, i64t.clone())], e, e.ty.clone());
                let shifted = node(
                    ExprKind::Binary {
                        op: eqfuse_ir::ast::BinOp::Add,
                        lhs: Box::new(var("__i", e, i64t.clone())),
                        rhs: Box::new(var(BLOCK_OFFSET, e, i64t)),
                    },
                    e,
                    None,
                );
                let lam =
                    node(ExprKind::Lambda { params: vec!["__i".into()], body: Box::new(shifted) }, e, None);
                return Ok(apply("map", vec![lam, local], e, e.ty.clone()));
            }
            ("length", [a]) | ("size", [a, _]) => {
                let dim = match args.get(1).map(|k| &k.kind) {
                    None => Some(0),
                    Some(ExprKind::Lit(Lit::Int(k))) => usize::try_from(*k).ok(),
                    Some(_) => None,
                };
                if let (Some(Type::Array { shape, .. }), Some(k)) = (a.ty.as_ref(), dim) {
                    if scope.is_row(a) {
                        let i64t = Some(Type::Scalar(ElemType::I64));
                        match shape.get(k) {
                            Some(Dim::Size(s)) => return Ok(var(s, e, i64t)),
                            Some(Dim::Known(v)) => {
                                return Ok(node(ExprKind::Lit(Lit::Int(i128::from(*v))), e, i64t))
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    rewrite_default(e, scope, out)
}

/// [`rewrite`] of the forms that lift nothing themselves: their parts are rewritten.
fn rewrite_default(e: &Expr, scope: &mut Scope<'_>, out: &mut Vec<Hoisted>) -> Result<Expr> {
    match &e.kind {
        ExprKind::Let { name, value, body } => {
            let v2 = rewrite(value, scope, out)?;
            scope.push_local(name, &v2);
            let b2 = rewrite(body, scope, out);
            scope.pop_local();
            let b2 = b2?;
            if !free_vars(&b2).contains(name) && free_vars(body).contains(name) {
                // what used the binding was lifted out (and took the binding with it, so an
                // error in its value still surfaces there): the binding goes too
                return Ok(b2);
            }
            Ok(node(
                ExprKind::Let { name: name.clone(), value: Box::new(v2), body: Box::new(b2) },
                e,
                e.ty.clone(),
            ))
        }
        ExprKind::Lambda { params, .. } => {
            // lambda parameters are scalars: they shadow, and are never along the axis
            scope.push_params(params);
            let mut c = e.clone();
            let r = rewrite_children(&mut c, scope, out);
            scope.pop_params(params.len());
            r.map(|()| c)
        }
        _ => {
            let mut c = e.clone();
            rewrite_children(&mut c, scope, out)?;
            Ok(c)
        }
    }
}

fn rewrite_children(c: &mut Expr, scope: &mut Scope<'_>, out: &mut Vec<Hoisted>) -> Result<()> {
    for child in c.kind.children_mut() {
        let new = rewrite(child, scope, out)?;
        *child = new;
    }
    Ok(())
}
