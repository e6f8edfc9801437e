//! The type and shape checker.
//!
//! [`check`] refuses a too-deep tree (`E-LIMIT`), then checks every item in order, then
//! returns a copy of the program with [`Expr::ty`] filled on every node. It works in two
//! passes: the first walks the program building, for every node, a type whose element types
//! may still be variables (structure and shapes are always known); unification over the whole
//! program decides literals' and lambda parameters' element types ("however indirect"); the
//! second pass resolves the variables (defaults: float literals `f64`, integer literals and
//! anything else left open `i64`), checks integer literals fit their type, and writes the types.
//!
//! # The typed tree
//!
//! - A literal has `Scalar(t)` with its resolved type (an integer literal may be `f32`/`f64`).
//! - A lambda, an operator section, a named function's name, and `min`/`max` used as an
//!   `op` have `Type::Func { params, ret }`; `ret` is a scalar or (index functions) a tuple.
//! - The head name of a builtin application (`map` in `map f xs`) has `Type::Func` whose
//!   `params` are the element types of the scalar and array arguments, in order, and whose
//!   `ret` is the application's type. The application node has the result type.
//! - A shape argument `[d1, ..., dr]` has `Type::ShapeArg(r)`; its elements are `i64`.
//! - A tuple of scalars has `Type::Tuple`; a tuple with an array part (a group, or a loop's
//!   state) has `Type::Group`. `map`/`generate` with a tuple-returning function, and the
//!   reductions, scans and segment operations of a group, have `Type::Group` (a reduction to
//!   rank 0 of a group has `Type::Tuple`). A lambda's tuple parameter is a `Type::Tuple` in
//!   its `Type::Func`'s `params`.
//! - `let name = value in body` and `let (a, b) = value in body` have the body's type; `if`
//!   the merged type of its branches (array dimensions that differ become [`Dim::Dynamic`]);
//!   a `loop` the type of its state (children: init, count or condition, body).
//! - `pi`, unshadowed, is a `Var` of a float type (its context's, else `f64`).
//! - A size computed in the program is tracked as a linear form (`n + 1`, `k - 1`) where it is
//!   a size plus or minus constants, and compared as such (a loop's state that grows from `[n]`
//!   to `[(n + 1)]` is `E-SHAPE` at check time).

mod arity;
mod arrays;
mod builtins;
mod did_you_mean;
mod dims;
mod expr;
mod hint_sites;
pub mod hints;
mod loops;
mod neutral;
mod sample;
mod scalar_fns;
mod sizes;
mod text;
mod tuples;
mod unify;

use crate::ast::{is_builtin, Expr, ExprKind, Item, Limits, Lit, Program, KEYWORDS};
use crate::error::{Code, Error, Result, Span};
use crate::types::{Dim, Type};
use expr::{Checker, Cx, Global, TNode};
use indexmap::IndexMap;
use unify::{Vars, IT};

pub use crate::checked::Checked;

/// Checks `program` with the default [`Limits`].
pub fn check(program: &Program) -> Result<Checked> {
    check_with(program, &Limits::default())
}

fn item_expr(item: &Item) -> Option<&Expr> {
    match item {
        Item::Let { value, .. } | Item::LetTuple { value, .. } => Some(value),
        Item::Output { value, .. } => value.as_ref(),
        Item::Input { .. } => None,
    }
}

fn item_expr_mut(item: &mut Item) -> Option<&mut Expr> {
    match item {
        Item::Let { value, .. } | Item::LetTuple { value, .. } => Some(value),
        Item::Output { value, .. } => value.as_mut(),
        Item::Input { .. } => None,
    }
}

/// Stack bytes reserved per level of expression nesting (generous: debug builds use a few
/// kilobytes per level).
const STACK_PER_LEVEL: usize = 64 << 10;

/// Checks `program` under `limits`.
///
/// The checker recurses over the tree (at most `limits.max_depth` deep, refused beyond), so it
/// runs on a thread of its own whose stack is sized for that depth; no caller's stack limits
/// matter.
pub fn check_with(program: &Program, limits: &Limits) -> Result<Checked> {
    let levels = usize::try_from(limits.max_depth).unwrap_or(usize::MAX);
    let stack = levels.saturating_mul(STACK_PER_LEVEL).saturating_add(8 << 20).min(4 << 30);
    crate::stack::with_stack("eqfuse-check", stack, || check_inner(program, limits))
}

