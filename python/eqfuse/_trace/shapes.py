"""Operations on shapes: ``reshape`` (with ``-1``), ``transpose``, ``expand_dims``,
``squeeze``, ``concatenate``, ``stack``, ``pad``, ``roll``, ``flip``, and the arrays made
from sizes (``zeros``, ``ones``, ``full``, ``arange``, ``*_like``)."""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .context import need_trace
from .elementwise import apply, astype, generate, operand
from .errors import trace_error
from .layout import norm_axis, permute, reshape, size_of
from .sizes import SymInt, smax
from .tracer import Tracer, make


def reshape_to(x: Tracer, shape) -> Tracer:
    """``np.reshape(x, shape)``: one entry may be ``-1``."""
    if isinstance(shape, (int, SymInt, np.integer)):
        shape = (shape,)
    dims = [SymInt.of(d) for d in shape]
    holes = [k for k, d in enumerate(dims) if d.const == -1]
    if len(holes) > 1:
        raise ValueError("can only specify one unknown dimension")
    if holes:
        known = size_of([d for k, d in enumerate(dims) if k != holes[0]])
        total = size_of(x.dims)
        q = total.exact_div(known) if known.const != 0 else None
        dims[holes[0]] = q if q is not None else total // known
    return reshape(x, tuple(dims))


def transpose(x: Tracer, axes=None) -> Tracer:
    if axes is None:
        axes = tuple(reversed(range(x.ndim)))
    axes = tuple(norm_axis(a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError("axes don't match array")
    return permute(x, axes)


def expand_dims(x: Tracer, axis) -> Tracer:
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = x.ndim + len(axes)
    at = sorted(norm_axis(a, n) for a in axes)
    dims = list(x.dims)
    for a in at:
        dims.insert(a, SymInt.of(1))
    return reshape(x, tuple(dims))


def squeeze(x: Tracer, axis=None) -> Tracer:
    if axis is None:
        axes = [a for a, d in enumerate(x.dims) if d.const == 1]
    else:
        axes = [norm_axis(a, x.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))]
        for a in axes:
            if x.dims[a].const != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return reshape(x, tuple(d for a, d in enumerate(x.dims) if a not in axes))


def concatenate(arrays, axis=0) -> Tracer:
    trace = need_trace("concatenate")
    xs = [operand(trace, a).tracer for a in arrays]
    if any(t is None or t.ndim == 0 for t in xs):
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    if axis is None:
        xs = [reshape(t, (size_of(t.dims),)) for t in xs]
        axis = 0
    a = norm_axis(axis, xs[0].ndim)
    dt = D.result_type(xs)
    xs = [astype(t, dt) for t in xs]
    for t in xs[1:]:
        if t.ndim != xs[0].ndim:
            raise ValueError("all the input arrays must have same number of dimensions")
        for k in range(t.ndim):
            if k != a:
                trace.require_equal(xs[0].dims[k], t.dims[k], "concatenate")
    if len(xs) == 1:
        return xs[0]
    if xs[0].ndim == 1:
        out = xs[0]
        for t in xs[1:]:
            out = make(trace, f"concat {out.ref()} {t.ref()}", dt, (out.dims[0] + t.dims[0],))
        return out
    dims = list(xs[0].dims)
    dims[a] = size_of([]) * 0
    offsets = []
    for t in xs:
        offsets.append(dims[a])
        dims[a] = dims[a] + t.dims[a]

    def body(idx):
        expr = None
        for t, off in reversed(list(zip(xs, offsets))):
            ix = list(idx)
            ix[a] = f"{idx[a]} - {off.paren()}" if off.const != 0 else idx[a]
            read = t.at(ix)
            expr = read if expr is None else f"(if {idx[a]} < {(off + t.dims[a]).paren()} then {read} else {expr})"
        return expr

    return generate(trace, tuple(dims), body, dt)


def stack(arrays, axis=0) -> Tracer:
    trace = need_trace("stack")
    xs = [operand(trace, a).tracer for a in arrays]
    n = xs[0].ndim + 1
    return concatenate([expand_dims(t, norm_axis(axis, n)) for t in xs], axis=axis)


def _pad_widths(pad_width, ndim: int) -> list[tuple[int, int]]:
    w = np.asarray(pad_width, dtype=np.int64)
    if w.ndim == 0:
        w = np.full((ndim, 2), int(w))
    elif w.shape == (2,) or w.shape == (1, 2):
        w = np.tile(w.reshape(1, 2), (ndim, 1))
    elif w.shape == (1,):
        w = np.full((ndim, 2), int(w[0]))
    if w.shape != (ndim, 2) or (w < 0).any():
        raise ValueError(f"pad_width {pad_width!r} does not fit an array of rank {ndim}")
    return [(int(a), int(b)) for a, b in w]


def pad(x: Tracer, pad_width, mode: str = "constant", constant_values=0) -> Tracer:
    """``np.pad`` with ``mode="constant"`` (one scalar value), ``"edge"`` or ``"wrap"``."""
    trace = need_trace("pad")
    if mode not in ("constant", "edge", "wrap"):
        raise trace_error(f"eqfuse.numpy.pad(mode={mode!r})", "use mode='constant', 'edge' or 'wrap'")
    widths = _pad_widths(pad_width, x.ndim)
    dims = tuple(d + a + b for d, (a, b) in zip(x.dims, widths))
    if mode == "constant":
        cv = np.asarray(constant_values)
        if cv.ndim != 0:
            raise trace_error("eqfuse.numpy.pad with per-axis constant_values", "pass one scalar")
        fill = D.literal(cv.item(), x.dtype)

    def body(idx):
        src, inside = [], []
        for i, d, (a, _) in zip(idx, x.dims, widths):
            j = f"{i} - {a}" if a else i
            if mode == "edge":
                src.append(f"(clamp ({j}) 0 ({d.text()} - 1))")
            elif mode == "wrap":
                src.append(f"(let _w = ({j}) % {d.paren()} in if _w < 0 then _w + {d.paren()} else _w)")
            else:
                src.append(j)
                if a:
                    inside.append(f"{i} >= {a}")
                inside.append(f"{j} < {d.paren()}")
        read = x.at(src)
        if mode == "constant" and inside:
            return f"(if {' && '.join(inside)} then {read} else {fill})"
        return read

    return generate(trace, dims, body, x.dtype)


def roll(x: Tracer, shift, axis=None) -> Tracer:
    """``np.roll`` by constant shifts."""
    trace = need_trace("roll")
    if axis is None:
        flat = reshape(x, (size_of(x.dims),))
        return reshape(roll(flat, shift, 0), x.dims)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,) * len(axes)
    by = {}
    for a, s in zip(axes, shifts):
        a = norm_axis(a, x.ndim)
        by[a] = by.get(a, 0) + int(s)

    def body(idx):
        src = []
        for k, i in enumerate(idx):
            s = by.get(k, 0)
            if s == 0:
                src.append(i)
                continue
            d = x.dims[k].paren()
            src.append(f"(let _w = ({i} - {s}) % {d} in if _w < 0 then _w + {d} else _w)")
        return x.at(src)

    return generate(trace, x.dims, body, x.dtype)


