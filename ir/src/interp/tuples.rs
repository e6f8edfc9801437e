//! Tuples and groups: taking them apart (`let (a, b) = ...`), making them, and the array
//! operations that consume or produce several arrays at once: `map` and `generate` with a
//! function that returns a tuple give a group; `reduce`, `scan` and `scan_exclusive` over a
//! group combine tuples (docs/language-reference.md "Tuples and groups"). A single array is
//! the one-part case of the same code.

use super::array::{advance, at_element, index_args, named_shape, push, split_inner};
use super::scalar::internal;
use super::{describe, elem_of, Array, Buf, Callable, Interp, Val, R};
use crate::ast::{Expr, ExprKind};
use crate::error::{Error, Span};
use crate::types::{ElemType, Type};
use crate::value::Scalar;
use std::rc::Rc;

/// The `n` parts of a tuple or group (a pattern of `n` names takes it apart).
pub(crate) fn parts<'p>(v: Val<'p>, n: usize, span: Span) -> R<Vec<Val<'p>>> {
    let parts: Vec<Val<'p>> = match v {
        Val::Tuple(t) => t.into_iter().map(Val::Scalar).collect(),
        Val::Group(g) => g,
        other => {
            return Err(Box::new(internal(span, format!("a pattern of {n} names for {}", other.kind()))))
        }
    };
    if parts.len() != n {
        return Err(Box::new(internal(span, format!("a pattern of {n} names for {} parts", parts.len()))));
    }
    Ok(parts)
}

