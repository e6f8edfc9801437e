//! Warnings for arrays joined over sizes that cannot be proven equal: a `map` over `f32[n]`
//! and `f32[m]` (the run fails with `E-SHAPE` where `n != m`), a `generate` over `[n]` that
//! reads `ys[i]` with `ys : f32[m]` (`E-INDEX` where `m < n`). Only size names and known
//! sizes are compared: a dimension computed by an expression is not judged.

use crate::ast::{Expr, ExprKind, Item, Program};
use crate::types::{Dim, Type};
use crate::warning::Warning;

/// A dimension that can be compared: a size name or a known size.
fn plain(d: &Dim) -> bool {
    matches!(d, Dim::Size(_) | Dim::Known(_))
}

fn shape(e: &Expr) -> Option<&[Dim]> {
    match &e.ty {
        Some(Type::Array { shape, .. }) => Some(shape),
        _ => None,
    }
}

/// The warnings of the typed `program`, in program order.
pub(crate) fn warnings(program: &Program) -> Vec<Warning> {
    let mut out = Vec::new();
    for item in &program.items {
        if let Item::Let { value: e, .. }
        | Item::LetTuple { value: e, .. }
        | Item::Output { value: Some(e), .. } = item
        {
            walk(e, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// Walks `e`; `locals` are the names bound on the way (a builtin they hide is not one).
fn walk<'p>(e: &'p Expr, locals: &mut Vec<&'p str>, out: &mut Vec<Warning>) {
    match &e.kind {
        ExprKind::Let { name, value, body } => {
            walk(value, locals, out);
            locals.push(name);
            walk(body, locals, out);
            locals.pop();
            return;
        }
        ExprKind::Lambda { params, body } => {
            let base = locals.len();
            locals.extend(params.iter().map(String::as_str));
            walk(body, locals, out);
            locals.truncate(base);
            return;
        }
        ExprKind::Apply { func, args } => match (&func.kind, args.as_slice()) {
            (ExprKind::Var(f), [_, arrays @ ..]) if f == "map" && !locals.contains(&"map") => {
                map(e, arrays, out);
            }
            (ExprKind::Var(f), [_, g]) if f == "generate" && !locals.contains(&"generate") => {
                generate(e, g, out);
            }
            _ => {}
        },
        _ => {}
    }
    for c in e.kind.children() {
        walk(c, locals, out);
    }
}

fn map(e: &Expr, arrays: &[Expr], out: &mut Vec<Warning>) {
    let Some(first) = arrays.first() else { return };
    let Some(s0) = shape(first) else { return };
    for a in &arrays[1..] {
        let Some(s) = shape(a) else { continue };
        if s.len() != s0.len() {
            continue;
        }
        let differ: Vec<(&Dim, &Dim)> =
            s0.iter().zip(s).filter(|(x, y)| plain(x) && plain(y) && x != y).collect();
        let Some((x, y)) = differ.first() else { continue };
        let (t0, t) = (ty_text(first), ty_text(a));
        out.push(
            Warning::at(
                e.span,
                format!(
                    "`map` joins `{}` : {t0} and `{}` : {t}, whose sizes `{x}` and `{y}` cannot be proven equal; the run \
                     fails with E-SHAPE where they differ",
                    super::text::show(first),
                    super::text::show(a)
                ),
            )
            .with_note("help: if they are always one size, give both the same size name in their declarations"),
        );
    }
}

fn ty_text(e: &Expr) -> String {
    e.ty.as_ref().map_or_else(|| "?".to_string(), |t| t.to_string())
}

/// `generate [d1..dr] (\i1..ir -> body)`: a read `a[.., ik, ..]` by a bare index parameter
/// whose dimension of `a` differs from `dk`.
fn generate(e: &Expr, g: &Expr, out: &mut Vec<Warning>) {
    let (Some(dims), ExprKind::Lambda { params, body }) = (shape(e), &g.kind) else { return };
    let mut seen = Vec::new();
    reads(body, params, dims, &mut Vec::new(), &mut seen);
    for (read, array, k, j) in seen {
        let (Some(a_dims), Some(d)) = (shape(array), dims.get(k)) else { continue };
        let Some(ad) = a_dims.get(j) else { continue };
        let p = &params[k];
        let a = super::text::show(array);
        out.push(
            Warning::at(
                read.span,
                format!(
                    "`generate` runs `{p}` over `{d}` but reads `{}` with `{a}` : {}, whose dimension `{ad}` cannot be \
                     proven equal to `{d}`; the run fails with E-INDEX where it is smaller",
                    super::text::show(read),
                    ty_text(array)
                ),
            )
            .with_note("help: if they are always one size, give both the same size name in their declarations"),
        );
    }
}

/// Collects the reads `a[..]` in `e` whose index `j` is the bare parameter `params[k]` (not
/// hidden by a local) while `a`'s dimension `j` and `dims[k]` are plain and differ.
fn reads<'p>(
    e: &'p Expr,
    params: &[String],
    dims: &[Dim],
    locals: &mut Vec<&'p str>,
    seen: &mut Vec<(&'p Expr, &'p Expr, usize, usize)>,
) {
    match &e.kind {
        ExprKind::Let { name, value, body } => {
            reads(value, params, dims, locals, seen);
            locals.push(name);
            reads(body, params, dims, locals, seen);
            locals.pop();
            return;
        }
        ExprKind::Lambda { params: ps, body } => {
            let base = locals.len();
            locals.extend(ps.iter().map(String::as_str));
            reads(body, params, dims, locals, seen);
            locals.truncate(base);
            return;
        }
        ExprKind::Index { array, indices } => {
            if let Some(a_dims) = shape(array) {
                for (j, ix) in indices.iter().enumerate() {
                    let ExprKind::Var(v) = &ix.kind else { continue };
                    if locals.contains(&v.as_str()) {
                        continue;
                    }
                    let Some(k) = params.iter().position(|p| p == v) else { continue };
                    if let (Some(d), Some(ad)) = (dims.get(k), a_dims.get(j)) {
                        let fits = matches!((d, ad), (Dim::Known(x), Dim::Known(y)) if x <= y);
                        if plain(d) && plain(ad) && d != ad && !fits {
                            seen.push((e, array, k, j));
                        }
                    }
                }
            }
        }
        _ => {}
    }
    for c in e.kind.children() {
        reads(c, params, dims, locals, seen);
    }
}
