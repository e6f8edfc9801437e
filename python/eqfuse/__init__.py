"""eqfuse: array programs made fast by equality saturation.

Write the clear version of an array program in eqfuse's ``.eqf`` language (``map``,
``reduce``, ``scan``, gathers, intermediate arrays everywhere); eqfuse fuses it into the
kernels an expert would write and runs them on CPU threads or a GPU.

>>> import numpy as np, eqfuse
>>> prog = eqfuse.compile('''
... input xs : f32[n]
... input ys : f32[n]
... output dot = reduce (+) 0 (map (\\\\x y -> x * y) xs ys)
... ''')
>>> out = prog(xs=np.arange(4, dtype=np.float32), ys=np.ones(4, dtype=np.float32))
>>> float(out["dot"])
6.0

``eqfuse.dask.run`` runs a compiled program over chunked Dask arrays.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, NamedTuple

import numpy as np

from . import _eqfuse
from ._errors import (
    BoundsError,
    DeviceError,
    DivisionByZeroError,
    Error,
    InputError,
    LimitError,
    OutputError,
    ParseError,
    ShapeError,
    TypeCheckError,
    from_code,
    input_error,
)

__all__ = [
    "compile",
    "jit",
    "fori_loop",
    "while_loop",
    "numpy",
    "TraceError",
    "ProgramNotFoundError",
    "Program",
    "Arg",
    "Error",
    "ParseError",
    "TypeCheckError",
    "ShapeError",
    "InputError",
    "BoundsError",
    "DivisionByZeroError",
    "LimitError",
    "DeviceError",
    "OutputError",
]

__version__: str = _eqfuse.__version__


class Arg(NamedTuple):
    """An input or output of a program: its name, NumPy dtype and shape (an ``int`` per
    literal size, a ``str`` per size name or size expression, ``None`` for a size known only
    at run time)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | str | None, ...]


def _args(pairs) -> dict[str, Arg]:
    return {name: Arg(name, np.dtype(dtype), tuple(shape)) for name, (dtype, shape) in pairs}


def _convert(name: str, value: Any, want: np.dtype) -> np.ndarray:
    """The array the plan reads for input ``name``: ``value`` itself when it is a NumPy array
    of the declared dtype in C order (read in place, no copy); otherwise a converted copy where
    the conversion loses nothing, else an ``InputError`` that says why (docs/python.md)."""
    if isinstance(value, np.ndarray):
        arr = value
    elif isinstance(value, np.generic):
        arr = np.asarray(value)
    else:
        return _valid_bools(_from_python(name, value, want))
    if arr.dtype == want:
        # a strided or Fortran-order array is copied into C order
        return _valid_bools(np.asarray(arr, order="C"))
    if _int_to_float(arr.dtype, want):
        # exact for some values only: converted where every value is
        _check_values(name, arr, want)
    else:
        _check_cast(name, arr.dtype, want)
    return _valid_bools(np.asarray(arr, dtype=want, order="C"))


def _from_python(name: str, value: Any, want: np.dtype) -> np.ndarray:
    """A Python number or (nested) list as an array of ``want``. It carries no dtype of its
    own, so it takes the declared one where that is the same kind (an ``int`` where a float
    is declared, not a ``float`` where an int is), and where every value fits: an integer
    exactly (``2**40`` is no ``int32``, ``2**60 + 1`` no ``float64``), a float within the
    range (``1e300`` is no ``float32``; ``inf`` and ``nan`` are)."""
    try:
        arr = np.asarray(value)
    except Exception as e:  # noqa: BLE001 - NumPy raises many kinds
        raise input_error(f"input `{name}` is not an array: {e}") from None
    if arr.dtype == object:
        return _from_big_ints(name, arr, want)
    if not np.can_cast(arr.dtype, want, "same_kind"):
        raise input_error(f"input `{name}` holds {arr.dtype} values, the program declares {want}") from None
    _check_values(name, arr, want)
    return np.asarray(arr, dtype=want, order="C")


