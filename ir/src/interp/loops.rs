//! Loops over arrays (docs/language-reference.md "Loops over arrays"): `loop pat = init for
//! i < n do body` runs the body `n` times (`n` evaluated once, none when `n <= 0`) with `i`
//! bound to `0 .. n - 1`; `loop pat = init while cond do body` evaluates `cond` before every
//! iteration. The state is a scalar, an array, or a tuple of them; every array of the state
//! keeps its shape (else `E-SHAPE`, naming the array and both shapes). Every iteration checks
//! the run's deadline (`E-LIMIT` once it has passed), so a loop that never ends is stopped.

use super::scalar::internal;
use super::tuples::{make_tuple, parts};
use super::{fmt_shape, Env, Interp, Val, R};
use crate::ast::{Expr, LoopForm};
use crate::error::{Code, Error, Span};
use crate::value::Scalar;
use std::time::Instant;

/// The loop's state as a list of parts, one per name of the pattern.
fn state_parts<'p>(v: Val<'p>, names: usize, tuple: bool, span: Span) -> R<Vec<Val<'p>>> {
    if tuple {
        parts(v, names, span)
    } else {
        Ok(vec![v])
    }
}

/// The shape of each array of the state (`None` for scalars).
fn shapes(state: &[Val<'_>]) -> Vec<Option<Vec<usize>>> {
    state.iter().map(|v| if let Val::Array(a) = v { Some(a.shape.clone()) } else { None }).collect()
}

impl<'p> Interp<'p> {
    /// `E-LIMIT` once the run's deadline has passed.
    pub(crate) fn check_deadline(&self, span: Span) -> R<()> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(Box::new(Error::at(
                Code::Limit,
                span,
                "the run's time limit was reached in a `loop` (does its condition ever become false?)",
            ))),
            _ => Ok(()),
        }
    }

    /// Evaluates `loop pat = init (for var < count | while cond) do body` (the whole loop
    /// at `span`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn eval_loop(
        &self,
        pat: &'p [String],
        tuple: bool,
        init: &'p Expr,
        form: &'p LoopForm,
        body: &'p Expr,
        span: Span,
        env: &mut Env<'p>,
    ) -> R<Val<'p>> {
        let first = self.eval(init, env)?;
        let mut state = state_parts(first, pat.len(), tuple, init.span)?;
        let before = shapes(&state);
        let depth = env.len();
        match form {
            LoopForm::For { var, count } => {
                let n = self.eval_i64(count, env)?;
                for i in 0..n.max(0) {
                    self.check_deadline(span)?;
                    env.extend(pat.iter().map(String::as_str).zip(state.iter().cloned()));
                    env.push((var.as_str(), Val::Scalar(Scalar::I64(i))));
                    let next = self.eval(body, env);
                    env.truncate(depth);
                    state = self.next_state(next?, pat, tuple, &before, body.span)?;
                }
            }
            LoopForm::While { cond } => loop {
                self.check_deadline(span)?;
                env.extend(pat.iter().map(String::as_str).zip(state.iter().cloned()));
                let go = self.eval_bool(cond, env);
                let next = match go {
                    Ok(true) => self.eval(body, env),
                    Ok(false) => {
                        env.truncate(depth);
                        break;
                    }
                    Err(e) => Err(e),
                };
                env.truncate(depth);
                state = self.next_state(next?, pat, tuple, &before, body.span)?;
            },
        }
        if tuple {
            Ok(make_tuple(state))
        } else {
            state.pop().ok_or_else(|| Box::new(internal(span, "a loop without a state")))
        }
    }

    /// The next state from the body's value, checking that every array keeps its shape.
    fn next_state(
        &self,
        v: Val<'p>,
        pat: &[String],
        tuple: bool,
        before: &[Option<Vec<usize>>],
        span: Span,
    ) -> R<Vec<Val<'p>>> {
        let next = state_parts(v, pat.len(), tuple, span)?;
        for ((name, old), new) in pat.iter().zip(before).zip(&next) {
            match (old, new) {
                (Some(old), Val::Array(a)) if *old != a.shape => {
                    return Err(Box::new(Error::shape(
                        span,
                        format!(
                            "`loop`: the array `{name}` of the state has shape {} before an iteration and {} after it; \
                             every array of a loop's state keeps its shape",
                            fmt_shape(old),
                            fmt_shape(&a.shape)
                        ),
                    )));
                }
                (Some(_), Val::Array(_)) | (None, Val::Scalar(_) | Val::Tuple(_) | Val::Group(_)) => {}
                (_, other) => {
                    return Err(Box::new(internal(
                        span,
                        format!("the state `{name}` of a loop became {}", other.kind()),
                    )))
                }
            }
        }
        Ok(next)
    }
}
