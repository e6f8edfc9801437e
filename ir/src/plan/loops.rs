//! A loop over arrays as a plan step ([`super::Step::Loop`]): its state, its count or
//! condition, its body's steps.

use super::{Step, ValueId};
use crate::error::Span;

/// A loop over arrays: `state = init; while more { body; state = next }; dst = state`.
///
/// The body's steps read the state values (and anything computed before the loop); what
/// does not depend on the state was computed once, before the loop (`hoisted` names it).
/// Each iteration the state takes the body's results (`next`): an executor may swap the
/// two sets of buffers ([`super::exec::Executor::rebind`]) so that no iteration after the first
/// allocates. Every array of the state keeps its shape from one iteration to the next
/// (else `E-SHAPE`, naming the part and both shapes).
#[derive(Clone, Debug, PartialEq)]
pub struct LoopStep {
    /// The values the body reads as the state, one per part (a scalar is a 0-d value).
    pub state: Vec<ValueId>,
    /// The state's names in the program, one per part (for messages and `explain`).
    pub names: Vec<String>,
    /// The initial state, computed before the loop.
    pub init: Vec<ValueId>,
    /// How many times the body runs.
    pub form: LoopKind,
    /// The body.
    pub body: Vec<Step>,
    /// The next state, computed by the body, one per part.
    pub next: Vec<ValueId>,
    /// The loop's results (the final state), one per part.
    pub dst: Vec<ValueId>,
    /// The names of the body's computations that do not depend on the state, computed once
    /// before the loop.
    pub hoisted: Vec<String>,
    /// Where the loop is in the program text.
    pub span: Option<Span>,
}

/// How a [`LoopStep`] decides whether to run its body again.
#[derive(Clone, Debug, PartialEq)]
pub enum LoopKind {
    /// `for i < count`: `count` (an `i64` 0-d value, computed before the loop) iterations;
    /// before each, `counter` is written with the iteration's number.
    For {
        /// The number of iterations (`<= 0`: none).
        count: ValueId,
        /// The iteration variable, 0 to `count - 1`.
        counter: ValueId,
    },
    /// `while cond`: `steps` compute `cond` (a `bool` 0-d value) from the state before every
    /// iteration; the loop ends when it is false.
    While {
        /// The condition's steps.
        steps: Vec<Step>,
        /// The condition.
        cond: ValueId,
    },
}

impl LoopStep {
    /// The step lists of the loop in [`super::Plan::kernels`] order: the condition's (a `while`),
    /// then the body's.
    pub fn step_lists(&self) -> Vec<&[Step]> {
        match &self.form {
            LoopKind::While { steps, .. } => vec![steps.as_slice(), self.body.as_slice()],
            LoopKind::For { .. } => vec![self.body.as_slice()],
        }
    }
}
