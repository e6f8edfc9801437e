//! The prelude and builtins as values, rewritten into the forms the e-graph has:
//!
//! ```text
//! sum a        =>  reduce (+) 0 a               all a  =>  reduce (&&) true a
//! prod a       =>  reduce (*) 1 a               any a  =>  reduce (||) false a
//! dot a b      =>  reduce (+) 0 (map (\x y -> x * y) a b)
//! mean a       =>  reduce (+) 0 a / t (length a)                       (rank 1, `t` its type)
//! mean a       =>  map (\s -> s / t (size a (r - 1))) (reduce (+) 0 a)   (rank r > 1; an `a`
//!                  made by an expression is bound by a `let` first)
//! pi           =>  3.141592653589793            (read in the float type the checker gave it)
//! map sqrt xs  =>  map (\x -> sqrt x) xs        (every scalar builtin passed as a function)
//! slice a [s1, .., sr] [l1, .., lr]  =>  generate [l1, .., lr] (\i1 .. ir -> a[s1 + i1, .., sr + ir])
//! ```

use super::unsupported_error;
use eqfuse_ir::ast::{BinOp, Expr, ExprKind, Item, Lit, LoopForm, Program, SCALAR_BUILTINS};
use eqfuse_ir::error::Span;
use eqfuse_ir::interp::scalar::ScalarFn;
use eqfuse_ir::types::Type;
use eqfuse_ir::Result;
use std::collections::HashSet;

/// The builtins this file rewrites away.
pub(super) const REWRITTEN: &[&str] = &["sum", "prod", "all", "any", "dot", "mean", "pi", "slice"];

/// The builtins the rewritten forms name: a program that binds one of them is not rewritten.
const NAMED: &[&str] = &["reduce", "map", "generate", "length", "size", "f32", "f64"];

/// Whether `name` is a scalar builtin that may be passed as a function.
pub(super) fn is_scalar_builtin(name: &str) -> bool {
    SCALAR_BUILTINS.contains(&name) && !matches!(name, "iterate" | "length" | "size" | "pi")
}

/// Every name the program binds anywhere (inputs, lets, outputs, parameters, patterns, loop
/// variables): a builtin's name among them is the program's value somewhere, and is left
/// alone everywhere.
pub(super) struct Scope {
    bound: HashSet<String>,
}

impl Scope {
    pub(super) fn of(p: &Program) -> Scope {
        let mut bound: HashSet<String> = HashSet::new();
        for it in &p.items {
            bound.extend(it.names().into_iter().map(str::to_string));
            if let Some(e) = super::item_value(it) {
                let mut stack = vec![e];
                while let Some(n) = stack.pop() {
                    match &n.kind {
                        ExprKind::Let { name, .. } => {
                            bound.insert(name.clone());
                        }
                        ExprKind::LetTuple { names, .. } => bound.extend(names.iter().cloned()),
                        ExprKind::Lambda { params, .. } => bound.extend(params.iter().cloned()),
                        ExprKind::Loop { pat, form, .. } => {
                            bound.extend(pat.iter().cloned());
                            if let LoopForm::For { var, .. } = form {
                                bound.insert(var.clone());
                            }
                        }
                        _ => {}
                    }
                    stack.extend(n.kind.children());
                }
            }
        }
        Scope { bound }
    }

    fn builtin(&self, name: &str) -> bool {
        !self.bound.contains(name)
    }
}

/// Rewrites every item of `p`.
pub(super) fn rewrite(p: &Program, scope: &Scope) -> Result<Program> {
    if NAMED.iter().any(|n| scope.bound.contains(*n)) {
        return Err(unsupported_error(
            "a program that binds the name of a builtin the optimiser's rewrite uses",
        ));
    }
    let mut fresh = 0usize;
    let mut items = Vec::with_capacity(p.items.len());
    for it in &p.items {
        let mut it = it.clone();
        match &mut it {
            Item::Let { value, .. }
            | Item::LetTuple { value, .. }
            | Item::Output { value: Some(value), .. } => {
                *value = expr(value, scope, &mut fresh)?;
            }
            _ => {}
        }
        items.push(it);
    }
    Ok(Program { items })
}

fn mk(kind: ExprKind, span: Span) -> Expr {
    Expr::new(kind, span)
}

fn var(name: &str, span: Span) -> Expr {
    Expr::var(name, span)
}

fn apply(f: &str, args: Vec<Expr>, span: Span) -> Expr {
    mk(ExprKind::Apply { func: Box::new(var(f, span)), args }, span)
}

fn bin(op: BinOp, a: Expr, b: Expr, span: Span) -> Expr {
    mk(ExprKind::Binary { op, lhs: Box::new(a), rhs: Box::new(b) }, span)
}

fn lambda(params: Vec<String>, body: Expr, span: Span) -> Expr {
    mk(ExprKind::Lambda { params, body: Box::new(body) }, span)
}

fn lit(l: Lit, span: Span) -> Expr {
    Expr::lit(l, span)
}

/// A reduction `reduce (op) ne a`.
fn reduce(op: BinOp, ne: Lit, a: Expr, span: Span) -> Expr {
    apply("reduce", vec![mk(ExprKind::Section(op), span), lit(ne, span), a], span)
}

/// Rewrites `e` bottom-up (the tree's depth is bounded by the checker's limit).
fn expr(e: &Expr, scope: &Scope, fresh: &mut usize) -> Result<Expr> {
    expr_owned(e.clone(), scope, fresh)
}

/// `e` taken out of `slot`, a leaf left in its place (no copy of the subtree).
pub(super) fn take(slot: &mut Expr) -> Expr {
    let span = slot.span;
    std::mem::replace(slot, lit(Lit::Bool(false), span))
}

