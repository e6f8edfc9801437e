//! Loops over arrays as plan steps.
//!
//! A program whose items include loops (`let (t, k) = loop ... for` / `while`) is cut into
//! pieces (`outline.rs`): runs of items with no loop, and loops. Every piece becomes a
//! program of its own, optimised like any program (fusion inside a loop's body included),
//! and the pieces' plans are put together into one plan (`stitch.rs`), each loop a
//! [`Step::Loop`] whose body is its body's plan:
//!
//! - a loop's initial state, its count and the part of its body that does not depend on the
//!   state (hoisted) are one program, run once before the loop;
//! - a `while` loop's condition is a program over the state, run before each iteration on
//!   the host's side of the plan (its result is one `bool`: no array is copied back);
//! - the body is a program over the state, the `for` variable and what was hoisted; its
//!   results are the next state.
//!
//! Nested loops are loops inside a body's program: the same, one level down.

mod outline;
mod stitch;

use crate::core::{item_value, unsupported_error};
use crate::driver::{OptimizeOptions, Optimized};
use eqfuse_ir::ast::{Expr, ExprKind, Item, LoopForm, Program};
use eqfuse_ir::check::Checked;
use eqfuse_ir::plan::{LoopKind, LoopStep, Origin, Plan, Step};
use eqfuse_ir::types::{Dim, ElemType, Type};
use eqfuse_ir::Result;
use outline::{free_names, LoopItem, Segment};
use std::collections::{HashMap, HashSet};
use stitch::Builder;

pub(crate) use outline::has_loop_items;

/// Optimises a program with loops at the root of its items: its pieces one by one, their
/// plans put together.
pub(crate) fn optimize(checked: &Checked, opts: &OptimizeOptions) -> Result<Optimized> {
    let started = std::time::Instant::now();
    let segments = outline::cut(&checked.program)?;
    let mut cx = Context::new(checked);
    // every piece optimised once; the pieces' plans and unfused plans put together alike
    let mut pieces: Vec<Piece> = Vec::new();
    for (n, seg) in segments.iter().enumerate() {
        pieces.push(match seg {
            // the program's inputs are values of the plan already
            Segment::Items(items) if items.iter().all(|it| matches!(it, Item::Input { .. })) => continue,
            Segment::Items(items) => {
                Piece::Items(Box::new(cx.optimize_items(items, &segments[n + 1..], opts)?))
            }
            Segment::Loop(l) => Piece::Loop(Box::new(cx.optimize_loop(n, l, &segments[n + 1..], opts)?)),
        });
    }
    let plan = assemble(checked, &pieces, &cx, false)?;
    let unfused_plan = assemble(checked, &pieces, &cx, true)?;
    let parts: Vec<&Optimized> = pieces.iter().flat_map(Piece::parts).collect();
    let Some(first) = parts.first() else {
        return Err(eqfuse_ir::error::internal("a program with a loop cut into no pieces"));
    };
    // the assembled plans priced at the program's signature, as each piece was at its own
    let at = opts.cost.at_signature(&checked.inputs);
    let cost = eqfuse_lower::model::plan_cost(&plan, &at.params, at.extents());
    let unfused_cost = eqfuse_lower::model::plan_cost(&unfused_plan, &at.params, at.extents());
    let mut rules_fired = indexmap::IndexMap::new();
    for p in &parts {
        for (r, k) in &p.rules_fired {
            *rules_fired.entry(r.clone()).or_insert(0) += k;
        }
    }
    let stop_reason = parts
        .iter()
        .map(|p| p.stop_reason.clone())
        .find(|s| *s != crate::StopReason::Saturated)
        .unwrap_or(crate::StopReason::Saturated);
    Ok(Optimized {
        term: first.term.clone(),
        program: checked.program.clone(),
        phases: parts.iter().flat_map(|p| p.phases.clone()).collect(),
        rules_fired,
        stop_reason,
        optimize_ms: started.elapsed().as_secs_f64() * 1e3,
        gas_left: parts.iter().filter_map(|p| p.gas_left).min(),
        facts: first.facts.clone(),
        source: first.source.clone(),
        plan,
        cost,
        unfused_plan,
        unfused_cost,
        cost_model: first.cost_model.clone(),
    })
}

