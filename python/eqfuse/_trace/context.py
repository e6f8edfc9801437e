"""The program being traced: its inputs, its bindings (one scope per loop body being
traced), which input sizes must be equal, and its ``.eqf`` text."""

from __future__ import annotations

import re
import threading

import numpy as np

from .dtypes import eqf_type
from .errors import set_function_provider, trace_error
from .sizes import SymInt

_local = threading.local()


class Scope:
    """Bindings written at one level: the program's top level, or a loop body (whose
    bindings become ``let ... in`` and which ends with the body's value)."""

    def __init__(self, top: bool) -> None:
        self.top = top
        self.lines: list[tuple[str, str]] = []
        self.closed = False

    def render_body(self, value: str) -> str:
        """The scope's bindings then ``value``, as one expression."""
        lets = "".join(f"let {p} = {e} in\n" for p, e in self.lines)
        return f"{lets}{value}"


class Trace:
    """One traced program."""

    def __init__(self, function: str) -> None:
        self.function = function
        self.inputs: list[tuple[str, np.dtype, tuple]] = []
        self.sizes: set[str] = set()
        self.size_order: list[str] = []  # declaration order: the first of equal sizes names them
        self.fixed: dict[str, int] = {}  # a size (by its representative) equal to a constant
        self.parent: dict[str, str] = {}
        self.scopes = [Scope(top=True)]
        self.counter = 0
        self.outputs: list[tuple[str, str]] = []
        self.constants: dict[str, np.ndarray] = {}

    # names -------------------------------------------------------------------------
    def fresh(self, prefix: str = "_t") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    @property
    def scope(self) -> Scope:
        return self.scopes[-1]

    def bind(self, expr: str) -> str:
        """Binds ``expr`` to a fresh name in the current scope; returns the name."""
        name = self.fresh()
        self.scope.lines.append((name, expr))
        return name

    def bind_pattern(self, names: list[str], expr: str) -> None:
        pat = names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
        self.scope.lines.append((pat, expr))

    # inputs --------------------------------------------------------------------------
    def add_input(self, name: str, dtype: np.dtype, shape: tuple[int, ...], ones_only: bool = True) -> tuple:
        """Declares an input; each dimension a size name (``NAME_d0``) unless it is 1 (a
        literal, so that it broadcasts), or every dimension literal for a constant.
        Returns the dimensions."""
        eqf_type(dtype, f"the argument `{name}`")
        dims = []
        for k, n in enumerate(shape):
            if n == 1 or not ones_only:
                dims.append(SymInt.of(n))
            else:
                s = f"{name}_d{k}"
                self.sizes.add(s)
                self.size_order.append(s)
                dims.append(SymInt.of(s))
        self.inputs.append((name, np.dtype(dtype), tuple(dims)))
        return tuple(dims)

    def add_constant(self, value: np.ndarray) -> str:
        """A NumPy array the function uses as a constant: an input of literal shape whose
        value the compiled function passes on every call."""
        for name, v in self.constants.items():
            if v is value:
                return name
        name = self.fresh("_c")
        self.constants[name] = value
        return name

    # sizes that must agree -----------------------------------------------------------
    def find(self, s: str) -> str:
        while self.parent.get(s, s) != s:
            s = self.parent[s]
        return s

    def canon(self, d: SymInt) -> SymInt:
        return d.subst(lambda a: self.find(a) if a in self.sizes else a)

    def same(self, a: SymInt, b: SymInt) -> bool:
        return self.canon(SymInt.of(a)).terms == self.canon(SymInt.of(b)).terms

    def same_dims(self, a, b) -> bool:
        return len(a) == len(b) and all(self.same(x, y) for x, y in zip(a, b))

    def canon_dims(self, dims) -> tuple:
        return tuple(self.canon(SymInt.of(d)) for d in dims)

    def require_equal(self, a: SymInt, b: SymInt, what: str) -> bool:
        """Records that sizes ``a`` and ``b`` are equal. Two size names become one (the run
        then checks the inputs' shapes); two different constants are NumPy's error. Returns
        whether the equality is known (else the caller must check it at run time)."""
        a, b = self.canon(a), self.canon(b)
        if a.terms == b.terms:
            return True
        ca, cb = a.const, b.const
        if ca is not None and cb is not None:
            raise ValueError(f"{what}: sizes {ca} and {cb} do not match")
        la, lb = _name(a, self.sizes), _name(b, self.sizes)
        if (la and cb is not None) or (lb and ca is not None):
            # a size that must equal a constant (a constant array's): the input declares it
            name, value = (la, cb) if la else (lb, ca)
            if self.fixed.setdefault(name, value) != value:
                raise ValueError(f"{what}: sizes {self.fixed[name]} and {value} do not match")
            return True
        if la and lb:
            ra, rb = sorted((la, lb), key=self.size_order.index)
            self.parent[rb] = ra
            if rb in self.fixed:
                fb = self.fixed.pop(rb)
                if self.fixed.setdefault(ra, fb) != fb:
                    raise ValueError(f"{what}: sizes {self.fixed[ra]} and {fb} do not match")
            return True
        return False

    # text ----------------------------------------------------------------------------
    def render(self) -> str:
        lines = [f"-- traced from {self.function} by eqfuse.jit"]
        for name, dt, dims in self.inputs:
            shape = "[" + ", ".join(d.text() for d in dims) + "]" if dims else ""
            lines.append(f"input {name} : {eqf_type(dt)}{shape}")
        for name, v in self.constants.items():
            shape = "[" + ", ".join(str(n) for n in v.shape) + "]" if v.ndim else ""
            lines.append(f"input {name} : {eqf_type(v.dtype)}{shape}")
        for p, e in self.scopes[0].lines:
            lines.append(f"let {p} = {e}")
        for name, e in self.outputs:
            lines.append(f"output {name} = {e}")
        text = "\n".join(lines) + "\n"
        renames = {s: self.find(s) for s in self.sizes if self.find(s) != s}
        renames.update({s: str(self.fixed[self.find(s)]) for s in self.sizes if self.find(s) in self.fixed})
        if renames:
            pat = re.compile(r"\b(" + "|".join(map(re.escape, renames)) + r")\b")
            text = pat.sub(lambda m: renames[m.group(1)], text)
        return text


def _name(d: SymInt, sizes: set) -> str | None:
    if len(d.terms) == 1:
        (m, c), = d.terms.items()
        if c == 1 and len(m) == 1 and m[0] in sizes:
            return m[0]
    return None


def current() -> Trace | None:
    """The trace in progress on this thread, if any."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


def current_function() -> str | None:
    t = current()
    return t.function if t else None


set_function_provider(current_function)


class tracing:
    """``with tracing(trace):`` makes ``trace`` the current one."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def __enter__(self) -> Trace:
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(self.trace)
        return self.trace

    def __exit__(self, *exc) -> None:
        _local.stack.pop()


def need_trace(what: str) -> Trace:
    t = current()
    if t is None:
        raise trace_error(what, "traced arrays exist only while eqfuse.jit traces a function")
    return t
