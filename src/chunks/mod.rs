//! Splitting a program for data in chunks (the split `eqfuse.dask` runs on Dask).
//!
//! The inputs whose outermost dimension is one size name, the *axis*, arrive in blocks of
//! rows. [`split`] rewrites the program into small programs, each an ordinary `.eqf`
//! program that eqfuse optimises as usual:
//!
//! - **passes**, each run once per block: they compute the *partials* of the reductions over
//!   the axis (`__pK`, combined across blocks by a `combine` program with the reduction's own
//!   operator and neutral element) and the block *totals* of the scans along it (`__tK`,
//!   turned into each block's carry `__cK` by an exclusive-scan program). A pass may use the
//!   partials and carries of the passes before it (a variance needs the mean first), so a
//!   program takes as many passes as its reductions are deep.
//! - **globals**, run once: the outputs that do not lie along the axis (scalars and whole
//!   arrays), from the whole inputs, the sizes and the combined partials.
//! - **rows**, run once per block: the outputs along the axis, from the block's rows, the
//!   partials and the block's carries.
//!
//! Every sub-program takes the size names it uses as `i64` inputs (a block's length is not
//! the axis's length), the chunked inputs with the block's length `__rows`, the row where
//! its block starts as `__offset` when it numbers rows (`iota n`, a `generate` that uses its
//! row index as a number), and recomputes the `let`s it needs. `hoist.rs` is the rewriting, `legality.rs` what a block may
//! compute, `names.rs` free variables.
//!
//! Programs whose outputs read their inputs only near their own element (stencils,
//! elementwise maps) may instead run block by block with halos, chunked along any of their
//! size names: [`halo_plan`] (`halo.rs`).

mod halo;
mod hoist;
mod legality;
mod names;
mod run;
#[cfg(test)]
mod tests;

pub use halo::{halo_plan, HaloAxis, HaloPlan};
pub use run::run_in_blocks;

use eqfuse_ir::ast::{Expr, ExprKind, Item, Program};
use eqfuse_ir::check::Checked;
use eqfuse_ir::error::Span;
use eqfuse_ir::error::{Error, Result};
use eqfuse_ir::print::print_program;
use eqfuse_ir::types::{Dim, Type};
use hoist::{along_axis, Hoisted};
pub use hoist::{BLOCK_OFFSET, BLOCK_ROWS};
use names::free_vars;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A program split for data in blocks of rows along one axis: see the module docs.
#[derive(Clone, Debug, Serialize)]
pub struct ChunkPlan {
    /// The size name the chunked inputs share as their outermost dimension.
    pub axis: String,
    /// The inputs that arrive in blocks of rows, in declaration order.
    pub chunked: Vec<String>,
    /// The passes over the blocks, in the order they run.
    pub passes: Vec<Pass>,
    /// The program of the outputs that do not lie along the axis (run once).
    pub globals: Option<String>,
    /// The program of the outputs along the axis (run once per block).
    pub rows: Option<String>,
    /// The program's outputs in order, and whether each comes from `rows` (else `globals`).
    pub outputs: Vec<(String, bool)>,
}

/// One pass over the blocks.
#[derive(Clone, Debug, Serialize)]
pub struct Pass {
    /// The block program: its outputs are the partials and totals of `combine`.
    pub source: String,
    /// How each of its outputs is combined across blocks.
    pub combine: Vec<Combine>,
}

/// How one output of a pass is combined across blocks.
#[derive(Clone, Debug, Serialize)]
pub struct Combine {
    /// The pass's output (`__pK`, `__tK`).
    pub name: String,
    /// For a scan's totals, the carry each block then receives (`__cK`); `None` for a
    /// partial, which the combining program reduces to one value named `name`.
    pub carry: Option<String>,
    /// The combining program: input `parts` (one value per block), output `value` (the
    /// reduction) or `carries` (the exclusive scan, one per block).
    pub source: String,
}