def flip(x: Tracer, axis=None) -> Tracer:
    trace = need_trace("flip")
    axes = set(range(x.ndim)) if axis is None else {norm_axis(a, x.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))}
    if axes == {x.ndim - 1} and x.ndim >= 1:
        return make(trace, f"reverse {x.ref()}", x.dtype, x.dims)
    return generate(trace, x.dims, lambda idx: x.at([f"{d.text()} - 1 - {i}" if k in axes else i for k, (i, d) in enumerate(zip(idx, x.dims))]), x.dtype)


def shape_of(shape) -> tuple:
    if isinstance(shape, (int, SymInt, np.integer)):
        shape = (shape,)
    return tuple(SymInt.of(d) for d in shape)


def full(shape, value, dtype=None) -> Tracer:
    """``np.full(shape, value, dtype)``; ``value`` may be a traced scalar."""
    trace = need_trace("full")
    dims = shape_of(shape)
    if isinstance(value, Tracer):
        if value.ndim != 0:
            raise trace_error("eqfuse.numpy.full with an array value", "pass a scalar value, or use broadcast_to")
        dt = np.dtype(dtype) if dtype is not None else value.dtype
        v = astype(value, dt)
        text = v.ref()
    else:
        dt = np.dtype(dtype) if dtype is not None else np.asarray(value).dtype
        text = D.literal(value, dt)
    if not dims:
        return make(trace, text, dt, ())
    return make(trace, f"fill [{', '.join(d.text() for d in dims)}] {text}", dt, dims)


def arange(start, stop=None, step=1, dtype=None) -> Tracer:
    """``np.arange`` whose bounds may be sizes (``arange(x.shape[0])``)."""
    trace = need_trace("arange")
    if stop is None:
        start, stop = 0, start
    vals = [start, stop, step]
    if not all(isinstance(v, (int, np.integer, SymInt)) for v in vals):
        raise trace_error("eqfuse.numpy.arange with float or traced bounds", "use integer sizes (x.shape[0]) or constants")
    step = int(step)
    if step == 0:
        raise ValueError("step cannot be zero")
    if step == 1 and SymInt.of(stop).const is None:
        length = SymInt.of(stop) - start  # a size less a constant: no clamping (docs/python.md)
    else:
        length = smax(0, (SymInt.of(stop) - start + (step - (1 if step > 0 else -1))) // step)
    dt = np.dtype(dtype) if dtype is not None else D.I64
    base = make(trace, f"iota {length.paren()}", D.I64, (length,))
    s0 = SymInt.of(start)
    if s0.const == 0 and step == 1:
        return astype(base, dt)
    return apply("arange", [base], [D.I64], dt, lambda t: D.convert(f"({s0.paren()} + {step} * {t[0]})", D.I64, dt))
