"""eqfuse.jit: the table of typical functions (jit_functions.py) against NumPy, one
compilation for every shape, the cache key, what cannot be traced (TraceError naming the
function, the user's line and what to use instead), loops, and compile(path)."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

import eqfuse
import eqfuse.numpy as enp
from _numpy_check import assert_same, run_numpy
from conftest import REPO
from jit_functions import FUNCTIONS


@pytest.mark.parametrize("name,fn,make", FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_typical_function_matches_numpy(name, fn, make):
    rng = np.random.default_rng(20261129)
    args = make(rng, 13)
    want = run_numpy(fn, args)
    jitted = eqfuse.jit(lambda *a: fn(enp, *a))
    assert_same(jitted(*args), want, name)
    # the same compilation serves other sizes
    args2 = make(rng, 21)
    assert_same(jitted(*args2), run_numpy(fn, args2), name)
    assert jitted.compilations == 1


def test_table_has_forty_functions():
    assert len(FUNCTIONS) >= 40


def test_one_compilation_serves_every_shape():
    @eqfuse.jit
    def f(x, w):
        return enp.tanh(x @ w).sum(axis=0) / x.shape[0]

    for n, k, m in [(3, 4, 5), (7, 2, 9), (20, 11, 3), (2, 2, 2)]:
        x, w = np.random.rand(n, k), np.random.rand(k, m)
        assert_same(f(x, w), np.tanh(x @ w).sum(axis=0) / n)
    assert f.compilations == 1
    src = f.source(x, w)
    assert "input x : f64[x_d0, x_d1]" in src and "input w : f64[x_d1, w_d1]" in src


def test_cache_key_is_dtype_rank_and_unit_dimensions():
    f = eqfuse.jit(lambda x, y: x + y)
    f(np.ones(3), np.ones(3))
    f(np.ones(8), np.ones(8))
    assert f.compilations == 1
    f(np.ones(3, np.float32), np.ones(3))  # another dtype
    assert f.compilations == 2
    f(np.ones((2, 3)), np.ones(3))  # another rank
    assert f.compilations == 3
    assert_same(f(np.ones((2, 1)), np.arange(3.0)), np.ones((2, 1)) + np.arange(3.0))  # a 1 broadcasts
    assert f.compilations == 4
    f(np.ones((5, 1)), np.arange(7.0))
    assert f.compilations == 4


def test_mismatched_sizes_are_an_error_not_a_wrong_answer():
    f = eqfuse.jit(lambda x, y: x * y)
    f(np.ones(4), np.ones(4))
    with pytest.raises(eqfuse.ShapeError):
        f(np.ones(4), np.ones(5))


def test_python_scalars_are_constants_and_part_of_the_key():
    f = eqfuse.jit(lambda x, a: x * a)
    assert_same(f(np.arange(3.0), 2), np.arange(3.0) * 2)
    assert_same(f(np.arange(3.0), 3), np.arange(3.0) * 3)
    assert f.compilations == 2
    assert "3" in f.source(np.arange(3.0), 3)


def test_results_keep_their_structure():
    f = eqfuse.jit(lambda x: {"s": x.sum(), "parts": [x[:1], (x * 2, 7)]})
    out = f(np.arange(4.0))
    assert sorted(out) == ["parts", "s"]
    assert_same(out["parts"][0], np.arange(1.0))
    assert isinstance(out["parts"], list) and isinstance(out["parts"][1], tuple)
    assert out["parts"][1][1] == 7


def test_constant_arrays_are_passed_to_the_program():
    w = np.array([1.0, -2.0, 0.5])
    f = eqfuse.jit(lambda x: x @ w + enp.array([1.0, 2.0, 3.0]).sum())
    assert_same(f(np.ones((2, 3))), np.ones((2, 3)) @ w + 6.0)
    # a size that must equal a constant array's is declared so: others are refused
    g = eqfuse.jit(lambda x: x * w)
    assert_same(g(np.ones((4, 3))), np.ones((4, 3)) * w)
    assert "input x : f64[x_d0, 3]" in g.source(np.ones((4, 3)))
    with pytest.raises(eqfuse.ShapeError):
        g(np.ones((4, 5)))


def test_generic_function_runs_with_numpy_and_eqfuse_numpy():
    def normalise(xp, x):
        return (x - xp.mean(x)) / xp.std(x)

    x = np.random.rand(10)
    assert_same(normalise(enp, x), normalise(np, x))  # outside jit: NumPy's own
    assert_same(eqfuse.jit(lambda x: normalise(enp, x))(x), normalise(np, x))


def test_numpy_functions_on_traced_arrays_dispatch_to_eqfuse():
    f = eqfuse.jit(lambda x: np.sum(np.exp(x), axis=0) + np.maximum(x, 0.5))
    x = np.random.rand(3, 4)
    assert_same(f(x), np.sum(np.exp(x), axis=0) + np.maximum(x, 0.5))


def _raises_trace_error(f, *args) -> str:
    with pytest.raises(eqfuse.TraceError) as info:
        f(*args)
    return str(info.value)


def test_data_dependent_if_names_function_line_and_where():
    def clipped(x):
        if x.sum() > 0:  # the line the error names
            return x
        return -x

    msg = _raises_trace_error(eqfuse.jit(clipped), np.ones(3))
    line = clipped.__code__.co_firstlineno + 1
    assert f"test_jit.py:{line}" in msg and "clipped`" in msg
    assert "eqfuse.numpy.where" in msg and "eqfuse.while_loop" in msg
    assert isinstance(eqfuse.TraceError("E-TRACE", "x"), TypeError)


def test_unsupported_function_and_argument_are_trace_errors():
    msg = _raises_trace_error(eqfuse.jit(lambda x: enp.fft(x)), np.ones(3))
    assert "eqfuse.numpy.fft" in msg and "test_jit.py" in msg
    assert not hasattr(enp, "fft")
    msg = _raises_trace_error(eqfuse.jit(lambda x: enp.pad(x, 1, mode="reflect")), np.ones(3))
    assert "mode='constant'" in msg
    msg = _raises_trace_error(eqfuse.jit(lambda x: np.sort(x)), np.ones(3))
    assert "numpy.sort" in msg


def test_sizes_are_symbolic():
    msg = _raises_trace_error(eqfuse.jit(lambda x: [x[i] for i in range(x.shape[0])]), np.ones(3))
    assert "fori_loop" in msg
    msg = _raises_trace_error(eqfuse.jit(lambda x: float(x[0])), np.ones(3))
    assert "float()" in msg


def test_float16_and_complex_are_refused_with_the_dtype():
    msg = _raises_trace_error(eqfuse.jit(lambda x: x + 1), np.ones(3, np.float16))
    assert "float16" in msg


def test_fori_loop_and_while_loop():
    def f(x):
        s = eqfuse.fori_loop(0, 5, lambda i, s: s + x * i, enp.zeros_like(x))
        n, v = eqfuse.while_loop(lambda c: c[1].max() < 100.0, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))
        return s, n, v

    x = np.array([1.0, 3.0, 0.5])
    s, n, v = eqfuse.jit(f)(x)
    assert_same(s, x * 10)
    assert int(n) == 6 and np.array_equal(v, x * 64)


def test_loop_values_do_not_escape():
    leaked = []

    def f(x):
        def body(i, s):
            leaked.append(s * 2)
            return s + 1

        s = eqfuse.fori_loop(0, 3, body, x)
        return s + leaked[0]

    msg = _raises_trace_error(eqfuse.jit(f), np.ones(2))
    assert "loop" in msg


def test_compile_takes_a_path_or_an_eqf_string_as_a_file(tmp_path, monkeypatch):
    src = (REPO / "examples" / "saxpy.eqf").read_text()
    (tmp_path / "prog.eqf").write_text(src)
    monkeypatch.chdir(tmp_path)
    for path in ("prog.eqf", pathlib.Path("prog.eqf"), str(tmp_path / "prog.eqf")):
        p = eqfuse.compile(path)
        assert p.source == src
    for missing in ("nope.eqf", "examples/variance.eqf", pathlib.Path("nope")):
        with pytest.raises(FileNotFoundError) as info:
            eqfuse.compile(missing)
        err = info.value
        assert isinstance(err, eqfuse.Error) and err.code == "E-INPUT"
        assert os.fspath(missing) in str(err) and err.filename == os.fspath(missing)
    # any other string is the program's text
    with pytest.raises(eqfuse.ParseError):
        eqfuse.compile("examples")


def test_argument_names_that_are_eqf_keywords_or_builtins():
    def f(exp, input, x_d0, sum):
        return enp.exp(exp) + input + x_d0 + sum

    a = np.arange(3.0)
    assert_same(eqfuse.jit(f)(a, a, a, a), np.exp(a) + 3 * a)


def test_nested_loops_with_symbolic_bounds_and_masks():
    def g(x):
        def outer(i, s):
            return eqfuse.fori_loop(0, x.shape[0], lambda j, t: t + x[j] * i, s)

        return eqfuse.fori_loop(0, 3, outer, 0.0), x[x > 2].sum() + x[1:-1].mean()

    jg = eqfuse.jit(g)
    for n in (4, 9):
        x = np.arange(float(n))
        s, m = jg(x)
        assert s == sum(j * i for j in range(n) for i in range(3))
        assert_same(m, x[x > 2].sum() + x[1:-1].mean())
    assert jg.compilations == 1


def test_readme_and_docs_examples_run():
    """The eqfuse.jit examples of python/README.md and docs/python.md run as written."""
    import re

    texts = [(REPO / "python" / "README.md").read_text(), (REPO / "docs" / "python.md").read_text()]
    blocks = [b for t in texts for b in re.findall(r"^```python\n(.*?)^```", t, re.S | re.M) if "eqfuse.jit" in b]
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, "example", "exec"), {})  # noqa: S102 - the docs' own code