/// A piece, optimised.
enum Piece {
    /// Items with no loop.
    Items(Box<Optimized>),
    /// A loop.
    Loop(Box<LoopPieces>),
}

/// A loop's programs, optimised.
struct LoopPieces {
    /// Its initial state, its count and what it hoists: outputs `init'k`, `count`, and the
    /// hoisted names.
    pre: Optimized,
    /// A `while` loop's condition: output `cond`.
    cond: Option<Optimized>,
    /// The body: outputs `next'k`.
    body: Optimized,
    /// The loop.
    item: LoopMeta,
    /// Its number among the program's pieces (in its pieces' output names).
    number: usize,
}

/// What a loop step needs besides its plans.
struct LoopMeta {
    results: Vec<String>,
    state: Vec<String>,
    state_types: Vec<(ElemType, usize)>,
    var: Option<String>,
    hoisted: Vec<String>,
    /// Parts of the initial state that are a name's value, taken as they are.
    init_vars: Vec<Option<String>>,
    /// Parts of the next state that are a name's value (a state part, a hoisted or outer
    /// value), taken as they are.
    next_vars: Vec<Option<String>>,
    span: eqfuse_ir::error::Span,
}

impl Piece {
    fn parts(&self) -> Vec<&Optimized> {
        match self {
            Piece::Items(o) => vec![&**o],
            Piece::Loop(l) => std::iter::once(&l.pre).chain(&l.cond).chain([&l.body]).collect(),
        }
    }
}

/// The program's names and their types, and the made-up sizes of the pieces' inputs.
struct Context {
    /// The type of every name a piece may read: inputs, bindings, loop states and results,
    /// hoisted bindings.
    types: HashMap<String, Type>,
    /// The program's top-level functions (`let f = \x -> ...`).
    funcs: HashMap<String, Item>,
    /// Their places in the program (a function's definition comes after those it calls).
    func_order: HashMap<String, usize>,
    /// The program's size names.
    sizes: Vec<String>,
    /// Sizes made up for dimensions with no name: (array, axis).
    fresh: HashMap<String, (String, usize)>,
}

impl Context {
    fn new(checked: &Checked) -> Context {
        let mut types: HashMap<String, Type> =
            checked.inputs.iter().map(|(n, t)| (n.clone(), t.clone())).collect();
        let mut funcs = HashMap::new();
        let mut func_order = HashMap::new();
        for (k, it) in checked.program.items.iter().enumerate() {
            if let Item::Let { name, value, .. } = it {
                if matches!(value.kind, ExprKind::Lambda { .. }) {
                    funcs.insert(name.clone(), it.clone());
                    func_order.insert(name.clone(), k);
                    continue;
                }
            }
            types.extend(item_types(it));
            if let Some(e) = item_value(it) {
                local_types(e, &mut types);
            }
        }
        let sizes = checked.sizes.clone();
        Context { types, funcs, func_order, sizes, fresh: HashMap::new() }
    }

    /// The items of a piece with no loop, as a program whose outputs are its own outputs and
    /// the bindings later pieces read.
    fn optimize_items(
        &mut self,
        items: &[Item],
        later: &[Segment],
        opts: &OptimizeOptions,
    ) -> Result<Optimized> {
        let needed = self.with_function_reads(names_read(later));
        let mut outputs: Vec<Item> = Vec::new();
        // an input is a value of the whole plan already: no piece outputs it
        for it in items.iter().filter(|it| !matches!(it, Item::Input { .. })) {
            for name in it.names() {
                let is_output = matches!(it, Item::Output { .. });
                if !is_output && needed.contains(name) && !self.funcs.contains_key(name) {
                    outputs.push(Item::Output { name: name.to_string(), value: None, span: it.span() });
                }
            }
        }
        // the program's inputs are the piece's inputs where it reads them (`run`)
        let mut body: Vec<Item> = items
            .iter()
            .filter(|it| !matches!(it, Item::Input { .. }) && !self.funcs.contains_key(it.name()))
            .cloned()
            .collect();
        body.extend(outputs);
        self.run(body, &[], opts)
    }

