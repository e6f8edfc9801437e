//! The prelude of version 2 (docs/language-reference.md "Array operations"): `sum`, `prod`,
//! `mean`, `all`, `any` and `argmin`/`argmax` along the innermost dimension, `dot` of two
//! rank-1 arrays, and `slice` of any rank.
//!
//! `sum a` is exactly `reduce (+) 0 a` (a left fold from the neutral element), so the
//! reference agrees with the definition bit for bit; `mean` divides that sum by the length
//! (an empty dimension gives NaN). `argmin`/`argmax` give the first smallest (largest)
//! element, NaN counting as smaller (larger) than everything and `-0.0` equal to `0.0`.

use super::array::{advance, fmt_i64s, rank_is, split_inner, want_args};
use super::scalar::{binary, convert, internal};
use super::{describe, flat_index, fmt_shape, Array, Buf, Env, Interp, Val, R};
use crate::ast::{BinOp, Expr};
use crate::error::{Error, Span};
use crate::types::ElemType;
use crate::value::Scalar;
use std::rc::Rc;

/// Whether a scalar is a float NaN.
fn is_nan(s: Scalar) -> bool {
    match s {
        Scalar::F32(v) => v.is_nan(),
        Scalar::F64(v) => v.is_nan(),
        _ => false,
    }
}

/// Whether `x` replaces `best` as the `argmin` (`argmax` when `max`): a first NaN wins, else
/// a strictly smaller (larger) value.
fn better(x: Scalar, best: Scalar, max: bool, span: Span) -> R<bool> {
    if is_nan(best) {
        return Ok(false);
    }
    if is_nan(x) {
        return Ok(true);
    }
    let op = if max { BinOp::Gt } else { BinOp::Lt };
    Ok(binary(op, x, best, span)? == Scalar::Bool(true))
}

/// Rank-`r - 1` results of a per-row computation: a scalar when `outer` is empty.
fn row_results<'p>(outer: Vec<usize>, elem: ElemType, vals: Vec<Scalar>, span: Span) -> R<Val<'p>> {
    if outer.is_empty() {
        return Ok(Val::Scalar(vals.first().copied().ok_or_else(|| internal(span, "no row result"))?));
    }
    let mut buf = Buf::with_capacity(elem, vals.len());
    for v in vals {
        super::array::push(&mut buf, v, span)?;
    }
    Ok(Val::Array(Rc::new(Array { shape: outer, buf })))
}

impl<'p> Interp<'p> {
    /// `sum prod mean all any dot argmin argmax` applied to `args` (the application is `e`).
    pub(crate) fn prelude_builtin(
        &self,
        name: &str,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        let span = e.span;
        if name == "dot" {
            want_args(name, args, 2, span)?;
            let a = self.eval_array(&args[0], env)?;
            let b = self.eval_array(&args[1], env)?;
            return Ok(Some(Val::Scalar(self.dot(&a, &b, &args[0], &args[1], span)?)));
        }
        want_args(name, args, 1, span)?;
        let a = self.eval_array(&args[0], env)?;
        let elem = a.elem();
        let v = match name {
            "sum" => self.fold_rows(name, &a, Scalar::from_i128_wrapping(elem, 0), BinOp::Add, span)?,
            "prod" => self.fold_rows(name, &a, Scalar::from_i128_wrapping(elem, 1), BinOp::Mul, span)?,
            "all" => self.fold_rows(name, &a, Scalar::Bool(true), BinOp::And, span)?,
            "any" => self.fold_rows(name, &a, Scalar::Bool(false), BinOp::Or, span)?,
            "mean" => self.mean(&a, span)?,
            "argmin" => self.arg_best(&a, false, &args[0], span)?,
            "argmax" => self.arg_best(&a, true, &args[0], span)?,
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    /// `reduce op ne a` for an operator `op` along the innermost dimension.
    fn fold_rows(&self, name: &str, a: &Array, ne: Scalar, op: BinOp, span: Span) -> R<Val<'p>> {
        let (outer, inner) = split_inner(a, span)?;
        let rows: usize = outer.iter().product();
        self.check_alloc(name, ne.elem_type(), rows, span)?;
        let mut vals = Vec::with_capacity(rows);
        for row in 0..rows {
            let mut acc = ne;
            for j in 0..inner {
                let x = a.buf.get(row * inner + j).ok_or_else(|| internal(span, "past the buffer"))?;
                acc = binary(op, acc, x, span)?;
            }
            vals.push(acc);
        }
        row_results(outer, ne.elem_type(), vals, span)
    }

    /// `mean a`: the sum of each row divided by its length (NaN for an empty row).
    fn mean(&self, a: &Array, span: Span) -> R<Val<'p>> {
        let elem = a.elem();
        if !elem.is_float() {
            return Err(Box::new(internal(span, format!("`mean` of {elem}"))));
        }
        let (_, inner) = split_inner(a, span)?;
        let len = convert(Scalar::I64(inner as i64), elem);
        match self.fold_rows("mean", a, Scalar::from_i128_wrapping(elem, 0), BinOp::Add, span)? {
            Val::Scalar(s) => Ok(Val::Scalar(binary(BinOp::Div, s, len, span)?)),
            Val::Array(sums) => {
                let mut buf = Buf::with_capacity(elem, sums.len());
                for i in 0..sums.len() {
                    let s = sums.buf.get(i).ok_or_else(|| internal(span, "past the buffer"))?;
                    super::array::push(&mut buf, binary(BinOp::Div, s, len, span)?, span)?;
                }
                Ok(Val::Array(Rc::new(Array { shape: sums.shape.clone(), buf })))
            }
            other => Err(Box::new(internal(span, format!("a sum that is {}", other.kind())))),
        }
    }

