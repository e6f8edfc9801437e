"""``eqfuse.jit``: trace a function once per argument signature into one ``.eqf``
program, compile it once, and run it on every call with that signature.

The signature (the cache key) is, per array argument, its dtype, its rank and which of
its dimensions are 1 (NumPy's broadcasting depends on those), and every other argument
by value (a Python number is a constant of the program). Sizes are not in it: the
program declares them by name (``input x : f32[x_d0, x_d1]``), so one compilation serves
every shape."""

from __future__ import annotations

import functools
import inspect
import re
import threading
from typing import Any, Callable

import numpy as np

from .context import Trace, tracing
from .dtypes import EQF_TYPE, I64
from .elementwise import apply
from .errors import trace_error
from .pytree import flatten, unflatten
from .sizes import SymInt
from .tracer import Tracer

_EQF_KEYWORDS = {"input", "output", "let", "in", "if", "then", "else", "fn", "true", "false", "inf", "loop", "for", "while", "do"}
# the language's builtins (ir/src/ast.rs): an input of that name would shadow the builtin
# the traced program calls
_EQF_BUILTINS = set(
    "map generate iota fill reduce scan scan_exclusive filter gather backpermute permute transpose reverse "
    "reshape slice concat sum prod mean all any dot argmin argmax reduce_segments scan_segments min max abs "
    "sqrt exp log sin cos tan tanh floor ceil round pow atan2 clamp f32 f64 i32 i64 iterate length size i8 "
    "i16 u8 u16 u32 u64 bool popcount clz isnan isinf log2 log10 exp2 expm1 log1p erf erfc lgamma pi".split()
)


def _is_array(v) -> bool:
    return isinstance(v, (np.ndarray, np.generic)) and np.dtype(v.dtype) in EQF_TYPE


def _leaf_key(v) -> Any:
    if _is_array(v):
        arr = np.asarray(v)
        return ("array", arr.dtype.str, arr.ndim, tuple(n == 1 for n in arr.shape))
    if isinstance(v, (np.ndarray, np.generic)):
        return ("array", np.asarray(v).dtype.str)  # refused when traced, with its dtype
    try:
        hash(v)
    except TypeError:
        return ("object", id(v))
    return ("value", type(v), v)


def _input_name(path: str, taken: set) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", path).strip("_") or "arg"
    if not re.match(r"[A-Za-z]", name) or name in _EQF_KEYWORDS | _EQF_BUILTINS or re.search(r"_d\d+$", name):
        name = "arg_" + name
    base, k = name, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    taken.add(name)
    return name


class _Compiled:
    """One signature's program: which argument leaves are its inputs, its constants, and
    how to rebuild the function's result from the program's outputs."""

    def __init__(self, program, inputs, constants, out_struct, out_leaves, source) -> None:
        self.program = program
        self.inputs = inputs  # (leaf index, input name)
        self.constants = constants
        self.out_struct = out_struct
        self.out_leaves = out_leaves  # per output leaf: ("out", name) or ("const", value)
        self.source = source

    def __call__(self, leaves: list):
        given = {name: leaves[i] for i, name in self.inputs}
        given.update(self.constants)
        res = self.program(**given) if given or self.program.inputs else self.program()
        outs = [res[v] if kind == "out" else v for kind, v in self.out_leaves]
        outs = [np.asarray(o) if isinstance(o, (list, tuple)) else o for o in outs]
        return unflatten(self.out_struct, outs)


