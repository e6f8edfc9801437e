//! Warnings for a lambda operator that sampled values show is not what `reduce`, `scan`,
//! `scan_exclusive` or `permute` require: associative, with `ne` neutral (`f ne a == a` and
//! `f a ne == a`), and for `permute` commutative. Backends group and order the combinations
//! differently, so such an operator gives results that differ between backends.
//!
//! Only an operator that reads nothing but its parameters, builtins and named functions is
//! sampled: on every triple of a few values of its type (exactly for integers and booleans,
//! within a relative tolerance for floats). A sample that fails to run (a division by zero)
//! proves nothing, and gives no warning.

use crate::ast::{is_builtin, Expr, ExprKind, Item, Limits, Program};
use crate::print::print_expr;
use crate::types::{ElemType, Type};
use crate::value::{Scalar, Value};
use crate::warning::Warning;
use indexmap::IndexMap;
use std::collections::HashSet;

/// The warnings of the typed `program`, in program order.
pub(crate) fn warnings(program: &Program, limits: &Limits) -> Vec<Warning> {
    let funcs = closed_functions(program);
    let mut out = Vec::new();
    for item in &program.items {
        if let Item::Let { value: e, .. }
        | Item::LetTuple { value: e, .. }
        | Item::Output { value: Some(e), .. } = item
        {
            walk(e, program, &funcs, limits, &mut out);
        }
    }
    out
}

/// The top-level named functions that read nothing but their parameters, builtins and
/// earlier such functions.
fn closed_functions(program: &Program) -> HashSet<String> {
    let mut closed = HashSet::new();
    for item in &program.items {
        if let Item::Let { name, value, .. } = item {
            if matches!(value.kind, ExprKind::Lambda { .. }) && is_closed(value, &closed, program) {
                closed.insert(name.clone());
            }
        }
    }
    closed
}

/// Whether every free name of `e` is one of `funcs` or a builtin that no item of `program`
/// shadows.
fn is_closed(e: &Expr, funcs: &HashSet<String>, program: &Program) -> bool {
    let mut free = Vec::new();
    free_names(e, &mut Vec::new(), &mut free);
    free.iter().all(|n| {
        funcs.contains(*n) || (is_builtin(n) && !program.items.iter().any(|i| i.names().contains(n)))
    })
}

fn free_names<'p>(e: &'p Expr, bound: &mut Vec<&'p str>, out: &mut Vec<&'p str>) {
    match &e.kind {
        ExprKind::Var(n) if !bound.contains(&n.as_str()) => out.push(n),
        ExprKind::Let { name, value, body } => {
            free_names(value, bound, out);
            bound.push(name);
            free_names(body, bound, out);
            bound.pop();
        }
        ExprKind::Lambda { params, body } => {
            let base = bound.len();
            bound.extend(params.iter().map(String::as_str));
            free_names(body, bound, out);
            bound.truncate(base);
        }
        k => {
            for c in k.children() {
                free_names(c, bound, out);
            }
        }
    }
}

fn walk(e: &Expr, program: &Program, funcs: &HashSet<String>, limits: &Limits, out: &mut Vec<Warning>) {
    if let ExprKind::Apply { func, args } = &e.kind {
        if let ExprKind::Var(f) = &func.kind {
            match (f.as_str(), args.as_slice()) {
                ("reduce" | "scan" | "scan_exclusive", [op, ne, _]) => {
                    sample(e, f, op, Some(ne), false, program, funcs, limits, out)
                }
                ("permute", [op, ..]) => sample(e, f, op, None, true, program, funcs, limits, out),
                _ => {}
            }
        }
    }
    for c in e.kind.children() {
        walk(c, program, funcs, limits, out);
    }
}

/// A few values of `t`: every triple of them is sampled.
fn values(t: ElemType) -> Vec<Scalar> {
    match t {
        ElemType::Bool => vec![Scalar::Bool(false), Scalar::Bool(true)],
        ElemType::I32 => [-3, 0, 1, 2, 5, 12].into_iter().map(Scalar::I32).collect(),
        ElemType::I64 => [-3, 0, 1, 2, 5, 12].into_iter().map(Scalar::I64).collect(),
        ElemType::F32 => [-2.5f32, -0.5, 0.0, 0.75, 1.5, 4.0].into_iter().map(Scalar::F32).collect(),
        ElemType::F64 => [-2.5, -0.5, 0.0, 0.75, 1.5, 4.0].into_iter().map(Scalar::F64).collect(),
        t => [-3i128, 0, 1, 2, 5, 12].into_iter().map(|v| Scalar::from_i128_wrapping(t, v)).collect(),
    }
}

/// Equal, exactly for integers and booleans, within a relative tolerance for floats (two
/// NaNs are equal).
fn close(a: Scalar, b: Scalar) -> bool {
    let near = |x: f64, y: f64, tol: f64| {
        (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0)
    };
    match (a, b) {
        (Scalar::F32(x), Scalar::F32(y)) => near(f64::from(x), f64::from(y), 1e-4),
        (Scalar::F64(x), Scalar::F64(y)) => near(x, y, 1e-9),
        _ => a == b,
    }
}

