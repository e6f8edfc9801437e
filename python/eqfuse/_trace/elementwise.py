"""Elementwise operations with NumPy broadcasting: the ufuncs, ``where``, ``clip``,
``astype``. Operands of one shape become a ``map``; others a ``generate`` over the
broadcast shape that reads each operand at its broadcast index."""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .context import Trace, need_trace
from .errors import trace_error
from .sizes import SymInt
from .tracer import Tracer, make


class Operand:
    """An operand: a traced array, or a scalar known as ``.eqf`` text (a constant, a
    size) with its NumPy dtype rule (``proto``: a dtype, or a Python type if weak)."""

    __slots__ = ("tracer", "value", "text_of")

    def __init__(self, tracer: Tracer | None = None, value=None, text_of=None) -> None:
        self.tracer = tracer
        self.value = value  # what NumPy's dtype rules see
        self.text_of = text_of  # dtype -> .eqf text of the scalar in that dtype


def operand(trace: Trace, v) -> Operand:
    """``v`` (a tracer, a size, a NumPy array or scalar, a Python scalar) as an operand."""
    if isinstance(v, Tracer):
        return Operand(tracer=v, value=v)
    if isinstance(v, SymInt):
        return Operand(value=v, text_of=lambda dt, v=v: D.convert(v.paren(), D.I64, dt))
    if isinstance(v, (bool, int, float)) and not isinstance(v, np.generic):
        return Operand(value=v, text_of=lambda dt, v=v: D.literal(v, dt))
    if isinstance(v, (np.generic, np.ndarray, list, tuple)):
        arr = np.asarray(v)
        if arr.ndim == 0:
            return Operand(value=arr, text_of=lambda dt, a=arr: D.literal(a.item(), dt))
        return Operand(tracer=constant(trace, arr), value=arr)
    if v is None:
        raise trace_error("None as an array", "pass an array or a number")
    raise trace_error(f"an operand of type {type(v).__name__}", "pass an array or a number")


def constant(trace: Trace, arr: np.ndarray) -> Tracer:
    """A NumPy array used by the traced function: an input passed on every call."""
    arr = np.ascontiguousarray(arr)
    D.eqf_type(arr.dtype, "a constant array")
    name = trace.add_constant(arr)
    return Tracer(trace, name, arr.dtype, tuple(SymInt.of(n) for n in arr.shape), trace.scopes[0])


def broadcast_shape(trace: Trace, tracers: list[Tracer], what: str) -> tuple:
    """The broadcast shape of ``tracers`` (NumPy's rule: align on the right, a 1 stretches),
    recording that the other dimensions are equal."""
    r = max((t.ndim for t in tracers), default=0)
    out = []
    for a in range(r):
        ds = [t.dims[a - r + t.ndim] for t in tracers if a - r + t.ndim >= 0]
        big = [d for d in ds if d.const != 1]
        if not big:
            out.append(SymInt.of(1))
            continue
        for d in big[1:]:
            trace.require_equal(big[0], d, f"operands could not be broadcast together ({what})")
        out.append(big[0])
    return tuple(out)


def apply(what: str, values: list, in_dtypes: list, out_dtype, body) -> Tracer:
    """The elementwise ``body`` (a function of the operands' ``.eqf`` texts, each converted
    to its ``in_dtypes`` entry) over the broadcast of ``values``."""
    trace = need_trace(what)
    ops = [operand(trace, v) for v in values]
    out_dtype = np.dtype(out_dtype)
    D.eqf_type(out_dtype, f"the result of {what}")
    arrays = [o.tracer for o in ops if o.tracer is not None and o.tracer.ndim > 0]
    if not arrays:
        texts = [o.text_of(dt) if o.tracer is None else D.convert(o.tracer.ref(), o.tracer.dtype, dt) for o, dt in zip(ops, in_dtypes)]
        return make(trace, body(texts), out_dtype, ())
    shape = broadcast_shape(trace, arrays, what)
    r = len(shape)
    as_map = all(t.ndim == r and all(not (d.const == 1 and s.const != 1) for d, s in zip(t.dims, shape)) for t in arrays)
    params: dict[str, str] = {}
    texts = []
    idx = [f"_j{k}" for k in range(r)]
    for o, dt in zip(ops, in_dtypes):
        t = o.tracer
        if t is None:
            texts.append(o.text_of(np.dtype(dt)))
            continue
        if t.ndim == 0:
            texts.append(D.convert(t.ref(), t.dtype, dt))
            continue
        if as_map:
            p = params.setdefault(t.ref(), f"_x{len(params)}")
            texts.append(D.convert(p, t.dtype, dt))
        else:
            ix = [("0" if d.const == 1 and shape[a + r - t.ndim].const != 1 else idx[a + r - t.ndim]) for a, d in enumerate(t.dims)]
            texts.append(D.convert(t.at(ix), t.dtype, dt))
    b = body(texts)
    if as_map:
        expr = f"map (\\{' '.join(params.values())} -> {b}) {' '.join(params)}"
    else:
        expr = f"generate [{', '.join(d.text() for d in shape)}] (\\{' '.join(idx)} -> {b})"
    return make(trace, expr, out_dtype, shape)


