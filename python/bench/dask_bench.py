"""A variance, a dot product and Black-Scholes over 2^27 elements in 16 chunks, on a
`LocalCluster(n_workers=2, processes=True)`, against eqfuse in one process and NumPy; the
results must match NumPy's.

    python python/bench/dask_bench.py [--log2n 27] [--chunks 16]

Inputs are made in the workers (`dask.array.random`) and persisted before the clock starts;
the scalar results are computed, the Black-Scholes arrays persisted in the workers (what a
cluster keeps). One process: the same inputs as NumPy arrays, one call of the program.
"""

from __future__ import annotations

import argparse
import pathlib
import time

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster, wait

import eqfuse
import eqfuse.dask

REPO = pathlib.Path(__file__).resolve().parents[2]


def numpy_blackscholes(s, x, t):
    """The program's formula (the CUDA SDK sample's), in NumPy, in float64."""
    s, x, t = (a.astype(np.float64) for a in (s, x, t))
    r, v = 0.02, 0.3

    def cnd(d):
        k = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        w = 0.3989422804014327 * np.exp(-0.5 * d * d) * (
            k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429))))
        )
        return np.where(d > 0, 1.0 - w, w)

    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    e = np.exp(-r * t)
    return s * cnd(d1) - x * e * cnd(d2), x * e * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1))


def best(f, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log2n", type=int, default=27)
    ap.add_argument("--chunks", type=int, default=16)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    n = 1 << a.log2n
    chunk = n // a.chunks
    var = eqfuse.compile(REPO / "examples" / "variance.eqf", backend="cpu")
    dot = eqfuse.compile(REPO / "examples" / "dotp.eqf", backend="cpu")
    bs = eqfuse.compile(REPO / "examples" / "blackscholes.eqf", backend="cpu")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        rng = da.random.default_rng(11)
        x64 = rng.random(n, chunks=chunk)
        a32 = rng.random(n, chunks=chunk, dtype=np.float32)
        b32 = rng.random(n, chunks=chunk, dtype=np.float32)
        s = (rng.random(n, chunks=chunk, dtype=np.float32) * 25 + 5).astype(np.float32)
        k = (rng.random(n, chunks=chunk, dtype=np.float32) * 99 + 1).astype(np.float32)
        t = (rng.random(n, chunks=chunk, dtype=np.float32) * 9.75 + 0.25).astype(np.float32)
        x64, a32, b32, s, k, t = client.persist([x64, a32, b32, s, k, t])
        wait([x64, a32, b32, s, k, t])

        rows = []

        def time_var():
            out = eqfuse.dask.run(var, xs=x64)
            return dask.compute(out["m"], out["var"])

        def time_dot():
            return eqfuse.dask.run(dot, xs=a32, ys=b32)["dot"].compute()

        def time_bs():
            out = eqfuse.dask.run(bs, s=s, x=k, t=t)
            kept = client.persist([out["call"], out["put"]])
            wait(kept)
            return kept

        d_var, d_dot, d_bs = best(time_var, a.reps), best(time_dot, a.reps), best(time_bs, a.reps)
        m_d, v_d = time_var()
        dot_d = time_dot()
        call_d, put_d = (c.compute() for c in time_bs())
        # the same data in this process
        nx, na, nb, ns, nk, nt = dask.compute(x64, a32, b32, s, k, t)

    o_var = best(lambda: var(xs=nx), a.reps)
    o_dot = best(lambda: dot(xs=na, ys=nb), a.reps)
    o_bs = best(lambda: bs(s=ns, x=nk, t=nt), a.reps)
    np_var = best(lambda: (nx.mean(), nx.var()), a.reps)
    np_dot = best(lambda: np.dot(na, nb), a.reps)
    want_call, want_put = numpy_blackscholes(ns, nk, nt)
    assert np.isclose(m_d, nx.mean(), rtol=1e-12) and np.isclose(v_d, nx.var(), rtol=1e-9), (m_d, v_d)
    assert np.isclose(dot_d, np.dot(na.astype(np.float64), nb), rtol=1e-4), dot_d
    np.testing.assert_allclose(call_d, want_call, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(put_d, want_put, rtol=1e-3, atol=1e-3)
    print(f"n = 2^{a.log2n} in {a.chunks} chunks; best of {a.reps}; results match NumPy")
    print("| program | eqfuse.dask, LocalCluster(2 processes) | eqfuse, one process | NumPy, one process |")
    print("| --- | ---: | ---: | ---: |")
    for name, d, o, npt in (("variance (f64)", d_var, o_var, np_var), ("dot (f32)", d_dot, o_dot, np_dot), ("Black-Scholes (f32)", d_bs, o_bs, None)):
        nps = f"{npt * 1e3:.0f} ms" if npt is not None else "-"
        print(f"| {name} | {d * 1e3:.0f} ms | {o * 1e3:.0f} ms | {nps} |")


if __name__ == "__main__":
    main()