    /// `names` and every name the program's functions among them read, transitively: a later
    /// piece that calls a function takes its definition along (`run`), and what the
    /// definition reads must be a value by then.
    fn with_function_reads(&self, mut names: HashSet<String>) -> HashSet<String> {
        let mut todo: Vec<String> = names.iter().cloned().collect();
        while let Some(n) = todo.pop() {
            if let Some(Item::Let { value, .. }) = self.funcs.get(&n) {
                let mut free = Vec::new();
                free_names(value, &mut free);
                for f in free {
                    if names.insert(f.clone()) {
                        todo.push(f);
                    }
                }
            }
        }
        names
    }

    /// A loop's programs.
    fn optimize_loop(
        &mut self,
        n: usize,
        l: &LoopItem,
        _later: &[Segment],
        opts: &OptimizeOptions,
    ) -> Result<LoopPieces> {
        let span = l.span;
        let out = |name: String, value: Expr| Item::Output { name, value: Some(value), span };
        let hoisted_fns: Vec<Item> = l
            .hoisted
            .iter()
            .filter(
                |it| matches!(it, Item::Let { value, .. } if matches!(value.kind, ExprKind::Lambda { .. })),
            )
            .cloned()
            .collect();
        let hoisted_vals: Vec<Item> =
            l.hoisted.iter().filter(|it| !hoisted_fns.contains(it)).cloned().collect();
        let hoisted: Vec<String> =
            hoisted_vals.iter().flat_map(|it| it.names()).map(str::to_string).collect();
        for it in &hoisted_vals {
            self.types.extend(item_types(it));
        }
        // before the loop: what it hoists, its initial state, its count
        let mut pre: Vec<Item> = hoisted_fns.iter().chain(&hoisted_vals).cloned().collect();
        pre.extend(hoisted.iter().map(|h| Item::Output { name: h.clone(), value: None, span }));
        // a part of the state that starts as a value the program has is that value (no copy)
        let init_vars: Vec<Option<String>> = l.init.iter().map(|e| plain_name(e, &hoisted)).collect();
        for (k, e) in l.init.iter().enumerate() {
            if init_vars[k].is_none() {
                pre.push(out(format!("loop'{n}'init{k}"), e.clone()));
            }
        }
        if let LoopForm::For { count, .. } = &l.form {
            pre.push(out(format!("loop'{n}'count"), (**count).clone()));
        }
        let pre = self.run(pre, &[], opts)?;
        // the state's types: the loop's results' (the checker's type of the loop)
        let state_types: Vec<Type> = l
            .results
            .iter()
            .map(|r| {
                self.types
                    .get(r)
                    .cloned()
                    .ok_or_else(|| unsupported_error("a loop whose state's type is not known"))
            })
            .collect::<Result<_>>()?;
        for (s, t) in l.state.iter().zip(&state_types) {
            self.types.insert(s.clone(), t.clone());
        }
        let mut bound: Vec<(String, Type)> =
            l.state.iter().cloned().zip(state_types.iter().cloned()).collect();
        let var = match &l.form {
            LoopForm::For { var, .. } => {
                bound.push((var.clone(), Type::Scalar(ElemType::I64)));
                self.types.insert(var.clone(), Type::Scalar(ElemType::I64));
                Some(var.clone())
            }
            LoopForm::While { .. } => None,
        };
        let cond = match &l.form {
            LoopForm::While { cond } => {
                let items = hoisted_fns
                    .iter()
                    .cloned()
                    .chain([out(format!("loop'{n}'cond"), (**cond).clone())])
                    .collect();
                Some(self.run(items, &bound, opts)?)
            }
            LoopForm::For { .. } => None,
        };
        let mut body: Vec<Item> = hoisted_fns.clone();
        body.extend(l.body.iter().cloned());
        // a next state that is a state part, a hoisted value or a value from before the loop
        // is that value (no copy per iteration); one the body binds is its output
        let local: Vec<String> = l.body.iter().flat_map(|it| it.names()).map(str::to_string).collect();
        let next_vars: Vec<Option<String>> = l.next.iter().map(|e| plain_name(e, &local)).collect();
        for (k, e) in l.next.iter().enumerate() {
            if next_vars[k].is_none() {
                body.push(out(format!("loop'{n}'next{k}"), e.clone()));
            }
        }
        let body = self.run(body, &bound, opts)?;
        for r in &l.results {
            if let Some(t) = self.types.get(r).cloned() {
                self.types.insert(r.clone(), t);
            }
        }
        let state_types = state_types
            .iter()
            .map(|t| match t {
                Type::Scalar(e) => Ok((*e, 0)),
                Type::Array { elem, shape } => Ok((*elem, shape.len())),
                _ => Err(unsupported_error("a loop whose state is not scalars and arrays")),
            })
            .collect::<Result<_>>()?;
        let item = LoopMeta {
            results: l.results.clone(),
            state: l.state.clone(),
            state_types,
            var,
            hoisted,
            init_vars,
            next_vars,
            span,
        };
        Ok(LoopPieces { pre, cond, body, item, number: n })
    }

