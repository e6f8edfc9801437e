//! The builtins applied by name: the array operations of docs/language-reference.md "Array operations",
//! plus `iterate`, `length`, `size` and the scalar builtins.
//!
//! Every operation works on row-major `Array`s with plain loops; reductions and scans are
//! sequential left folds from the neutral element. Every array is sized with checked
//! arithmetic and refused with `E-LIMIT` before allocation when it would exceed
//! [`crate::ast::Limits::max_array_bytes`].

use super::scalar::{internal, ScalarFn};
use super::{describe, flat_index, fmt_shape, Array, Buf, Callable, Env, Func, Interp, Val, R};
use crate::ast::{Expr, ExprKind};
use crate::error::{Code, Error, Span};
use crate::types::ElemType;
use crate::value::Scalar;
use std::rc::Rc;

/// The multi-index of row-major position `flat` in `shape`.
pub(super) fn unflatten(shape: &[usize], mut flat: usize) -> Vec<usize> {
    let mut ix = vec![0; shape.len()];
    for (slot, &d) in ix.iter_mut().zip(shape).rev() {
        if d > 0 {
            *slot = flat % d;
            flat /= d;
        }
    }
    ix
}

/// Adds "in `op` at element [i, j]" to a run-time error raised while computing one element.
pub(super) fn at_element(mut err: Box<Error>, op: &str, shape: &[usize], flat: usize) -> Box<Error> {
    if matches!(err.code, Code::DivZero | Code::Index) && !err.message.contains(" at element ") {
        err.message = format!("{}, in `{op}` at element {}", err.message, fmt_shape(&unflatten(shape, flat)));
    }
    err
}

/// Advances a row-major multi-index counter over `shape`.
pub(super) fn advance(ix: &mut [i64], shape: &[usize]) {
    for (i, &d) in ix.iter_mut().zip(shape).rev() {
        *i += 1;
        if usize::try_from(*i).is_ok_and(|v| v < d) {
            return;
        }
        *i = 0;
    }
}

/// A multi-index as `i64` scalar arguments of an index function.
pub(super) fn index_args<'p>(ix: &[i64]) -> Vec<Val<'p>> {
    ix.iter().map(|&i| Val::Scalar(Scalar::I64(i))).collect()
}

/// Appends `s` to `buf`, or fails (an internal error) when its type is not the buffer's.
pub(super) fn push(buf: &mut Buf, s: Scalar, span: Span) -> R<()> {
    if buf.push(s) {
        Ok(())
    } else {
        Err(Box::new(internal(span, format!("a {} element in an array of {}", s.elem_type(), buf.elem()))))
    }
}

/// An `i64` from a scalar that must be one (an index or a size).
fn as_i64(s: Scalar, span: Span) -> R<i64> {
    match s {
        Scalar::I64(v) => Ok(v),
        Scalar::I32(v) => Ok(i64::from(v)),
        other => Err(Box::new(internal(span, format!("an index of type {}", other.elem_type())))),
    }
}

/// The index or indices an index function returned.
fn as_indices(v: Val<'_>, span: Span) -> R<Vec<i64>> {
    match v {
        Val::Scalar(s) => Ok(vec![as_i64(s, span)?]),
        Val::Tuple(t) => t.into_iter().map(|s| as_i64(s, span)).collect(),
        other => Err(Box::new(internal(span, format!("an index function returned {}", other.kind())))),
    }
}

/// Formats indices as `5` or `[3, 7]`.
fn fmt_indices(ix: &[i64]) -> String {
    if ix.len() == 1 {
        ix[0].to_string()
    } else {
        let parts: Vec<String> = ix.iter().map(|i| i.to_string()).collect();
        format!("[{}]", parts.join(", "))
    }
}

/// `Ok` when `args` has `n` arguments, else an internal error naming the builtin.
pub(super) fn want_args(name: &str, args: &[Expr], n: usize, span: Span) -> R<()> {
    if args.len() == n {
        Ok(())
    } else {
        Err(Box::new(internal(span, format!("`{name}` applied to {} arguments, not {n}", args.len()))))
    }
}

