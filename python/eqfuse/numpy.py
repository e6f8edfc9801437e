"""``eqfuse.numpy``: the part of NumPy's API that array code uses, traced into one eqfuse
program under :func:`eqfuse.jit`.

Write a function against this module (``import eqfuse.numpy as jnp``) or against a module
argument ``xp``; under ``@eqfuse.jit`` its arrays are traced, and called on plain NumPy
arrays outside ``jit`` each function is NumPy's own. Results follow NumPy's rules, dtype
promotion included (NumPy 2: Python scalars are weak). What cannot be traced raises
:class:`eqfuse.TraceError` naming what to use instead. See docs/python.md for the list
and the differences (bounds of slices on symbolic sizes are not clamped; integer division
by zero gives 0 as NumPy's does, without the warning).
"""

from __future__ import annotations

import builtins as _builtins
import functools
from typing import Any, Callable

import numpy as _np

from ._trace import elementwise as _E
from ._trace import indexing as _I
from ._trace import linalg as _L
from ._trace import operators as _ops  # noqa: F401 - installs Tracer's operators
from ._trace import reductions as _R
from ._trace import shapes as _S
from ._trace.errors import TraceAttributeError, trace_error
from ._trace.pytree import flatten as _flatten
from ._trace.sizes import SymInt as _SymInt
from ._trace.tracer import Tracer as _Tracer

# dtypes and constants, as NumPy's
bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64 = _np.float32, _np.float64
dtype = _np.dtype
newaxis = None
pi, e, inf, nan = _np.pi, _np.e, _np.inf, _np.nan
ndarray = _np.ndarray


def _is_traced(args) -> bool:
    leaves, _ = _flatten(list(args))
    return _builtins.any(isinstance(v, (_Tracer, _SymInt)) for v in leaves)


def _traced(np_fn: Callable, name: str | None = None):
    """A function that is ``traced_fn`` when an argument is traced, else NumPy's."""

    def deco(traced_fn: Callable) -> Callable:
        @functools.wraps(traced_fn)
        def f(*args, **kwargs):
            if _is_traced(args) or _is_traced(kwargs.values()):
                return traced_fn(*args, **kwargs)
            return np_fn(*args, **kwargs)

        f.__name__ = name or traced_fn.__name__
        f.__doc__ = f"``numpy.{np_fn.__name__}``, traced under eqfuse.jit."
        return f

    return deco


def _ufunc(name: str, np_name: str | None = None) -> Callable:
    np_fn = getattr(_np, np_name or name)

    @_traced(np_fn, name)
    def f(*args, **kwargs):
        if kwargs:
            raise trace_error(f"eqfuse.numpy.{name}(..., {', '.join(kwargs)}=...)", "leave out out=, where=, dtype=")
        return _E.ufunc(np_fn.__name__, *args)

    return f


_UFUNCS = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod", "fmod",
    "maximum", "minimum", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and",
    "logical_or", "logical_xor", "logical_not", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "log2", "log10", "exp2", "expm1",
    "log1p", "arctan", "floor", "ceil", "trunc", "rint", "square", "reciprocal", "sign", "isnan", "isinf",
    "isfinite", "invert", "negative", "positive", "absolute",
]  # fmt: skip
for _n in _UFUNCS:
    globals()[_n] = _ufunc(_n)
abs = _ufunc("abs", "absolute")  # noqa: A001 - NumPy's name
bitwise_not = _ufunc("bitwise_not", "invert")
atan2 = _ufunc("atan2", "arctan2")


@_traced(_np.power)
def power(x, y):
    return _E.power(x, y)


@_traced(_np.round)
def round(x, decimals=0):  # noqa: A001 - NumPy's name
    if _np.dtype(_as_tracer(x).dtype).kind in "iu":
        return _as_tracer(x)  # NumPy rounds integers to themselves
    if decimals != 0:
        scale = 10.0**decimals
        return _E.ufunc("true_divide", _E.ufunc("rint", _E.ufunc("multiply", x, scale)), scale)
    return _E.ufunc("rint", x)


around = round


@_traced(_np.where)
def where(condition, x=None, y=None):
    if x is None or y is None:
        raise trace_error("eqfuse.numpy.where(condition) with one argument", "use where(condition, x, y), or x[mask]")
    return _E.where(condition, x, y)


@_traced(_np.clip)
def clip(a, a_min=None, a_max=None, **kw):
    lo = kw.pop("min", a_min)
    hi = kw.pop("max", a_max)
    return _E.clip(a, lo, hi)


@_traced(_np.astype)
def astype(x, dtype, copy=True):
    return _E.astype(x, dtype)


