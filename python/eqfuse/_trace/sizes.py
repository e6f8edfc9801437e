"""Symbolic sizes: the dimensions of traced arrays, polynomials in the size names.

A compiled program serves every shape, so a traced array's dimensions are expressions in
the input size names (``x_d0``, ``x_d0 - 2``, ``x_d0 * x_d1``) rather than numbers.
``SymInt`` keeps them as integer polynomials (so ``(n - 1) - 1`` and ``n - 2`` compare
equal) whose atoms are size names or opaque ``.eqf`` expressions (``(length _t3)``).
"""

from __future__ import annotations

from typing import Union

import numpy as np

from .errors import trace_error

Monomial = tuple  # sorted tuple of atom names; () is the constant term


class SymInt:
    """An integer size: a polynomial with ``int`` coefficients over atoms."""

    __slots__ = ("terms",)

    def __init__(self, terms: dict) -> None:
        self.terms = {m: c for m, c in terms.items() if c != 0}

    @staticmethod
    def of(value: Union[int, "SymInt", str]) -> "SymInt":
        """A size from an ``int``, a ``SymInt`` or an atom's text."""
        if isinstance(value, SymInt):
            return value
        if isinstance(value, str):
            return SymInt({(value,): 1})
        return SymInt({(): int(value)})

    @property
    def const(self) -> int | None:
        """The value when the size is a constant, else ``None``."""
        if not self.terms:
            return 0
        if list(self.terms) == [()]:
            return self.terms[()]
        return None

    def atoms(self) -> set:
        """The atom names the size depends on."""
        return {a for m in self.terms for a in m}

    def subst(self, f) -> "SymInt":
        """The size with each atom ``a`` replaced by the atom ``f(a)``."""
        out: dict = {}
        for m, c in self.terms.items():
            m2 = tuple(sorted(f(a) for a in m))
            out[m2] = out.get(m2, 0) + c
        return SymInt(out)

    def __add__(self, other):
        o = _sym(other)
        if o is None:
            return NotImplemented
        out = dict(self.terms)
        for m, c in o.terms.items():
            out[m] = out.get(m, 0) + c
        return SymInt(out)

    __radd__ = __add__

    def __neg__(self):
        return SymInt({m: -c for m, c in self.terms.items()})

    def __sub__(self, other):
        o = _sym(other)
        return NotImplemented if o is None else self + (-o)

    def __rsub__(self, other):
        o = _sym(other)
        return NotImplemented if o is None else o + (-self)

    def __mul__(self, other):
        o = _sym(other)
        if o is None:
            return NotImplemented
        out: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in o.terms.items():
                m = tuple(sorted(m1 + m2))
                out[m] = out.get(m, 0) + c1 * c2
        return SymInt(out)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        o = _sym(other)
        if o is None:
            return NotImplemented
        exact = self.exact_div(o)
        if exact is not None:
            return exact
        return SymInt.of(f"({self.paren()} / {o.paren()})")

    def __rfloordiv__(self, other):
        o = _sym(other)
        return NotImplemented if o is None else o // self

    def __mod__(self, other):
        o = _sym(other)
        if o is None:
            return NotImplemented
        if self.const is not None and o.const is not None and o.const != 0:
            return SymInt.of(self.const % o.const)
        return SymInt.of(f"({self.paren()} % {o.paren()})")

    def exact_div(self, o: "SymInt") -> "SymInt | None":
        """``self / o`` when ``o`` is one monomial dividing every term exactly, else None."""
        if len(o.terms) != 1:
            return None
        (dm, dc), = o.terms.items()
        out = {}
        for m, c in self.terms.items():
            rest = list(m)
            for a in dm:
                if a not in rest:
                    return None
                rest.remove(a)
            if c % dc:
                return None
            out[tuple(rest)] = c // dc
        return SymInt(out)

    def __eq__(self, other):
        o = _sym(other)
        return NotImplemented if o is None else self.terms == o.terms

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    def text(self) -> str:
        """The size as an ``.eqf`` ``i64`` expression."""
        if not self.terms:
            return "0"
        order = sorted(self.terms, key=lambda m: (m == (), -len(m), m))
        parts = []
        for i, m in enumerate(order):
            c = self.terms[m]
            body = " * ".join(m) if m else str(abs(c))
            if m and abs(c) != 1:
                body = f"{abs(c)} * {body}"
            if i == 0:
                parts.append(body if c > 0 else f"-{body}" if m else f"(-{body})")
            else:
                parts.append(("+ " if c > 0 else "- ") + body)
        return " ".join(parts)

    def paren(self) -> str:
        """``text()`` in parentheses unless it is one atom or a non-negative constant."""
        t = self.text()
        simple = len(self.terms) == 1 and (
            (self.const is not None and self.const >= 0) or list(self.terms.values()) == [1] and len(next(iter(self.terms))) == 1
        )
        return t if simple else f"({t})"

    def __repr__(self) -> str:
        return f"SymInt({self.text()})"

    def __str__(self) -> str:
        return self.text()

    def _refuse(self, what: str):
        raise trace_error(
            f"{what} of the size `{self.text()}`",
            "sizes are symbolic under eqfuse.jit (one compilation serves every shape); compute with "
            "the size as an array value (`x.shape[0] * 2.0`, `eqfuse.numpy.arange(x.shape[0])`) and loop "
            "with eqfuse.fori_loop instead of `range`",
        )

    def __index__(self):
        if self.const is not None:
            return self.const
        self._refuse("int()")

    __int__ = __index__

    def __float__(self):
        if self.const is not None:
            return float(self.const)
        self._refuse("float()")

    def __bool__(self):
        if self.const is not None:
            return self.const != 0
        self._refuse("bool()")

    def _compare(self, other, op: str):
        o = _sym(other)
        if o is None:
            return NotImplemented
        d = (self - o).const
        if d is None:
            if op in ("==", "!=") and isinstance(other, int) and other == 1:
                # a size traced as not 1 stays not 1: the cache key holds which sizes are 1
                return op == "!="
            self._refuse(f"the comparison `{op}`")
        return {"==": d == 0, "!=": d != 0, "<": d < 0, "<=": d <= 0, ">": d > 0, ">=": d >= 0}[op]

    def __lt__(self, other):
        return self._compare(other, "<")

    def __le__(self, other):
        return self._compare(other, "<=")

    def __gt__(self, other):
        return self._compare(other, ">")

    def __ge__(self, other):
        return self._compare(other, ">=")

    def __ne__(self, other):
        r = self._compare(other, "!=")
        return r