/// An array result of a builtin.
pub(super) fn arr<'p>(v: Array) -> R<Option<Val<'p>>> {
    Ok(Some(Val::Array(Rc::new(v))))
}

impl<'p> Interp<'p> {
    /// Refuses an array of `count` elements of `elem` that exceeds the memory limit.
    pub(super) fn check_alloc(&self, op: &str, elem: ElemType, count: usize, span: Span) -> R<()> {
        let bytes = (count as u128) * (elem.size_bytes() as u128);
        if i64::try_from(count).is_err() {
            return Err(Box::new(Error::at(
                Code::Limit,
                span,
                format!("`{op}`: the array size overflows i64"),
            )));
        }
        if bytes > u128::from(self.limits.max_array_bytes) {
            return Err(Box::new(Error::at(
                Code::Limit,
                span,
                format!(
                    "`{op}` would allocate {count} elements of {elem} ({bytes} bytes), over the limit of {} bytes",
                    self.limits.max_array_bytes
                ),
            )));
        }
        Ok(())
    }

    /// Turns sizes into a shape: negative sizes are `E-SHAPE`, an element count that
    /// overflows `i64` is `E-LIMIT`, an array over the memory limit is `E-LIMIT`.
    pub(super) fn make_shape(
        &self,
        op: &str,
        elem: ElemType,
        dims: &[i64],
        span: Span,
    ) -> R<(Vec<usize>, usize)> {
        let (shape, count) = Self::shape_count(op, dims, span)?;
        self.check_alloc(op, elem, count, span)?;
        Ok((shape, count))
    }

    /// Turns sizes into a shape and its element count, allocating nothing: negative sizes
    /// are `E-SHAPE`, a count that overflows `i64` is `E-LIMIT` (checked size by size).
    pub(super) fn shape_count(op: &str, dims: &[i64], span: Span) -> R<(Vec<usize>, usize)> {
        let mut count: i64 = 1;
        let mut shape = Vec::with_capacity(dims.len());
        for &d in dims {
            let Ok(du) = usize::try_from(d) else {
                return Err(Box::new(Error::shape(
                    span,
                    format!("`{op}`: negative size {d} in shape {}", fmt_i64s(dims)),
                )));
            };
            count = count.checked_mul(d).ok_or_else(|| {
                Error::at(
                    Code::Limit,
                    span,
                    format!("`{op}`: the size of shape {} overflows i64", fmt_i64s(dims)),
                )
            })?;
            shape.push(du);
        }
        let count = usize::try_from(count).map_err(|_| {
            Error::at(Code::Limit, span, format!("`{op}`: size {count} does not fit in memory"))
        })?;
        Ok((shape, count))
    }

    /// Evaluates a shape argument `[d1, ..., dr]`.
    pub(super) fn eval_shape(&self, e: &'p Expr, env: &mut Env<'p>) -> R<Vec<i64>> {
        match &e.kind {
            ExprKind::Shape(ds) => ds.iter().map(|d| self.eval_i64(d, env)).collect(),
            _ => Err(Box::new(internal(e.span, "a shape argument that is not `[d1, ..., dr]`"))),
        }
    }

    /// Applies the builtin `name` to `args` (the whole application is `e`), dispatching by
    /// family. `Ok(None)` when `name` is not a builtin.
    pub(crate) fn apply_builtin(
        &self,
        name: &str,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        match name {
            "map" | "generate" | "iota" | "fill" => self.construct_builtin(name, args, e, env),
            "reduce" | "scan" | "scan_exclusive" | "filter" => self.fold_builtin(name, args, e, env),
            "reduce_segments" | "scan_segments" => self.segment_builtin(name, args, e, env),
            "sum" | "prod" | "mean" | "all" | "any" | "dot" | "argmin" | "argmax" => {
                self.prelude_builtin(name, args, e, env)
            }
            "slice" if args.get(1).is_some_and(|a| matches!(a.kind, ExprKind::Shape(_))) => {
                self.slice_nd_builtin(args, e, env)
            }
            "gather" | "backpermute" | "permute" | "transpose" | "reverse" | "reshape" | "slice"
            | "concat" => self.rearrange_builtin(name, args, e, env),
            _ => self.scalar_builtin(name, args, e, env),
        }
    }