def _as_tracer(x) -> _Tracer:
    """``x`` as a traced array: a constant array becomes an input, a scalar a 0-d value."""
    from ._trace.context import need_trace

    if isinstance(x, _Tracer):
        return x
    if isinstance(x, _SymInt):
        return _E.apply("size", [x], [_np.dtype(int64)], int64, lambda t: t[0])
    t = _E.operand(need_trace("an array"), x).tracer
    return t if t is not None else _S.full((), x)


# reductions ----------------------------------------------------------------------------
def _reduction(kind: str, np_fn: Callable) -> Callable:
    @_traced(np_fn, kind)
    def f(a, axis=None, dtype=None, out=None, keepdims=False, **kw):
        if out is not None or kw:
            raise trace_error(f"eqfuse.numpy.{kind}(..., {'out' if out is not None else ', '.join(kw)}=...)", "leave it out")
        return _R.reduce(kind, _as_tracer(a), axis, keepdims, dtype)

    return f


sum = _reduction("sum", _np.sum)  # noqa: A001
prod = _reduction("prod", _np.prod)
mean = _reduction("mean", _np.mean)


def _minmax(kind: str, np_fn: Callable) -> Callable:
    @_traced(np_fn, kind)
    def f(a, axis=None, out=None, keepdims=False):
        return _R.reduce(kind, _as_tracer(a), axis, keepdims)

    return f


max = _minmax("max", _np.max)  # noqa: A001
min = _minmax("min", _np.min)  # noqa: A001
amax, amin = max, min
any = _minmax("any", _np.any)  # noqa: A001
all = _minmax("all", _np.all)  # noqa: A001


@_traced(_np.argmin)
def argmin(a, axis=None, out=None, keepdims=False):
    return _R.arg("argmin", _as_tracer(a), axis, keepdims)


@_traced(_np.argmax)
def argmax(a, axis=None, out=None, keepdims=False):
    return _R.arg("argmax", _as_tracer(a), axis, keepdims)


