//! What may run on one block of rows: the legality of the split, apart from its mechanics.
//!
//! A value that depends on the chunked inputs is computed block by block, so every step of
//! it must need only the block's own rows (and values every block has: whole inputs,
//! partials, sizes). Refused, with the step named:
//! - reading such an array at an index (`xs[i]`, `gather xs idx`): the index may fall in
//!   another block;
//! - reversing, filtering, transposing (but for the columns of a column reduction), reshaping, slicing, concatenating, permuting or
//!   back-permuting it: the rows move between blocks;
//! - a `generate` along the axis whose index function reads the blocks' arrays at another
//!   row than its own (`a[i - 1]`: a stencil);
//! - a whole array along the axis that is not made from the chunked inputs (`transpose w`)
//!   used with them: it has the whole length, a block has its own. (`iota n`, `fill [n] x`
//!   and `generate [n] f` are made block by block: `hoist.rs`.)

use super::hoist::{along_axis, axis_position};
use super::names::builtin;
use super::Scope;
use eqfuse_ir::ast::{Expr, ExprKind};
use eqfuse_ir::error::{Error, Result};

/// Checks that `e` (rewritten by `hoist.rs`) can be computed block by block.
pub fn check_block(e: &Expr, scope: &mut Scope<'_>) -> Result<()> {
    let axis = scope.axis;
    let refuse = |scope: &Scope<'_>, why: &str| -> Error { scope.refuse(why, e) };
    match &e.kind {
        ExprKind::Index { array, indices } if scope.is_row(array) => {
            let own_row = matches!(
                (indices.first().map(|i| &i.kind), &scope.row_param),
                (Some(ExprKind::Var(n)), Some(p)) if n == p
            );
            if !own_row {
                return Err(refuse(
                    scope,
                    "it reads an array of the chunked rows at an index, which may be in another block",
                ));
            }
        }
        ExprKind::Var(n) if scope.is_whole_row(n) => {
            return Err(refuse(
                scope,
                &format!("`{n}` is made along `{axis}` from no chunked input, so it has the whole length, not a block's"),
            ));
        }
        ExprKind::Let { name, value, body } => {
            check_block(value, scope)?;
            scope.push_local(name, value);
            let r = check_block(body, scope);
            scope.pop_local();
            return r;
        }
        ExprKind::Lambda { params, body } => {
            scope.push_params(params);
            let r = check_block(body, scope);
            scope.pop_params(params.len());
            return r;
        }
        _ => {}
    }
    if let Some((f, args)) = builtin(e) {
        let row_arg = args.iter().any(|a| scope.is_row(a));
        let made_along = along_axis(e.ty.as_ref(), axis).is_some();
        let why = match f {
            "map" => None,
            "reduce" | "scan" | "scan_exclusive" => {
                // over the blocks' rows this is a scan inside its carry (`hoist.rs` lifted
                // the rest); over a rank-1 array made whole, it cannot be split
                let a = &args[args.len() - 1];
                let rank = along_axis(a.ty.as_ref(), axis);
                if rank == Some(1) && !scope.is_row(a) {
                    Some(format!("`{f}` runs along `{axis}` over an array made without the chunked inputs"))
                } else if rank.is_none() && inner_axis(a, axis) && scope.is_row(a) {
                    // a column reduction `hoist.rs` lifted is gone; what is left runs along
                    // `axis` for every column (a scan) and would need the blocks before
                    Some(format!(
                        "`{f}` runs along `{axis}` for every column of an array of the chunked rows"
                    ))
                } else {
                    None
                }
            }
            "gather" => args
                .first()
                .filter(|a| scope.is_row(a))
                .map(|_| "`gather` reads an array of the chunked rows at data-dependent rows".to_string()),
            "reverse" => args
                .first()
                .filter(|a| scope.is_row(a) && inner_axis(a, axis))
                .map(|_| format!("`reverse` moves rows along `{axis}` between blocks")),
            "generate" if axis_position(e.ty.as_ref(), axis).is_some() => {
                // the index function may read the blocks' arrays at its own row only (its
                // index along the axis: the first, or the second of a column reduction's)
                let at = axis_position(e.ty.as_ref(), axis).unwrap_or(0);
                if let [_, Expr { kind: ExprKind::Lambda { params, body }, .. }] = args {
                    let Some(row) = params.get(at) else {
                        return Err(refuse(scope, "a `generate` without its index"));
                    };
                    let saved = scope.row_param.replace(row.clone());
                    scope.push_params(params);
                    let r = check_block(body, scope);
                    scope.pop_params(params.len());
                    scope.row_param = saved;
                    return r;
                }
                None
            }
            // the columns of a block's rows, for a column reduction (`hoist.rs`)
            "transpose" if args.first().is_some_and(|a| along_axis(a.ty.as_ref(), axis) == Some(2)) => None,
            "filter" | "backpermute" | "permute" | "transpose" | "reshape" | "slice" | "concat" => {
                (row_arg || made_along).then(|| format!("`{f}` moves rows between blocks"))
            }
            _ => None,
        };
        if let Some(why) = why {
            return Err(refuse(scope, &why));
        }
    }
    for c in e.kind.children() {
        check_block(c, scope)?;
    }
    Ok(())
}

/// Is `a` an array whose innermost dimension is `axis` (what `reduce`, `scan` and `reverse`
/// run along)?
fn inner_axis(a: &Expr, axis: &str) -> bool {
    matches!(&a.ty, Some(eqfuse_ir::types::Type::Array { shape, .. })
        if matches!(shape.last(), Some(eqfuse_ir::types::Dim::Size(s)) if s == axis))
}
