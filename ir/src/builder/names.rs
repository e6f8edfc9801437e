//! Validation of names, depths and nodes, and the deterministic naming of lambda
//! parameters (see the [module docs](super)).

use super::is_placeholder;
use crate::ast::{Expr, ExprKind, Limits, Lit, KEYWORDS};
use crate::error::{Code, Error, Result};
use crate::types::{Dim, Type};
use std::collections::HashSet;

fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '\'') && !KEYWORDS.contains(&name)
}

pub(super) fn check_name(name: &str, what: &str) -> Result<()> {
    if is_valid_name(name) {
        Ok(())
    } else if KEYWORDS.contains(&name) {
        Err(Error::new(Code::Type, format!("`{name}` is a keyword and cannot be used as a {what}")))
    } else {
        Err(Error::new(Code::Type, format!("`{name}` is not a valid {what}")))
    }
}

pub(super) fn check_input_type(name: &str, ty: &Type) -> Result<()> {
    let Type::Array { shape, .. } = ty else { return Ok(()) };
    for d in shape {
        match d {
            Dim::Known(k) if *k < 0 => {
                return Err(Error::new(Code::Type, format!("input `{name}` has a negative dimension {k}")))
            }
            Dim::Known(_) => {}
            Dim::Size(s) => check_name(s, "size name")?,
            Dim::Affine { name, .. } => check_name(name, "size name")?,
            Dim::Expr(_) | Dim::Dynamic => {
                return Err(Error::new(
                    Code::Type,
                    format!(
                        "input `{name}` must declare its dimensions as size names or literals, not `{d}`"
                    ),
                ))
            }
        }
    }
    Ok(())
}

pub(super) fn check_depth(e: &Expr, limits: &Limits) -> Result<()> {
    if e.depth > limits.max_depth {
        return Err(Error::limit(format!(
            "an expression is nested {} deep, deeper than the limit of {}",
            e.depth, limits.max_depth
        )));
    }
    Ok(())
}

/// Checks the depth, then renames placeholders and validates names and literals.
pub(super) fn finish_expr(mut e: Expr, limits: &Limits) -> Result<Expr> {
    check_depth(&e, limits)?;
    let mut avoid = HashSet::new();
    collect_names(&e, &mut avoid);
    let mut namer = Namer { avoid, scope: Vec::new(), error: None };
    if namer.fix(&mut e, 0) {
        return Ok(e);
    }
    Err(namer.error.unwrap_or_else(|| Error::new(Code::Type, "a malformed expression")))
}

/// Every name the user gave in `e` (not placeholders).
fn collect_names(e: &Expr, out: &mut HashSet<String>) {
    match &e.kind {
        ExprKind::Var(n) if !is_placeholder(n) => {
            out.insert(n.clone());
        }
        ExprKind::Let { name, .. } => {
            out.insert(name.clone());
        }
        ExprKind::Lambda { params, .. } => {
            out.extend(params.iter().filter(|p| !is_placeholder(p)).cloned());
        }
        _ => {}
    }
    for c in e.kind.children() {
        collect_names(c, out);
    }
}

/// A node the text cannot spell: a lambda without parameters, an empty shape, index list
/// or argument list, a tuple of fewer than two elements.
fn malformed(kind: &ExprKind) -> bool {
    match kind {
        ExprKind::Lambda { params, .. } => params.is_empty(),
        ExprKind::Shape(es) => es.is_empty(),
        ExprKind::Index { indices, .. } => indices.is_empty(),
        ExprKind::Apply { args, .. } => args.is_empty(),
        ExprKind::Tuple(es) => es.len() < 2,
        _ => false,
    }
}

fn malformed_message(kind: &ExprKind) -> &'static str {
    match kind {
        ExprKind::Lambda { .. } => "a lambda needs at least one parameter (a map of no arrays?)",
        ExprKind::Shape(_) => "a shape needs at least one dimension",
        ExprKind::Index { .. } => "an index needs at least one index expression",
        ExprKind::Apply { .. } => "an application needs at least one argument",
        _ => "an index function returns one index or a tuple of at least two",
    }
}

/// The base name of parameter `k` of a lambda nested inside `depth` lambdas.
fn param_name(depth: usize, k: usize) -> String {
    const LETTERS: [&str; 6] = ["x", "y", "z", "u", "v", "w"];
    match LETTERS.get(depth) {
        Some(l) => format!("{l}{k}"),
        None => format!("p{depth}_{k}"),
    }
}

struct Namer {
    avoid: HashSet<String>,
    /// Placeholder -> final name, innermost last.
    scope: Vec<(String, String)>,
    /// The first error found.
    error: Option<Error>,
}

impl Namer {
    /// Renames and checks `e` and its children; `false` (with `self.error` set) on an error.
    /// Kept small: it recurses once per level of nesting.
    fn fix(&mut self, e: &mut Expr, depth: usize) -> bool {
        let mark = self.scope.len();
        let Some(inner) = self.visit(e, depth) else { return false };
        let mut ok = true;
        for c in e.kind.children_mut() {
            if !self.fix(c, inner) {
                ok = false;
                break;
            }
        }
        self.scope.truncate(mark);
        ok
    }

    /// The work on one node: renames a placeholder, names a lambda's parameters (pushing
    /// them on the scope), checks names and literals. Returns the lambda depth of the
    /// node's children, or `None` after recording an error.
    #[inline(never)]
    fn visit(&mut self, e: &mut Expr, depth: usize) -> Option<usize> {
        let r = match &mut e.kind {
            ExprKind::Var(n) if is_placeholder(n) => match self.scope.iter().rev().find(|(p, _)| p == n) {
                Some((_, name)) => {
                    *n = name.clone();
                    Ok(depth)
                }
                None => Err(Error::new(
                    Code::Type,
                    "a lambda parameter is used outside its lambda (a closure argument escaped)",
                )),
            },
            ExprKind::Var(n) => check_name(n, "name").map(|_| depth),
            ExprKind::Lit(Lit::Float(v)) if v.is_nan() => {
                Err(Error::new(Code::Type, "a float literal is NaN, which the language cannot write"))
            }
            kind if malformed(kind) => Err(Error::new(Code::Type, malformed_message(kind))),
            ExprKind::Lambda { params, .. } => {
                let mut r = Ok(depth + 1);
                for (k, p) in params.iter_mut().enumerate() {
                    if is_placeholder(p) {
                        let mut name = param_name(depth, k);
                        while self.avoid.contains(&name) {
                            name.push('_');
                        }
                        self.scope.push((std::mem::replace(p, name.clone()), name));
                    } else if let Err(err) = check_name(p, "lambda parameter") {
                        r = Err(err);
                    }
                }
                r
            }
            ExprKind::Let { name, .. } => check_name(name, "local `let` name").map(|_| depth),
            _ => Ok(depth),
        };
        match r {
            Ok(d) => Some(d),
            Err(err) => {
                self.error.get_or_insert(err);
                None
            }
        }
    }
}