/// Names, scopes and what depends on the chunked inputs, while the program is rewritten.
pub(crate) struct Scope<'a> {
    axis: &'a str,
    /// Top-level names that are values (inputs, sizes, `let`s and outputs that are not
    /// functions).
    values: HashSet<String>,
    /// Top-level names that depend on the chunked inputs (the inputs, then bindings).
    row: HashSet<String>,
    /// Top-level names along the axis that do not depend on them (`let idx = iota n`).
    whole_rows: HashSet<String>,
    /// The partials lifted so far.
    hoisted: HashSet<String>,
    /// The carries made so far.
    carries: HashSet<String>,
    /// Local `let`s (with their rewritten value and whether it depends on the chunked
    /// inputs) and lambda parameters (no value), innermost last.
    locals: Vec<(String, Option<Expr>, bool)>,
    /// The item being rewritten, for messages.
    item: String,
    /// Inside the index function of a `generate` along the axis: its row parameter.
    row_param: Option<String>,
}

impl Scope<'_> {
    fn local(&self, n: &str) -> Option<&(String, Option<Expr>, bool)> {
        self.locals.iter().rev().find(|(name, _, _)| name == n)
    }

    /// Does `e` depend on the chunked inputs?
    pub fn is_row(&self, e: &Expr) -> bool {
        free_vars(e).iter().any(|n| match self.local(n) {
            Some((_, _, row)) => *row,
            None => self.row.contains(n) || self.carries.contains(n),
        })
    }

    /// Is `n` (not shadowed) a value along the axis made without the chunked inputs?
    pub fn is_whole_row(&self, n: &str) -> bool {
        self.local(n).is_none() && self.whole_rows.contains(n)
    }

    /// Is `n` a value (not a function or a builtin) where it is used?
    pub fn is_value(&self, n: &str) -> bool {
        self.local(n).is_some()
            || self.values.contains(n)
            || self.hoisted.contains(n)
            || self.carries.contains(n)
    }

    pub fn push_local(&mut self, name: &str, value: &Expr) {
        let row = self.is_row(value);
        self.locals.push((name.to_string(), Some(value.clone()), row));
    }

    pub fn pop_local(&mut self) {
        self.locals.pop();
    }

    pub fn push_params(&mut self, params: &[String]) {
        self.locals.extend(params.iter().map(|p| (p.clone(), None, false)));
    }

    pub fn pop_params(&mut self, n: usize) {
        self.locals.truncate(self.locals.len().saturating_sub(n));
    }

    /// `e` inside the local `let`s in scope that it uses (innermost first), so that it can
    /// be computed elsewhere.
    pub fn wrap_locals(&self, e: Expr) -> Expr {
        let mut cur = e;
        for (name, value, _) in self.locals.iter().rev() {
            let Some(value) = value else { continue };
            if free_vars(&cur).contains(name) {
                let span = cur.span;
                let ty = cur.ty.clone();
                let mut wrapped = Expr::new(
                    ExprKind::Let { name: name.clone(), value: Box::new(value.clone()), body: Box::new(cur) },
                    span,
                );
                wrapped.ty = ty;
                cur = wrapped;
            }
        }
        cur
    }

    /// The error for a step that cannot run block by block.
    pub fn refuse(&self, why: &str, at: &Expr) -> Error {
        let mut e = Error::input(format!(
            "`{}` cannot be computed in blocks of `{}`: {why} (in `{}`); give the chunked inputs as one chunk",
            self.item,
            self.axis,
            eqfuse_ir::print::print_expr(at)
        ));
        e.span = Some(at.span).filter(|s| *s != Span::default());
        e
    }
}

/// A top-level binding after rewriting.
struct Binding {
    name: String,
    value: Expr,
    row: bool,
    output: bool,
}

/// A form of language version 2 the split into blocks does not take yet, in words: a loop
/// over arrays (its body may need rows of other blocks), a tuple pattern, an input
/// dimension with size arithmetic.
fn version_2_form(checked: &Checked) -> Option<&'static str> {
    if checked.inputs.values().any(|t| {
        matches!(t, eqfuse_ir::Type::Array { shape, .. } if shape.iter().any(|d| matches!(d, eqfuse_ir::Dim::Affine { .. })))
    }) {
        return Some("an input's dimension is size arithmetic (`m + 1`)");
    }
    for it in &checked.program.items {
        if matches!(it, Item::LetTuple { .. }) {
            return Some("it destructures a tuple or a group");
        }
        let value = match it {
            Item::Let { value, .. } | Item::LetTuple { value, .. } => Some(value),
            Item::Output { value, .. } => value.as_ref(),
            Item::Input { .. } => None,
        };
        let mut stack: Vec<&Expr> = value.into_iter().collect();
        while let Some(e) = stack.pop() {
            match &e.kind {
                ExprKind::Loop { .. } => {
                    return Some("it loops over arrays (`loop`), whose body may need rows of other blocks")
                }
                ExprKind::LetTuple { .. } => return Some("it destructures a tuple or a group"),
                _ => stack.extend(e.kind.children()),
            }
        }
    }
    None
}

