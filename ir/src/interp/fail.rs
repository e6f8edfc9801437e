//! The interpreter's internal errors: an inconsistency of a checked program (a bug in
//! eqfuse), at a position. Its own module, below every other of the interpreter.

use crate::error::{Error, Span};

/// An internal error: the program reached the interpreter in a shape the checker should
/// have refused. Never a panic.
pub(crate) fn internal(span: Span, what: impl std::fmt::Display) -> Error {
    let e = crate::error::internal(format!("in the interpreter: {what}"));
    Error { span: Some(span), ..e }
}