/// [`expr`] on an owned tree: each node is rewritten in place, never copied, so a deep
/// tree (a long `let` chain) costs its size, not its size times its depth.
fn expr_owned(e: Expr, scope: &Scope, fresh: &mut usize) -> Result<Expr> {
    let Expr { mut kind, span, ty, .. } = e;
    if let ExprKind::Apply { args, .. } = &mut kind {
        // the function applied stays a name: only a builtin passed as a value becomes a lambda
        for a in args.iter_mut() {
            *a = expr_owned(take(a), scope, fresh)?;
        }
    } else {
        for c in kind.children_mut() {
            *c = expr_owned(take(c), scope, fresh)?;
        }
    }
    let rebuilt = mk(kind, span);
    let mut rebuilt = Expr { ty: ty.clone(), ..rebuilt };
    if let ExprKind::Apply { func, args } = &rebuilt.kind {
        if let ExprKind::Var(f) = &func.kind {
            if scope.builtin(f) {
                if let Some(out) = prelude_call(f, args, span, fresh)? {
                    return Ok(out);
                }
            }
        }
        // a builtin applied keeps its name; its arguments were rewritten above
        return Ok(rebuilt);
    }
    if let ExprKind::Var(name) = &rebuilt.kind {
        if scope.builtin(name) {
            if name == "pi" {
                return Ok(lit(Lit::Float(std::f64::consts::PI), span));
            }
            if is_scalar_builtin(name) && matches!(ty, Some(Type::Func { .. })) {
                if let Some(f) = ScalarFn::from_name(name) {
                    let params: Vec<String> =
                        (0..f.arity()).map(|i| fresh_name(fresh, &format!("x{i}"))).collect();
                    let args = params.iter().map(|p| var(p, span)).collect();
                    rebuilt = lambda(params, apply(name, args, span), span);
                }
            }
        }
    }
    Ok(rebuilt)
}

fn fresh_name(fresh: &mut usize, stem: &str) -> String {
    *fresh += 1;
    format!("core'{stem}'{fresh}")
}

/// The name a lambda may use for array `a`: `a` itself when it is a name, else a fresh one
/// with `a` to bind to it (lambdas are scalar functions: they name arrays, never compute
/// them).
fn bound_array(a: &Expr, fresh: &mut usize) -> (String, Option<Expr>) {
    match &a.kind {
        ExprKind::Var(v) => (v.clone(), None),
        _ => (fresh_name(fresh, "a"), Some(a.clone())),
    }
}

/// `let name = value in body` where there is a value to bind, else `body`.
fn let_in(name: String, value: Option<Expr>, body: Expr, span: Span) -> Expr {
    match value {
        Some(value) => mk(ExprKind::Let { name, value: Box::new(value), body: Box::new(body) }, span),
        None => body,
    }
}

/// `f args` for a prelude builtin `f`, rewritten; `None` for the others.
fn prelude_call(f: &str, args: &[Expr], span: Span, fresh: &mut usize) -> Result<Option<Expr>> {
    Ok(Some(match (f, args) {
        ("sum", [a]) => reduce(BinOp::Add, Lit::Int(0), a.clone(), span),
        ("prod", [a]) => reduce(BinOp::Mul, Lit::Int(1), a.clone(), span),
        ("all", [a]) => reduce(BinOp::And, Lit::Bool(true), a.clone(), span),
        ("any", [a]) => reduce(BinOp::Or, Lit::Bool(false), a.clone(), span),
        ("dot", [a, b]) => {
            let (x, y) = (fresh_name(fresh, "x"), fresh_name(fresh, "y"));
            let times =
                lambda(vec![x.clone(), y.clone()], bin(BinOp::Mul, var(&x, span), var(&y, span), span), span);
            let products = apply("map", vec![times, a.clone(), b.clone()], span);
            reduce(BinOp::Add, Lit::Int(0), products, span)
        }
        ("mean", [a]) => {
            let Some(Type::Array { elem, shape }) = &a.ty else { return Ok(None) };
            let conv = elem.name();
            if shape.len() == 1 {
                let total = reduce(BinOp::Add, Lit::Int(0), a.clone(), span);
                let n = apply(conv, vec![apply("length", vec![a.clone()], span)], span);
                bin(BinOp::Div, total, n, span)
            } else {
                // the lambda names the array: one made by an expression is bound first
                let (name, bind) = bound_array(a, fresh);
                let total = reduce(BinOp::Add, Lit::Int(0), var(&name, span), span);
                let k = lit(Lit::Int(shape.len() as i128 - 1), span);
                let n = apply(conv, vec![apply("size", vec![var(&name, span), k], span)], span);
                let s = fresh_name(fresh, "s");
                let div = lambda(vec![s.clone()], bin(BinOp::Div, var(&s, span), n, span), span);
                let mean = apply("map", vec![div, total], span);
                let_in(name, bind, mean, span)
            }
        }
        ("slice", [a, starts, lens]) => {
            let (ExprKind::Shape(ss), ExprKind::Shape(ls)) = (&starts.kind, &lens.kind) else {
                return Ok(None);
            };
            let ix: Vec<String> = (0..ss.len()).map(|i| fresh_name(fresh, &format!("i{i}"))).collect();
            let indices =
                ss.iter().zip(&ix).map(|(s, i)| bin(BinOp::Add, s.clone(), var(i, span), span)).collect();
            // an array made by an expression is bound first: a lambda only indexes names
            let (name, bind) = bound_array(a, fresh);
            let read = mk(ExprKind::Index { array: Box::new(var(&name, span)), indices }, span);
            let f = lambda(ix, read, span);
            let gen = apply("generate", vec![mk(ExprKind::Shape(ls.clone()), span), f], span);
            let_in(name, bind, gen, span)
        }
        _ => return Ok(None),
    }))
}
