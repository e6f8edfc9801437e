//! What may run on one block of rows: the legality of the split, apart from its mechanics.
//!
//! A value that depends on the chunked inputs is computed block by block, so every step of
//! it must need only the block's own rows (and values every block has: whole inputs,
//! partials, sizes). Refused, with the step named:
//! - reading such an array at an index (`xs[i]`, `gather xs idx`): the index may fall in
//!   another block;
//! - reversing, filtering, transposing, reshaping, slicing, concatenating, permuting or
//!   back-permuting it: the rows move between blocks;
//! - a `generate` along the axis whose index function reads the blocks' arrays at another
//!   row than its own (`a[i - 1]`: a stencil);
//! - a whole array along the axis that is not made from the chunked inputs (`transpose w`)
//!   used with them: it has the whole length, a block has its own. (`iota n`, `fill [n] x`
//!   and `generate [n] f` are made block by block: `hoist.rs`.)

use super::hoist::along_axis;
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
                (along_axis(a.ty.as_ref(), axis) == Some(1) && !scope.is_row(a)).then(|| {
                    format!("`{f}` runs along `{axis}` over an array made without the chunked inputs")
                })
            }
            "gather" => args
                .first()
                .filter(|a| scope.is_row(a))
                .map(|_| "`gather` reads an array of the chunked rows at data-dependent rows".to_string()),
            "reverse" => args
                .first()
                .filter(|a| scope.is_row(a) && along_axis(a.ty.as_ref(), axis) == Some(1))
                .map(|_| format!("`reverse` moves rows along `{axis}` between blocks")),
            "generate" if made_along => {
                // the index function may read the blocks' arrays at its own row only
                if let [_, Expr { kind: ExprKind::Lambda { params, body }, .. }] = args {
                    let saved = scope.row_param.replace(params[0].clone());
                    scope.push_params(params);
                    let r = check_block(body, scope);
                    scope.pop_params(params.len());
                    scope.row_param = saved;
                    return r;
                }
                None
            }
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
