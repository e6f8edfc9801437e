//! The checker's messages: expressions rendered short, and the errors every checking module
//! builds. Below `expr`, `builtins` and `hints`, which all word their messages with it.

use crate::ast::Expr;
use crate::error::Error;

/// A short rendering of `e` for messages.
pub(crate) fn show(e: &Expr) -> String {
    let s = crate::print::print_expr(e);
    if s.chars().count() > 80 {
        let t: String = s.chars().take(77).collect();
        format!("{t}...")
    } else {
        s
    }
}

/// `E-TYPE` at `e` with `m`, naming `e`.
pub(crate) fn err(e: &Expr, m: impl std::fmt::Display) -> Error {
    Error::ty(e.span, format!("{m} in `{}`", show(e)))
}

/// An internal inconsistency (a bug in the checker, never a user error).
pub(crate) fn internal(what: &str) -> Error {
    crate::error::internal(format!("in the checker: {what}"))
}

/// `one` or `many` by count.
pub(crate) fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}
