"""``Tracer``: an array of a traced program. It holds no data: a name in the program,
a dtype and symbolic dimensions. Its Python operators are installed by ``operators``."""

from __future__ import annotations

import numpy as np

from .context import Scope, Trace, need_trace
from .errors import trace_error
from .sizes import SymInt, dim


class Tracer:
    """An array being traced by :func:`eqfuse.jit`."""

    __array_priority__ = 1000.0
    __slots__ = ("trace", "name", "dtype", "dims", "scope")

    def __init__(self, trace: Trace, name: str, dtype, dims: tuple, scope: Scope | None = None) -> None:
        self.trace = trace
        self.name = name
        self.dtype = np.dtype(dtype)
        self.dims = tuple(SymInt.of(d) for d in dims)
        self.scope = scope if scope is not None else trace.scope

    # what NumPy code reads ---------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """The dimensions: an ``int`` where known, else a symbolic size (a ``SymInt``)."""
        return tuple(dim(d) for d in self.dims)

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def size(self):
        n = SymInt.of(1)
        for d in self.dims:
            n = n * d
        return dim(n)

    def __repr__(self) -> str:
        return f"<traced {self.dtype}[{', '.join(d.text() for d in self.dims)}] {self.name}>"

    # the name, checked to be in scope ----------------------------------------------------
    def ref(self) -> str:
        """The name to use in the current scope (refused where the value was made in a
        loop body that has ended)."""
        if self.scope.closed:
            raise trace_error(
                "a value computed inside a loop body used after the loop",
                "return it from the body as part of the loop state",
            )
        if need_trace("a traced array") is not self.trace:
            raise trace_error("an array traced by another function", "pass it as an argument")
        return self.name

    def at(self, idx: list[str]) -> str:
        """``name[i, j]`` (the name itself for a scalar)."""
        return self.ref() if not idx else f"{self.ref()}[{', '.join(idx)}]"

    # what cannot be traced ---------------------------------------------------------------
    def __bool__(self):
        raise trace_error(
            "bool() of a traced array (a Python `if`, `and`, `or`, `while` on array values)",
            "choose values with eqfuse.numpy.where(cond, a, b), loop with eqfuse.while_loop / eqfuse.fori_loop",
        )

    def _no_value(self, what: str):
        raise trace_error(
            f"{what} of a traced array (its value is known only when the program runs)",
            "keep it an array: eqfuse.numpy functions take and return arrays",
        )

    def __float__(self):
        self._no_value("float()")

    def __int__(self):
        self._no_value("int()")

    def __index__(self):
        self._no_value("use as a Python index")

    def __complex__(self):
        self._no_value("complex()")

    def item(self, *a):
        self._no_value(".item()")

    def tolist(self):
        self._no_value(".tolist()")

    def __array__(self, *a, **k):
        raise trace_error(
            "conversion of a traced array to a NumPy array (np.asarray, a NumPy function without "
            "a traced version)",
            "use the eqfuse.numpy function of the same name",
        )

    def __len__(self):
        if not self.dims:
            raise TypeError("len() of unsized object")
        n = self.dims[0].const
        if n is None:
            raise trace_error("len() of a traced array", "sizes are symbolic: use `x.shape[0]`")
        return n

    def __iter__(self):
        n = len(self)
        return (self[i] for i in range(n))

    def __hash__(self):
        return id(self)


def make(trace: Trace, expr: str, dtype, dims) -> Tracer:
    """Binds ``expr`` (of ``dtype`` and ``dims``) in the current scope."""
    return Tracer(trace, trace.bind(expr), dtype, dims)
