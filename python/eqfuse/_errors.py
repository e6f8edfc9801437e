"""The exceptions eqfuse raises: one class per stable error code."""

from __future__ import annotations


class Error(Exception):
    """An eqfuse error. ``code`` is the stable code (``"E-INDEX"``, ...), ``message`` what is
    wrong, and ``str(err)`` the text the command line prints (with the program text quoted
    where the error points at it)."""

    code: str = ""

    def __init__(self, code: str, message: str, rendered: str | None = None) -> None:
        self.code = code
        self.message = message
        self.rendered = (rendered or f"error[{code}]: {message}").rstrip("\n")
        super().__init__(self.rendered)

    def __str__(self) -> str:
        return self.rendered

    def __reduce__(self):  # picklable, for Dask's worker processes
        return (type(self), (self.code, self.message, self.rendered))


class ParseError(Error, ValueError):
    """``E-PARSE``: the text is not a program."""


class TypeCheckError(Error, TypeError):
    """``E-TYPE``: an expression has the wrong type, a name is unbound, a builtin gets the
    wrong arguments."""


class ShapeError(Error, ValueError):
    """``E-SHAPE``: shapes that must agree do not."""


class InputError(Error, ValueError):
    """``E-INPUT``: an input is missing, unknown, or of the wrong dtype or rank."""


class BoundsError(Error, IndexError):
    """``E-INDEX``: an index, slice or permute target out of bounds."""


class DivisionByZeroError(Error, ZeroDivisionError):
    """``E-DIV-ZERO``: integer division or remainder by zero."""


class LimitError(Error, MemoryError):
    """``E-LIMIT``: a resource limit was hit (memory, a size that overflows ``i64``)."""


class DeviceError(Error, RuntimeError):
    """``E-DEVICE``: the GPU failed, or the backend named is not available."""


class OutputError(Error, OSError):
    """``E-OUTPUT``: an output file cannot be written; no output file was changed."""


BY_CODE: dict[str, type[Error]] = {
    "E-PARSE": ParseError,
    "E-TYPE": TypeCheckError,
    "E-SHAPE": ShapeError,
    "E-INPUT": InputError,
    "E-INDEX": BoundsError,
    "E-DIV-ZERO": DivisionByZeroError,
    "E-LIMIT": LimitError,
    "E-DEVICE": DeviceError,
    "E-OUTPUT": OutputError,
}


def from_code(code: str, message: str, rendered: str | None = None) -> Error:
    """The exception for ``code``."""
    return BY_CODE.get(code, Error)(code, message, rendered)


def input_error(message: str) -> InputError:
    """An ``E-INPUT`` error raised by the Python half (argument conversion)."""
    return InputError("E-INPUT", message)
