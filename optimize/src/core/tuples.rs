//! Tuple patterns taken apart: a group of arrays becomes separate arrays, a tuple separate
//! scalars.
//!
//! ```text
//! let (a, b) = e           =>   let a = part 0 of e      (items and `let ... in` alike)
//!                               let b = part 1 of e
//! part k of (e0, e1, ..)                 =  ek
//! part k of (if c then t else f)         =  if c then part k of t else part k of f
//! part k of (let x = v in e)             =  let x = v in part k of e
//! part k of (map (\x.. -> e) a..)        =  map (\x.. -> part k of e) a..
//! part k of (generate sh (\i.. -> e))    =  generate sh (\i.. -> part k of e)
//! part k of f x..  (f a named function)  =  part k of f's body, its parameters bound by `let`
//! ```
//!
//! Each part repeats the work the parts share; the optimiser computes shared work once
//! (one register in an element function, horizontal fusion into one multi-output pass).
//! Anything else (a group a reduction makes, a loop's state) is left as it is, and
//! `super::unsupported` names it.

use eqfuse_ir::ast::{Expr, ExprKind, Item, Program};
use std::collections::HashMap;

/// Every tuple pattern of `p` that can be taken apart, taken apart.
pub(super) fn split(p: &Program) -> eqfuse_ir::Result<Program> {
    let funcs: HashMap<String, Expr> = p
        .items
        .iter()
        .filter_map(|it| match it {
            Item::Let { name, value, .. } if matches!(value.kind, ExprKind::Lambda { .. }) => {
                Some((name.clone(), value.clone()))
            }
            _ => None,
        })
        .collect();
    let mut items = Vec::with_capacity(p.items.len());
    for it in &p.items {
        match it {
            Item::LetTuple { names, value, span } => {
                let value = expr(value, &funcs);
                let parts: Option<Vec<Expr>> = (0..names.len()).map(|k| part(&value, k, &funcs)).collect();
                match parts {
                    Some(parts) => {
                        for (name, v) in names.iter().zip(parts) {
                            items.push(Item::Let { name: name.clone(), value: v, span: *span });
                        }
                    }
                    None => items.push(Item::LetTuple { names: names.clone(), value, span: *span }),
                }
            }
            Item::Let { name, value, span } => {
                items.push(Item::Let { name: name.clone(), value: expr(value, &funcs), span: *span })
            }
            Item::Output { name, value: Some(value), span } => {
                items.push(Item::Output { name: name.clone(), value: Some(expr(value, &funcs)), span: *span })
            }
            other => items.push(other.clone()),
        }
    }
    Ok(Program { items })
}

/// `e` with its local tuple patterns taken apart where they can be.
fn expr(e: &Expr, funcs: &HashMap<String, Expr>) -> Expr {
    expr_owned(e.clone(), funcs)
}

/// [`expr`] on an owned tree, rewritten in place (a long `let` chain costs its size, not its
/// size times its depth).
fn expr_owned(e: Expr, funcs: &HashMap<String, Expr>) -> Expr {
    let Expr { mut kind, span, .. } = e;
    for c in kind.children_mut() {
        *c = expr_owned(super::prelude::take(c), funcs);
    }
    if let ExprKind::LetTuple { names, value, body } = kind {
        let parts: Option<Vec<Expr>> = (0..names.len()).map(|k| part(&value, k, funcs)).collect();
        if let Some(parts) = parts.filter(|ps| !ps.iter().any(|p| mentions(p, &names))) {
            // bind innermost-last so that part k sees none of the names (they are fresh in
            // the pattern's scope only)
            let mut out = *body;
            for (name, v) in names.into_iter().zip(parts).rev() {
                out = Expr::new(ExprKind::Let { name, value: Box::new(v), body: Box::new(out) }, span);
            }
            return out;
        }
        kind = ExprKind::LetTuple { names, value, body };
    }
    Expr::new(kind, span)
}

/// Part `k` of a tuple or group expression, when it can be taken apart.
pub(super) fn part(e: &Expr, k: usize, funcs: &HashMap<String, Expr>) -> Option<Expr> {
    let span = e.span;
    let kind = match &e.kind {
        ExprKind::Tuple(es) => return es.get(k).cloned(),
        ExprKind::If { cond, then_, else_ } => ExprKind::If {
            cond: cond.clone(),
            then_: Box::new(part(then_, k, funcs)?),
            else_: Box::new(part(else_, k, funcs)?),
        },
        ExprKind::Let { name, value, body } => {
            ExprKind::Let { name: name.clone(), value: value.clone(), body: Box::new(part(body, k, funcs)?) }
        }
        ExprKind::Apply { func, args } => {
            let ExprKind::Var(f) = &func.kind else { return None };
            let fpos = match f.as_str() {
                "map" => 0,
                "generate" => 1,
                _ if funcs.contains_key(f) => return inline_part(&funcs[f], args, k, funcs, span),
                _ => return None,
            };
            let mut args = args.clone();
            let lam = args.get(fpos)?;
            let lam = match &lam.kind {
                ExprKind::Var(name) => funcs.get(name)?.clone(),
                _ => lam.clone(),
            };
            let ExprKind::Lambda { params, body } = &lam.kind else { return None };
            args[fpos] = Expr::new(
                ExprKind::Lambda { params: params.clone(), body: Box::new(part(body, k, funcs)?) },
                lam.span,
            );
            ExprKind::Apply { func: func.clone(), args }
        }
        _ => return None,
    };
    Some(Expr::new(kind, span))
}

/// Part `k` of a named function applied to all its parameters: its body's part, with the
/// parameters bound to the arguments by `let` (the arguments are scalars: nothing is
/// copied).
fn inline_part(
    f: &Expr,
    args: &[Expr],
    k: usize,
    funcs: &HashMap<String, Expr>,
    span: eqfuse_ir::error::Span,
) -> Option<Expr> {
    let ExprKind::Lambda { params, body } = &f.kind else { return None };
    if params.len() != args.len() || args.iter().any(|a| mentions(a, params)) {
        return None;
    }
    let mut out = part(body, k, funcs)?;
    for (p, a) in params.iter().zip(args).rev() {
        out = Expr::new(
            ExprKind::Let { name: p.clone(), value: Box::new(a.clone()), body: Box::new(out) },
            span,
        );
    }
    Some(out)
}

/// Whether `e` names any of `names` (free or not: a cautious test).
fn mentions(e: &Expr, names: &[String]) -> bool {
    super::any_node(e, &|n| matches!(&n.kind, ExprKind::Var(v) if names.contains(v)))
}