def _from_big_ints(name: str, arr: np.ndarray, want: np.dtype) -> np.ndarray:
    """An array of Python objects (what NumPy makes of an integer that is neither an
    ``int64`` nor a ``uint64``): for a float input each number converted and checked as
    :func:`_check_values` checks, for an integer input the first integer out of range
    refused."""
    flat = arr.reshape(-1)
    for i, v in enumerate(flat):
        if not isinstance(v, (int, float, np.number, np.bool_)):
            raise input_error(f"input `{name}` holds {type(v).__name__} values, the program declares {want}")
    if want.kind != "f":
        info = np.iinfo(want) if want.kind in "iu" else None
        for i, v in enumerate(flat):
            if not isinstance(v, (int, np.integer)):
                raise input_error(f"input `{name}` holds {type(v).__name__} values, the program declares {want}")
            if info is not None and not info.min <= int(v) <= info.max:
                raise _out_of_range(name, int(v), _at(arr, i), want)
        return np.asarray(arr.astype(want), order="C")
    out = np.empty(arr.shape, dtype=want)
    outflat = out.reshape(-1)
    for i, v in enumerate(flat):
        try:
            with np.errstate(all="ignore"):
                f = want.type(v)
        except OverflowError:
            f = want.type(np.inf)
        integer = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
        exact = bool(np.isfinite(f)) and int(f) == int(v) if integer else bool(np.isfinite(f) or not np.isfinite(v))
        if not exact:
            raise _out_of_range(name, v, _at(arr, i), want)
        outflat[i] = f
    return out


def _int_to_float(have: np.dtype, want: np.dtype) -> bool:
    """Whether ``have`` to ``want`` is integers to floats that NumPy calls safe but that are
    exact for some values only (``int64`` or ``uint64`` to ``float64``: 53 bits of mantissa),
    so the values decide. Pairs NumPy does not call safe (``int32`` to ``float32``) are
    refused by their dtypes, as the command line refuses them."""
    if have.kind not in "iu" or want.kind != "f" or not np.can_cast(have, want, "safe"):
        return False
    bits = have.itemsize * 8 - (have.kind == "i")
    return bits > np.finfo(want).nmant + 1


def _check_values(name: str, arr: np.ndarray, want: np.dtype) -> None:
    """Refuses ``arr`` as ``want`` unless every value converts exactly (integers, to integers
    or to floats) or within the range (floats to a narrower float: rounding is allowed,
    overflow to infinity is not). Names the first value that does not."""
    have = arr.dtype
    if have == want or have.kind == "b" or arr.size == 0:
        return
    with np.errstate(all="ignore"):
        conv = arr.astype(want)
        if have.kind == "f":
            bad = np.isinf(conv) & np.isfinite(arr)
        elif want.kind in "iub":
            bad = conv.astype(have) != arr
        else:
            # an integer as a float: exact when it comes back the same, compared as integers
            # (the float rounded past the integer type's range cannot come back)
            info = np.iinfo(have)
            inside = (conv >= float(info.min)) & (conv < float(info.max + 1))
            bad = ~inside | (np.where(inside, conv, 0).astype(have) != arr)
    if not bad.any():
        return
    i = int(np.flatnonzero(bad.reshape(-1))[0])
    v = arr.reshape(-1)[i]
    raise _out_of_range(name, v.item(), _at(arr, i), want, conv.reshape(-1)[i].item())


def _at(arr: np.ndarray, flat: int) -> str:
    """`` at [i, j]`` for element ``flat`` of ``arr``, nothing for a scalar."""
    return "" if arr.ndim == 0 else f" at {list(map(int, np.unravel_index(flat, arr.shape)))}"