# equality on sizes is structural; `==` with an int that is not decided is refused
def _eq(self, other):
    o = _sym(other)
    if o is None:
        return NotImplemented
    if self.terms == o.terms:
        return True
    return self._compare(other, "==")


SymInt.__eq__ = _eq  # type: ignore[method-assign]
SymInt.__hash__ = lambda self: hash(tuple(sorted(self.terms.items())))  # type: ignore[method-assign]


def _sym(v) -> SymInt | None:
    if isinstance(v, SymInt):
        return v
    if isinstance(v, bool):
        return SymInt.of(int(v))
    if isinstance(v, int) or _np_int(v):
        return SymInt.of(int(v))
    return None


def _np_int(v) -> bool:
    return isinstance(v, np.integer)


def smax(a, b) -> SymInt:
    """``max a b`` of two sizes (a number where both are)."""
    a, b = SymInt.of(a), SymInt.of(b)
    if a.const is not None and b.const is not None:
        return SymInt.of(max(a.const, b.const))
    d = (a - b).const
    if d is not None:
        return a if d >= 0 else b
    return SymInt.of(f"(max {a.paren()} {b.paren()})")


def smin(a, b) -> SymInt:
    """``min a b`` of two sizes."""
    a, b = SymInt.of(a), SymInt.of(b)
    if a.const is not None and b.const is not None:
        return SymInt.of(min(a.const, b.const))
    d = (a - b).const
    if d is not None:
        return a if d <= 0 else b
    return SymInt.of(f"(min {a.paren()} {b.paren()})")


def dim(v) -> "int | SymInt":
    """What ``shape`` shows for a size: an ``int`` where it is a constant."""
    c = v.const
    return c if c is not None else v