def generate(trace: Trace, dims: tuple, body, dtype) -> Tracer:
    """``generate [dims] (\\_j0 .. -> body(indices))``; a scalar for rank 0."""
    dims = tuple(SymInt.of(d) for d in dims)
    if not dims:
        return make(trace, body([]), dtype, ())
    idx = [f"_g{k}" for k in range(len(dims))]
    expr = f"generate [{', '.join(d.text() for d in dims)}] (\\{' '.join(idx)} -> {body(idx)})"
    return make(trace, expr, dtype, dims)


# scalar bodies -------------------------------------------------------------------------


def _signed(dt) -> bool:
    return np.dtype(dt).kind == "i"


def _floor_divide(a: str, b: str, dt) -> str:
    z = D.literal(0, dt)
    if D.is_int(dt):
        if not _signed(dt):
            return f"(if {b} == {z} then {z} else {a} / {b})"
        return (
            f"(if {b} == {z} then {z} else (let _q = {a} / {b} in "
            f"if {a} % {b} != {z} && (({a} < {z}) != ({b} < {z})) then _q - {D.literal(1, dt)} else _q))"
        )
    one = D.literal(1, dt)
    half = D.literal(0.5, dt)
    return (
        f"(if {b} == {z} then {a} / {b} else (let _m = {a} % {b} in let _d = ({a} - _m) / {b} in "
        f"let _e = (if _m != {z} && (({b} < {z}) != (_m < {z})) then _d - {one} else _d) in "
        f"let _f = floor _e in if _e - _f > {half} then _f + {one} else _f))"
    )


def _remainder(a: str, b: str, dt) -> str:
    z = D.literal(0, dt)
    if D.is_int(dt):
        if not _signed(dt):
            return f"(if {b} == {z} then {z} else {a} % {b})"
        return f"(if {b} == {z} then {z} else (let _r = {a} % {b} in if _r != {z} && ((_r < {z}) != ({b} < {z})) then _r + {b} else _r))"
    return f"(let _r = {a} % {b} in if _r != {z} && ((_r < {z}) != ({b} < {z})) then _r + {b} else _r)"


def _int_power(a: str, b: str, dt) -> str:
    """``a ** b`` on integers by squaring (a tuple ``iterate`` over the exponent's bits; an
    unrolled form would grow exponentially when its lets are inlined); a negative exponent
    counts as 0 (NumPy raises)."""
    one, two, zero = D.literal(1, dt), D.literal(2, dt), D.literal(0, dt)
    e = f"(if {b} < {zero} then {zero} else {b})" if _signed(dt) else b
    step = f"(\\(_p, _s, _e) -> (if _e % {two} == {one} then _p * _s else _p, _s * _s, _e / {two}))"
    return f"(let (_p, _s, _e) = iterate {np.dtype(dt).itemsize * 8} {step} ({one}, {a}, {e}) in _p)"


def _round_half_even(a: str, dt) -> str:
    one, half, two = D.literal(1, dt), D.literal(0.5, dt), D.literal(2, dt)
    return (
        f"(let _f = floor {a} in let _d = {a} - _f in if _d > {half} then _f + {one} else if _d < {half} then _f "
        f"else if _f - {two} * floor (_f * {half}) == {D.literal(0, dt)} then _f else _f + {one})"
    )