/// A tuple of the values `parts`: a [`Val::Tuple`] when all are scalars, else a
/// [`Val::Group`].
pub(crate) fn make_tuple(parts: Vec<Val<'_>>) -> Val<'_> {
    let scalars: Option<Vec<Scalar>> =
        parts.iter().map(|p| if let Val::Scalar(s) = p { Some(*s) } else { None }).collect();
    match scalars {
        Some(t) => Val::Tuple(t),
        None => Val::Group(parts),
    }
}

/// The expression of part `i` of a group written `(a, b, ...)`, else the whole expression.
fn part_expr(e: &Expr, i: usize) -> &Expr {
    match &e.kind {
        ExprKind::Tuple(es) => es.get(i).unwrap_or(e),
        _ => e,
    }
}

/// Requires the arrays of a group (written `ge`) to have one shape (`E-SHAPE` naming both).
pub(crate) fn same_shapes(op: &str, arrays: &[Rc<Array>], ge: &Expr, span: Span) -> R<()> {
    let Some(first) = arrays.first() else {
        return Err(Box::new(internal(span, "an empty group")));
    };
    for (i, a) in arrays.iter().enumerate().skip(1) {
        if a.shape != first.shape {
            let (e0, ei) = (part_expr(ge, 0), part_expr(ge, i));
            return Err(Box::new(Error::shape(
                span,
                format!(
                    "`{op}`: the arrays of a group differ in shape: {} has shape {} but {} has shape {}",
                    describe(e0),
                    named_shape(e0, &first.shape),
                    describe(ei),
                    named_shape(ei, &a.shape)
                ),
            )));
        }
    }
    Ok(())
}

/// Element `flat` of a group as an argument: a scalar for one array, else a tuple.
pub(crate) fn element<'p>(arrays: &[Rc<Array>], flat: usize, span: Span) -> R<Val<'p>> {
    let get =
        |a: &Rc<Array>| a.buf.get(flat).ok_or_else(|| Box::new(internal(span, "an element past the buffer")));
    if let [a] = arrays {
        return Ok(Val::Scalar(get(a)?));
    }
    Ok(Val::Tuple(arrays.iter().map(get).collect::<R<Vec<Scalar>>>()?))
}

/// The element types of a scalar or tuple value (a neutral element).
pub(crate) fn val_elems(v: &Val<'_>, span: Span) -> R<Vec<ElemType>> {
    match v {
        Val::Scalar(s) => Ok(vec![s.elem_type()]),
        Val::Tuple(t) => Ok(t.iter().map(|s| s.elem_type()).collect()),
        other => Err(Box::new(internal(span, format!("a neutral element that is {}", other.kind())))),
    }
}

/// The element types of the array or group the checker gave `e`, and whether it is a group.
fn result_elems(e: &Expr) -> R<(Vec<ElemType>, bool)> {
    match &e.ty {
        Some(Type::Group(parts)) => {
            let elems: Option<Vec<ElemType>> = parts.iter().map(Type::elem).collect();
            let elems = elems.ok_or_else(|| internal(e.span, "a group part of no element type"))?;
            Ok((elems, true))
        }
        _ => Ok((vec![elem_of(e)?], false)),
    }
}

/// Buffers being filled with the scalars or tuples a function returns, one per part.
pub(crate) struct Outs {
    /// One buffer per part.
    bufs: Vec<Buf>,
    /// Whether the values are tuples (even of one part, which never happens).
    tuple: bool,
}

impl Outs {
    /// Empty buffers of `elems` with room for `n` elements each.
    pub(crate) fn new(elems: &[ElemType], tuple: bool, n: usize) -> Outs {
        Outs { bufs: elems.iter().map(|&t| Buf::with_capacity(t, n)).collect(), tuple }
    }

    /// Appends a scalar (or a tuple of as many parts as there are buffers).
    pub(crate) fn push(&mut self, v: &Val<'_>, span: Span) -> R<()> {
        match (v, self.tuple) {
            (Val::Scalar(s), false) => push(&mut self.bufs[0], *s, span),
            (Val::Tuple(t), true) if t.len() == self.bufs.len() => {
                for (b, s) in self.bufs.iter_mut().zip(t) {
                    push(b, *s, span)?;
                }
                Ok(())
            }
            (other, _) => Err(Box::new(internal(
                span,
                format!("a function returned {} where {} parts were expected", other.kind(), self.bufs.len()),
            ))),
        }
    }

    /// The arrays of `shape`: one array, or a group.
    pub(crate) fn arrays<'p>(self, shape: &[usize]) -> Val<'p> {
        let mut arrays: Vec<Val<'p>> = self
            .bufs
            .into_iter()
            .map(|buf| Val::Array(Rc::new(Array { shape: shape.to_vec(), buf })))
            .collect();
        if !self.tuple && arrays.len() == 1 {
            if let Some(a) = arrays.pop() {
                return a;
            }
        }
        Val::Group(arrays)
    }

    /// The single element of rank-0 results: a scalar or a tuple.
    pub(crate) fn scalar<'p>(self, span: Span) -> R<Val<'p>> {
        let t: Option<Vec<Scalar>> = self.bufs.iter().map(|b| b.get(0)).collect();
        let t = t.ok_or_else(|| internal(span, "a reduction with no result"))?;
        match (self.tuple, t.as_slice()) {
            (false, [s]) => Ok(Val::Scalar(*s)),
            _ => Ok(Val::Tuple(t)),
        }
    }
}

impl<'p> Interp<'p> {
    /// `map f a1 ... ak`: all shapes equal, element-wise application; a function that
    /// returns tuples gives a group.
    pub(crate) fn map(
        &self,
        mut f: Callable<'p>,
        arrays: &[Rc<Array>],
        exprs: &[Expr],
        e: &Expr,
    ) -> R<Val<'p>> {
        let span = e.span;
        let first = &arrays[0];
        for (a, ae) in arrays.iter().zip(exprs).skip(1) {
            if a.shape != first.shape {
                return Err(Box::new(Error::shape(
                    span,
                    format!(
                        "`map`: {} has shape {} but {} has shape {}",
                        describe(&exprs[0]),
                        named_shape(&exprs[0], &first.shape),
                        describe(ae),
                        named_shape(ae, &a.shape)
                    ),
                )));
            }
        }
        let (elems, tuple) = result_elems(e)?;
        for &t in &elems {
            self.check_alloc("map", t, first.len(), span)?;
        }
        let mut outs = Outs::new(&elems, tuple, first.len());
        let mut argv = vec![Val::Scalar(Scalar::Bool(false)); arrays.len()];
        for i in 0..first.len() {
            for (slot, a) in argv.iter_mut().zip(arrays) {
                *slot =
                    Val::Scalar(a.buf.get(i).ok_or_else(|| internal(span, "map: element past the buffer"))?);
            }
            let r = self.call(&mut f, &argv).map_err(|err| at_element(err, "map", &first.shape, i))?;
            outs.push(&r, span)?;
        }
        Ok(outs.arrays(&first.shape))
    }

    /// `generate [d1..dr] f`; a function that returns tuples gives a group.
    pub(crate) fn generate(&self, dims: &[i64], mut f: Callable<'p>, e: &Expr) -> R<Val<'p>> {
        let span = e.span;
        let (elems, tuple) = result_elems(e)?;
        let (shape, count) = Self::shape_count("generate", dims, span)?;
        for &t in &elems {
            self.check_alloc("generate", t, count, span)?;
        }
        let mut outs = Outs::new(&elems, tuple, count);
        let mut ix = vec![0i64; shape.len()];
        for flat in 0..count {
            let r = self
                .call(&mut f, &index_args(&ix))
                .map_err(|err| at_element(err, "generate", &shape, flat))?;
            outs.push(&r, span)?;
            advance(&mut ix, &shape);
        }
        Ok(outs.arrays(&shape))
    }

    /// `reduce op ne a` along the innermost dimension, `a` an array or a group (written
    /// `ae`); rank-0 results are scalars or tuples.
    pub(crate) fn reduce(
        &self,
        mut op: Callable<'p>,
        ne: Val<'p>,
        arrays: &[Rc<Array>],
        ae: &Expr,
        span: Span,
    ) -> R<Val<'p>> {
        same_shapes("reduce", arrays, ae, span)?;
        let (outer_shape, inner) = split_inner(&arrays[0], span)?;
        let rows: usize = outer_shape.iter().product();
        let elems = val_elems(&ne, span)?;
        for &t in &elems {
            self.check_alloc("reduce", t, rows, span)?;
        }
        let mut outs = Outs::new(&elems, matches!(ne, Val::Tuple(_)), rows);
        for row in 0..rows {
            let mut acc = ne.clone();
            for j in 0..inner {
                let x = element(arrays, row * inner + j, span)?;
                acc = self.call(&mut op, &[acc, x])?;
            }
            outs.push(&acc, span)?;
        }
        if outer_shape.is_empty() {
            return outs.scalar(span);
        }
        Ok(outs.arrays(&outer_shape))
    }

    /// `scan op ne a` (inclusive) or `scan_exclusive op ne a` along the innermost dimension,
    /// `a` an array or a group (written `ae`).
    pub(crate) fn scan(
        &self,
        mut op: Callable<'p>,
        ne: Val<'p>,
        arrays: &[Rc<Array>],
        ae: &Expr,
        inclusive: bool,
        span: Span,
    ) -> R<Val<'p>> {
        let name = if inclusive { "scan" } else { "scan_exclusive" };
        same_shapes(name, arrays, ae, span)?;
        let a = &arrays[0];
        let (outer_shape, inner) = split_inner(a, span)?;
        let rows: usize = outer_shape.iter().product();
        let elems = val_elems(&ne, span)?;
        for &t in &elems {
            self.check_alloc(name, t, a.len(), span)?;
        }
        let mut outs = Outs::new(&elems, matches!(ne, Val::Tuple(_)), a.len());
        for row in 0..rows {
            let mut acc = ne.clone();
            for j in 0..inner {
                let x = element(arrays, row * inner + j, span)?;
                if !inclusive {
                    outs.push(&acc, span)?;
                }
                acc = self.call(&mut op, &[acc, x])?;
                if inclusive {
                    outs.push(&acc, span)?;
                }
            }
        }
        Ok(outs.arrays(&a.shape))
    }
}