    /// The builtins that make arrays: `map`, `generate`, `iota`, `fill`.
    fn construct_builtin(
        &self,
        name: &str,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        let span = e.span;
        let want = |n: usize| want_args(name, args, n, span);
        match name {
            "map" => {
                if args.len() < 2 {
                    return Err(Box::new(internal(span, "`map` needs a function and an array")));
                }
                let f = self.eval_callable(&args[0], env)?;
                let mut arrays = Vec::with_capacity(args.len() - 1);
                for a in &args[1..] {
                    arrays.push(self.eval_array(a, env)?);
                }
                Ok(Some(self.map(f, &arrays, &args[1..], e)?))
            }
            "generate" => {
                want(2)?;
                let dims = self.eval_shape(&args[0], env)?;
                let f = self.eval_callable(&args[1], env)?;
                Ok(Some(self.generate(&dims, f, e)?))
            }
            "iota" => {
                want(1)?;
                let n = self.eval_i64(&args[0], env)?;
                let (shape, count) = self.make_shape("iota", ElemType::I64, &[n], span)?;
                arr(Array { shape, buf: Buf::I64((0..count as i64).collect()) })
            }
            "fill" => {
                want(2)?;
                let dims = self.eval_shape(&args[0], env)?;
                let x = self.eval_scalar(&args[1], env)?;
                let (shape, count) = self.make_shape("fill", x.elem_type(), &dims, span)?;
                let buf = match x {
                    Scalar::Bool(v) => Buf::Bool(vec![v; count]),
                    Scalar::I32(v) => Buf::I32(vec![v; count]),
                    Scalar::I64(v) => Buf::I64(vec![v; count]),
                    Scalar::I8(v) => Buf::I8(vec![v; count]),
                    Scalar::I16(v) => Buf::I16(vec![v; count]),
                    Scalar::U8(v) => Buf::U8(vec![v; count]),
                    Scalar::U16(v) => Buf::U16(vec![v; count]),
                    Scalar::U32(v) => Buf::U32(vec![v; count]),
                    Scalar::U64(v) => Buf::U64(vec![v; count]),
                    Scalar::F32(v) => Buf::F32(vec![v; count]),
                    Scalar::F64(v) => Buf::F64(vec![v; count]),
                };
                arr(Array { shape, buf })
            }
            _ => Ok(None),
        }
    }

    /// The builtins that fold an array with a function: `reduce`, `scan`, `scan_exclusive`,
    /// `filter`.
    fn fold_builtin(
        &self,
        name: &str,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        let span = e.span;
        let want = |n: usize| want_args(name, args, n, span);
        match name {
            "reduce" | "scan" | "scan_exclusive" => {
                want(3)?;
                let op = self.eval_callable(&args[0], env)?;
                let ne = self.eval(&args[1], env)?;
                let a = super::group_arrays(self.eval(&args[2], env)?, args[2].span)?;
                let v = match name {
                    "reduce" => self.reduce(op, ne, &a, &args[2], span)?,
                    "scan" => self.scan(op, ne, &a, &args[2], true, span)?,
                    _ => self.scan(op, ne, &a, &args[2], false, span)?,
                };
                Ok(Some(v))
            }
            "filter" => {
                want(2)?;
                let p = self.eval_callable(&args[0], env)?;
                let a = self.eval_array(&args[1], env)?;
                arr(self.filter(p, &a, &args[1], span)?)
            }
            _ => Ok(None),
        }
    }