def _bool_or(op_num: str, op_bool: str):
    def body(t, dt):
        return f"({t[0]} {op_bool if D.is_bool(dt) else op_num} {t[1]})"

    return body


def _fn(name: str):
    return lambda t, dt: f"({name} {' '.join(t)})"


BINARY = {
    "add": _bool_or("+", "||"),
    "subtract": lambda t, dt: f"({t[0]} - {t[1]})",
    "multiply": _bool_or("*", "&&"),
    "true_divide": lambda t, dt: f"({t[0]} / {t[1]})",
    "divide": lambda t, dt: f"({t[0]} / {t[1]})",
    "floor_divide": lambda t, dt: _floor_divide(t[0], t[1], dt),
    "remainder": lambda t, dt: _remainder(t[0], t[1], dt),
    "mod": lambda t, dt: _remainder(t[0], t[1], dt),
    "fmod": lambda t, dt: f"({t[0]} % {t[1]})" if D.is_float(dt) else f"(if {t[1]} == {D.literal(0, dt)} then {D.literal(0, dt)} else {t[0]} % {t[1]})",
    "power": lambda t, dt: f"(pow {t[0]} {t[1]})" if D.is_float(dt) else _int_power(t[0], t[1], dt),
    "maximum": lambda t, dt: f"({t[0]} || {t[1]})" if D.is_bool(dt) else f"(max {t[0]} {t[1]})",
    "minimum": lambda t, dt: f"({t[0]} && {t[1]})" if D.is_bool(dt) else f"(min {t[0]} {t[1]})",
    "arctan2": _fn("atan2"),
    "bitwise_and": _bool_or("&", "&&"),
    "bitwise_or": _bool_or("|", "||"),
    "bitwise_xor": _bool_or("^", "!="),
    "logical_and": lambda t, dt: f"({t[0]} && {t[1]})",
    "logical_or": lambda t, dt: f"({t[0]} || {t[1]})",
    "logical_xor": lambda t, dt: f"({t[0]} != {t[1]})",
    "equal": lambda t, dt: f"({t[0]} == {t[1]})",
    "not_equal": lambda t, dt: f"({t[0]} != {t[1]})",
    "less": lambda t, dt: f"(!{t[0]} && {t[1]})" if D.is_bool(dt) else f"({t[0]} < {t[1]})",
    "less_equal": lambda t, dt: f"(!{t[0]} || {t[1]})" if D.is_bool(dt) else f"({t[0]} <= {t[1]})",
    "greater": lambda t, dt: f"({t[0]} && !{t[1]})" if D.is_bool(dt) else f"({t[0]} > {t[1]})",
    "greater_equal": lambda t, dt: f"({t[0]} || !{t[1]})" if D.is_bool(dt) else f"({t[0]} >= {t[1]})",
}

_FLOAT_FNS = ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "log2", "log10", "exp2", "expm1", "log1p"]

UNARY = {name: _fn(name) for name in _FLOAT_FNS}
UNARY.update(
    {
        "negative": lambda t, dt: f"(-{t[0]})",
        "positive": lambda t, dt: t[0],
        "absolute": lambda t, dt: t[0] if D.is_bool(dt) or dt.kind == "u" else f"(abs {t[0]})",
        "arctan": lambda t, dt: f"(atan2 {t[0]} {D.literal(1, dt)})",
        "floor": lambda t, dt: f"(floor {t[0]})" if D.is_float(dt) else t[0],
        "ceil": lambda t, dt: f"(ceil {t[0]})" if D.is_float(dt) else t[0],
        "trunc": lambda t, dt: f"(if {t[0]} < {D.literal(0, dt)} then ceil {t[0]} else floor {t[0]})" if D.is_float(dt) else t[0],
        "rint": lambda t, dt: _round_half_even(t[0], dt) if D.is_float(dt) else t[0],
        "square": lambda t, dt: f"({t[0]} * {t[0]})" if not D.is_bool(dt) else f"({t[0]} && {t[0]})",
        "reciprocal": lambda t, dt: f"({D.literal(1, dt)} / {t[0]})" if D.is_float(dt) else f"(if {t[0]} == {D.literal(0, dt)} then {D.literal(0, dt)} else {D.literal(1, dt)} / {t[0]})",
        "sign": lambda t, dt: f"(if {t[0]} > {D.literal(0, dt)} then {D.literal(1, dt)} else {t[0]})" if dt.kind == "u" else f"(if {t[0]} > {D.literal(0, dt)} then {D.literal(1, dt)} else if {t[0]} < {D.literal(0, dt)} then {D.literal(-1, dt)} else {t[0]})",
        "isnan": lambda t, dt: f"(isnan {t[0]})",
        "isinf": lambda t, dt: f"(isinf {t[0]})",
        "isfinite": lambda t, dt: f"(!(isnan {t[0]} || isinf {t[0]}))",
        "logical_not": lambda t, dt: f"(!{t[0]})",
        "invert": lambda t, dt: f"(!{t[0]})",
    }
)


_COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _out_of_range_int(values: list) -> bool:
    """Whether a Python int operand does not fit the dtype of the other (NumPy 2 compares
    such values exactly rather than raising)."""
    dts = [np.dtype(v.dtype) for v in values if hasattr(v, "dtype")]
    ints = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    if not dts or not ints or dts[0].kind not in "iu":
        return False
    info = np.iinfo(dts[0])
    return any(not info.min <= v <= info.max for v in ints)


def ufunc(name: str, *values) -> Tracer:
    """NumPy's ufunc ``name`` on traced operands, with NumPy's loop dtypes."""
    uf = getattr(np, name)
    if name in _COMPARISONS and _out_of_range_int(list(values)):
        return apply(name, list(values), [D.I64, D.I64] if np.dtype(next(v.dtype for v in values if hasattr(v, "dtype"))).itemsize < 8 else [D.F64, D.F64], D.BOOL, lambda t: BINARY[name](t, D.I64))
    in_dts, out_dt = D.ufunc_dtypes(uf, list(values))
    table = BINARY if uf.nin == 2 else UNARY
    fn = table[name]
    if name in ("isnan", "isinf", "isfinite") and not D.is_float(in_dts[0]):
        # NumPy's integer loops: nothing is NaN or infinite
        return apply(name, list(values), [D.BOOL], D.BOOL, lambda t: "false" if name != "isfinite" else "true")
    if name in ("logical_and", "logical_or", "logical_xor", "logical_not"):
        in_dts = [D.BOOL] * len(values)
    if out_dt.kind == "f" and out_dt.itemsize < 4:
        raise trace_error(f"eqfuse.numpy.{name} on {[str(d) for d in in_dts]} (NumPy gives {out_dt})", "convert to float32 first")
    return apply(name, list(values), list(in_dts), out_dt, lambda t: fn(t, in_dts[0]))


def where(cond, x, y) -> Tracer:
    dt = D.result_type([x, y])
    return apply("where", [cond, x, y], [D.BOOL, dt, dt], dt, lambda t: f"(if {t[0]} then {t[1]} else {t[2]})")


def clip(a, lo=None, hi=None) -> Tracer:
    vals = [v for v in (a, lo, hi) if v is not None]
    dt = D.result_type(vals)

    def body(t):
        e, k = t[0], 1
        if lo is not None:
            e, k = (f"({e} || {t[k]})" if D.is_bool(dt) else f"(max {e} {t[k]})"), k + 1
        if hi is not None:
            e = f"({e} && {t[k]})" if D.is_bool(dt) else f"(min {e} {t[k]})"
        return e

    return apply("clip", vals, [dt] * len(vals), dt, body)


def astype(x, dtype) -> Tracer:
    dt = np.dtype(dtype)
    if isinstance(x, Tracer) and x.dtype == dt:
        return x
    src = x.dtype if isinstance(x, Tracer) else D.result_type([x])
    return apply("astype", [x], [src], dt, lambda t: D.convert(t[0], src, dt))


def power(x, y) -> Tracer:
    """``x ** y``; a small integer constant exponent is multiplied out, as NumPy's
    ``x ** 2`` squares."""
    if isinstance(y, (int, np.integer)) and not isinstance(y, bool) and 0 <= int(y) <= 4:
        in_dts, out_dt = D.ufunc_dtypes(np.power, [x, y])
        k = int(y)

        def body(t):
            if k == 0:
                return D.literal(1, out_dt)
            return "(" + " * ".join([t[0]] * k) + ")"

        return apply("power", [x], [in_dts[0]], out_dt, body)
    return ufunc("power", x, y)
