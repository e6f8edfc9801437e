//! A program with loops over arrays cut into the pieces the optimiser takes one by one:
//! runs of items with no loop (`Segment::Items`), and loops (`Segment::Loop`), each loop
//! with its initial state, its count or condition, the part of its body that does not
//! depend on the state (hoisted: computed once, before the loop), and the rest of its body
//! as a list of items with the next state as its results.
//!
//! ```text
//! let (tf, k) = loop (t, c) = (t0, 0) for s < steps do      init   [t0, 0]       count steps
//!   let w = map (\x -> x * 2.0) wts in                      hoisted  [let w = ...]
//!   let t2 = generate [h, w] (\i j -> ... t ... w ...) in   body     [let t2 = ...]
//!   (t2, c + 1)                                             next     [t2, c + 1]
//! ```

use crate::core::{any_node, unsupported_error};
use eqfuse_ir::ast::{Expr, ExprKind, Item, LoopForm, Program};
use eqfuse_ir::error::Span;
use eqfuse_ir::Result;
use std::collections::HashSet;

/// A piece of a program.
pub(crate) enum Segment {
    /// Consecutive items with no loop at their root.
    Items(Vec<Item>),
    /// One loop item.
    Loop(Box<LoopItem>),
}

/// A loop at the root of an item: `let x = loop ...`, `let (a, b) = loop ...`, `output o =
/// loop ...`.
pub(crate) struct LoopItem {
    /// The names the item binds to the loop's results, one per part of the state.
    pub results: Vec<String>,
    /// The state's names (the loop's pattern).
    pub state: Vec<String>,
    /// The initial state, one expression per part.
    pub init: Vec<Expr>,
    /// `for var < count` or `while cond`.
    pub form: LoopForm,
    /// The body's bindings that do not depend on the state, in order.
    pub hoisted: Vec<Item>,
    /// The rest of the body's bindings, in order.
    pub body: Vec<Item>,
    /// The next state, one expression per part.
    pub next: Vec<Expr>,
    /// Where the loop is.
    pub span: Span,
}

/// Whether some item of `p` is a loop at its root (what [`cut`] handles).
pub(crate) fn has_loop_items(p: &Program) -> bool {
    p.items
        .iter()
        .any(|it| crate::core::item_value(it).is_some_and(|e| matches!(e.kind, ExprKind::Loop { .. })))
}

/// `p` cut into segments.
pub(crate) fn cut(p: &Program) -> Result<Vec<Segment>> {
    let mut out: Vec<Segment> = Vec::new();
    let mut run: Vec<Item> = Vec::new();
    for it in &p.items {
        let (results, value) = match it {
            Item::Let { name, value, .. } => (vec![name.clone()], value),
            Item::LetTuple { names, value, .. } => (names.clone(), value),
            Item::Output { name, value: Some(value), .. } => (vec![name.clone()], value),
            _ => {
                run.push(it.clone());
                continue;
            }
        };
        let ExprKind::Loop { pat, init, form, body, .. } = &value.kind else {
            run.push(it.clone());
            continue;
        };
        if !run.is_empty() {
            out.push(Segment::Items(std::mem::take(&mut run)));
        }
        if results.len() != pat.len() {
            return Err(unsupported_error("a loop whose result pattern and state differ in size"));
        }
        let init = parts(init, pat.len())?;
        let (hoisted, body, next) = split_body(body, pat, form)?;
        out.push(Segment::Loop(Box::new(LoopItem {
            results,
            state: pat.clone(),
            init,
            form: form.clone(),
            hoisted,
            body,
            next: parts(&next, pat.len())?,
            span: value.span,
        })));
    }
    if !run.is_empty() {
        out.push(Segment::Items(run));
    }
    Ok(out)
}

/// The `n` parts of a state expression (itself when `n` is 1).
fn parts(e: &Expr, n: usize) -> Result<Vec<Expr>> {
    if n == 1 {
        return Ok(vec![e.clone()]);
    }
    (0..n)
        .map(|k| {
            crate::core::part_of(e, k)
                .ok_or_else(|| unsupported_error("a loop whose state is a tuple that cannot be taken apart"))
        })
        .collect()
}

/// A loop's body as (hoisted bindings, bindings, the next state): its chain of `let`s and
/// the expression that ends it. A binding is hoisted when it reads neither the state, nor
/// the `for` variable, nor a binding that is not hoisted.
fn split_body(body: &Expr, state: &[String], form: &LoopForm) -> Result<(Vec<Item>, Vec<Item>, Expr)> {
    let mut moving: HashSet<String> = state.iter().cloned().collect();
    if let LoopForm::For { var, .. } = form {
        moving.insert(var.clone());
    }
    let (mut hoisted, mut kept) = (Vec::new(), Vec::new());
    let mut e = body;
    loop {
        let (names, value, rest, item) = match &e.kind {
            ExprKind::Let { name, value, body } => (
                vec![name.clone()],
                value,
                body,
                Item::Let { name: name.clone(), value: (**value).clone(), span: e.span },
            ),
            ExprKind::LetTuple { names, value, body } => (
                names.clone(),
                value,
                body,
                Item::LetTuple { names: names.clone(), value: (**value).clone(), span: e.span },
            ),
            _ => break,
        };
        if names.iter().any(|n| moving.contains(n)) {
            // a binding that shadows the state: the rest of the body reads it, not the state
            return Err(unsupported_error("a loop body binding that takes a state's name"));
        }
        if mentions_any(value, &moving) {
            moving.extend(names);
            kept.push(item);
        } else {
            hoisted.push(item);
        }
        e = rest;
    }
    Ok((hoisted, kept, e.clone()))
}

/// Whether `e` reads any name of `names` (a cautious test: a local binding of the same name
/// counts too).
pub(crate) fn mentions_any(e: &Expr, names: &HashSet<String>) -> bool {
    any_node(e, &|n| matches!(&n.kind, ExprKind::Var(v) if names.contains(v)))
}

/// Every name `e` reads that is not bound inside it (lambda parameters, `let`s, loop
/// patterns and variables), in order of first use.
pub(crate) fn free_names(e: &Expr, out: &mut Vec<String>) {
    fn go(e: &Expr, bound: &mut Vec<String>, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Var(v) => {
                if !bound.contains(v) && !out.contains(v) {
                    out.push(v.clone());
                }
            }
            ExprKind::Lambda { params, body } => {
                let n = bound.len();
                bound.extend(params.iter().cloned());
                go(body, bound, out);
                bound.truncate(n);
            }
            ExprKind::Let { name, value, body } => {
                go(value, bound, out);
                bound.push(name.clone());
                go(body, bound, out);
                bound.pop();
            }
            ExprKind::LetTuple { names, value, body } => {
                go(value, bound, out);
                let n = bound.len();
                bound.extend(names.iter().cloned());
                go(body, bound, out);
                bound.truncate(n);
            }
            ExprKind::Loop { pat, init, form, body, .. } => {
                go(init, bound, out);
                let n = bound.len();
                if let LoopForm::For { var, count } = form {
                    go(count, bound, out);
                    bound.push(var.clone());
                }
                bound.extend(pat.iter().cloned());
                if let LoopForm::While { cond } = form {
                    go(cond, bound, out);
                }
                go(body, bound, out);
                bound.truncate(n);
            }
            _ => {
                for c in e.kind.children() {
                    go(c, bound, out);
                }
            }
        }
    }
    go(e, &mut Vec::new(), out)
}
