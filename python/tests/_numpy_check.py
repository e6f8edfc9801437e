"""Shared by the eqfuse.numpy tests: run a function written against a module ``xp``
under NumPy and under ``eqfuse.jit`` (and ``jax.jit`` where JAX is importable), and
compare: shapes and dtypes exactly, integers and bools exactly, floats within a few ulps
(float32: rtol 1e-5; float64: rtol 1e-12)."""

from __future__ import annotations

import os
import warnings

import numpy as np

import eqfuse
import eqfuse.numpy as enp

try:  # compared where JAX is importable (benches/peers/.venv has it); never required
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
except Exception:  # noqa: BLE001 - any failure to import means: no JAX comparison
    jax = None
    jnp = None

# the large tables run on the reference interpreter (a compilation takes ~15 ms there,
# ~170 ms with the optimiser and the C compiler); EQFUSE_NUMPY_BACKEND=cpu runs them native
BACKEND = os.environ.get("EQFUSE_NUMPY_BACKEND", "reference")

TOL = {np.dtype(np.float32): dict(rtol=1e-5, atol=1e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12)}


def assert_same(got, want, what: str = "", exact_dtype: bool = True) -> None:
    """``got`` equals ``want``: same container, shape and dtype; values exactly (ints,
    bools) or within ``TOL`` (floats, NaN where NaN)."""
    if isinstance(want, (tuple, list)):
        assert isinstance(got, type(want)) and len(got) == len(want), f"{what}: {type(got)} vs {type(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{what}[{k}]", exact_dtype)
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), what
        for k in want:
            assert_same(got[k], want[k], f"{what}[{k!r}]", exact_dtype)
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, f"{what}: shape {g.shape}, NumPy gives {w.shape}"
    if exact_dtype:
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype}, NumPy gives {w.dtype}"
    if w.dtype.kind == "f" and g.dtype.kind == "f":
        tol = TOL[np.dtype(np.float32) if np.float32 in (g.dtype, w.dtype) else np.dtype(np.float64)]
        np.testing.assert_allclose(g, w, equal_nan=True, err_msg=what, **tol)
    else:
        np.testing.assert_array_equal(g, w, err_msg=what)


def run_numpy(fn, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(np, *args)


def check(fn, *args, backend: str | None = None, jax_too: bool = True):
    """``fn(xp, *args)`` under eqfuse.jit matches NumPy; where NumPy raises (a dtype it
    refuses, an overflowing constant), eqfuse raises too. Returns the jitted function."""
    try:
        want = run_numpy(fn, args)
    except (TypeError, ValueError, OverflowError, IndexError) as e:
        jitted = eqfuse.jit(lambda *a: fn(enp, *a), backend=backend or BACKEND)
        try:
            jitted(*args)
        except (TypeError, ValueError, OverflowError, IndexError, eqfuse.Error):
            return jitted
        raise AssertionError(f"NumPy raises {type(e).__name__}: {e}; eqfuse.jit did not")
    if _float16(want):
        jitted = eqfuse.jit(lambda *a: fn(enp, *a), backend=backend or BACKEND)
        try:
            jitted(*args)
        except eqfuse.TraceError as e:
            assert "float16" in str(e)
            return jitted
        raise AssertionError("NumPy gives float16, which eqfuse lacks: a TraceError was expected")
    jitted = eqfuse.jit(lambda *a: fn(enp, *a), backend=backend or BACKEND)
    got = jitted(*args)
    assert_same(got, want, getattr(fn, "__name__", "fn"))
    if jax_too and jax is not None and not any(np.asarray(a).dtype.kind == "b" for a in args):
        # (JAX's bool / bool differs from NumPy's: 0 / 0 is 0 there, NaN here)
        check_jax(fn, args, want)
    return jitted


def check_jax(fn, args, want) -> None:
    """jax.numpy's result for the same function has NumPy's values where both have the
    function (JAX's own promotion rules differ: values are compared, not dtypes, and only
    float results)."""
    leaves = want if isinstance(want, (tuple, list)) else [want]
    if not all(np.asarray(w).dtype.kind == "f" for w in leaves):
        return
    try:
        got = jax.jit(lambda *a: fn(jnp, *a))(*args)
    except Exception:  # noqa: BLE001 - a function or argument jax.numpy lacks
        return
    got = got if isinstance(got, (tuple, list)) else [got]
    for g, w in zip(got, leaves):
        g, w = np.asarray(g, dtype=np.float64), np.asarray(w, dtype=np.float64)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5, equal_nan=True)


def _float16(v) -> bool:
    leaves = v if isinstance(v, (tuple, list)) else [v]
    return any(np.asarray(x).dtype == np.float16 for x in leaves)


def data(shape, dtype, seed: int, positive: bool = False):
    """Small test data of ``dtype``: floats in [-2, 2) (or (0.1, 3)), integers in
    [-4, 5) (unsigned [0, 9)), random bools."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        v = rng.uniform(0.1, 3.0, shape) if positive else rng.uniform(-2.0, 2.0, shape)
        return np.asarray(v, dtype=dt)
    lo = 0 if dt.kind == "u" or positive else -4
    return np.asarray(rng.integers(lo, lo + 9, shape), dtype=dt)