class Jitted:
    """A function compiled by :func:`eqfuse.jit`."""

    def __init__(self, fun: Callable, backend: str, fast_math: bool) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.backend = backend
        self.fast_math = fast_math
        self.compilations = 0
        """How many programs this function has compiled (one per signature)."""
        self._cache: dict = {}
        self._lock = threading.Lock()
        try:
            self._params = list(inspect.signature(fun).parameters)
        except (TypeError, ValueError):
            self._params = []

    def _key(self, args, kwargs):
        leaves, struct = flatten((tuple(args), dict(kwargs)))
        return leaves, struct, (struct_key(struct), tuple(_leaf_key(v) for v in leaves))

    def __call__(self, *args, **kwargs):
        leaves, struct, key = self._key(args, kwargs)
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:
                entry = self._cache.get(key)
                if entry is None:
                    entry = self._compile(leaves, struct)
                    self._cache[key] = entry
        return entry(leaves)

    def source(self, *args, **kwargs) -> str:
        """The ``.eqf`` program the call with these arguments runs (compiled if new)."""
        leaves, struct, key = self._key(args, kwargs)
        if key not in self._cache:
            self(*args, **kwargs)
        return self._cache[key].source

    def _paths(self, struct) -> list[str]:
        """A readable name per argument leaf (the parameter's name, ``x_0`` inside a tuple)."""
        out: list[str] = []
        _, (args_s, kwargs_s) = struct

        def walk(s, path):
            if s is None:
                out.append(path)
            elif s[0] is dict:
                for k, sub in zip(s[1], s[2]):
                    walk(sub, f"{path}_{k}")
            else:
                for i, sub in enumerate(s[1]):
                    walk(sub, f"{path}_{i}")

        for i, s in enumerate(args_s[1]):
            walk(s, self._params[i] if i < len(self._params) else f"arg{i}")
        for k, s in zip(kwargs_s[1], kwargs_s[2]):
            walk(s, str(k))
        return out

    def _compile(self, leaves: list, struct) -> _Compiled:
        from .. import compile as eqf_compile

        trace = Trace(getattr(self.fun, "__qualname__", repr(self.fun)))
        taken: set = set()
        inputs, traced = [], []
        for i, (v, path) in enumerate(zip(leaves, self._paths(struct))):
            if isinstance(v, (np.ndarray, np.generic)):
                arr = np.asarray(v)
                name = _input_name(path, taken)
                with tracing(trace):
                    dims = trace.add_input(name, arr.dtype, arr.shape)
                traced.append(Tracer(trace, name, arr.dtype, dims))
                inputs.append((i, name))
            else:
                traced.append(v)
        with tracing(trace):
            args, kwargs = unflatten(struct, traced)
            result = self.fun(*args, **kwargs)
            out_leaves_v, out_struct = flatten(result)
            out_leaves = []
            for v in out_leaves_v:
                if isinstance(v, Tracer):
                    t = v
                elif isinstance(v, SymInt):  # a size returned as it is
                    t = _scalar(trace, v)
                else:
                    out_leaves.append(("const", v))
                    continue
                name = f"out{len(out_leaves)}"
                if t.scope is not trace.scopes[0] and t.scope.closed:
                    t.ref()  # raises: made in a loop body
                trace.outputs.append((name, t.ref()))
                out_leaves.append(("out", name))
        source = trace.render()
        program = eqf_compile(source, fast_math=self.fast_math, backend=self.backend)
        self.compilations += 1
        return _Compiled(program, inputs, trace.constants, out_struct, out_leaves, source)


def _scalar(trace, v):
    return apply("size", [v], [I64], I64, lambda t: t[0])


def struct_key(struct) -> Any:
    """A hashable form of a pytree structure (types by identity)."""
    if struct is None:
        return None
    if struct[0] is dict:
        return ("dict", tuple(map(repr, struct[1])), tuple(struct_key(s) for s in struct[2]))
    return (struct[0], tuple(struct_key(s) for s in struct[1]))


def jit(fun: Callable | None = None, *, backend: str = "auto", fast_math: bool = False):
    """Compiles ``fun``, written against :mod:`eqfuse.numpy`, into one eqfuse program per
    signature (dtypes, ranks, which dimensions are 1; not sizes). Use as ``@eqfuse.jit``
    or ``@eqfuse.jit(backend="cpu")``."""
    if fun is None:
        return lambda f: Jitted(f, backend, fast_math)
    if not callable(fun):
        raise trace_error(f"eqfuse.jit of a {type(fun).__name__}", "decorate a function")
    return Jitted(fun, backend, fast_math)
