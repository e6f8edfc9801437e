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


JACOBI = """input a : f64[h, w]
output b = generate [h, w] (\\i j -> (a[i, j] + a[clamp (i - 1) 0 (h - 1), j] + a[clamp (i + 1) 0 (h - 1), j]
  + a[i, clamp (j - 1) 0 (w - 1)] + a[i, clamp (j + 1) 0 (w - 1)]) / 5.0)
"""


def _numpy_jacobi(a):
    p = np.pad(a, 1, mode="edge")
    return (a + p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:]) / 5.0


def test_a_jacobi_step_over_4x4_chunks_on_a_local_cluster_matches_numpy(client):
    p = eqfuse.compile(JACOBI)
    a = np.random.default_rng(5).random((61, 43))
    x = da.from_array(a, chunks=(16, 11))  # 4x4 chunks, the last ones narrower
    assert x.numblocks == (4, 4)
    b = eqfuse.dask.run(p, a=x)["b"]
    assert b.chunks == x.chunks  # both axes stay chunked: no whole rows, no whole columns
    got = b.compute()
    np.testing.assert_array_equal(got, _numpy_jacobi(a))  # bit for bit
    np.testing.assert_array_equal(got, p(a=a)["b"])


def test_ten_jacobi_steps_driven_from_python_match_numpy(client):
    p = eqfuse.compile(JACOBI)
    a = np.random.default_rng(6).random((40, 36))
    x, want = da.from_array(a, chunks=(10, 9)), a
    for _ in range(10):  # each step a Dask graph over the last one's blocks
        x = eqfuse.dask.run(p, a=x)["b"]
        want = _numpy_jacobi(want)
    assert x.numblocks == (4, 4)
    np.testing.assert_array_equal(x.compute(), want)


def test_a_1d_stencil_twice_gets_a_halo_of_two_even_over_blocks_of_one_row():
    p = eqfuse.compile((REPO / "examples" / "stencil_twice.eqf").read_text())
    a = np.random.default_rng(7).random(200).astype(np.float32)
    whole = p(a=a)["c"]
    for chunks in [(50, 50, 50, 50), (1, 120, 1, 78), (3, 2, 195)]:
        got = eqfuse.dask.run(p, a=da.from_array(a, chunks=(chunks,)))["c"].compute()
        np.testing.assert_array_equal(got, whole)


def test_a_wrapped_stencil_reads_the_other_end(client):
    p = eqfuse.compile("input a : i64[n]\noutput b = generate [n] (\\i -> a[(i + 1) % n] - 2 * a[i] + a[(i - 2 + n) % n])")
    a = np.random.default_rng(8).integers(-1000, 1000, 103)
    got = eqfuse.dask.run(p, a=da.from_array(a, chunks=10))["b"].compute()
    np.testing.assert_array_equal(got, np.roll(a, -1) - 2 * a + np.roll(a, 2))


def test_elementwise_maps_keep_2d_chunks_and_read_a_chunked_row_vector():
    p = eqfuse.compile("input m : f32[r, c]\ninput v : f32[c]\ninput s : f32\noutput y = generate [r, c] (\\i j -> m[i, j] * v[j] + s)")
    rng = np.random.default_rng(9)
    m, v = rng.random((30, 20)).astype(np.float32), rng.random(20).astype(np.float32)
    x = da.from_array(m, chunks=(8, 6))
    y = eqfuse.dask.run(p, m=x, v=v, s=np.float32(2))["y"]
    assert y.chunks == x.chunks
    np.testing.assert_array_equal(y.compute(), p(m=m, v=v, s=np.float32(2))["y"])


def test_column_sums_and_a_transposed_times_x_combine_block_rows(client):
    p = eqfuse.compile(
        (REPO / "examples" / "column_sums.eqf").read_text().replace("f32", "f64")
        + "input x : f64[r]\noutput atx = reduce (+) 0 (generate [c, r] (\\j i -> m[i, j] * x[i]))\n"
    )
    rng = np.random.default_rng(10)
    m, x = rng.integers(-50, 50, (1000, 7)).astype(np.float64), rng.integers(-9, 9, 1000).astype(np.float64)
    out = eqfuse.dask.run(p, m=da.from_array(m, chunks=(97, 7)), x=da.from_array(x, chunks=97))
    rows, cols, atx = dask.compute(out["rows"], out["cols"], out["atx"])
    np.testing.assert_array_equal(cols, m.sum(axis=0))  # integers in f64: exact in any order
    np.testing.assert_array_equal(atx, m.T @ x)
    np.testing.assert_array_equal(rows, m.sum(axis=1))


def test_what_cannot_run_with_halos_is_refused_with_both_reasons():
    clamp_and_wrap = eqfuse.compile("input a : f64[n]\noutput b = generate [n] (\\i -> a[(i + 1) % n] + a[clamp (i - 1) 0 (n - 1)])")
    with pytest.raises(eqfuse.dask.ChunkError, match="both clamped and wrapped") as info:
        eqfuse.dask.run(clamp_and_wrap, a=da.ones(20, chunks=5))
    assert info.value.code == "E-INPUT" and "cannot be computed in blocks of `n`" in str(info.value)
    mirrored = eqfuse.compile("input a : f64[n]\noutput b = generate [n] (\\i -> a[n - 1 - i])")
    with pytest.raises(eqfuse.dask.ChunkError, match="not at `i` moved by a constant"):
        eqfuse.dask.run(mirrored, a=da.ones(20, chunks=5))
    # a row-wise reduction over 2-D chunks: whole rows instead (the row split), as before
    p = eqfuse.compile("input m : f64[r, c]\noutput s = reduce (+) 0 m")
    m = np.arange(60.0).reshape(6, 10)
    np.testing.assert_array_equal(eqfuse.dask.run(p, m=da.from_array(m, chunks=(3, 5)))["s"].compute(), m.sum(axis=1))


def test_outputs_along_fewer_or_reordered_chunked_sizes_join_their_blocks():
    p = eqfuse.compile(
        "input a : f64[h, w]\ninput s : f64[h]\noutput t = generate [h] (\\i -> s[clamp (i + 1) 0 (h - 1)])\n"
        "output b = generate [w, h] (\\j i -> a[i, j] * s[i])"
    )
    a, s = np.random.default_rng(11).random((30, 20)), np.arange(30.0)
    out = eqfuse.dask.run(p, a=da.from_array(a, chunks=(7, 6)), s=s)
    assert out["b"].chunks == ((6, 6, 6, 2), (7, 7, 7, 7, 2))
    whole = p(a=a, s=s)
    for k in ("t", "b"):
        np.testing.assert_array_equal(out[k].compute(), whole[k])
