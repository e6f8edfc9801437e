"""``TraceError``: what a traced function does that eqfuse cannot turn into a program."""

from __future__ import annotations

import os
import sys

from .._errors import Error

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TraceError(Error, TypeError):
    """``E-TRACE``: a function run under :func:`eqfuse.jit` does something that cannot be
    traced into one program (a data-dependent Python ``if``, a function or argument that
    :mod:`eqfuse.numpy` lacks). The message names the function, the file and line of the
    user's code, and what to use instead."""

    def __init__(self, code: str, message: str = "", rendered: str | None = None) -> None:
        if not message:  # TraceError("text"): the usual Python form
            code, message = "E-TRACE", code
        super().__init__(code, message, rendered)


class TraceAttributeError(TraceError, AttributeError):
    """A name that :mod:`eqfuse.numpy` does not have (also an ``AttributeError``, so that
    ``hasattr`` and ``getattr(xp, name, default)`` work)."""


def user_location() -> str:
    """``file:line`` of the innermost frame outside the eqfuse package: the user's line."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE_DIR + os.sep):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>"


def _no_function() -> str | None:
    return None


# the name of the function being traced, if any: set by ``context`` (which imports this
# module, not the other way round)
current_function = _no_function


def set_function_provider(provider) -> None:
    """Makes ``provider()`` the source of the traced function's name in messages."""
    global current_function
    current_function = provider


def trace_error(what: str, instead: str, cls: type[TraceError] = TraceError) -> TraceError:
    """The error for ``what`` (which names the operation), at the user's line, inside the
    function being traced, saying what to use ``instead``."""
    fn = current_function()
    inside = f" in `{fn}`" if fn else ""
    msg = f"cannot trace {what}{inside} at {user_location()}: {instead}"
    return cls("E-TRACE", msg)