    /// `dot a b`: `reduce (+) 0 (map (*) a b)` of two rank-1 arrays of one length.
    fn dot(&self, a: &Array, b: &Array, ae: &Expr, be: &Expr, span: Span) -> R<Scalar> {
        rank_is(a, 1, "dot", ae, span)?;
        rank_is(b, 1, "dot", be, span)?;
        if a.len() != b.len() {
            return Err(Box::new(Error::shape(
                span,
                format!(
                    "`dot`: {} has length {} but {} has length {}",
                    describe(ae),
                    a.len(),
                    describe(be),
                    b.len()
                ),
            )));
        }
        let mut acc = Scalar::from_i128_wrapping(a.elem(), 0);
        for i in 0..a.len() {
            let x = a.buf.get(i).ok_or_else(|| internal(span, "past the buffer"))?;
            let y = b.buf.get(i).ok_or_else(|| internal(span, "past the buffer"))?;
            acc = binary(BinOp::Add, acc, binary(BinOp::Mul, x, y, span)?, span)?;
        }
        Ok(acc)
    }

    /// `argmin a` (`argmax a` when `max`): the first index of the smallest (largest) element
    /// of each row, as `i64`; an empty row is `E-SHAPE`.
    fn arg_best(&self, a: &Array, max: bool, ae: &Expr, span: Span) -> R<Val<'p>> {
        let name = if max { "argmax" } else { "argmin" };
        let (outer, inner) = split_inner(a, span)?;
        if inner == 0 {
            return Err(Box::new(Error::shape(
                span,
                format!(
                    "`{name}` of {} of shape {}: its innermost dimension is empty, so there is no {} element",
                    describe(ae),
                    fmt_shape(&a.shape),
                    if max { "largest" } else { "smallest" }
                ),
            )));
        }
        let rows: usize = outer.iter().product();
        self.check_alloc(name, ElemType::I64, rows, span)?;
        let mut vals = Vec::with_capacity(rows);
        for row in 0..rows {
            let get = |j: usize| {
                a.buf.get(row * inner + j).ok_or_else(|| Box::new(internal(span, "past the buffer")))
            };
            let (mut best, mut at) = (get(0)?, 0usize);
            for j in 1..inner {
                let x = get(j)?;
                if better(x, best, max, span)? {
                    (best, at) = (x, j);
                }
            }
            vals.push(Scalar::I64(at as i64));
        }
        row_results(outer, ElemType::I64, vals, span)
    }

    /// `slice a [s1..sr] [l1..lr]`: the block of `a` at `(s1..sr)` of extent `(l1..lr)`.
    pub(crate) fn slice_nd_builtin(
        &self,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        let span = e.span;
        want_args("slice", args, 3, span)?;
        let a = self.eval_array(&args[0], env)?;
        let starts = self.eval_shape(&args[1], env)?;
        let lens = self.eval_shape(&args[2], env)?;
        Ok(Some(Val::Array(Rc::new(self.slice_nd(&a, &starts, &lens, &args[0], span)?))))
    }

    /// The block of `a` (written `ae`) at `starts` of extent `lens`; out of range is
    /// `E-INDEX` naming the dimension.
    fn slice_nd(&self, a: &Array, starts: &[i64], lens: &[i64], ae: &Expr, span: Span) -> R<Array> {
        if starts.len() != a.rank() || lens.len() != a.rank() {
            return Err(Box::new(internal(
                span,
                format!(
                    "`slice` of {} of rank {} with {} starts and {} lengths",
                    describe(ae),
                    a.rank(),
                    starts.len(),
                    lens.len()
                ),
            )));
        }
        for (k, ((&s, &l), &d)) in starts.iter().zip(lens).zip(&a.shape).enumerate() {
            let fits = s >= 0 && l >= 0 && s.checked_add(l).is_some_and(|end| end <= d as i64);
            if !fits {
                return Err(Box::new(Error::index(
                    span,
                    format!(
                        "slice: the block at {} of extent {} is out of range in dimension {k} (start {s}, length {l}) for {} of shape {}",
                        fmt_i64s(starts),
                        fmt_i64s(lens),
                        describe(ae),
                        fmt_shape(&a.shape)
                    ),
                )));
            }
        }
        let (shape, count) = self.make_shape("slice", a.elem(), lens, span)?;
        let mut buf = Buf::with_capacity(a.elem(), count);
        let mut ix = vec![0i64; shape.len()];
        let mut src = vec![0i64; shape.len()];
        for _ in 0..count {
            for ((slot, &i), &s) in src.iter_mut().zip(&ix).zip(starts) {
                *slot = i + s;
            }
            let flat = flat_index(&a.shape, &src).ok_or_else(|| internal(span, "slice: past the array"))?;
            let x = a.buf.get(flat).ok_or_else(|| internal(span, "slice: past the buffer"))?;
            super::array::push(&mut buf, x, span)?;
            advance(&mut ix, &shape);
        }
        Ok(Array { shape, buf })
    }
}