    /// `items` as a program: its inputs the names it reads that the program knows (and
    /// `bound`, the loop's state and variable), with their types; checked and optimised.
    fn run(
        &mut self,
        mut items: Vec<Item>,
        bound: &[(String, Type)],
        opts: &OptimizeOptions,
    ) -> Result<Optimized> {
        // names the items read and do not bind themselves
        let mut defined: HashSet<String> = HashSet::new();
        let mut reads: Vec<String> = Vec::new();
        let mut fns: Vec<String> = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let it = &items[i];
            let mut free = Vec::new();
            if let Some(e) = item_value(it) {
                free_names(e, &mut free);
            } else if let Item::Output { name, value: None, .. } = it {
                free.push(name.clone());
            }
            for f in free {
                if defined.contains(&f) || reads.contains(&f) || fns.contains(&f) {
                    continue;
                }
                if let Some(func) = self.funcs.get(&f).cloned() {
                    // a top-level function: its definition goes first, and what it reads
                    fns.push(f);
                    items.insert(0, func);
                    i += 1;
                    continue;
                }
                reads.push(f);
            }
            for n in items[i].names() {
                defined.insert(n.to_string());
            }
            i += 1;
        }
        // the functions' own reads, transitively (a function may call another): every
        // function among them goes first too, in the program's order, and the rest are read
        let closed = self.with_function_reads(fns.iter().cloned().collect());
        let mut called: Vec<&String> = closed.iter().filter(|n| self.funcs.contains_key(*n)).collect();
        called.sort_by_key(|n| self.func_order[*n]);
        let mut rest: Vec<String> = closed.iter().filter(|n| !self.funcs.contains_key(*n)).cloned().collect();
        rest.sort();
        for n in rest {
            if !defined.contains(&n) && !reads.contains(&n) {
                reads.push(n);
            }
        }
        items.drain(..fns.len());
        let defs: Vec<Item> = called.iter().map(|n| self.funcs[*n].clone()).collect();
        items.splice(0..0, defs);
        let mut inputs: Vec<Item> = Vec::new();
        let mut dims_named: HashSet<String> = HashSet::new();
        let mut scalar_sizes: Vec<String> = Vec::new();
        for name in &reads {
            let ty = bound
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t.clone())
                .or_else(|| self.types.get(name).cloned());
            match ty {
                Some(Type::Scalar(e)) => inputs.push(input(name, Type::Scalar(e))),
                Some(Type::Array { elem, shape }) => {
                    let shape = shape
                        .iter()
                        .enumerate()
                        .map(|(axis, d)| match d {
                            Dim::Known(k) => Dim::Known(*k),
                            Dim::Size(s) if self.sizes.contains(s) || self.fresh.contains_key(s) => {
                                dims_named.insert(s.clone());
                                Dim::Size(s.clone())
                            }
                            _ => {
                                let s = format!("{name}'d{axis}");
                                self.fresh.insert(s.clone(), (name.clone(), axis));
                                dims_named.insert(s.clone());
                                Dim::Size(s)
                            }
                        })
                        .collect();
                    inputs.push(input(name, Type::Array { elem, shape }));
                }
                Some(_) => return Err(unsupported_error("a loop that reads a tuple or a function value")),
                // a size name read as a value, or a builtin's name
                None if self.sizes.contains(name) || self.fresh.contains_key(name) => {
                    scalar_sizes.push(name.clone())
                }
                None => {}
            }
        }
        for s in scalar_sizes {
            if !dims_named.contains(&s) {
                inputs.push(input(&s, Type::Scalar(ElemType::I64)));
            }
        }
        inputs.extend(items);
        let program = Program { items: inputs };
        let limits = eqfuse_ir::Limits::default();
        let checked = eqfuse_ir::check::check_with(&program, &limits)
            .map_err(|e| unsupported_error(&format!("a loop whose pieces do not check as programs ({e})")))?;
        crate::optimize(&checked, opts)
    }
}