/// Splits a checked program for inputs chunked along the size name `axis`. `E-INPUT` when
/// no input lies along `axis`, or when a value needs rows of other blocks (the message names
/// it and why).
///
/// ```
/// let checked = eqfuse::check(&eqfuse::parse("
///     input xs : f64[n]
///     let mean = reduce (+) 0 xs / f64 n
///     output var = reduce (+) 0 (map (\\x -> (x - mean) * (x - mean)) xs) / f64 n
///     output centred = map (\\x -> x - mean) xs
/// ")?)?;
/// let plan = eqfuse::chunks::split(&checked, "n")?;
/// assert_eq!(plan.passes.len(), 2);          // the mean's sum, then the squares' sum
/// assert_eq!(plan.outputs, vec![("var".to_string(), false), ("centred".to_string(), true)]);
/// # Ok::<(), eqfuse::Error>(())
/// ```
pub fn split(checked: &Checked, axis: &str) -> Result<ChunkPlan> {
    let chunked: Vec<String> = checked
        .inputs
        .iter()
        .filter(|(_, t)| along_axis(Some(t), axis).is_some())
        .map(|(n, _)| n.clone())
        .collect();
    if chunked.is_empty() {
        return Err(Error::input(format!("no input of the program has `{axis}` as its first dimension")));
    }
    let program = &checked.program;
    if let Some(why) = version_2_form(checked) {
        return Err(Error::input(format!(
            "the program cannot be computed in blocks of `{axis}`: {why}; give the chunked inputs as one chunk"
        )));
    }
    if let Some(n) = program.items.iter().map(Item::name).find(|n| n.starts_with("__")) {
        return Err(Error::input(format!(
            "`{n}`: names that start with `__` are kept for the split into blocks"
        )));
    }
    let mut values: HashSet<String> = checked
        .sizes
        .iter()
        .map(String::as_str)
        .chain([BLOCK_ROWS, BLOCK_OFFSET])
        .map(String::from)
        .collect();
    for item in &program.items {
        let is_fn = matches!(item, Item::Let { value: Expr { kind: ExprKind::Lambda { .. }, .. }, .. });
        if !is_fn {
            values.insert(item.name().to_string());
        }
    }
    let mut scope = Scope {
        axis,
        values,
        row: chunked.iter().map(String::as_str).chain([BLOCK_ROWS, BLOCK_OFFSET]).map(String::from).collect(),
        whole_rows: HashSet::new(),
        hoisted: HashSet::new(),
        carries: HashSet::new(),
        locals: Vec::new(),
        item: String::new(),
        row_param: None,
    };
    let mut bindings: Vec<Binding> = Vec::new();
    let mut hoisted: Vec<Hoisted> = Vec::new();
    let mut outputs: Vec<String> = Vec::new();
    for item in &program.items {
        let (name, value, output) = match item {
            Item::Input { .. } => continue,
            Item::Let { name, value, .. } => (name, value, false),
            Item::LetTuple { names, span, .. } => {
                let mut e = Error::input(format!(
                    "`({})` cannot be computed in blocks of `{axis}`: a tuple pattern is not split yet; \
                     give the chunked inputs as one chunk",
                    names.join(", ")
                ));
                e.span = Some(*span).filter(|s| *s != Span::default());
                return Err(e);
            }
            Item::Output { name, value: Some(value), .. } => (name, value, true),
            Item::Output { name, value: None, .. } => {
                if let Some(b) = bindings.iter_mut().find(|b| &b.name == name) {
                    b.output = true;
                }
                outputs.push(name.clone());
                continue;
            }
        };
        if output {
            outputs.push(name.clone());
        }
        scope.item = name.clone();
        let lifted = hoisted.len();
        let v = hoist::rewrite(value, &mut scope, &mut hoisted)?;
        // what a block reduces must be computable in the block too
        for h in &hoisted[lifted..] {
            legality::check_block(&h.arg, &mut scope)?;
        }
        let row = scope.is_row(&v);
        let along = along_axis(v.ty.as_ref(), axis).is_some();
        if row {
            if matches!(v.kind, ExprKind::Lambda { .. }) {
                return Err(scope.refuse("the function reads arrays of the chunked rows at an index", &v));
            }
            legality::check_block(&v, &mut scope)?;
            if !along {
                return Err(scope
                    .refuse(&format!("it depends on the chunked rows but does not lie along `{axis}`"), &v));
            }
            scope.row.insert(name.clone());
        } else if along {
            scope.whole_rows.insert(name.clone());
        }
        bindings.push(Binding { name: name.clone(), value: v, row, output });
    }
    Ok(assemble(checked, axis, chunked, &bindings, &hoisted, &outputs))
}