/// Checks a program a person wrote: [`check_with`], then what the language requires but
/// types cannot say, and what looks wrong but is not.
///
/// - A built-in operator of `reduce`, `scan` or `scan_exclusive` given a constant neutral
///   element that would make the result depend on the backend (`reduce (+) 1 xs`) is
///   `E-TYPE`, with the form to write instead.
/// - [`Checked::warnings`] lists arrays joined over sizes that cannot be proven equal and
///   lambda operators that sampled values show are not associative, not commutative (for
///   `permute`), or whose `ne` is not neutral.
///
/// The optimiser's own programs (decoded from the e-graph, which may write `\a b -> a + b`
/// as `(+)`) go through [`check_with`] alone.
pub fn check_source(program: &Program, limits: &Limits) -> Result<Checked> {
    let levels = usize::try_from(limits.max_depth).unwrap_or(usize::MAX);
    let stack = levels.saturating_mul(STACK_PER_LEVEL).saturating_add(8 << 20).min(4 << 30);
    crate::stack::with_stack("eqfuse-check", stack, || {
        let mut checked = check_inner(program, limits)?;
        neutral::check_program(&checked.program)?;
        let mut warnings = sizes::warnings(&checked.program);
        warnings.extend(sample::warnings(&checked.program, limits));
        warnings.sort_by_key(|w| w.span.map(|s| s.start));
        checked.warnings = warnings;
        Ok(checked)
    })
}

/// Checks a program made to sample an operator ([`sample`]), on the caller's thread.
fn check_sample(program: &Program, limits: &Limits) -> Result<Checked> {
    check_inner(program, limits)
}

fn check_inner(program: &Program, limits: &Limits) -> Result<Checked> {
    for item in &program.items {
        if let Some(e) = item_expr(item) {
            if e.depth > limits.max_depth {
                return Err(Error::at(
                    Code::Limit,
                    e.span,
                    format!(
                        "the expression of `{}` is nested {} deep, more than the limit of {}",
                        item.name(),
                        e.depth,
                        limits.max_depth
                    ),
                ));
            }
        }
    }

    let mut ck = Checker::default();
    for item in &program.items {
        for name in item.names() {
            ck.item_lines.entry(name.to_string()).or_insert(item.span().line);
        }
    }
    let mut inputs = IndexMap::new();
    for item in &program.items {
        if let Item::Input { name, ty, span } = item {
            validate_input_type(name, ty, *span)?;
            if let Type::Array { shape, .. } = ty {
                for d in shape {
                    if let Dim::Size(s) | Dim::Affine { name: s, .. } = d {
                        if is_builtin(s.as_str()) || KEYWORDS.contains(&s.as_str()) {
                            return Err(Error::ty(
                                *span,
                                format!("the size name `{s}` of input `{name}` is a builtin or keyword"),
                            ));
                        }
                        ck.sizes.entry(s.clone()).or_insert(span.line);
                    }
                }
            }
        }
    }

    let mut lets: IndexMap<String, IT> = IndexMap::new();
    let mut outputs: IndexMap<String, (IT, Span)> = IndexMap::new();
    let mut trees: Vec<Option<TNode>> = Vec::with_capacity(program.items.len());
    for item in &program.items {
        let mut tree = None;
        match item {
            Item::Input { name, ty, span } => {
                check_new_name(&ck, name, *span)?;
                let it = match ty {
                    Type::Scalar(t) => IT::Scalar(ck.vars.known(*t)),
                    Type::Array { elem, shape } => {
                        IT::Array { elem: ck.vars.known(*elem), shape: shape.clone() }
                    }
                    _ => {
                        return Err(Error::ty(*span, format!("input `{name}` must be a scalar or an array")))
                    }
                };
                ck.globals.insert(name.clone(), Global { it, kind: "input", line: span.line });
                inputs.insert(name.clone(), ty.clone());
            }
            Item::Let { name, value, span } => {
                check_new_name(&ck, name, *span)?;
                let node = ck.check_binding(value, Cx::TOP)?;
                ck.globals.insert(name.clone(), Global { it: node.it.clone(), kind: "let", line: span.line });
                lets.insert(name.clone(), node.it.clone());
                tree = Some(node);
            }
            Item::LetTuple { names, value, span } => {
                for name in names {
                    check_new_name(&ck, name, *span)?;
                }
                let node = ck.check_expr(value, Cx::TOP)?;
                let parts = ck.destructure(value, names, &node.it)?;
                for (name, it) in names.iter().zip(parts) {
                    ck.globals.insert(name.clone(), Global { it: it.clone(), kind: "let", line: span.line });
                    lets.insert(name.clone(), it);
                }
                tree = Some(node);
            }
            Item::Output { name, value: Some(value), span } => {
                check_new_name(&ck, name, *span)?;
                let node = ck.check_expr(value, Cx::TOP)?;
                not_a_tuple(&mut ck, name, &node.it, *span)?;
                ck.globals
                    .insert(name.clone(), Global { it: node.it.clone(), kind: "output", line: span.line });
                outputs.insert(name.clone(), (node.it.clone(), *span));
                tree = Some(node);
            }
            Item::Output { name, value: None, span } => {
                if let Some((_, first)) = outputs.get(name) {
                    return Err(Error::ty(
                        *span,
                        format!("`{name}` is output twice (first on line {})", first.line),
                    ));
                }
                let it = match ck.globals.get(name) {
                    Some(Global { it: IT::Func { .. }, .. }) => {
                        return Err(Error::ty(
                            *span,
                            format!("`{name}` is a function; only arrays and scalars can be outputs"),
                        ))
                    }
                    Some(g) => g.it.clone(),
                    None if ck.sizes.contains_key(name) => {
                        return Err(Error::ty(
                            *span,
                            format!("`output {name}` must name an earlier input, let or output; `{name}` is a size name"),
                        ))
                    }
                    None => {
                        return Err(Error::ty(
                            *span,
                            format!("`output {name}` must name an earlier input, let or output; `{name}` is not defined before it"),
                        ))
                    }
                };
                not_a_tuple(&mut ck, name, &it, *span)?;
                outputs.insert(name.clone(), (it, *span));
            }
        }
        trees.push(tree);
    }

    let mut out = program.clone();
    for (item, tree) in out.items.iter_mut().zip(trees) {
        if let (Some(e), Some(t)) = (item_expr_mut(item), tree) {
            fill(e, t, &mut ck.vars)?;
        }
    }
    let warnings = Vec::new();
    let lets = lets.into_iter().map(|(k, it)| (k, ck.vars.resolve_it(&it))).collect();
    let outputs = outputs.into_iter().map(|(k, (it, _))| (k, ck.vars.resolve_it(&it))).collect();
    Ok(Checked { program: out, inputs, lets, outputs, sizes: ck.sizes.keys().cloned().collect(), warnings })
}