    /// The builtins that move elements: `gather`, `backpermute`, `permute`, `transpose`,
    /// `reverse`, `reshape`, `slice`, `concat`.
    fn rearrange_builtin(
        &self,
        name: &str,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        let span = e.span;
        let want = |n: usize| want_args(name, args, n, span);
        match name {
            "gather" => {
                want(2)?;
                let a = self.eval_array(&args[0], env)?;
                let idx = self.eval_array(&args[1], env)?;
                arr(self.gather(&a, &idx, &args[0], &args[1], span)?)
            }
            "backpermute" => {
                want(3)?;
                let dims = self.eval_shape(&args[0], env)?;
                let f = self.eval_callable(&args[1], env)?;
                let a = self.eval_array(&args[2], env)?;
                arr(self.backpermute(&dims, f, &a, &args[2], span)?)
            }
            "permute" => {
                want(4)?;
                let op = self.eval_callable(&args[0], env)?;
                let dest = self.eval_array(&args[1], env)?;
                let f = self.eval_callable(&args[2], env)?;
                let a = self.eval_array(&args[3], env)?;
                arr(self.permute(op, &dest, f, &a, &args[1], span)?)
            }
            "transpose" => {
                want(1)?;
                let a = self.eval_array(&args[0], env)?;
                arr(self.transpose(&a, span)?)
            }
            "reverse" => {
                want(1)?;
                let a = self.eval_array(&args[0], env)?;
                arr(self.reverse(&a, span)?)
            }
            "reshape" => {
                want(2)?;
                let dims = self.eval_shape(&args[0], env)?;
                let a = self.eval_array(&args[1], env)?;
                // no memory check: the reshaped array shares the elements of `a`
                let (shape, count) = Self::shape_count("reshape", &dims, span)?;
                if count != a.len() {
                    return Err(Box::new(Error::shape(
                        span,
                        format!(
                            "`reshape` to {} ({count} elements) of {} of shape {} ({} elements): the element counts differ",
                            fmt_i64s(&dims),
                            describe(&args[1]),
                            fmt_shape(&a.shape),
                            a.len()
                        ),
                    )));
                }
                arr(Array { shape, buf: a.buf.clone() })
            }
            "slice" => {
                want(3)?;
                let a = self.eval_array(&args[0], env)?;
                let start = self.eval_i64(&args[1], env)?;
                let len = self.eval_i64(&args[2], env)?;
                arr(self.slice(&a, start, len, &args[0], span)?)
            }
            "concat" => {
                want(2)?;
                let a = self.eval_array(&args[0], env)?;
                let b = self.eval_array(&args[1], env)?;
                arr(self.concat(&a, &b, span)?)
            }
            _ => Ok(None),
        }
    }