/// The sub-programs of a rewritten program.
fn assemble(
    checked: &Checked,
    axis: &str,
    chunked: Vec<String>,
    bindings: &[Binding],
    hoisted: &[Hoisted],
    outputs: &[String],
) -> ChunkPlan {
    // the pass after which each name is known: partials and carries at their pass, bindings
    // at the latest of what they use (a fixed point: the names form no cycle, and every
    // round only raises levels)
    let mut level: HashMap<String, usize> = HashMap::new();
    let level_of = |e: &Expr, level: &HashMap<String, usize>| {
        free_vars(e).iter().filter_map(|n| level.get(n)).copied().max().unwrap_or(0)
    };
    let mut changed = true;
    while changed {
        changed = false;
        for b in bindings {
            let l = level_of(&b.value, &level);
            changed |= level.insert(b.name.clone(), l) != Some(l);
        }
        for h in hoisted {
            let l = level_of(&h.arg, &level) + 1;
            changed |= level.insert(h.name.clone(), l) != Some(l);
            if let Some(c) = &h.carry {
                level.insert(c.clone(), l);
            }
        }
    }
    let hoisted_level: Vec<usize> =
        hoisted.iter().map(|h| level.get(&h.name).copied().unwrap_or(1)).collect();
    let depth = hoisted_level.iter().copied().max().unwrap_or(0);
    let mut passes = Vec::with_capacity(depth);
    for l in 1..=depth {
        let mut extra = Vec::new();
        let mut combine = Vec::new();
        for (h, _) in hoisted.iter().zip(&hoisted_level).filter(|(_, &hl)| hl == l) {
            let reduce = call("reduce", vec![h.op.clone(), h.ne.clone(), h.arg.clone()], &h.arg);
            extra.push((h.name.clone(), reduce));
            combine.push(Combine {
                name: h.name.clone(),
                carry: h.carry.clone(),
                source: combiner(bindings, h),
            });
        }
        let names: Vec<String> = extra.iter().map(|(n, _)| n.clone()).collect();
        let source = sub_program(checked, &chunked, bindings, hoisted, &extra, &names, true);
        passes.push(Pass { source, combine });
    }
    let part = |rows: bool| -> Vec<String> {
        outputs.iter().filter(|o| bindings.iter().any(|b| &b.name == *o && b.row == rows)).cloned().collect()
    };
    let (row_outs, global_outs) = (part(true), part(false));
    let globals = (!global_outs.is_empty())
        .then(|| sub_program(checked, &chunked, bindings, hoisted, &[], &global_outs, false));
    let rows = (!row_outs.is_empty())
        .then(|| sub_program(checked, &chunked, bindings, hoisted, &[], &row_outs, true));
    let outputs = outputs.iter().map(|o| (o.clone(), row_outs.contains(o))).collect();
    ChunkPlan { axis: axis.to_string(), chunked, passes, globals, rows, outputs }
}

fn call(f: &str, args: Vec<Expr>, like: &Expr) -> Expr {
    let func = Expr::new(ExprKind::Var(f.to_string()), like.span);
    Expr::new(ExprKind::Apply { func: Box::new(func), args }, like.span)
}

fn var(n: &str, like: &Expr) -> Expr {
    Expr::new(ExprKind::Var(n.to_string()), like.span)
}

fn item_let(name: &str, value: Expr) -> Item {
    Item::Let { name: name.to_string(), value, span: Span::default() }
}

