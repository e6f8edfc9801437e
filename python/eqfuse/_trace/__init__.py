"""The tracer behind :mod:`eqfuse.numpy` and :func:`eqfuse.jit`.

A function run under ``eqfuse.jit`` gets :class:`~eqfuse._trace.tracer.Tracer` arrays in
place of its NumPy arguments. Every operation on them appends a binding to an ``.eqf``
program (``context``) instead of computing anything; the finished program is compiled
once per argument signature (``jit``). Modules, each importing only those before it:
``errors``, ``sizes`` (symbolic sizes), ``dtypes`` (NumPy's dtype rules, literals,
conversions), ``context`` (the program being written), ``tracer`` (the array type),
``pytree``, ``elementwise``, ``layout`` (axes, permutations, reshapes), ``reductions``,
``shapes``, ``indexing``, ``linalg``, ``loops``, ``operators`` (the Python operators of
``Tracer``), ``jit``; ``eqfuse.numpy`` is the public face.
"""
