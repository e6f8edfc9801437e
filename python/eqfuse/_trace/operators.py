"""The Python operators and methods of ``Tracer`` (``x + y``, ``x[1:]``, ``x @ w``,
``x.sum(axis=0)``, ``x.T``), and arithmetic between a size and a float."""

from __future__ import annotations

import numpy as np

from . import elementwise as E
from . import indexing, linalg, reductions, shapes
from .errors import trace_error
from .layout import size_of
from .sizes import SymInt
from .tracer import Tracer

_BINARY = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "true_divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
}


def _install_binary(op: str, uf: str) -> None:
    def fwd(self, other):
        return E.ufunc(uf, self, other)

    def rev(self, other):
        return E.ufunc(uf, other, self)

    setattr(Tracer, f"__{op}__", fwd)
    setattr(Tracer, f"__r{op}__", rev)


for _op, _uf in _BINARY.items():
    _install_binary(_op, _uf)

for _op, _uf in {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal", "eq": "equal", "ne": "not_equal"}.items():
    setattr(Tracer, f"__{_op}__", (lambda uf: lambda self, other: E.ufunc(uf, self, other))(_uf))

# `x ** 2` is NumPy's square (its operator's fast path: a bool array squared is int8)
Tracer.__pow__ = lambda self, other: E.ufunc("square", self) if type(other) is int and other == 2 else E.power(self, other)
Tracer.__rpow__ = lambda self, other: E.ufunc("power", other, self)
Tracer.__neg__ = lambda self: E.ufunc("negative", self)
Tracer.__pos__ = lambda self: self
Tracer.__abs__ = lambda self: E.ufunc("absolute", self)
Tracer.__invert__ = lambda self: E.ufunc("invert", self)
Tracer.__matmul__ = lambda self, other: linalg.matmul(self, other)
Tracer.__rmatmul__ = lambda self, other: linalg.matmul(other, self)
Tracer.__getitem__ = lambda self, key: indexing.getitem(self, key)


def _setitem(self, key, value):
    raise trace_error("assignment into a traced array (x[...] = v)", "build the result with eqfuse.numpy.where, concatenate or pad")


Tracer.__setitem__ = _setitem
Tracer.T = property(lambda self: shapes.transpose(self))
Tracer.astype = lambda self, dtype, copy=True: E.astype(self, dtype)
Tracer.reshape = lambda self, *shape: shapes.reshape_to(self, shape[0] if len(shape) == 1 else shape)
Tracer.transpose = lambda self, *axes: shapes.transpose(self, (axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes) or None)
Tracer.flatten = lambda self: shapes.reshape_to(self, (size_of(self.dims),))
Tracer.ravel = Tracer.flatten
Tracer.squeeze = lambda self, axis=None: shapes.squeeze(self, axis)
Tracer.copy = lambda self: self
Tracer.clip = lambda self, min=None, max=None: E.clip(self, min, max)
Tracer.dot = lambda self, other: linalg.dot(self, other)
Tracer.round = lambda self, decimals=0: E.ufunc("rint", self)
for _k in ("sum", "prod", "max", "min", "any", "all", "mean"):
    setattr(Tracer, _k, (lambda k: lambda self, axis=None, dtype=None, out=None, keepdims=False: reductions.reduce(k, self, axis, keepdims, dtype))(_k))
Tracer.argmin = lambda self, axis=None, keepdims=False: reductions.arg("argmin", self, axis, keepdims)
Tracer.argmax = lambda self, axis=None, keepdims=False: reductions.arg("argmax", self, axis, keepdims)
Tracer.var = lambda self, axis=None, dtype=None, ddof=0, keepdims=False: reductions.var(self, axis, keepdims, ddof, dtype=dtype)
Tracer.std = lambda self, axis=None, dtype=None, ddof=0, keepdims=False: reductions.var(self, axis, keepdims, ddof, std=True, dtype=dtype)
Tracer.cumsum = lambda self, axis=None, dtype=None: reductions.cumulative("cumsum", self, axis, dtype)
Tracer.cumprod = lambda self, axis=None, dtype=None: reductions.cumulative("cumprod", self, axis, dtype)


# a size with a float (`x.shape[0] * 0.5`, `1 / x.shape[0]`) is a traced scalar ---------------
def _size_float(uf: str, reverse: bool):
    plain = getattr(SymInt, f"__{'r' if reverse else ''}{ {'multiply': 'mul', 'add': 'add', 'subtract': 'sub'}.get(uf, 'truediv') }__", None)

    def op(self, other):
        if isinstance(other, (float, Tracer, np.floating, np.ndarray)) or uf == "true_divide":
            return E.ufunc(uf, other, self) if reverse else E.ufunc(uf, self, other)
        return plain(self, other) if plain is not None else NotImplemented

    return op


for _name, _uf in (("mul", "multiply"), ("add", "add"), ("sub", "subtract"), ("truediv", "true_divide")):
    setattr(SymInt, f"__{_name}__", _size_float(_uf, False))
    setattr(SymInt, f"__r{_name}__", _size_float(_uf, True))