def _out_of_range(name: str, value: Any, at: str, want: np.dtype, became: Any = None) -> Exception:
    """The ``InputError`` for a value that ``want`` does not hold."""
    if want.kind == "f" and isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        what = f"is not exactly a {want}" + (f" (it would become {became!r})" if became is not None else "")
        fix = f"round it first (`float(v)`, `.astype(np.{want.name})`) to accept the rounding"
    elif want.kind == "f":
        what = f"is out of the range of {want} (largest {np.finfo(want).max!r})"
        fix = "inf and nan are accepted as they are"
    else:
        info = np.iinfo(want)
        what = f"does not fit {want} ({info.min} to {info.max})"
        fix = "declare a wider type"
    return input_error(f"input `{name}`: the value {value!r}{at} {what}; {fix}")


def _valid_bools(arr: np.ndarray) -> np.ndarray:
    """``arr``, or for a ``bool`` array holding bytes other than 0 and 1 (a view of other
    data, ``np.uint8`` viewed as ``np.bool_``) a copy with each nonzero byte made ``True``:
    Rust's ``bool`` is one of those two bytes, and reads any other wrongly. A valid array,
    the usual case, is checked in one vectorised pass and passed as it is."""
    if arr.dtype == np.bool_ and arr.size and bool(np.any(arr.view(np.uint8) > 1)):
        return np.ascontiguousarray(arr.view(np.uint8) != 0)
    return arr


def _check_cast(name: str, have: np.dtype, want: np.dtype) -> None:
    """Refuses a conversion from ``have`` to ``want`` that may lose precision or range for
    some values (NumPy's ``safe`` casts but integers to floats that are not always exact)."""
    if not np.can_cast(have, want, "safe") or _int_to_float(have, want):
        raise input_error(
            f"input `{name}` is {have}, the program declares {want}; converting would lose "
            f"precision or range, so eqfuse does not: pass `{name}.astype(np.{want.name})` to convert"
        )


class Program:
    """A program compiled by :func:`compile`: parsed, checked and optimised once, run as
    often as you like by calling it."""

    def __init__(self, native: Any, fast_math: bool) -> None:
        self._native = native
        self.fast_math = fast_math
        self.inputs: dict[str, Arg] = _args((n, t) for n, t in native.inputs())
        """The inputs in declaration order, by name."""
        self.outputs: dict[str, Arg] = _args((n, t) for n, t in native.outputs())
        """The outputs in program order, by name."""

    @property
    def backend(self) -> str:
        """Where the plan runs: ``"cpu"``, ``"cuda"`` or ``"reference"``."""
        return self._native.backend

    @property
    def source(self) -> str:
        """The program's ``.eqf`` text."""
        return self._native.source

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Runs the program. Inputs by name, or positionally in declaration order; sizes
        come from their shapes. Returns a dict from output name to a NumPy array (a NumPy
        scalar for a 0-d output). The GIL is released while the plan runs."""
        names = list(self.inputs)
        if len(args) > len(names):
            raise input_error(f"{len(args)} inputs given positionally, the program has {len(names)}")
        given: dict[str, Any] = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in given:
                raise input_error(f"input `{k}` is given twice (positionally and by name)")
            given[k] = v
        arrays = {}
        for k, v in given.items():
            arg = self.inputs.get(k)
            # an unknown name goes through as it is: the run names it with the known ones
            arrays[k] = v if arg is None else _convert(k, v, arg.dtype)
        try:
            out = self._native.run(arrays)
        except _eqfuse.RawError as e:
            err = from_code(*e.args)
        else:
            return {k: (v[()] if v.ndim == 0 else v) for k, v in out.items()}
        # raised outside the handler, so that it carries no context (the internal RawError):
        # it pickles anywhere, Dask's workers included
        raise err

    def explain(self) -> dict[str, Any]:
        """``eqfuse explain --json``: the kernels, what fused, what is written to memory,
        the predicted time."""
        return json.loads(self._native.explain_json())

    def explain_text(self) -> str:
        """``eqfuse explain``: the same, as text."""
        return self._native.explain_text()

    def __repr__(self) -> str:
        ins = ", ".join(f"{a.name}: {a.dtype}{list(a.shape) if a.shape else ''}" for a in self.inputs.values())
        outs = ", ".join(self.outputs)
        return f"<eqfuse.Program ({ins}) -> ({outs}) on {self.backend}>"

    def __reduce__(self):  # picklable: Dask ships programs to worker processes
        return (_recompile, (self.source, self.fast_math, self.backend))

    def __dask_tokenize__(self):  # the same program is the same task input
        return ("eqfuse.Program", self.source, self.fast_math, self.backend)


class ProgramNotFoundError(Error, FileNotFoundError):
    """``E-INPUT``: :func:`compile` was given the path of an ``.eqf`` file that does not
    exist (also a ``FileNotFoundError``; ``filename`` is the path)."""

    def __init__(self, path: str, message: str | None = None, rendered: str | None = None) -> None:
        if message is None:
            full = os.path.abspath(path)
            message = f"the program file {path} does not exist (looked for {full}, relative to {os.getcwd()})"
        Error.__init__(self, "E-INPUT", message, rendered)
        self.filename = path
        self.code = "E-INPUT"

    def __str__(self) -> str:
        return self.rendered

    def __reduce__(self):
        return (type(self), (self.filename, self.message, self.rendered))


def _is_path(source: Any) -> bool:
    """Whether ``compile`` reads ``source`` as a file's path rather than as text."""
    if isinstance(source, os.PathLike):
        return True
    if not isinstance(source, str) or "\n" in source:
        return False
    return source.strip().endswith(".eqf") or os.path.isfile(source)


