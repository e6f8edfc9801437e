"""`eqfuse.dask.run`: programs over chunked Dask arrays match NumPy, on the threaded
scheduler and on a `LocalCluster` of two worker processes."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import eqfuse
import eqfuse.dask
from conftest import REPO

VARIANCE = (REPO / "examples" / "variance.eqf").read_text()
DOT = (REPO / "examples" / "dotp.eqf").read_text()
BLACKSCHOLES = (REPO / "examples" / "blackscholes.eqf").read_text()


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as c:
            yield c


def _bs_inputs(n: int, chunks: int):
    rng = da.random.default_rng(7)
    s = rng.uniform(5, 30, n, chunks=chunks).astype(np.float32)
    x = rng.uniform(1, 100, n, chunks=chunks).astype(np.float32)
    t = rng.uniform(0.25, 10, n, chunks=chunks).astype(np.float32)
    return s, x, t


def _numpy_blackscholes(s, x, t):
    from math import sqrt

    s, x, t = (a.astype(np.float64) for a in (s, x, t))
    r, v = 0.02, 0.3
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    cnd = lambda d: 0.5 * (1 + np.vectorize(__import__("math").erf)(d / sqrt(2)))  # noqa: E731
    call = s * cnd(d1) - x * np.exp(-r * t) * cnd(d2)
    put = x * np.exp(-r * t) * (1 - cnd(d2)) - s * (1 - cnd(d1))
    return call, put


@pytest.mark.parametrize("on_cluster", [False, True], ids=["threads", "local-cluster"])
def test_variance_dot_and_blackscholes_match_numpy(request, on_cluster):
    if on_cluster:
        request.getfixturevalue("client")
    n, chunks = 1 << 16, 1 << 12  # 16 chunks
    xs = da.random.default_rng(3).random(n, chunks=chunks)
    out = eqfuse.dask.run(eqfuse.compile(VARIANCE), xs=xs)
    m, v = dask.compute(out["m"], out["var"])
    x = xs.compute()
    assert m == pytest.approx(x.mean(), rel=1e-12) and v == pytest.approx(x.var(), rel=1e-10)

    a = xs.astype(np.float32)
    b = da.random.default_rng(4).random(n, chunks=chunks).astype(np.float32)
    dot = eqfuse.dask.run(eqfuse.compile(DOT), xs=a, ys=b)["dot"].compute()
    assert dot == pytest.approx(float(np.dot(a.compute().astype(np.float64), b.compute())), rel=1e-5)

    s, k, t = _bs_inputs(n, chunks)
    got = eqfuse.dask.run(eqfuse.compile(BLACKSCHOLES), s=s, x=k, t=t)
    assert got["call"].chunks == s.chunks
    call, put = dask.compute(got["call"], got["put"])
    want_call, want_put = _numpy_blackscholes(*dask.compute(s, k, t))
    np.testing.assert_allclose(call, want_call, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(put, want_put, rtol=1e-3, atol=1e-3)


def test_scans_carry_across_blocks(client):
    p = eqfuse.compile("input xs : i64[n]\noutput s = scan (+) 0 xs\noutput e = scan_exclusive max (-1) xs\noutput t = reduce (+) 0 xs")
    x = np.random.default_rng(0).integers(-50, 50, 1000)
    out = eqfuse.dask.run(p, xs=da.from_array(x, chunks=97))
    s, e, t = dask.compute(out["s"], out["e"], out["t"])
    np.testing.assert_array_equal(s, np.cumsum(x))
    np.testing.assert_array_equal(e, np.concatenate([[-1], np.maximum.accumulate(np.maximum(x, -1))[:-1]]))
    assert t == x.sum()


def test_row_wise_programs_keep_their_blocks():
    p = eqfuse.compile((REPO / "examples" / "softmax_rows.eqf").read_text())
    name = next(iter(p.inputs))
    shape = (200, 33)
    m = np.random.default_rng(1).random(shape).astype(p.inputs[name].dtype)
    out = eqfuse.dask.run(p, **{name: da.from_array(m, chunks=(37, 11))})
    whole = p(**{name: m})
    for k, v in out.items():
        np.testing.assert_allclose(v.compute(), whole[k], rtol=1e-5)


def test_numpy_and_scalar_inputs_mix_with_dask_ones():
    p = eqfuse.compile((REPO / "examples" / "saxpy.eqf").read_text())
    x = np.arange(100, dtype=np.float32)
    out = eqfuse.dask.run(p, alpha=np.float32(3), xs=da.from_array(x, chunks=30), ys=x)
    np.testing.assert_array_equal(out["zs"].compute(), 4 * x)


def test_what_needs_other_blocks_is_refused_unless_one_chunk():
    p = eqfuse.compile("input xs : f32[n]\ninput idx : i64[k]\noutput g = gather xs idx")
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(eqfuse.dask.ChunkError, match="`gather` reads") as info:
        eqfuse.dask.run(p, xs=da.from_array(x, chunks=3), idx=np.array([1, 8]))
    assert info.value.code == "E-INPUT"
    one = eqfuse.dask.run(p, xs=da.from_array(x, chunks=10), idx=np.array([1, 8]))
    np.testing.assert_array_equal(one["g"].compute(), [1, 8])


def test_input_errors():
    p = eqfuse.compile(DOT)
    a = da.ones(10, chunks=5, dtype=np.float32)
    with pytest.raises(eqfuse.InputError, match="missing input `ys`"):
        eqfuse.dask.run(p, xs=a)
    with pytest.raises(eqfuse.ShapeError, match="size `n` is 10 from `xs` but 12 from `ys`"):
        eqfuse.dask.run(p, xs=a, ys=da.ones(12, chunks=5, dtype=np.float32))
    with pytest.raises(eqfuse.InputError, match="float64, the program declares float32"):
        eqfuse.dask.run(p, xs=a, ys=da.ones(10, chunks=5))


def test_errors_in_a_worker_keep_their_class_and_code(client):
    p = eqfuse.compile("input idx : i64[n]\ninput w : f32[k]\noutput y = gather w idx")
    idx = da.from_array(np.array([0, 1, 2, 7, 1, 0]), chunks=2)
    out = eqfuse.dask.run(p, idx=idx, w=np.ones(3, np.float32))
    with pytest.raises(eqfuse.BoundsError) as info:
        out["y"].compute()
    assert info.value.code == "E-INDEX" and "out of bounds" in str(info.value)
