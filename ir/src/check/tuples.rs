//! Checking tuples and groups: tuple expressions, `let (a, b) = ...` patterns, tuple
//! arguments of functions, and the messages for builtin names a program shadows.

use super::expr::{clash_err, Checker, Cx, TNode};
use super::text::{err, plural};
use super::unify::{Class, IT};
use crate::ast::{Expr, ExprKind};
use crate::error::{Error, Result};

impl Checker {
    /// `(e1, ..., ek)`: a tuple of scalars, or a group when a part is an array.
    #[inline(never)]
    pub(crate) fn check_tuple(&mut self, e: &Expr, es: &[Expr], cx: Cx) -> Result<TNode> {
        if es.len() < 2 {
            return Err(err(e, "a tuple needs at least 2 parts"));
        }
        let mut kids = Vec::with_capacity(es.len());
        let mut parts = Vec::with_capacity(es.len());
        for x in es {
            let n = self.check_expr(x, cx)?;
            match &n.it {
                IT::Scalar(_) | IT::Array { .. } => parts.push(n.it.clone()),
                other => {
                    let s = self.vars.show(other);
                    return Err(err(
                        x,
                        format!(
                            "a part of a tuple must be a scalar or an array, found {s} (tuples do not nest)"
                        ),
                    ));
                }
            }
            kids.push(n);
        }
        let it = if parts.iter().any(|p| matches!(p, IT::Array { .. })) {
            IT::Group(parts)
        } else {
            IT::Tuple(
                parts.iter().filter_map(|p| if let IT::Scalar(v) = p { Some(*v) } else { None }).collect(),
            )
        };
        Ok(TNode { it, kids })
    }

    /// The parts of a tuple or group bound by the pattern `names` at `site`.
    pub(crate) fn destructure(&mut self, site: &Expr, names: &[String], it: &IT) -> Result<Vec<IT>> {
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(err(site, format!("the name `{n}` appears twice in the pattern")));
            }
        }
        let parts: Vec<IT> = match it {
            IT::Tuple(vs) => vs.iter().map(|v| IT::Scalar(*v)).collect(),
            IT::Group(ps) => ps.clone(),
            other => {
                let s = self.vars.show(other);
                return Err(err(
                    site,
                    format!("the pattern ({}) destructures a tuple or a group, found {s}", names.join(", ")),
                ));
            }
        };
        if parts.len() != names.len() {
            let s = self.vars.show(it);
            return Err(err(
                site,
                format!(
                    "the pattern ({}) has {} names but the value has {} {}: {s}",
                    names.join(", "),
                    names.len(),
                    parts.len(),
                    plural(parts.len(), "part", "parts")
                ),
            ));
        }
        Ok(parts)
    }

    /// `let (a, b, ...) = value in body`.
    #[inline(never)]
    pub(crate) fn check_let_tuple(
        &mut self,
        e: &Expr,
        names: &[String],
        value: &Expr,
        body: &Expr,
        cx: Cx,
    ) -> Result<TNode> {
        let v = self.check_expr(value, cx)?;
        let parts = self.destructure(e, names, &v.it)?;
        let base = self.locals.len();
        for (n, p) in names.iter().zip(parts) {
            self.push_local(n, p);
        }
        let b = self.check_expr(body, cx);
        self.drop_locals(base);
        let b = b?;
        Ok(TNode { it: b.it.clone(), kids: vec![v, b] })
    }

    /// An argument given to a function: a scalar or a tuple of scalars.
    pub(crate) fn fn_arg(&mut self, it: &IT, e: &Expr, what: &str) -> Result<IT> {
        match it {
            IT::Scalar(_) | IT::Tuple(_) => Ok(it.clone()),
            other => {
                let s = self.vars.show(other);
                Err(err(e, format!("{what} must be a scalar or a tuple of scalars, found {s}")))
            }
        }
    }

    /// Unifies a function's parameter `p` with what it is given, `w`; on failure an error at
    /// `site` whose text `msg` makes from both types.
    pub(crate) fn unify_part(
        &mut self,
        p: &IT,
        w: &IT,
        site: &Expr,
        msg: impl FnOnce(&str, &str) -> String,
    ) -> Result<()> {
        match self.vars.unify_it(p, w) {
            Ok(()) => Ok(()),
            Err(clash) => {
                let (a, b) = (self.vars.show(p), self.vars.show(w));
                Err(match clash {
                    Some(c) => clash_err(c, site, msg(&a, &b)),
                    None => err(site, msg(&a, &b)),
                })
            }
        }
    }

    /// A parameter of a lambda whose type nothing gives: a tuple when the body starts by
    /// destructuring it (`\(a, i) (b, j) -> ...` after the parser's desugaring), else a scalar.
    pub(crate) fn fresh_param(&mut self, p: &str, body: &Expr) -> IT {
        let mut e = body;
        loop {
            match &e.kind {
                ExprKind::LetTuple { names, value, body } => {
                    if matches!(&value.kind, ExprKind::Var(v) if v == p) {
                        return IT::Tuple(names.iter().map(|_| self.vars.open(Class::Any)).collect());
                    }
                    if names.iter().any(|n| n == p) {
                        break;
                    }
                    e = body;
                }
                ExprKind::Let { name, body, .. } if name != p => e = body,
                _ => break,
            }
        }
        IT::Scalar(self.vars.open(Class::Any))
    }

    /// `name` applied as a function where the program's own value of that name hides the
    /// builtin.
    #[inline(never)]
    pub(crate) fn shadowed(&mut self, e: &Expr, name: &str, it: &IT) -> Error {
        let s = self.vars.show(it);
        err(
            e,
            format!(
                "`{name}` is shadowed here by the program's own `{name}` ({s}), which is not a function; rename it \
                 to apply the builtin `{name}`"
            ),
        )
    }
}
