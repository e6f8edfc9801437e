"""The typical functions of python/tests/jit_functions.py timed under eqfuse.jit,
jax.jit (where JAX is importable) and plain NumPy, in one run; prints a Markdown table
(the one in docs/python.md). A benchmark, not a test: nothing is asserted but that the
three agree.

    python python/bench/jit_bench.py [--n 20000] [--reps 7] [--only softmax,attention]

Each function is called once to compile (eqfuse: trace, optimise, C compiler; JAX: XLA),
then timed ``--reps`` times; the table shows the median per call in milliseconds, and the
compile time of the first call.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

import eqfuse  # noqa: E402
import eqfuse.numpy as enp  # noqa: E402
from jit_functions import FUNCTIONS  # noqa: E402

try:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
except Exception:  # noqa: BLE001 - no JAX: its column is left empty
    jax = None


def _median_ms(call, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def _block(out):
    leaves = out if isinstance(out, (tuple, list)) else [out]
    for v in leaves:
        if hasattr(v, "block_until_ready"):
            v.block_until_ready()
    return out


def _agree(a, b) -> bool:
    a = a if isinstance(a, (tuple, list)) else [a]
    b = b if isinstance(b, (tuple, list)) else [b]
    return all(np.allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=1e-3, atol=1e-4, equal_nan=True) for x, y in zip(a, b))


def bench_one(name, fn, make, n: int, reps: int) -> dict:
    args = make(np.random.default_rng(1), n)
    row = {"name": name, "shape": " ".join("x".join(map(str, np.shape(a))) for a in args)}
    want = fn(np, *args)
    row["numpy"] = _median_ms(lambda: fn(np, *args), reps)
    f = eqfuse.jit(lambda *a: fn(enp, *a))
    t = time.perf_counter()
    got = f(*args)
    row["eqfuse_compile"] = (time.perf_counter() - t) * 1e3
    row["ok"] = _agree(got, want)
    row["eqfuse"] = _median_ms(lambda: f(*args), reps)
    if jax is not None:
        try:
            g = jax.jit(lambda *a: fn(jnp, *a))
            jargs = [jnp.asarray(a) for a in args]
            t = time.perf_counter()
            _block(g(*jargs))
            row["jax_compile"] = (time.perf_counter() - t) * 1e3
            row["jax"] = _median_ms(lambda: _block(g(*jargs)), reps)
        except Exception as e:  # noqa: BLE001 - a function JAX cannot jit (a boolean mask)
            row["jax_error"] = type(e).__name__
    return row


def table(rows: list[dict]) -> str:
    out = [
        "| function | shapes | NumPy ms | eqfuse ms | JAX ms | eqfuse vs NumPy | eqfuse vs JAX | eqfuse compile ms | JAX compile ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        jx = r.get("jax")
        out.append(
            f"| {r['name']}{'' if r['ok'] else ' (differs!)'} | {r['shape']} | {r['numpy']:.3f} | {r['eqfuse']:.3f} | "
            + (f"{jx:.3f}" if jx is not None else r.get("jax_error", "–"))
            + f" | {r['numpy'] / r['eqfuse']:.2f}× | "
            + (f"{jx / r['eqfuse']:.2f}×" if jx is not None else "–")
            + f" | {r['eqfuse_compile']:.0f} | "
            + (f"{r['jax_compile']:.0f}" if "jax_compile" in r else "–")
            + " |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    rows = []
    for name, fn, make in FUNCTIONS:
        if only and name not in only:
            continue
        rows.append(bench_one(name, fn, make, a.n, a.reps))
        print(f"{name}: done", file=sys.stderr, flush=True)
    print(f"n = {a.n}, median of {a.reps} calls; JAX {'%s' % jax.__version__ if jax else 'not importable'}, NumPy {np.__version__}")
    print(table(rows))
    ahead = sum(1 for r in rows if r["eqfuse"] < r["numpy"])
    print(f"\neqfuse faster than NumPy on {ahead} of {len(rows)}", end="")
    if jax is not None:
        aj = sum(1 for r in rows if "jax" in r and r["eqfuse"] < r["jax"])
        print(f", faster than JAX on {aj} of {sum(1 for r in rows if 'jax' in r)}", end="")
    print()


if __name__ == "__main__":
    main()
