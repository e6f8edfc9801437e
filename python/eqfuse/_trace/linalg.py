"""Contractions: ``dot``, ``matmul`` (``@``), ``einsum``, ``outer``. Each is the
language's natural form, ``reduce (+) 0 (generate [out.., k] (\\.. -> a[..] * b[..]))``,
which the optimiser recognises as a contraction (GEMM, matrix-vector)."""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .context import need_trace
from .elementwise import astype, generate, operand, ufunc
from .errors import trace_error
from .layout import reshape, size_of
from .tracer import Tracer, make


def _prepare(a, b, what: str) -> tuple[Tracer, Tracer, np.dtype]:
    trace = need_trace(what)
    ta, tb = operand(trace, a).tracer, operand(trace, b).tracer
    if ta is None or tb is None:
        raise trace_error(f"eqfuse.numpy.{what} of a Python scalar", "use `*`")
    dt = np.dtype(np.matmul(np.zeros((1, 1), ta.dtype), np.zeros((1, 1), tb.dtype)).dtype)
    if D.is_bool(dt):
        raise trace_error(f"eqfuse.numpy.{what} of boolean arrays", "convert to an integer type first")
    return astype(ta, dt), astype(tb, dt), dt


def contract(terms: list[tuple[Tracer, str]], out: str, dt, what: str) -> Tracer:
    """The sum over the letters not in ``out`` of the product of ``terms`` (each an array
    and one letter per axis): the general two-operand ``einsum``."""
    trace = need_trace(what)
    size = {}
    for t, letters in terms:
        if len(letters) != t.ndim:
            raise ValueError(f"einsum: operand has {t.ndim} dimensions, subscripts `{letters}` name {len(letters)}")
        for ch, d in zip(letters, t.dims):
            if ch in size:
                trace.require_equal(size[ch], d, f"{what}: dimension `{ch}`")
            else:
                size[ch] = d
    summed = [ch for ch in dict.fromkeys("".join(l for _, l in terms)) if ch not in out]
    order = list(out) + summed

    def body(idx):
        var = dict(zip(order, idx))
        reads = [t.at([var[ch] for ch in letters]) for t, letters in terms]
        return "(" + " * ".join(reads) + ")" if len(reads) > 1 else reads[0]

    g = generate(trace, tuple(size[ch] for ch in order), body, dt)
    for _ in summed:
        g = make(trace, f"reduce (+) 0 {g.ref()}", dt, g.dims[:-1])
    return g


def matmul(a, b) -> Tracer:
    ta, tb, dt = _prepare(a, b, "matmul")
    if ta.ndim == 0 or tb.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    if ta.ndim == 1 and tb.ndim == 1:
        need_trace("dot").require_equal(ta.dims[0], tb.dims[0], "dot")
        return make(need_trace("dot"), f"dot {ta.ref()} {tb.ref()}", dt, ())
    if ta.ndim > 3 or tb.ndim > 3:
        raise trace_error("eqfuse.numpy.matmul of arrays of rank above 3", "use einsum")
    letters = "bij"[3 - ta.ndim :] if ta.ndim > 1 else "j"
    lb = "bjk"[3 - tb.ndim :] if tb.ndim > 1 else "j"
    out = ("b" if "b" in letters + lb else "") + ("i" if "i" in letters else "") + ("k" if "k" in lb else "")
    return contract([(ta, letters), (tb, lb)], out, dt, "matmul")


def dot(a, b) -> Tracer:
    trace = need_trace("dot")
    ta, tb = operand(trace, a).tracer, operand(trace, b).tracer
    if ta is None or tb is None or ta.ndim == 0 or tb.ndim == 0:
        return ufunc("multiply", a, b)
    if ta.ndim > 2 or tb.ndim > 2:
        raise trace_error("eqfuse.numpy.dot of arrays of rank above 2", "use einsum or matmul")
    return matmul(ta, tb)


def einsum(subscripts: str, *operands) -> Tracer:
    """``np.einsum`` of one or two operands (explicit ``->`` output, or NumPy's implicit
    one: the letters seen once, sorted)."""
    if len(operands) not in (1, 2):
        raise trace_error(f"eqfuse.numpy.einsum of {len(operands)} operands", "contract two at a time")
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise trace_error("eqfuse.numpy.einsum with `...`", "name every axis")
    if "->" in spec:
        ins, out = spec.split("->")
    else:
        ins = spec
        letters = ins.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    parts = ins.split(",")
    if len(parts) != len(operands):
        raise ValueError("einsum: the subscripts name another number of operands")
    trace = need_trace("einsum")
    ts = [operand(trace, o).tracer for o in operands]
    if len(ts) == 2:
        a, b, dt = _prepare(ts[0], ts[1], "einsum")
        ts = [a, b]
    else:
        dt = ts[0].dtype if not D.is_bool(ts[0].dtype) else D.I64
        ts = [astype(ts[0], dt)]
    return contract(list(zip(ts, parts)), out, dt, "einsum")


def outer(a, b) -> Tracer:
    trace = need_trace("outer")
    ta, tb = operand(trace, a).tracer, operand(trace, b).tracer
    fa = reshape(ta, (size_of(ta.dims), 1))
    fb = reshape(tb, (1, size_of(tb.dims)))
    return ufunc("multiply", fa, fb)
