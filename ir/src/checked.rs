//! The checker's result, [`Checked`]: the program with every expression's type, and its
//! signature. Its own module so that what reads a checked program (binding inputs, the
//! interpreter) does not depend on the checker that makes it.

use crate::ast::Program;
use crate::types::Type;
use crate::warning::Warning;
use indexmap::IndexMap;

/// A program that passed the checker: every `Expr::ty` in `program` is `Some`, every
/// literal's type is decided, and the signature is summarised.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The program, with `ty` filled on every expression node.
    pub program: Program,
    /// Inputs in declaration order with their declared types.
    pub inputs: IndexMap<String, Type>,
    /// Top-level `let`s in order with their types (`Type::Func` for named functions).
    pub lets: IndexMap<String, Type>,
    /// Outputs in order with their types.
    pub outputs: IndexMap<String, Type>,
    /// Size names in order of first appearance in the input declarations.
    pub sizes: Vec<String>,
    /// What the checker found suspicious but not wrong, in the order of the program text:
    /// arrays joined over sizes that cannot be proven equal, lambda operators that sampled
    /// values show are not associative or whose `ne` is not neutral. Filled by
    /// [`crate::check::check_source`]; empty after [`crate::check::check`] and
    /// [`crate::check::check_with`].
    pub warnings: Vec<Warning>,
}