    /// The builtins of scalar result (`iterate`, `length`, `size`) and the scalar functions
    /// (`Ok(None)` when `name` is none of them).
    fn scalar_builtin(
        &self,
        name: &str,
        args: &'p [Expr],
        e: &'p Expr,
        env: &mut Env<'p>,
    ) -> R<Option<Val<'p>>> {
        let span = e.span;
        let want = |n: usize| want_args(name, args, n, span);
        match name {
            "iterate" => {
                want(3)?;
                let n = self.eval_i64(&args[0], env)?;
                let mut f = self.eval_callable(&args[1], env)?;
                let mut x = self.eval(&args[2], env)?;
                for _ in 0..n.max(0) {
                    x = self.call(&mut f, &[x])?;
                }
                Ok(Some(x))
            }
            "length" => {
                want(1)?;
                let a = self.eval_array(&args[0], env)?;
                let n = a.shape.first().ok_or_else(|| internal(span, "`length` of a rank-0 array"))?;
                Ok(Some(Val::Scalar(Scalar::I64(*n as i64))))
            }
            "size" => {
                want(2)?;
                let a = self.eval_array(&args[0], env)?;
                let k = self.eval_i64(&args[1], env)?;
                match usize::try_from(k).ok().and_then(|k| a.shape.get(k)) {
                    Some(d) => Ok(Some(Val::Scalar(Scalar::I64(*d as i64)))),
                    None => Err(Box::new(Error::index(
                        span,
                        format!(
                            "`size`: dimension {k} out of bounds for {} of rank {} (shape {})",
                            describe(&args[0]),
                            a.rank(),
                            fmt_shape(&a.shape)
                        ),
                    ))),
                }
            }
            _ => {
                let Some(f) = ScalarFn::from_name(name) else { return Ok(None) };
                let mut argv = Vec::with_capacity(args.len());
                for a in args {
                    argv.push(self.eval_scalar(a, env)?);
                }
                if argv.len() < f.arity() {
                    return Ok(Some(Val::Func(Rc::new(Func::Partial {
                        func: Rc::new(Func::Builtin(f)),
                        bound: argv.into_iter().map(Val::Scalar).collect(),
                    }))));
                }
                Ok(Some(Val::Scalar(f.apply(&argv, span)?)))
            }
        }
    }

    /// `filter p a` (rank 1).
    fn filter(&self, mut p: Callable<'p>, a: &Array, ae: &Expr, span: Span) -> R<Array> {
        rank_is(a, 1, "filter", ae, span)?;
        let mut buf = Buf::with_capacity(a.elem(), 0);
        for i in 0..a.len() {
            let x = a.buf.get(i).ok_or_else(|| internal(span, "filter: past the buffer"))?;
            match self
                .call_scalar(&mut p, &[Val::Scalar(x)], span)
                .map_err(|err| at_element(err, "filter", &a.shape, i))?
            {
                Scalar::Bool(true) => push(&mut buf, x, span)?,
                Scalar::Bool(false) => {}
                other => {
                    return Err(Box::new(internal(
                        span,
                        format!("a filter predicate returned {}", other.elem_type()),
                    )))
                }
            }
        }
        Ok(Array { shape: vec![buf.len()], buf })
    }

    /// `gather a idx`: `out[j..] = a[idx[j..]]`.
    fn gather(&self, a: &Array, idx: &Array, ae: &Expr, ie: &Expr, span: Span) -> R<Array> {
        rank_is(a, 1, "gather", ae, span)?;
        let Buf::I64(ids) = &idx.buf else {
            return Err(Box::new(internal(span, format!("gather indices of type {}", idx.elem()))));
        };
        self.check_alloc("gather", a.elem(), idx.len(), span)?;
        let mut buf = Buf::with_capacity(a.elem(), idx.len());
        let idx_name = match &ie.kind {
            ExprKind::Var(n) => n.as_str(),
            _ => "idx",
        };
        for (pos, &i) in ids.iter().enumerate() {
            let x = usize::try_from(i).ok().and_then(|i| a.buf.get(i)).ok_or_else(|| {
                Error::index(
                    span,
                    format!(
                        "gather: index {i} out of bounds for {} of length {} (at {idx_name}{})",
                        describe(ae),
                        a.len(),
                        fmt_shape(&unflatten(&idx.shape, pos))
                    ),
                )
            })?;
            push(&mut buf, x, span)?;
        }
        Ok(Array { shape: idx.shape.clone(), buf })
    }

    /// `backpermute [d1..dr] f a`: `out[ix] = a[f ix]`.
    fn backpermute(&self, dims: &[i64], mut f: Callable<'p>, a: &Array, ae: &Expr, span: Span) -> R<Array> {
        let (shape, count) = self.make_shape("backpermute", a.elem(), dims, span)?;
        let mut buf = Buf::with_capacity(a.elem(), count);
        let mut ix = vec![0i64; shape.len()];
        for flat in 0..count {
            let t = as_indices(
                self.call(&mut f, &index_args(&ix))
                    .map_err(|err| at_element(err, "backpermute", &shape, flat))?,
                span,
            )?;
            let src = flat_index(&a.shape, &t).ok_or_else(|| {
                Error::index(
                    span,
                    format!(
                        "backpermute: index {} out of bounds for {} of shape {} (for output element {})",
                        fmt_indices(&t),
                        describe(ae),
                        fmt_shape(&a.shape),
                        fmt_shape(&unflatten(&shape, flat))
                    ),
                )
            })?;
            let x = a.buf.get(src).ok_or_else(|| internal(span, "backpermute: past the buffer"))?;
            push(&mut buf, x, span)?;
            advance(&mut ix, &shape);
        }
        Ok(Array { shape, buf })
    }

    /// `permute op dest f a`: start from `dest`, combine each `a[ix]` into `out[f ix]`;
    /// a target of -1 drops the element when `dest` has rank 1.
    fn permute(
        &self,
        mut op: Callable<'p>,
        dest: &Array,
        mut f: Callable<'p>,
        a: &Array,
        de: &Expr,
        span: Span,
    ) -> R<Array> {
        self.check_alloc("permute", dest.elem(), dest.len(), span)?;
        let mut out = dest.clone();
        let mut ix = vec![0i64; a.rank()];
        for flat in 0..a.len() {
            let t = as_indices(
                self.call(&mut f, &index_args(&ix))
                    .map_err(|err| at_element(err, "permute", &a.shape, flat))?,
                span,
            )?;
            advance(&mut ix, &a.shape);
            if dest.rank() == 1 && t == [-1] {
                continue;
            }
            let target = flat_index(&out.shape, &t).ok_or_else(|| {
                Error::index(
                    span,
                    format!(
                        "permute: target {} out of bounds for {} of shape {} (from element {} of the source)",
                        fmt_indices(&t),
                        describe(de),
                        fmt_shape(&out.shape),
                        fmt_shape(&unflatten(&a.shape, flat))
                    ),
                )
            })?;
            let old = out.buf.get(target).ok_or_else(|| internal(span, "permute: past the buffer"))?;
            let x = a.buf.get(flat).ok_or_else(|| internal(span, "permute: past the buffer"))?;
            let new = self.call_scalar(&mut op, &[Val::Scalar(old), Val::Scalar(x)], span)?;
            if !out.buf.set(target, new) {
                return Err(Box::new(internal(span, "permute: a combined value of another type")));
            }
        }
        Ok(out)
    }

    /// `transpose a` (rank 2).
    fn transpose(&self, a: &Array, span: Span) -> R<Array> {
        let &[r, c] = a.shape.as_slice() else {
            return Err(Box::new(internal(span, format!("`transpose` of rank {}", a.rank()))));
        };
        let mut buf = Buf::with_capacity(a.elem(), a.len());
        for j in 0..c {
            for i in 0..r {
                let x = a.buf.get(i * c + j).ok_or_else(|| internal(span, "transpose: past the buffer"))?;
                push(&mut buf, x, span)?;
            }
        }
        Ok(Array { shape: vec![c, r], buf })
    }

    /// `reverse a`: reverses the innermost dimension.
    fn reverse(&self, a: &Array, span: Span) -> R<Array> {
        let (outer_shape, inner) = split_inner(a, span)?;
        let rows: usize = outer_shape.iter().product();
        let mut buf = Buf::with_capacity(a.elem(), a.len());
        for row in 0..rows {
            for j in (0..inner).rev() {
                let x =
                    a.buf.get(row * inner + j).ok_or_else(|| internal(span, "reverse: past the buffer"))?;
                push(&mut buf, x, span)?;
            }
        }
        Ok(Array { shape: a.shape.clone(), buf })
    }

    /// `slice a start len` (rank 1).
    fn slice(&self, a: &Array, start: i64, len: i64, ae: &Expr, span: Span) -> R<Array> {
        rank_is(a, 1, "slice", ae, span)?;
        let n = a.len();
        let range = usize::try_from(start).ok().zip(usize::try_from(len).ok()).and_then(|(s, l)| {
            let end = s.checked_add(l)?;
            (end <= n).then_some(s..end)
        });
        let Some(range) = range else {
            return Err(Box::new(Error::index(
                span,
                format!(
                    "slice: start {start} and length {len} out of range for {} of length {n}",
                    describe(ae)
                ),
            )));
        };
        let buf = with_buf!(&a.buf, v => v.get(range.clone()).map(|s| s.to_vec().into()))
            .ok_or_else(|| internal(span, "slice: past the buffer"))?;
        Ok(Array { shape: vec![range.len()], buf })
    }

    /// `concat a b` (rank 1, one element type).
    fn concat(&self, a: &Array, b: &Array, span: Span) -> R<Array> {
        if a.rank() != 1 || b.rank() != 1 || a.elem() != b.elem() {
            return Err(Box::new(internal(
                span,
                "`concat` of arrays that are not rank-1 of one element type",
            )));
        }
        let total =
            a.len().checked_add(b.len()).ok_or_else(|| Error::limit("`concat`: size overflows i64"))?;
        self.check_alloc("concat", a.elem(), total, span)?;
        let mut buf = a.buf.clone();
        for i in 0..b.len() {
            let x = b.buf.get(i).ok_or_else(|| internal(span, "concat: past the buffer"))?;
            push(&mut buf, x, span)?;
        }
        Ok(Array { shape: vec![total], buf })
    }
}

