//! Version-2 forms the e-graph does not have, rewritten into the forms it has before a
//! program is encoded (`to_core`), and the forms that cannot be rewritten yet named
//! (`unsupported`).
//!
//! The rewrites keep the program's meaning exactly (the reference interpreter runs the
//! source program, never this one, so every conformance case checks them):
//!
//! - the prelude (`prelude.rs`): `sum prod all any dot mean` as the reductions they are,
//!   `pi` as its literal, a builtin scalar function passed as a function (`map sqrt xs`) as
//!   a lambda, `slice a [s..] [l..]` as a `generate` that reads the block;
//! - tuples (`tuples.rs`): a tuple pattern over a tuple or a group whose parts can be taken
//!   apart (a tuple literal, an `if` or `let` of them, a `map`/`generate` whose function
//!   returns one) becomes one binding per part, so a group of arrays is separate arrays and
//!   a tuple separate scalars; the optimiser's horizontal fusion then computes the parts in
//!   one multi-output pass, with their shared work once;
//! - sizes (`sizes.rs`): an input dimension `m + 1`, `2 * n` is renamed to a plain size and
//!   `m` computed from it.
//!
//! What is left that the optimiser cannot yet take (loops over arrays, reductions and scans
//! over groups and `argmin`/`argmax`, segmented operations, `iterate` over tuples) is named
//! by [`unsupported`]; such a program runs on the reference interpreter (the facade says so
//! once per process).

mod prelude;
mod sizes;
mod tuples;

use eqfuse_ir::ast::{Expr, ExprKind, Item, Program};
use eqfuse_ir::check::Checked;
use eqfuse_ir::types::Type;
use eqfuse_ir::{Code, Error, Result};

/// The start of the message of the error [`unsupported_error`] makes.
pub const UNSUPPORTED: &str = "not supported by the optimiser yet: ";

/// Whether `e` is the optimiser's refusal of a form it cannot take yet (a program the facade
/// then runs on the reference interpreter).
pub fn is_unsupported(e: &Error) -> bool {
    e.code == Code::Type && e.message.starts_with(UNSUPPORTED)
}

/// The optimiser's refusal of `what`.
pub fn unsupported_error(what: &str) -> Error {
    Error::new(Code::Type, format!("{UNSUPPORTED}{what}"))
}

/// The program in the forms the e-graph has, checked again; `None` when it has nothing to
/// rewrite. `Err` with [`is_unsupported`] when it holds a form that cannot be rewritten.
pub fn to_core(checked: &Checked) -> Result<Option<Checked>> {
    if !needs_rewrite(&checked.program) {
        if let Some(what) = unsupported(&checked.program) {
            return Err(unsupported_error(&what));
        }
        return Ok(None);
    }
    let scope = prelude::Scope::of(&checked.program);
    let mut program = sizes::rename(&checked.program);
    program = prelude::rewrite(&program, &scope)?;
    program = tuples::split(&program)?;
    if let Some(what) = unsupported(&program) {
        return Err(unsupported_error(&what));
    }
    // the rewrites nest deeper than the source (a `let` of a 3-tuple is three `let`s): the
    // source was held to the user's limit, its rewriting is checked as deep as it goes
    let mut limits = eqfuse_ir::Limits::default();
    limits.max_depth = limits.max_depth.max(nesting(&program));
    let core = eqfuse_ir::check::check_with(&program, &limits).map_err(|e| {
        eqfuse_ir::error::internal(format!(
            "the program rewritten for the optimiser does not check ({e}):\n{program}"
        ))
    })?;
    Ok(Some(core))
}

/// How deep `p`'s expressions nest (iteratively: no deep recursion).
fn nesting(p: &Program) -> u32 {
    let mut deepest = 0u32;
    for e in p.items.iter().filter_map(item_value) {
        let mut stack = vec![(e, 1u32)];
        while let Some((n, d)) = stack.pop() {
            deepest = deepest.max(d);
            stack.extend(n.kind.children().map(|c| (c, d.saturating_add(1))));
        }
    }
    deepest
}

/// Part `k` of a tuple or group expression that can be taken apart (a tuple literal, an
/// `if` or `let` of them, a `map` or `generate` whose function returns one).
pub(crate) fn part_of(e: &Expr, k: usize) -> Option<Expr> {
    tuples::part(e, k, &std::collections::HashMap::new())
}

/// Whether anything in `p` is a version-2 form [`to_core`] rewrites.
fn needs_rewrite(p: &Program) -> bool {
    let item_needs = |it: &Item| match it {
        Item::LetTuple { .. } => true,
        Item::Input { ty: Type::Array { shape, .. }, .. } => {
            shape.iter().any(|d| matches!(d, eqfuse_ir::Dim::Affine { .. }))
        }
        _ => false,
    };
    p.items.iter().any(item_needs) || p.items.iter().filter_map(item_value).any(|e| any_node(e, &v2_node))
}

/// A node [`to_core`] may rewrite.
fn v2_node(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::LetTuple { .. } | ExprKind::Loop { .. } => true,
        ExprKind::Var(name) => {
            prelude::REWRITTEN.contains(&name.as_str()) || prelude::is_scalar_builtin(name)
        }
        _ => false,
    }
}

/// The value of an item, if it has one.
pub(crate) fn item_value(it: &Item) -> Option<&Expr> {
    match it {
        Item::Let { value, .. } | Item::LetTuple { value, .. } => Some(value),
        Item::Output { value, .. } => value.as_ref(),
        Item::Input { .. } => None,
    }
}

/// Whether `pred` holds for `e` or any node under it (iteratively: no deep recursion).
pub(crate) fn any_node(e: &Expr, pred: &dyn Fn(&Expr) -> bool) -> bool {
    let mut stack = vec![e];
    while let Some(n) = stack.pop() {
        if pred(n) {
            return true;
        }
        stack.extend(n.kind.children());
    }
    false
}

/// The first form in `p` the optimiser cannot take yet, in words. (Tuples and groups are
/// taken by the e-graph encoder, which refuses the forms it cannot take with the same
/// message.)
pub fn unsupported(p: &Program) -> Option<String> {
    for it in &p.items {
        let Some(e) = item_value(it) else { continue };
        let mut stack = vec![e];
        while let Some(n) = stack.pop() {
            if let Some(what) = unsupported_node(n) {
                return Some(what.to_string());
            }
            stack.extend(n.kind.children());
        }
    }
    None
}

fn unsupported_node(e: &Expr) -> Option<&'static str> {
    match &e.kind {
        ExprKind::Loop { .. } => Some("a loop over arrays (`loop ... for` / `while`)"),
        _ => None,
    }
}
