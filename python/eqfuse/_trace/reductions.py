"""Reductions with ``axis`` and ``keepdims`` (``sum mean max min prod argmin argmax any
all var std``) and scans (``cumsum cumprod``). The reduced axes are moved last and made
one, then reduced with the language's innermost-axis reductions."""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .context import need_trace
from .elementwise import astype, ufunc
from .layout import flatten_last, norm_axes, norm_axis, permute, reshape, size_of, to_end
from .tracer import Tracer, make

_NUMPY = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "any": np.any, "all": np.all, "mean": np.mean}


def _out_dtype(kind: str, x: Tracer, axis, dtype) -> np.dtype:
    proto = np.zeros((1,) * x.ndim, dtype=x.dtype)
    kw = {"dtype": dtype} if dtype is not None else {}
    return np.dtype(_NUMPY[kind](proto, axis=axis, **kw).dtype)


def _keep(r: Tracer, x: Tracer, axes: tuple) -> Tracer:
    dims = tuple(1 if a in axes else x.dims[a] for a in range(x.ndim))
    return reshape(r, dims)


def _neutral(kind: str, dt: np.dtype) -> str:
    if dt.kind == "f":
        return "(-inf)" if kind == "max" else "inf"
    info = np.iinfo(dt)
    return D.literal(info.min if kind == "max" else info.max, dt)


def reduce(kind: str, x: Tracer, axis=None, keepdims: bool = False, dtype=None) -> Tracer:
    """``np.<kind>(x, axis, keepdims=..., dtype=...)`` for ``kind`` in ``_NUMPY``."""
    trace = need_trace(kind)
    axes = norm_axes(axis, x.ndim)
    out_dt = _out_dtype(kind, x, axis if not isinstance(axis, list) else tuple(axis), dtype)
    if kind in ("any", "all"):
        src = astype(x, D.BOOL)
    elif kind in ("max", "min") and dtype is None:
        src = x
    else:
        src = astype(x, out_dt)
    if not axes:
        return src
    moved = flatten_last(to_end(src, axes), len(axes))
    if kind in ("max", "min"):
        if D.is_bool(out_dt):
            expr = f"{'any' if kind == 'max' else 'all'} {moved.ref()}"
        else:
            expr = f"reduce {kind} {_neutral(kind, out_dt)} {moved.ref()}"
    else:
        expr = f"{kind} {moved.ref()}"
    r = make(trace, expr, out_dt, moved.dims[:-1])
    return _keep(r, x, axes) if keepdims else r


def arg(kind: str, x: Tracer, axis=None, keepdims: bool = False) -> Tracer:
    """``np.argmin``/``np.argmax``: the first index of the extreme (NaN wins, as NumPy)."""
    trace = need_trace(kind)
    if x.ndim == 0:
        return make(trace, "0", D.I64, ())
    if D.is_bool(x.dtype):
        x = astype(x, np.uint8)
    if axis is None:
        flat = reshape(x, (size_of(x.dims),))
        r = make(trace, f"{kind} {flat.ref()}", D.I64, ())
        return reshape(r, (1,) * x.ndim) if keepdims else r
    a = norm_axis(axis, x.ndim)
    moved = to_end(x, (a,))
    r = make(trace, f"{kind} {moved.ref()}", D.I64, moved.dims[:-1])
    return _keep(r, x, (a,)) if keepdims else r


def var(x: Tracer, axis=None, keepdims: bool = False, ddof=0, std: bool = False, dtype=None) -> Tracer:
    """``np.var``/``np.std``: the mean of the squared deviations (over ``N - ddof``)."""
    axes = norm_axes(axis, x.ndim)
    m = reduce("mean", x, axis, keepdims=True, dtype=dtype)
    d = ufunc("subtract", astype(x, m.dtype), m)
    sq = ufunc("multiply", d, d)
    if ddof == 0:
        v = reduce("mean", sq, axis, keepdims=keepdims)
    else:
        n = size_of([x.dims[a] for a in axes]) - ddof
        v = ufunc("true_divide", reduce("sum", sq, axis, keepdims=keepdims), n)
        v = astype(v, m.dtype)
    return ufunc("sqrt", v) if std else v


def cumulative(kind: str, x: Tracer, axis=None, dtype=None) -> Tracer:
    """``np.cumsum``/``np.cumprod`` (inclusive scans)."""
    trace = need_trace(kind)
    fn = np.cumsum if kind == "cumsum" else np.cumprod
    out_dt = np.dtype(fn(np.zeros((1,) * max(x.ndim, 1), dtype=x.dtype), axis=axis, dtype=dtype).dtype)
    src = astype(x, out_dt)
    op, ne = ("(+)", D.literal(0, out_dt)) if kind == "cumsum" else ("(*)", D.literal(1, out_dt))
    if axis is None or x.ndim <= 1:
        flat = reshape(src, (size_of(src.dims),))
        return make(trace, f"scan {op} {ne} {flat.ref()}", out_dt, flat.dims)
    a = norm_axis(axis, x.ndim)
    moved = to_end(src, (a,))
    s = make(trace, f"scan {op} {ne} {moved.ref()}", out_dt, moved.dims)
    back = list(range(x.ndim - 1))
    back.insert(a, x.ndim - 1)
    return permute(s, tuple(back))

