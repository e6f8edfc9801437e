//! Segmented reductions and scans (docs/language-reference.md "Array operations"):
//! `reduce_segments op ne offsets a` and `scan_segments op ne offsets a`, `a` a rank-1 array
//! or a group of them of length `n`, `offsets : i64[m + 1]` non-decreasing from `0` to `n`
//! (else `E-INDEX` naming the first bad offset). Segment `s` is `a[offsets[s] ..
//! offsets[s+1]]`; each is folded (or scanned) from `ne`, so an empty segment reduces to `ne`.

use super::array::{rank_is, want_args};
use super::group_arrays;
use super::scalar::internal;
use super::tuples::{element, same_shapes, val_elems, Outs};
use super::{describe, Array, Buf, Env, Interp, Val, R};
use crate::ast::Expr;
use crate::error::{Error, Span};

/// The offsets as `i64`s, checked: at least one, the first `0`, non-decreasing, the last
/// `n`, none past `n`. `E-INDEX` names the first bad position.
fn check_offsets<'a>(op: &str, offsets: &'a Array, oe: &Expr, n: usize, span: Span) -> R<&'a [i64]> {
    rank_is(offsets, 1, op, oe, span)?;
    let Buf::I64(v) = &offsets.buf else {
        return Err(Box::new(internal(span, format!("`{op}` offsets of type {}", offsets.elem()))));
    };
    if v.is_empty() {
        return Err(Box::new(Error::shape(
            span,
            format!("`{op}`: the offsets {} are empty; they need at least one element (0)", describe(oe)),
        )));
    }
    let n64 = n as i64;
    let last = v.len() - 1;
    for (s, &o) in v.iter().enumerate() {
        let why = if s == 0 && o != 0 {
            Some("the first offset must be 0".to_string())
        } else if s > 0 && o < v[s - 1] {
            Some(format!("offsets must not decrease (the one before is {})", v[s - 1]))
        } else if o > n64 || (s == last && o != n64) {
            Some(format!("the last offset must be the length {n} of the array, and none may exceed it"))
        } else {
            None
        };
        if let Some(why) = why {
            return Err(Box::new(Error::index(
                span,
                format!("`{op}`: bad offset {o} at position {s} of {}: {why}", describe(oe)),
            )));
        }
    }
    Ok(v)
}

impl<'p> Interp<'p> {
    /// `reduce_segments` and `scan_segments` applied to `args` (the application is `e`).
    pub(crate) fn segment_builtin(
        &self,
        name: &str,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        let span = e.span;
        want_args(name, args, 4, span)?;
        let mut op = self.eval_callable(&args[0], env)?;
        let ne = self.eval(&args[1], env)?;
        let offsets = self.eval_array(&args[2], env)?;
        let arrays = group_arrays(self.eval(&args[3], env)?, args[3].span)?;
        same_shapes(name, &arrays, &args[3], span)?;
        for a in &arrays {
            rank_is(a, 1, name, &args[3], span)?;
        }
        let n = arrays[0].len();
        let offs = check_offsets(name, &offsets, &args[2], n, span)?;
        let elems = val_elems(&ne, span)?;
        let tuple = matches!(ne, Val::Tuple(_));
        let scan = name == "scan_segments";
        let count = if scan { n } else { offs.len() - 1 };
        for &t in &elems {
            self.check_alloc(name, t, count, span)?;
        }
        let mut outs = Outs::new(&elems, tuple, count);
        for w in offs.windows(2) {
            let mut acc = ne.clone();
            for j in w[0] as usize..w[1] as usize {
                let x = element(&arrays, j, span)?;
                acc = self.call(&mut op, &[acc, x])?;
                if scan {
                    outs.push(&acc, span)?;
                }
            }
            if !scan {
                outs.push(&acc, span)?;
            }
        }
        Ok(Some(outs.arrays(&[count])))
    }
}
