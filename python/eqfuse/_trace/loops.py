"""``fori_loop`` and ``while_loop`` (as ``jax.lax``'s): the body is traced once, with the
loop state as traced arrays, into the language's ``loop ... for`` / ``loop ... while``."""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .context import Scope, Trace, need_trace
from .elementwise import astype, operand
from .errors import trace_error
from .pytree import flatten, unflatten
from .shapes import full
from .sizes import SymInt
from .tracer import Tracer, make


def _as_state(trace: Trace, v) -> Tracer:
    if isinstance(v, Tracer):
        return v
    if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
        return full((), v, {bool: D.BOOL, int: D.I64, float: D.F64}[type(v)])
    t = operand(trace, v).tracer
    if t is None:
        arr = np.asarray(v)
        return full((), arr.item(), arr.dtype)
    return t


def _pattern(names: list[str]) -> str:
    return names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"


def _count_text(trace: Trace, v) -> str:
    if isinstance(v, Tracer):
        if v.ndim != 0 or not D.is_int(v.dtype):
            raise trace_error("a loop bound that is not an integer scalar", "pass an int, a size or an integer scalar")
        return astype(v, D.I64).ref()
    return SymInt.of(v).paren()


class _Loop:
    """The state of a loop being traced: the initial leaves, the names the body sees."""

    def __init__(self, trace: Trace, init_val) -> None:
        self.trace = trace
        leaves, self.struct = flatten(init_val)
        self.init = [_as_state(trace, v) for v in leaves]
        self.state_scope = Scope(top=False)
        self.names = [trace.fresh("_s") for _ in self.init]
        self.state = [Tracer(trace, n, t.dtype, t.dims, self.state_scope) for n, t in zip(self.names, self.init)]

    def tree(self):
        return unflatten(self.struct, self.state)

    def trace_in(self, fn, *args) -> tuple[Scope, object]:
        scope = Scope(top=False)
        self.trace.scopes.append(scope)
        try:
            out = fn(*args)
        finally:
            self.trace.scopes.pop()
        return scope, out

    def next_state(self, scope: Scope, out, what: str) -> str:
        """The body's value: the new state, checked against the initial one."""
        leaves, struct = flatten(out)
        if struct != self.struct:
            raise trace_error(f"a {what} body that returns another structure than its initial state", "return the state as it came in")
        self.trace.scopes.append(scope)
        try:
            refs = []
            for v, t0 in zip(leaves, self.init):
                t = full((), v, t0.dtype) if not isinstance(v, Tracer) and np.ndim(v) == 0 else operand(self.trace, v).tracer
                if t.ndim != t0.ndim:
                    raise trace_error(f"a {what} body that changes the rank of a state array ({t0.ndim} to {t.ndim})", "keep each state array's shape")
                if t.dtype != t0.dtype:
                    if not np.can_cast(t.dtype, t0.dtype, "same_kind"):
                        raise trace_error(f"a {what} body that changes a state dtype ({t0.dtype} to {t.dtype})", f"convert with .astype(np.{t0.dtype.name})")
                    t = astype(t, t0.dtype)
                for a, b in zip(t0.dims, t.dims):
                    self.trace.require_equal(a, b, f"{what} state")
                refs.append(t.ref())
        finally:
            self.trace.scopes.pop()
        return scope.render_body(_pattern(refs) if len(refs) > 1 else refs[0])

    def finish(self, head: str, body: str, scopes: list[Scope]):
        for s in scopes + [self.state_scope]:
            s.closed = True
        init = _pattern([t.ref() for t in self.init])
        results = [self.trace.fresh("_r") for _ in self.init]
        self.trace.bind_pattern(results, f"loop {_pattern(self.names)} = {init} {head} do\n{body}")
        outs = [Tracer(self.trace, n, t.dtype, t.dims) for n, t in zip(results, self.init)]
        return unflatten(self.struct, outs)


def fori_loop(lower, upper, body_fun, init_val):
    """``jax.lax.fori_loop``: ``body_fun(i, state)`` for ``i`` in ``lower .. upper - 1``."""
    trace = need_trace("fori_loop")
    lo, hi = _count_text(trace, lower), _count_text(trace, upper)
    loop = _Loop(trace, init_val)
    k = trace.fresh("_k")
    count = hi if lo == "0" else f"({hi} - {lo})"

    def run():
        i = Tracer(trace, k, D.I64, ())
        if lo != "0":
            i = make(trace, f"{k} + {lo}", D.I64, ())
        return body_fun(i, loop.tree())

    scope, out = loop.trace_in(run)
    body = loop.next_state(scope, out, "fori_loop")
    return loop.finish(f"for {k} < {count}", body, [scope])


def while_loop(cond_fun, body_fun, init_val):
    """``jax.lax.while_loop``: ``state = body_fun(state)`` while ``cond_fun(state)``."""
    trace = need_trace("while_loop")
    loop = _Loop(trace, init_val)
    cscope, c = loop.trace_in(lambda: cond_fun(loop.tree()))
    trace.scopes.append(cscope)
    try:
        ct = full((), c, D.BOOL) if not isinstance(c, Tracer) else c
        if ct.ndim != 0:
            raise trace_error("a while_loop condition that is not a scalar", "reduce it with eqfuse.numpy.any / all")
        ref = astype(ct, D.BOOL).ref()
    finally:
        trace.scopes.pop()
    cond = cscope.render_body(ref)
    cscope.closed = True
    bscope, out = loop.trace_in(lambda: body_fun(loop.tree()))
    body = loop.next_state(bscope, out, "while_loop")
    return loop.finish(f"while ({cond})", body, [cscope, bscope])