@functools.lru_cache(maxsize=64)
def _recompile(source: str, fast_math: bool, backend: str) -> Program:
    """A pickled program, compiled again where it is unpickled (once per process)."""
    return compile(source, fast_math=fast_math, backend=backend)


def compile(source: str | os.PathLike[str], *, fast_math: bool = False, backend: str = "auto") -> Program:
    """Parses, checks and optimises an ``.eqf`` program, once.

    ``source`` is the program's text, or a path to an ``.eqf`` file, relative to the current
    directory: a ``pathlib.Path`` (any ``os.PathLike``), a one-line ``str`` ending in
    ``.eqf``, or a one-line ``str`` naming a file that exists. A path whose file is missing
    raises :class:`ProgramNotFoundError` (an ``InputError``-coded ``FileNotFoundError``)
    naming it; any other ``str`` is the program's text. ``fast_math`` turns on the rewrites that change
    float results; ``backend`` is ``"auto"`` (the GPU where there is one, else the CPU),
    ``"cpu"``, ``"cuda"`` or ``"reference"`` (the interpreter, the oracle).

    Raises :class:`ParseError`, :class:`TypeCheckError` or :class:`ShapeError` for a program
    that is not valid, with the message the command line prints.
    """
    file = "<source>"
    if _is_path(source):
        file = os.fspath(source)
        try:
            with open(file, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            raise ProgramNotFoundError(file) from None
        except OSError as e:
            raise input_error(f"cannot read the program {file}: {e.strerror}") from None
    elif isinstance(source, str):
        text = source
    else:
        raise TypeError(f"eqfuse.compile takes the program's text or a path, not {type(source).__name__}")
    try:
        native = _eqfuse.compile(text, file, fast_math=fast_math, backend=backend)
    except _eqfuse.RawError as e:
        err = from_code(*e.args)
    else:
        return Program(native, fast_math)
    raise err


# the NumPy front end: eqfuse.numpy, eqfuse.jit and the loops (imported last: they use
# compile above)
from . import numpy  # noqa: E402
from ._trace.errors import TraceError  # noqa: E402
from ._trace.jit import jit  # noqa: E402
from ._trace.loops import fori_loop, while_loop  # noqa: E402
