"""Rearranging a traced array without computing: axes, permutations, reshapes."""

from __future__ import annotations

import numpy as np

from .context import need_trace
from .elementwise import generate
from .sizes import SymInt
from .tracer import Tracer, make


def norm_axis(axis: int, ndim: int) -> int:
    """``axis`` in ``range(ndim)`` (negative counts from the end), else NumPy's error."""
    a = int(axis)
    if not -ndim <= a < ndim:
        raise np.exceptions.AxisError(a, ndim)
    return a % ndim


def norm_axes(axis, ndim: int) -> tuple[int, ...]:
    """``axis`` (``None``, an int, a tuple) as sorted distinct axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        out = sorted({norm_axis(a, ndim) for a in axis})
        if len(out) != len(axis):
            raise ValueError("duplicate value in 'axis'")
        return tuple(out)
    return (norm_axis(axis, ndim),)


def permute(x: Tracer, perm: tuple[int, ...]) -> Tracer:
    """The axes of ``x`` in the order ``perm`` (``np.transpose(x, perm)``)."""
    perm = tuple(perm)
    if perm == tuple(range(x.ndim)):
        return x
    trace = need_trace("transpose")
    if perm == (1, 0):
        return make(trace, f"transpose {x.ref()}", x.dtype, (x.dims[1], x.dims[0]))
    dims = tuple(x.dims[p] for p in perm)

    def body(idx):
        src = [""] * x.ndim
        for k, p in enumerate(perm):
            src[p] = idx[k]
        return x.at(src)

    return generate(trace, dims, body, x.dtype)


def reshape(x: Tracer, dims: tuple) -> Tracer:
    """``x`` with dimensions ``dims`` (``SymInt``s whose product is ``x``'s size)."""
    trace = need_trace("reshape")
    dims = tuple(SymInt.of(d) for d in dims)
    if trace.same_dims(dims, x.dims):
        return x
    if not dims:
        return make(trace, x.at(["0"] * x.ndim), x.dtype, ())
    if x.ndim == 0:
        return make(trace, f"fill [{', '.join(d.text() for d in dims)}] {x.ref()}", x.dtype, dims)
    return make(trace, f"reshape [{', '.join(d.text() for d in dims)}] {x.ref()}", x.dtype, dims)


def size_of(dims) -> SymInt:
    n = SymInt.of(1)
    for d in dims:
        n = n * d
    return n


def to_end(x: Tracer, axes: tuple[int, ...]) -> Tracer:
    """``x`` with ``axes`` moved last (in order), the others first."""
    rest = tuple(a for a in range(x.ndim) if a not in axes)
    return permute(x, rest + tuple(axes))


def flatten_last(x: Tracer, k: int) -> Tracer:
    """``x`` with its last ``k`` axes as one."""
    if k == 1:
        return x
    keep = x.dims[: x.ndim - k]
    return reshape(x, keep + (size_of(x.dims[x.ndim - k :]),))