use super::with_buf;

macro_rules! buf_from_vec {
    ($t:ty, $variant:ident) => {
        impl From<Vec<$t>> for Buf {
            fn from(v: Vec<$t>) -> Buf {
                Buf::$variant(v)
            }
        }
    };
}
buf_from_vec!(bool, Bool);
buf_from_vec!(i32, I32);
buf_from_vec!(i64, I64);
buf_from_vec!(i8, I8);
buf_from_vec!(i16, I16);
buf_from_vec!(u8, U8);
buf_from_vec!(u16, U16);
buf_from_vec!(u32, U32);
buf_from_vec!(u64, U64);
buf_from_vec!(f32, F32);
buf_from_vec!(f64, F64);

/// Splits an array's shape into the outer dimensions and the innermost size.
pub(super) fn split_inner(a: &Array, span: Span) -> R<(Vec<usize>, usize)> {
    match a.shape.split_last() {
        Some((&inner, outer)) => Ok((outer.to_vec(), inner)),
        None => Err(Box::new(internal(span, "an array operation on a rank-0 array"))),
    }
}

/// Requires rank `r` (an internal error otherwise: the checker guarantees ranks).
pub(super) fn rank_is(a: &Array, r: usize, op: &str, ae: &Expr, span: Span) -> R<()> {
    if a.rank() == r {
        Ok(())
    } else {
        Err(Box::new(internal(span, format!("`{op}` of {} of rank {}", describe(ae), a.rank()))))
    }
}

/// Formats sizes as `[3, -4]`.
/// ` : f32[n]`, the type the checker gave array expression `e`, to name its size names.
/// An array's shape as a run-time `E-SHAPE` shows it: `[n] = [10]` when the checker gave
/// the expression a shape of size names and constants (with a name), else `[10]`
/// ([`crate::plan::named_shape`]: the plan's checks say the same).
pub(super) fn named_shape(e: &Expr, actual: &[usize]) -> String {
    let symbolic: Option<Vec<String>> = match &e.ty {
        Some(crate::types::Type::Array { shape, .. }) => shape
            .iter()
            .map(|d| match d {
                crate::types::Dim::Known(n) => Some(n.to_string()),
                crate::types::Dim::Size(s) => Some(s.to_string()),
                _ => None,
            })
            .collect(),
        _ => None,
    };
    super::named_shape(symbolic.as_deref(), &fmt_shape(actual))
}

pub(super) fn fmt_i64s(dims: &[i64]) -> String {
    let parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    format!("[{}]", parts.join(", "))
}