@_traced(_np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return _R.var(_as_tracer(a), axis, keepdims, ddof, dtype=dtype)


@_traced(_np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    return _R.var(_as_tracer(a), axis, keepdims, ddof, std=True, dtype=dtype)


@_traced(_np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    return _R.cumulative("cumsum", _as_tracer(a), axis, dtype)


@_traced(_np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    return _R.cumulative("cumprod", _as_tracer(a), axis, dtype)


@_traced(_np.count_nonzero)
def count_nonzero(a, axis=None, keepdims=False):
    return _R.reduce("sum", _E.astype(_as_tracer(a), bool_), axis, keepdims)


# contractions --------------------------------------------------------------------------
@_traced(_np.dot)
def dot(a, b, out=None):
    return _L.dot(a, b)


@_traced(_np.matmul)
def matmul(a, b):
    return _L.matmul(a, b)


@_traced(_np.einsum)
def einsum(subscripts, *operands, **kw):
    if kw:
        raise trace_error(f"eqfuse.numpy.einsum(..., {', '.join(kw)}=...)", "leave it out")
    return _L.einsum(subscripts, *operands)


@_traced(_np.outer)
def outer(a, b):
    return _L.outer(a, b)


@_traced(_np.vdot)
def vdot(a, b):
    return _L.dot(_as_tracer(a).ravel(), _as_tracer(b).ravel())


inner = dot


# shapes --------------------------------------------------------------------------------
@_traced(_np.reshape)
def reshape(a, shape=None, *args, **kw):
    return _S.reshape_to(_as_tracer(a), kw.get("newshape", shape))


@_traced(_np.transpose)
def transpose(a, axes=None):
    return _S.transpose(_as_tracer(a), axes)


@_traced(_np.swapaxes)
def swapaxes(a, axis1, axis2):
    t = _as_tracer(a)
    perm = list(range(t.ndim))
    i, j = perm[axis1], perm[axis2]
    perm[i], perm[j] = j, i
    return _S.transpose(t, perm)


@_traced(_np.moveaxis)
def moveaxis(a, source, destination):
    t = _as_tracer(a)
    perm = [k for k in range(t.ndim) if k != source % t.ndim]
    perm.insert(destination % t.ndim, source % t.ndim)
    return _S.transpose(t, perm)


@_traced(_np.expand_dims)
def expand_dims(a, axis):
    return _S.expand_dims(_as_tracer(a), axis)


@_traced(_np.squeeze)
def squeeze(a, axis=None):
    return _S.squeeze(_as_tracer(a), axis)


@_traced(_np.ravel)
def ravel(a):
    return _as_tracer(a).ravel()


@_traced(_np.concatenate)
def concatenate(arrays, axis=0):
    return _S.concatenate(list(arrays), axis)


@_traced(_np.stack)
def stack(arrays, axis=0):
    return _S.stack(list(arrays), axis)


@_traced(_np.hstack)
def hstack(arrays):
    arrays = list(arrays)
    return _S.concatenate(arrays, 0 if _as_tracer(arrays[0]).ndim == 1 else 1)


@_traced(_np.vstack)
def vstack(arrays):
    return _S.concatenate([_as_tracer(a) if _as_tracer(a).ndim > 1 else _S.expand_dims(_as_tracer(a), 0) for a in arrays], 0)


@_traced(_np.pad)
def pad(array, pad_width, mode="constant", **kw):
    return _S.pad(_as_tracer(array), pad_width, mode, kw.get("constant_values", 0))


@_traced(_np.roll)
def roll(a, shift, axis=None):
    return _S.roll(_as_tracer(a), shift, axis)


@_traced(_np.flip)
def flip(m, axis=None):
    return _S.flip(_as_tracer(m), axis)


@_traced(_np.take)
def take(a, indices, axis=None):
    return _I.take(_as_tracer(a), indices, axis)


@_traced(_np.broadcast_to)
def broadcast_to(array, shape):
    z = _S.full(shape, 0, _as_tracer(array).dtype)
    return _E.ufunc("add", z, array)


# making arrays -------------------------------------------------------------------------
@_traced(_np.zeros)
def zeros(shape, dtype=float):
    return _S.full(shape, 0, dtype)


@_traced(_np.ones)
def ones(shape, dtype=float):
    return _S.full(shape, 1, dtype)


@_traced(_np.full)
def full(shape, fill_value, dtype=None):
    return _S.full(shape, fill_value, dtype)


empty = zeros


def _like(np_fn: Callable, value) -> Callable:
    @_traced(np_fn, np_fn.__name__)
    def f(a, dtype=None, shape=None):
        t = _as_tracer(a)
        return _S.full(t.dims if shape is None else shape, value, dtype or t.dtype)

    return f


zeros_like = _like(_np.zeros_like, 0)
ones_like = _like(_np.ones_like, 1)
empty_like = zeros_like


@_traced(_np.full_like)
def full_like(a, fill_value, dtype=None):
    t = _as_tracer(a)
    return _S.full(t.dims, fill_value, dtype or t.dtype)


@_traced(_np.arange)
def arange(start, stop=None, step=1, dtype=None):
    return _S.arange(start, stop, step, dtype)


@_traced(_np.asarray)
def asarray(a, dtype=None):
    t = _as_tracer(a)
    return t if dtype is None else _E.astype(t, dtype)


array = asarray


def shape(a) -> tuple:
    return a.shape if isinstance(a, _Tracer) else _np.shape(a)


def ndim(a) -> int:
    return a.ndim if isinstance(a, _Tracer) else _np.ndim(a)


def size(a):
    return a.size if isinstance(a, _Tracer) else _np.size(a)


def result_type(*args):
    from ._trace.dtypes import result_type as _rt

    return _rt(list(args))


class _Linalg:
    """``eqfuse.numpy.linalg``: ``norm`` (2-norm of vectors, Frobenius of matrices)."""

    @staticmethod
    def norm(x, ord=None, axis=None, keepdims=False):
        if not _is_traced([x]):
            return _np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
        if ord not in (None, 2, "fro") or (ord == 2 and axis is None and _as_tracer(x).ndim != 1):
            raise trace_error(f"eqfuse.numpy.linalg.norm(ord={ord!r})", "write sqrt(sum(x * x))")
        t = _as_tracer(x)
        if not _np.dtype(t.dtype).kind == "f":
            t = _E.astype(t, float64)
        return _E.ufunc("sqrt", _R.reduce("sum", _E.ufunc("multiply", t, t), axis, keepdims))


linalg = _Linalg()


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    f = globals().get(ufunc.__name__)
    if method != "__call__" or f is None or kwargs:
        raise trace_error(f"numpy.{ufunc.__name__}.{method} on a traced array", "use the functions of eqfuse.numpy")
    return f(*inputs)


def _array_function(self, func, types, args, kwargs):
    f = globals().get(func.__name__)
    if f is None or not callable(f):
        raise trace_error(f"numpy.{func.__name__} on a traced array", "eqfuse.numpy has no such function; see docs/python.md for the list")
    return f(*args, **kwargs)


_Tracer.__array_ufunc__ = _array_ufunc
_Tracer.__array_function__ = _array_function
_SymInt.__array_ufunc__ = _array_ufunc  # np.sqrt(x.shape[1])


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise trace_error(
        f"eqfuse.numpy.{name}",
        "eqfuse.numpy has no such function (docs/python.md lists what it has); write it from those, "
        "or compute it outside the jitted function",
        cls=TraceAttributeError,
    )