fn input(name: &str, ty: Type) -> Item {
    Item::Input { name: name.to_string(), ty, span: eqfuse_ir::error::Span::default() }
}

/// The names an item binds with their types (the checker's, on its value).
fn item_types(it: &Item) -> Vec<(String, Type)> {
    let Some(e) = item_value(it) else { return Vec::new() };
    let Some(t) = &e.ty else { return Vec::new() };
    match (it, t) {
        (Item::LetTuple { names, .. }, Type::Group(ts)) => {
            names.iter().cloned().zip(ts.iter().cloned()).collect()
        }
        (Item::LetTuple { names, .. }, Type::Tuple(ts)) => {
            names.iter().cloned().zip(ts.iter().map(|e| Type::Scalar(*e))).collect()
        }
        (Item::LetTuple { .. }, _) => Vec::new(),
        _ => vec![(it.name().to_string(), t.clone())],
    }
}

/// The types of the bindings inside `e` (a loop body's `let`s), by their names.
fn local_types(e: &Expr, out: &mut HashMap<String, Type>) {
    let mut stack = vec![e];
    while let Some(n) = stack.pop() {
        match &n.kind {
            ExprKind::Let { name, value, .. } => {
                if let Some(t) = &value.ty {
                    out.entry(name.clone()).or_insert_with(|| t.clone());
                }
            }
            ExprKind::LetTuple { names, value, .. } => match &value.ty {
                Some(Type::Group(ts)) => {
                    for (n, t) in names.iter().zip(ts) {
                        out.entry(n.clone()).or_insert_with(|| t.clone());
                    }
                }
                Some(Type::Tuple(ts)) => {
                    for (n, t) in names.iter().zip(ts) {
                        out.entry(n.clone()).or_insert_with(|| Type::Scalar(*t));
                    }
                }
                _ => {}
            },
            _ => {}
        }
        stack.extend(n.kind.children());
    }
}