/// A tuple or group is never an output.
fn not_a_tuple(ck: &mut Checker, name: &str, it: &IT, span: Span) -> Result<()> {
    if matches!(it, IT::Tuple(_) | IT::Group(_)) {
        let s = ck.vars.show(it);
        return Err(Error::ty(
            span,
            format!(
                "output `{name}` is {s}; a tuple or group is never an output: destructure it with `let (a, b) = ...` \
                 and output its parts"
            ),
        ));
    }
    Ok(())
}

fn check_new_name(ck: &Checker, name: &str, span: Span) -> Result<()> {
    if KEYWORDS.contains(&name) {
        return Err(Error::ty(span, format!("`{name}` is a keyword, not a name")));
    }
    if let Some(line) = ck.sizes.get(name) {
        return Err(Error::ty(
            span,
            format!("`{name}` is already a size name (declared by the input on line {line})"),
        ));
    }
    if let Some(g) = ck.globals.get(name) {
        return Err(Error::ty(
            span,
            format!("`{name}` is already defined (by the {} on line {})", g.kind, g.line),
        ));
    }
    Ok(())
}

fn validate_input_type(name: &str, ty: &Type, span: Span) -> Result<()> {
    match ty {
        Type::Scalar(_) => Ok(()),
        Type::Array { shape, .. } if !shape.is_empty() => {
            for d in shape {
                match d {
                    Dim::Known(k) if *k >= 0 => {}
                    Dim::Size(_) => {}
                    Dim::Affine { mul, .. } if *mul >= 1 => {}
                    other => {
                        return Err(Error::ty(
                            span,
                            format!(
                            "input `{name}` has the dimension {other}; a dimension must be a size name or a \
                                 non-negative integer"
                        ),
                        ))
                    }
                }
            }
            Ok(())
        }
        other => {
            Err(Error::ty(span, format!("input `{name}` has type {other}; an input is a scalar or an array")))
        }
    }
}

/// Writes the resolved types of `t` into `e` and its descendants.
fn fill(e: &mut Expr, t: TNode, vars: &mut Vars) -> Result<()> {
    let ty = vars.resolve_it(&t.it);
    if let (ExprKind::Lit(lit @ (Lit::Int(_) | Lit::Hex(_))), Type::Scalar(t)) = (&e.kind, &ty) {
        if let (Some(v), Some((lo, hi))) = (lit.int_value(), t.int_range()) {
            if v < lo || v > hi {
                let shown = crate::print::print_expr(e);
                return Err(Error::ty(
                    e.span,
                    format!("the integer literal {shown} does not fit its type {t} ({lo} to {hi})"),
                ));
            }
        }
    }
    e.ty = Some(ty);
    let kids = e.kind.children_mut();
    if kids.len() != t.kids.len() {
        return Err(text::internal("typed tree does not match the program"));
    }
    for (c, k) in kids.into_iter().zip(t.kids) {
        fill(c, k, vars)?;
    }
    Ok(())
}