/// The program that combines one pass output across blocks: `reduce` (a partial) or
/// `scan_exclusive` (a scan's totals, into carries) with the operator and neutral element
/// as written, and the named functions they call.
fn combiner(bindings: &[Binding], h: &Hoisted) -> String {
    let mut parts = var("parts", &h.arg);
    if !h.shape.is_empty() {
        // one row of partials per block: the columns are combined along the blocks
        parts = call("transpose", vec![parts], &h.arg);
    }
    let (f, out) = if h.carry.is_some() { ("scan_exclusive", "carries") } else { ("reduce", "value") };
    let body = call(f, vec![h.op.clone(), h.ne.clone(), parts], &h.arg);
    let mut needed: BTreeSet<String> = free_vars(&h.op);
    needed.extend(free_vars(&h.ne));
    let mut items = vec![Item::Input {
        name: "parts".into(),
        ty: Type::Array {
            elem: h.elem,
            shape: std::iter::once(Dim::Size("__blocks".into())).chain(h.shape.iter().cloned()).collect(),
        },
        span: Span::default(),
    }];
    for b in closure(bindings, &mut needed) {
        items.push(item_let(&b.name, b.value.clone()));
    }
    items.push(Item::Output { name: out.into(), value: Some(body), span: Span::default() });
    print_program(&Program { items })
}

/// The bindings `needed` uses, transitively, in program order; `needed` grows to every name
/// they use.
fn closure<'b>(bindings: &'b [Binding], needed: &mut BTreeSet<String>) -> Vec<&'b Binding> {
    let mut take = vec![false; bindings.len()];
    for (i, b) in bindings.iter().enumerate().rev() {
        if needed.contains(&b.name) {
            take[i] = true;
            needed.extend(free_vars(&b.value));
        }
    }
    bindings.iter().zip(take).filter(|(_, t)| *t).map(|(b, _)| b).collect()
}

/// One sub-program: the bindings that `outputs` and `extra` need (extra bindings first
/// become `let`s of their own), the inputs they read (chunked inputs with the block's length
/// `__rows` when `block`), the partials and carries they use and the size names they use but
/// no input binds, as inputs.
fn sub_program(
    checked: &Checked,
    chunked: &[String],
    bindings: &[Binding],
    hoisted: &[Hoisted],
    extra: &[(String, Expr)],
    outputs: &[String],
    block: bool,
) -> String {
    let mut needed: BTreeSet<String> = outputs.iter().cloned().collect();
    for (_, e) in extra {
        needed.extend(free_vars(e));
    }
    let lets = closure(bindings, &mut needed);
    let mut items = Vec::new();
    let mut bound_sizes: HashSet<String> = HashSet::new();
    for (name, ty) in &checked.inputs {
        if !needed.contains(name) {
            continue;
        }
        let mut ty = ty.clone();
        if let Type::Array { shape, .. } = &mut ty {
            if block && chunked.contains(name) {
                shape[0] = Dim::Size(BLOCK_ROWS.into());
            }
            for d in shape.iter() {
                if let Dim::Size(s) = d {
                    bound_sizes.insert(s.clone());
                }
            }
        }
        items.push(Item::Input { name: name.clone(), ty, span: Span::default() });
    }
    for h in hoisted {
        for n in std::iter::once(&h.name).chain(&h.carry) {
            // a pass's own outputs are not its inputs
            if needed.contains(n) && !extra.iter().any(|(x, _)| x == n) {
                let ty = if h.shape.is_empty() || h.carry.as_ref() == Some(n) {
                    Type::Scalar(h.elem)
                } else {
                    for d in &h.shape {
                        if let Dim::Size(s) = d {
                            bound_sizes.insert(s.clone());
                        }
                    }
                    Type::Array { elem: h.elem, shape: h.shape.clone() }
                };
                items.push(Item::Input { name: n.clone(), ty, span: Span::default() });
            }
        }
    }
    for s in checked.sizes.iter().map(String::as_str).chain([BLOCK_ROWS, BLOCK_OFFSET]) {
        if needed.contains(s) && !bound_sizes.contains(s) {
            items.push(Item::Input {
                name: s.to_string(),
                ty: Type::Scalar(eqfuse_ir::types::ElemType::I64),
                span: Span::default(),
            });
        }
    }
    for b in lets {
        items.push(item_let(&b.name, b.value.clone()));
    }
    for (n, e) in extra {
        items.push(item_let(n, e.clone()));
    }
    for o in outputs {
        items.push(Item::Output { name: o.clone(), value: None, span: Span::default() });
    }
    print_program(&Program { items })
}
