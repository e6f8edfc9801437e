//! Where the checker adds the hints of [`super::hints`] that need more than the failing
//! expression: the kinds of a builtin's arguments, the `map` around a lambda, the
//! reduction around a comparison. Each runs only on an error, and checks no argument
//! more than once more.

use super::expr::{Checker, Cx, Found};
use super::hints::{self, HintKind, IN_LAMBDA};
use super::unify::IT;
use crate::ast::{Expr, ExprKind};
use crate::error::Error;
use crate::types::Dim;

impl Checker {
    /// `error` for builtin `name` given a wrong number of `args`, with the help for `max m`
    /// and `min m` (one array: NumPy's reduction).
    pub(crate) fn one_argument_hint(&mut self, name: &str, args: &[Expr], cx: Cx, error: Error) -> Error {
        if !matches!(name, "max" | "min") || args.len() != 1 || cx.in_lambda {
            return error;
        }
        let kind = self.arg_kinds(&[&args[0]], cx)[0];
        match hints::whole_reduction(name, &args[0], kind) {
            Some(help) => error.with_note(help),
            None => error,
        }
    }

    /// `error` for scalar function `name` given an array, with the help to `map` it (in
    /// words inside a lambda).
    pub(crate) fn scalar_fn_hint(&mut self, name: &str, args: &[Expr], cx: Cx, error: Error) -> Error {
        if cx.in_lambda {
            return error.with_note(IN_LAMBDA);
        }
        let args: Vec<&Expr> = args.iter().collect();
        let kinds = self.arg_kinds(&args, cx);
        match hints::scalar_fn_on_array(name, &args, &kinds) {
            Some(help) => error.with_note(help),
            None => error,
        }
    }

    /// `error` for builtin `name`, with the help for `sum (a > b)` and `mean (a > b)` over
    /// arrays in place of the comparison's own.
    pub(crate) fn count_true_hint(&mut self, name: &str, args: &[Expr], cx: Cx, error: Error) -> Error {
        let operands = match args {
            [a] => match &a.kind {
                ExprKind::Binary { op, lhs, rhs } if op.is_comparison() => Some((op.symbol(), lhs, rhs)),
                _ => None,
            },
            _ => None,
        };
        let own = error.notes.last().and_then(|n| hints::kind_of(n)) == Some(HintKind::ArrayOperands);
        let Some((sym, lhs, rhs)) = operands.filter(|_| own && matches!(name, "sum" | "mean")) else {
            return error;
        };
        let kinds = self.arg_kinds(&[lhs, rhs], cx);
        match hints::count_true(name, sym, (lhs, kinds[0]), (rhs, kinds[1])) {
            Some(help) => {
                let mut error = error;
                error.notes.pop();
                error.with_note(help)
            }
            None => error,
        }
    }

    /// `error` from the function of `map` over `args` (of shape `shape`), with the help
    /// that rewrites the map as a `generate` when its lambda used a whole array (the note
    /// [`IN_LAMBDA`] in place).
    pub(crate) fn broadcast_in_lambda_hint(
        &mut self,
        args: &[Expr],
        cx: Cx,
        shape: &[Dim],
        error: Error,
    ) -> Error {
        if cx.in_lambda || error.notes.last().map(String::as_str) != Some(IN_LAMBDA) {
            return error;
        }
        let Some((ExprKind::Lambda { params, body }, mapped)) = args.split_first().map(|(f, m)| (&f.kind, m))
        else {
            return error;
        };
        let mut names = Vec::new();
        free_names(body, params, &mut names);
        let mut arrays = Vec::new();
        for n in names {
            if let Found::Value(IT::Array { shape, .. }) = self.lookup(&n) {
                if !arrays.iter().any(|(a, _): &(String, usize)| *a == n) {
                    arrays.push((n, shape.len()));
                }
            }
        }
        let mapped: Vec<&Expr> = mapped.iter().collect();
        match hints::broadcast_in_lambda(params, body, &mapped, shape, &arrays) {
            Some(help) => {
                let mut error = error;
                error.notes.pop();
                error.with_note(help)
            }
            None => error,
        }
    }
}

/// The names `e` uses that `bound` does not bind.
fn free_names(e: &Expr, bound: &[String], out: &mut Vec<String>) {
    match &e.kind {
        ExprKind::Var(n) if !bound.contains(n) => out.push(n.clone()),
        ExprKind::Lambda { params, body } => {
            let inner: Vec<String> = bound.iter().chain(params).cloned().collect();
            free_names(body, &inner, out);
        }
        ExprKind::Let { name, value, body } => {
            free_names(value, bound, out);
            let inner: Vec<String> = bound.iter().cloned().chain([name.clone()]).collect();
            free_names(body, &inner, out);
        }
        k => {
            for c in k.children() {
                free_names(c, bound, out);
            }
        }
    }
}
