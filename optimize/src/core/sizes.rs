//! Input dimensions with size arithmetic (`offsets : i64[m + 1]`, `pairs : f32[2 * n]`)
//! rewritten for the optimiser, which knows plain size names only:
//!
//! ```text
//! input offsets : i64[m + 1]      =>   input offsets : i64[m'core]
//! ... m ...                       =>   ... (m'core - 1) ...
//! ```
//!
//! The run binds the inputs against the source program first, so a shape that gives no
//! non-negative integer for `m` is refused (`E-SHAPE`) before this program runs; here `m`
//! is `(m'core - add) / mul`, exact.

use eqfuse_ir::ast::{BinOp, Expr, ExprKind, Item, Lit, Program};
use eqfuse_ir::types::{Dim, Type};
use std::collections::HashMap;

/// `p` with every affine input dimension renamed to a plain size, and the size it binds
/// computed from it wherever the program names it.
pub(super) fn rename(p: &Program) -> Program {
    // the bound name -> (its plain stand-in, mul, add), the first dimension that binds it
    let mut affine: HashMap<String, (String, i64, i64)> = HashMap::new();
    let mut items = p.items.clone();
    for it in &mut items {
        let Item::Input { ty: Type::Array { shape, .. }, .. } = it else { continue };
        for d in shape.iter_mut() {
            if let Dim::Affine { name, mul, add } = d {
                let stand = Dim::affine_stand_in(name, *mul, *add);
                affine.entry(name.clone()).or_insert((stand.clone(), *mul, *add));
                *d = Dim::Size(stand);
            }
        }
    }
    if affine.is_empty() {
        return p.clone();
    }
    // a size named plainly by another input is bound there: keep that name
    let plain: Vec<String> = p
        .items
        .iter()
        .filter_map(|it| match it {
            Item::Input { ty: Type::Array { shape, .. }, .. } => Some(shape.clone()),
            _ => None,
        })
        .flatten()
        .filter_map(|d| if let Dim::Size(s) = d { Some(s) } else { None })
        .collect();
    affine.retain(|name, _| !plain.contains(name));
    for it in &mut items {
        match it {
            Item::Let { value, .. }
            | Item::LetTuple { value, .. }
            | Item::Output { value: Some(value), .. } => {
                *value = subst(value, &affine);
            }
            _ => {}
        }
    }
    Program { items }
}

/// `e` with every free use of an affinely bound size replaced by its computation. Sizes
/// are never shadowed (names are unique among items; a local binding of the same name is
/// the program's value, and the checker refuses it where it would be ambiguous).
fn subst(e: &Expr, affine: &HashMap<String, (String, i64, i64)>) -> Expr {
    if let ExprKind::Var(name) = &e.kind {
        if let Some((stand, mul, add)) = affine.get(name) {
            let span = e.span;
            let mut out = Expr::var(stand.clone(), span);
            if *add != 0 {
                let k = Expr::lit(Lit::Int(i128::from(*add)), span);
                out = Expr::new(
                    ExprKind::Binary { op: BinOp::Sub, lhs: Box::new(out), rhs: Box::new(k) },
                    span,
                );
            }
            if *mul != 1 {
                let k = Expr::lit(Lit::Int(i128::from(*mul)), span);
                out = Expr::new(
                    ExprKind::Binary { op: BinOp::Div, lhs: Box::new(out), rhs: Box::new(k) },
                    span,
                );
            }
            return out;
        }
    }
    // a binder that takes a size's name hides the size in its scope
    let bound: Vec<&String> = match &e.kind {
        ExprKind::Lambda { params, .. } => params.iter().collect(),
        ExprKind::LetTuple { names, .. } => names.iter().collect(),
        ExprKind::Let { name, .. } => vec![name],
        ExprKind::Loop { pat, form, .. } => {
            let mut v: Vec<&String> = pat.iter().collect();
            if let eqfuse_ir::ast::LoopForm::For { var, .. } = form {
                v.push(var);
            }
            v
        }
        _ => Vec::new(),
    };
    let inner_map;
    let inner = if bound.iter().any(|n| affine.contains_key(*n)) {
        let mut m = affine.clone();
        m.retain(|k, _| !bound.contains(&k));
        inner_map = m;
        &inner_map
    } else {
        affine
    };
    let mut kind = e.kind.clone();
    match &mut kind {
        // the bound value is outside the binding's scope; the rest is inside
        ExprKind::Let { value, body, .. } | ExprKind::LetTuple { value, body, .. } => {
            **value = subst(value, affine);
            **body = subst(body, inner);
        }
        _ => {
            for c in kind.children_mut() {
                *c = subst(c, inner);
            }
        }
    }
    Expr::new(kind, e.span)
}