/// Every name the segments read.
fn names_read(segments: &[Segment]) -> HashSet<String> {
    let mut out = Vec::new();
    for s in segments {
        match s {
            Segment::Items(items) => {
                for it in items {
                    match it {
                        Item::Output { name, value: None, .. } => out.push(name.clone()),
                        _ => {
                            if let Some(e) = item_value(it) {
                                free_names(e, &mut out);
                            }
                        }
                    }
                }
            }
            Segment::Loop(l) => {
                for e in l.init.iter().chain(&l.next) {
                    free_names(e, &mut out);
                }
                match &l.form {
                    LoopForm::For { count, .. } => free_names(count, &mut out),
                    LoopForm::While { cond } => free_names(cond, &mut out),
                }
                for it in l.hoisted.iter().chain(&l.body) {
                    if let Some(e) = item_value(it) {
                        free_names(e, &mut out);
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The pieces' plans (their unfused plans when `unfused`) put together as one.
fn assemble(checked: &Checked, pieces: &[Piece], cx: &Context, unfused: bool) -> Result<Plan> {
    let plan_of = |o: &Optimized| if unfused { o.unfused_plan.clone() } else { o.plan.clone() };
    let inputs: Vec<(String, ElemType, usize)> = checked
        .inputs
        .iter()
        .filter_map(|(n, t)| match t {
            Type::Scalar(e) => Some((n.clone(), *e, 0)),
            Type::Array { elem, shape } => Some((n.clone(), *elem, shape.len())),
            _ => None,
        })
        .collect();
    let mut b = Builder::new(&inputs, &cx.sizes);
    b.fresh = cx.fresh.clone();
    for p in pieces {
        match p {
            Piece::Items(o) => {
                let outs = b.embed(&plan_of(o), None)?;
                b.env.extend(outs);
            }
            Piece::Loop(l) => {
                let outs = b.embed(&plan_of(&l.pre), None)?;
                let get = |name: &str| {
                    outs.get(name)
                        .copied()
                        .ok_or_else(|| eqfuse_ir::error::internal(format!("a loop piece without `{name}`")))
                };
                let n = l.number;
                let env_get = |b: &Builder, name: &str| {
                    b.env.get(name).copied().ok_or_else(|| {
                        eqfuse_ir::error::internal(format!("a loop reads `{name}`, which has no value"))
                    })
                };
                let init: Vec<usize> = (0..l.item.state.len())
                    .map(|k| match &l.item.init_vars[k] {
                        Some(v) => env_get(&b, v),
                        None => get(&format!("loop'{n}'init{k}")),
                    })
                    .collect::<Result<_>>()?;
                for h in &l.item.hoisted {
                    b.env.insert(h.clone(), get(h)?);
                }
                let state: Vec<usize> = l
                    .item
                    .state
                    .iter()
                    .zip(&l.item.state_types)
                    .map(|(s, (e, r))| b.value(s, *e, *r, Origin::Computed))
                    .collect();
                let form_pre = match &l.item.var {
                    Some(var) => Some((
                        get(&format!("loop'{n}'count"))?,
                        b.value(var, ElemType::I64, 0, Origin::Computed),
                    )),
                    None => None,
                };
                let form = match (&l.cond, form_pre) {
                    (Some(c), _) => {
                        let mut steps = Vec::new();
                        let outs = b.embed(&plan_of(c), Some(&mut steps))?;
                        let cond = *outs.get(&format!("loop'{n}'cond")).ok_or_else(|| {
                            eqfuse_ir::error::internal("a while loop without its condition")
                        })?;
                        LoopKind::While { steps, cond }
                    }
                    (None, Some((count, counter))) => LoopKind::For { count, counter },
                    (None, None) => {
                        return Err(eqfuse_ir::error::internal("a loop with neither a count nor a condition"))
                    }
                };
                let mut body = Vec::new();
                let outs = b.embed(&plan_of(&l.body), Some(&mut body))?;
                let next: Vec<usize> = (0..state.len())
                    .map(|k| match &l.item.next_vars[k] {
                        Some(v) => env_get(&b, v),
                        None => outs
                            .get(&format!("loop'{n}'next{k}"))
                            .copied()
                            .ok_or_else(|| eqfuse_ir::error::internal("a loop body without its next state")),
                    })
                    .collect::<Result<_>>()?;
                let dst: Vec<usize> = l
                    .item
                    .results
                    .iter()
                    .zip(&l.item.state_types)
                    .map(|(r, (e, k))| b.value(r, *e, *k, Origin::Computed))
                    .collect();
                b.plan.steps.push(Step::Loop(Box::new(LoopStep {
                    state,
                    names: l.item.state.clone(),
                    init,
                    form,
                    body,
                    next,
                    dst,
                    hoisted: l.item.hoisted.clone(),
                    span: Some(l.item.span),
                })));
            }
        }
    }
    b.plan.outputs = checked
        .program
        .output_names()
        .map(|o| {
            b.env
                .get(o)
                .map(|&v| (o.to_string(), v))
                .ok_or_else(|| eqfuse_ir::error::internal(format!("no plan value for output `{o}`")))
        })
        .collect::<Result<_>>()?;
    Ok(b.plan)
}

/// The name `e` is, when it is a plain name not among `local` (names a piece binds itself).
fn plain_name(e: &Expr, local: &[String]) -> Option<String> {
    match &e.kind {
        ExprKind::Var(v) if !local.contains(v) => Some(v.clone()),
        _ => None,
    }
}
