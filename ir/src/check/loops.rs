//! Checking `loop pat = init for var < count do body` and `loop pat = init while cond do
//! body`: loops are array-level; the body gives the next state, of the state's type, and
//! every array of the state keeps its shape.

use super::dims::same;
use super::expr::{Checker, Cx, LoopParts as Parts, TNode};
use super::text::{err, show};
use super::unify::IT;
use crate::ast::{Expr, LoopForm};
use crate::error::{Error, Result};
use crate::types::{Dim, ElemType};

fn shape_text(s: &[Dim]) -> String {
    let d: Vec<String> = s.iter().map(|d| d.to_string()).collect();
    format!("[{}]", d.join(", "))
}

impl Checker {
    /// Checks a loop; its type is the state's.
    #[inline(never)]
    pub(crate) fn check_loop(&mut self, e: &Expr, p: Parts<'_>, cx: Cx) -> Result<TNode> {
        if cx.in_lambda {
            return Err(err(
                e,
                "a `loop` is not allowed inside a lambda (loops are array-level expressions); use `iterate` for a \
                 scalar loop inside a lambda",
            ));
        }
        let init = self.check_expr(p.init, cx)?;
        let parts = if p.tuple { self.destructure(e, p.pat, &init.it)? } else { vec![init.it.clone()] };
        if let LoopForm::For { var, .. } = p.form {
            if p.pat.contains(var) {
                return Err(err(e, format!("the loop variable `{var}` is also a name of the loop's state")));
            }
        }
        let base = self.locals.len();
        let mid = match p.form {
            LoopForm::For { count, .. } => {
                let n = self.check_expr(count, cx)?;
                let v = self.scalar_of(&n.it, count, "the count of a `for` loop")?;
                self.expect_at(v, ElemType::I64, count, |d| {
                    format!("the count of a `for` loop must be i64, found {d}")
                })?;
                n
            }
            LoopForm::While { cond } => {
                for (name, it) in p.pat.iter().zip(&parts) {
                    self.push_local(name, it.clone());
                }
                let n = self.check_expr(cond, cx);
                self.drop_locals(base);
                let n = n?;
                let v = self.scalar_of(&n.it, cond, "the condition of a `while` loop")?;
                self.expect_at(v, ElemType::Bool, cond, |d| {
                    format!("the condition of a `while` loop must be bool, found {d}")
                })?;
                n
            }
        };
        for (name, it) in p.pat.iter().zip(&parts) {
            self.push_local(name, it.clone());
        }
        if let LoopForm::For { var, .. } = p.form {
            let v = self.vars.known(ElemType::I64);
            self.push_local(var, IT::Scalar(v));
        }
        let body = self.check_expr(p.body, cx);
        self.drop_locals(base);
        let body = body?;
        let next = if p.tuple { self.next_parts(e, p.pat, &body.it)? } else { vec![body.it.clone()] };
        for ((name, before), after) in p.pat.iter().zip(&parts).zip(&next) {
            self.same_state(e, p.body, name, before, after)?;
        }
        Ok(TNode { it: init.it.clone(), kids: vec![init, mid, body] })
    }

    /// The parts of the body's value for a tuple pattern.
    fn next_parts(&mut self, e: &Expr, pat: &[String], it: &IT) -> Result<Vec<IT>> {
        match it {
            IT::Tuple(vs) if vs.len() == pat.len() => Ok(vs.iter().map(|v| IT::Scalar(*v)).collect()),
            IT::Group(ps) if ps.len() == pat.len() => Ok(ps.clone()),
            other => {
                let s = self.vars.show(other);
                Err(err(
                    e,
                    format!(
                        "the body of the loop must give the next state ({}), a tuple of {} parts, found {s}",
                        pat.join(", "),
                        pat.len()
                    ),
                ))
            }
        }
    }

    /// Requires the state part `name` to have the same type after an iteration as before.
    fn same_state(&mut self, e: &Expr, body: &Expr, name: &str, before: &IT, after: &IT) -> Result<()> {
        let msg = |a: &str, b: &str| {
            format!("the loop state `{name}` is {a} before an iteration but the body gives {b}")
        };
        if let (IT::Array { shape: sa, .. }, IT::Array { shape: sb, .. }) = (before, after) {
            if sa.len() == sb.len() {
                for (a, b) in sa.iter().zip(sb) {
                    if same(a, b) == Some(false) {
                        return Err(Error::shape(
                            e.span,
                            format!(
                                "the loop state `{name}` must keep its shape: it is {} before an iteration but {} \
                                 after it (the body `{}`)",
                                shape_text(sa),
                                shape_text(sb),
                                show(body)
                            ),
                        ));
                    }
                }
            }
        }
        self.unify_part(before, after, e, msg)
    }
}
