//! Names in expressions: free variables, and which array builtin an application is.

use eqfuse_ir::ast::{Expr, ExprKind};
use std::collections::BTreeSet;

/// The names `e` uses that it does not bind itself (a `let ... in` binds its name in its
/// body, a lambda its parameters). Builtins (`map`, `exp`) are names too; callers look up
/// only the names they know.
pub fn free_vars(e: &Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    collect(e, &mut Vec::new(), &mut out);
    out
}

fn collect(e: &Expr, bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
    match &e.kind {
        ExprKind::Var(n) => {
            if !bound.iter().any(|b| b == n) {
                out.insert(n.clone());
            }
        }
        ExprKind::Let { name, value, body } => {
            collect(value, bound, out);
            bound.push(name.clone());
            collect(body, bound, out);
            bound.pop();
        }
        ExprKind::Lambda { params, body } => {
            let depth = bound.len();
            bound.extend(params.iter().cloned());
            collect(body, bound, out);
            bound.truncate(depth);
        }
        kind => {
            for c in kind.children() {
                collect(c, bound, out);
            }
        }
    }
}

/// The builtin an application calls, when it calls one by name (`map`, `reduce`, `length`).
pub fn builtin(e: &Expr) -> Option<(&str, &[Expr])> {
    match &e.kind {
        ExprKind::Apply { func, args } => match &func.kind {
            ExprKind::Var(f) => Some((f.as_str(), args.as_slice())),
            _ => None,
        },
        _ => None,
    }
}
