"""``x[key]``: constant slices (negative steps too), integers, ``None``, ``...``, one
integer array (a gather) and a boolean mask (a ``filter``)."""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .context import need_trace
from .elementwise import apply, astype, constant, generate
from .errors import trace_error
from .layout import reshape, size_of
from .sizes import SymInt
from .tracer import Tracer, make


def _slice(s: slice, d: SymInt) -> tuple[SymInt, int, SymInt]:
    """(start, step, length) of ``s`` on a dimension of size ``d``. With ``d`` symbolic the
    bounds are taken as written (NumPy clamps bounds past the end: docs/python.md)."""
    step = 1 if s.step is None else int(s.step)
    if step == 0:
        raise ValueError("slice step cannot be zero")
    if d.const is not None:
        start, stop, step = s.indices(d.const)
        return SymInt.of(start), step, SymInt.of(len(range(start, stop, step)))

    def bound(v, default):
        if v is None:
            return default
        v = SymInt.of(v)
        return d + v if v.const is not None and v.const < 0 else v

    if step > 0:
        start, stop = bound(s.start, SymInt.of(0)), bound(s.stop, d)
        length = stop - start if step == 1 else (stop - start + (step - 1)) // step
    else:
        start, stop = bound(s.start, d - 1), bound(s.stop, SymInt.of(-1) if s.stop is None else None)
        length = (start - stop + (-step - 1)) // (-step)
    return start, step, length


def _int_index(k, d: SymInt) -> str:
    if isinstance(k, Tracer):
        t = astype(k, D.I64)
        return f"(let _w = {t.ref()} in if _w < 0 then _w + {d.paren()} else _w)"
    v = SymInt.of(k)
    if v.const is not None:
        if d.const is not None and not -d.const <= v.const < d.const:
            raise IndexError(f"index {v.const} is out of bounds for axis with size {d.const}")
        return (d + v).paren() if v.const < 0 else str(v.const)
    return v.paren()


def _normalise(trace, key) -> list:
    key = list(key) if isinstance(key, tuple) else [key]
    out = []
    for k in key:
        if isinstance(k, (list, np.ndarray)) and not isinstance(k, Tracer):
            arr = np.asarray(k)
            k = constant(trace, arr) if arr.ndim else arr.item()
        elif isinstance(k, np.bool_) or isinstance(k, bool):
            raise trace_error("indexing with a Python bool", "use a boolean array or eqfuse.numpy.where")
        elif isinstance(k, np.integer):
            k = int(k)
        out.append(k)
    return out


def getitem(x: Tracer, key) -> Tracer:
    trace = need_trace("indexing")
    key = _normalise(trace, key)
    arrays = [k for k in key if isinstance(k, Tracer) and k.ndim > 0]
    if len(key) == 1 and arrays and D.is_bool(arrays[0].dtype):
        return _mask(x, arrays[0])
    if len(arrays) > 1 or any(D.is_bool(a.dtype) for a in arrays):
        raise trace_error("indexing with several index arrays, or a boolean array beside other indices", "index one axis at a time: x[i][:, j]")
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {used} were indexed")
    ellipses = [i for i, k in enumerate(key) if k is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if ellipses:
        e = ellipses[0]
        key = key[:e] + [slice(None)] * (x.ndim - used) + key[e + 1 :]
    else:
        key = key + [slice(None)] * (x.ndim - used)
    gather_at = None
    if arrays:
        pos = next(i for i, k in enumerate(key) if k is arrays[0])
        ints = [i for i, k in enumerate(key) if k is not None and not isinstance(k, slice) and i != pos]
        if ints and any(isinstance(key[j], slice) or key[j] is None for j in range(min(ints + [pos]), max(ints + [pos]))):
            raise trace_error("an index array and integers separated by a slice", "index in two steps: x[0][:, idx]")
        gather_at = sum(1 for k in key[:pos] if isinstance(k, slice) or k is None)
        key[pos] = slice(None)
    y = _basic(trace, x, key)
    return _gather(trace, y, gather_at, arrays[0]) if arrays else y


def _basic(trace, x: Tracer, key: list) -> Tracer:
    dims: list[SymInt] = []
    src: list = []  # per source axis: ('int', text) or ('slice', start, step, out position)
    axis = 0
    for k in key:
        if k is None:
            dims.append(SymInt.of(1))
            continue
        d = x.dims[axis]
        axis += 1
        if isinstance(k, slice):
            start, step, length = _slice(k, d)
            src.append(("slice", start, step, len(dims)))
            dims.append(length)
        else:
            src.append(("int", _int_index(k, d)))
    if all(s[0] == "slice" and s[1].const == 0 and s[2] == 1 and trace.same(dims[s[3]], x.dims[i]) for i, s in enumerate(src)) and len(dims) == x.ndim:
        return x
    if x.ndim == 1 and len(dims) == 1 and src[0][0] == "slice" and src[0][2] == -1 and trace.same(src[0][1], x.dims[0] - 1) and trace.same(dims[0], x.dims[0]):
        return make(trace, f"reverse {x.ref()}", x.dtype, x.dims)

    def body(idx):
        out = []
        for s in src:
            if s[0] == "int":
                out.append(s[1])
                continue
            _, start, step, at = s
            j = idx[at] if step == 1 else f"{step} * {idx[at]}"
            out.append(j if start.const == 0 else f"{start.paren()} + {j}")
        return x.at(out)

    return generate(trace, tuple(dims), body, x.dtype)


def _gather(trace, y: Tracer, axis: int, idx: Tracer) -> Tracer:
    if not D.is_int(idx.dtype):
        raise IndexError("arrays used as indices must be of integer (or boolean) type")
    ix = astype(idx, D.I64)
    d = y.dims[axis]
    dims = y.dims[:axis] + ix.dims + y.dims[axis + 1 :]
    if y.ndim == 1:
        wrapped = apply("index", [ix], [D.I64], D.I64, lambda t: f"(if {t[0]} < 0 then {t[0]} + {d.paren()} else {t[0]})")
        return make(trace, f"gather {y.ref()} {wrapped.ref()}", y.dtype, wrapped.dims)

    def body(g):
        k = ix.ndim
        inner = ix.at(g[axis : axis + k])
        src = g[:axis] + [f"(let _w = {inner} in if _w < 0 then _w + {d.paren()} else _w)"] + g[axis + k :]
        return y.at(src)

    return generate(trace, dims, body, y.dtype)


def _mask(x: Tracer, m: Tracer) -> Tracer:
    """``x[m]`` for a boolean ``m`` of ``x``'s shape: the selected elements, in order."""
    trace = need_trace("a boolean mask")
    if m.ndim != x.ndim:
        raise trace_error("a boolean mask of another rank than the array", "use a mask of the array's shape")
    for a, b in zip(x.dims, m.dims):
        trace.require_equal(a, b, "boolean index")
    n = size_of(x.dims)
    xf, mf = reshape(x, (n,)), reshape(m, (n,))
    ix = trace.bind(f"filter (\\_i -> {mf.ref()}[_i]) (iota {n.paren()})")
    length = SymInt.of(f"(length {ix})")
    return make(trace, f"gather {xf.ref()} {ix}", x.dtype, (length,))


def take(x: Tracer, idx, axis=None) -> Tracer:
    trace = need_trace("take")
    if axis is None:
        x = reshape(x, (size_of(x.dims),))
        axis = 0
    key = [slice(None)] * x.ndim
    key[axis % x.ndim] = idx
    return getitem(x, tuple(key)) if trace else x
