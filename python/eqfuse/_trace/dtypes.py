"""NumPy's dtypes in ``.eqf``: element type names, literals, conversions, and NumPy's
promotion rules (asked of NumPy itself, on empty arrays, so that they are NumPy's)."""

from __future__ import annotations

import math

import numpy as np

from .errors import trace_error
from .sizes import SymInt

EQF_TYPE = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16",
    np.dtype(np.uint32): "u32",
    np.dtype(np.uint64): "u64",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}

I64 = np.dtype(np.int64)
F64 = np.dtype(np.float64)
BOOL = np.dtype(np.bool_)


def eqf_type(dt: np.dtype, what: str = "an array") -> str:
    """The ``.eqf`` element type of ``dt``, or a TraceError for one the language lacks."""
    t = EQF_TYPE.get(np.dtype(dt))
    if t is None:
        raise trace_error(
            f"{what} of dtype {np.dtype(dt)}",
            "eqfuse has bool, int8..int64, uint8..uint64, float32 and float64; convert with "
            "`.astype(np.float32)` (or another of these) first",
        )
    return t


def is_float(dt: np.dtype) -> bool:
    return np.dtype(dt).kind == "f"


def is_int(dt: np.dtype) -> bool:
    return np.dtype(dt).kind in "iu"


def is_bool(dt: np.dtype) -> bool:
    return np.dtype(dt).kind == "b"


def literal(value, dt: np.dtype) -> str:
    """A Python or NumPy scalar as an ``.eqf`` scalar of dtype ``dt``: converted as NumPy
    converts it (``OverflowError`` for an integer that does not fit, as NumPy 2 raises)."""
    dt = np.dtype(dt)
    eqf_type(dt, "a constant")
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and dt.kind in "iu":
        v = int(np.asarray(value, dtype=dt))  # raises OverflowError as NumPy does
    else:
        with np.errstate(all="ignore"):
            v = np.asarray(value).astype(dt).item()
    if dt.kind == "b":
        return "true" if v else "false"
    if dt.kind in "iu":
        if dt == I64:
            if v == -(2**63):
                return "(-9223372036854775807 - 1)"
            return str(v) if v >= 0 else f"({v})"
        if dt == np.dtype(np.uint64) and v >= 2**63:
            return f"(u64 ({v - 2**64}))"
        return f"({EQF_TYPE[dt]} {v})" if v >= 0 else f"({EQF_TYPE[dt]} ({v}))"
    return _float_literal(float(v), dt)


def _float_literal(v: float, dt: np.dtype) -> str:
    if math.isnan(v):
        text = "(0.0 / 0.0)"
    elif math.isinf(v):
        text = "inf" if v > 0 else "(-inf)"
    else:
        r = repr(abs(v))
        if "e" not in r and "." not in r:
            r += ".0"
        text = r if v >= 0 and not (v == 0 and math.copysign(1, v) < 0) else f"(-{r})"
    return text if dt == F64 else f"({EQF_TYPE[dt]} {text})"


def convert(expr: str, have: np.dtype, want: np.dtype) -> str:
    """The scalar expression ``expr`` of dtype ``have`` converted as NumPy's ``astype``."""
    have, want = np.dtype(have), np.dtype(want)
    if have == want:
        return expr
    if want.kind == "b":
        return f"({expr} != {literal(0, have)})"
    return f"({EQF_TYPE[want]} {expr})"


def proto(v):
    """What NumPy's dtype rules see for an operand: a 0-d array for an array (strong),
    the Python type for a Python scalar (weak, as NumPy 2 treats it)."""
    if isinstance(v, SymInt):
        return int
    if isinstance(v, bool):
        return BOOL  # the lowest kind: as weak as a Python bool is
    if isinstance(v, (int, float)) and not isinstance(v, np.generic):
        return type(v)
    if isinstance(v, complex):
        raise trace_error("a complex number", "eqfuse has no complex type")
    return np.dtype(v.dtype)


def ufunc_dtypes(ufunc: np.ufunc, operands: list) -> tuple:
    """NumPy's loop for ``ufunc`` on these operands: (input dtypes, output dtype)."""
    protos = tuple(proto(v) for v in operands)
    try:
        dts = ufunc.resolve_dtypes(protos + (None,) * ufunc.nout)
    except Exception as e:  # noqa: BLE001 - NumPy's own refusal, raised as NumPy would
        raise TypeError(f"ufunc '{ufunc.__name__}' not supported for the input types ({e})") from None
    return dts[: ufunc.nin], dts[ufunc.nin]


def result_type(operands: list) -> np.dtype:
    """``np.result_type`` with Python scalars weak."""
    protos = []
    for v in operands:
        p = proto(v)
        protos.append({bool: False, int: 0, float: 0.0}[p] if isinstance(p, type) else p)
    return np.result_type(*protos)