/// Samples the operator `op` of `e` (an application of `f`); `ne` is its neutral element
/// when it has one, `commutative` asks for commutativity too.
#[allow(clippy::too_many_arguments)]
fn sample(
    e: &Expr,
    f: &str,
    op: &Expr,
    ne: Option<&Expr>,
    commutative: bool,
    program: &Program,
    funcs: &HashSet<String>,
    limits: &Limits,
    out: &mut Vec<Warning>,
) {
    let head = match &op.kind {
        ExprKind::Lambda { .. } if is_closed(op, funcs, program) => format!("({})", print_expr(op)),
        ExprKind::Var(name) if funcs.contains(name) => name.clone(),
        _ => return,
    };
    let Some(Type::Func { params, .. }) = &op.ty else { return };
    let [t, _] = params.as_slice() else { return };
    let ne = ne.filter(|n| is_closed(n, &HashSet::new(), program));
    let ne_text = ne.map(super::hints::atom);
    let ne = ne.map(|n| format!("({})", print_expr(n)));
    let Type::Scalar(t) = t else { return };
    let vals = values(*t);
    let k = vals.len();
    let n = k * k * k;
    let (mut a, mut b, mut c) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for x in &vals {
        for y in &vals {
            for z in &vals {
                a.push(*x);
                b.push(*y);
                c.push(*z);
            }
        }
    }
    let mut text = String::new();
    for name in ["a", "b", "c"] {
        text.push_str(&format!("input eqfuse'{name} : {t}[{n}]\n"));
    }
    for item in &program.items {
        if let Item::Let { name, value, .. } = item {
            if funcs.contains(name) {
                text.push_str(&format!("let {name} = {}\n", print_expr(value)));
            }
        }
    }
    let (x, y, z) = ("eqfuse'x", "eqfuse'y", "eqfuse'z");
    let arrays = "eqfuse'a eqfuse'b eqfuse'c";
    text.push_str(&format!(
        "output eqfuse'l = map (\\{x} {y} {z} -> {head} ({head} {x} {y}) {z}) {arrays}\n"
    ));
    text.push_str(&format!(
        "output eqfuse'r = map (\\{x} {y} {z} -> {head} {x} ({head} {y} {z})) {arrays}\n"
    ));
    if let Some(ne) = &ne {
        text.push_str(&format!("output eqfuse'nl = map (\\{x} -> {head} {ne} {x}) eqfuse'a\n"));
        text.push_str(&format!("output eqfuse'nr = map (\\{x} -> {head} {x} {ne}) eqfuse'a\n"));
    }
    if commutative {
        text.push_str(&format!("output eqfuse'cl = map (\\{x} {y} -> {head} {x} {y}) eqfuse'a eqfuse'b\n"));
        text.push_str(&format!("output eqfuse'cr = map (\\{x} {y} -> {head} {y} {x}) eqfuse'a eqfuse'b\n"));
    }
    let Some(outs) = run(&text, [(*t, a.clone()), (*t, b.clone()), (*t, c.clone())], limits) else { return };
    let get = |name: &str| outs.get(name).map(Value::to_scalars);
    let fname = match &op.kind {
        ExprKind::Var(name) => format!("`{name}`"),
        _ => "the function".to_string(),
    };
    if let (Some(l), Some(r)) = (get("eqfuse'l"), get("eqfuse'r")) {
        if let Some(i) = (0..n).find(|&i| !close(l[i], r[i])) {
            out.push(Warning::at(
                e.span,
                format!(
                    "{fname} given to `{f}` is not associative: for a = {}, b = {}, c = {}, `f (f a b) c` is {} but \
                     `f a (f b c)` is {}; backends group the combinations differently, so the result may differ \
                     between backends",
                    a[i], b[i], c[i], l[i], r[i]
                ),
            ));
            return;
        }
    }
    if let (Some(ne), Some(l), Some(r)) = (&ne_text, get("eqfuse'nl"), get("eqfuse'nr")) {
        if let Some(i) = (0..l.len()).find(|&i| !close(l[i], a[i]) || !close(r[i], a[i])) {
            out.push(Warning::at(
                e.span,
                format!(
                    "`{ne}` is not a neutral element of {fname} given to `{f}`: for a = {}, `f {ne} a` is {} and \
                     `f a {ne}` is {}, not a; backends may fold `ne` in once per piece of work, so the result may \
                     differ between backends",
                    a[i], l[i], r[i]
                ),
            ).with_note("help: `ne` must satisfy `f ne a == a` and `f a ne == a` for every a; apply any starting value after the reduction"));
            return;
        }
    }
    if let (Some(l), Some(r)) = (get("eqfuse'cl"), get("eqfuse'cr")) {
        if let Some(i) = (0..l.len()).find(|&i| !close(l[i], r[i])) {
            out.push(Warning::at(
                e.span,
                format!(
                    "{fname} given to `permute` is not commutative: for a = {}, b = {}, `f a b` is {} but `f b a` \
                     is {}; `permute` combines in an unspecified order, so the result may differ between backends",
                    a[i], b[i], l[i], r[i]
                ),
            ));
        }
    }
}

/// Parses, checks and runs the sample program `text` on the three sample arrays; `None` if
/// any step fails.
fn run(text: &str, data: [(ElemType, Vec<Scalar>); 3], limits: &Limits) -> Option<IndexMap<String, Value>> {
    let program = crate::parse::parse_with(text, limits).ok()?;
    let checked = super::check_sample(&program, limits).ok()?;
    let mut inputs = IndexMap::new();
    for (name, (t, v)) in ["eqfuse'a", "eqfuse'b", "eqfuse'c"].into_iter().zip(data) {
        inputs.insert(name.to_string(), Value::from_scalars(t, &[v.len()], &v)?);
    }
    crate::interp::interpret_with(&checked, &inputs, limits).ok()
}
