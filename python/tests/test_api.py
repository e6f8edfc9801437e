"""The Python API: compile, call, explain, signatures, errors, conversions, zero copy, the
GIL, pickling."""

from __future__ import annotations

import pathlib
import pickle
import subprocess
import threading
import time

import numpy as np
import pytest

import eqfuse
from eqfuse import _eqfuse
from conftest import REPO

DOT = """
input xs : f32[n]
input ys : f32[n]
output dot = reduce (+) 0 (map (\\x y -> x * y) xs ys)
output z = map (\\x y -> 2.0 * x + y) xs ys
"""


def test_compile_text_path_and_pathlib():
    path = REPO / "examples" / "saxpy.eqf"
    for src in (path.read_text(), str(path), path):
        p = eqfuse.compile(src)
        out = p(alpha=np.float32(2), xs=np.ones(3, np.float32), ys=np.arange(3, dtype=np.float32))
        np.testing.assert_array_equal(out["zs"], np.array([2, 3, 4], np.float32))
    with pytest.raises(TypeError):
        eqfuse.compile(42)


def test_call_by_name_and_position_returns_numpy():
    p = eqfuse.compile(DOT)
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    a, b = p(xs=x, ys=y), p(x, y)
    assert list(a) == ["dot", "z"]
    assert isinstance(a["dot"], np.float32) and a["dot"] == 10.0
    assert isinstance(a["z"], np.ndarray) and a["z"].dtype == np.float32
    np.testing.assert_array_equal(a["z"], b["z"])
    with pytest.raises(eqfuse.InputError, match="given twice"):
        p(x, xs=x)
    with pytest.raises(eqfuse.InputError, match="3 inputs given positionally"):
        p(x, y, y)


def test_signature():
    p = eqfuse.compile("input a : f64[n, 3]\ninput k : i32\noutput s = reduce (+) 0 a\noutput t = k")
    assert p.inputs["a"] == eqfuse.Arg("a", np.dtype(np.float64), ("n", 3))
    assert p.inputs["k"].shape == () and p.inputs["k"].dtype == np.int32
    assert list(p.outputs) == ["s", "t"] and p.outputs["s"].shape == ("n",)
    assert p.backend in ("cpu", "cuda")
    assert "eqfuse.Program" in repr(p)


def test_explain_is_the_json_object():
    j = eqfuse.compile(DOT).explain()
    assert len(j["kernels"]) == 1 and j["kernels"][0]["kind"] == "reduce"
    assert j["unfused"]["kernels"] >= 2
    assert "kernels" in eqfuse.compile(DOT).explain_text()


@pytest.mark.parametrize(
    "src, inputs, cls, code",
    [
        ("input xs : f32[n\noutput y = xs", {}, eqfuse.ParseError, "E-PARSE"),
        ("input xs : f32[n]\noutput y = map (\\x -> x && true) xs", {}, eqfuse.TypeCheckError, "E-TYPE"),
        ("input xs : f32[n]\ninput ys : f32[n]\noutput y = map (\\x y -> x + y) xs ys", {"xs": np.ones(2, np.float32), "ys": np.ones(3, np.float32)}, eqfuse.ShapeError, "E-SHAPE"),
        ("input xs : f32[n]\noutput y = xs", {}, eqfuse.InputError, "E-INPUT"),
        ("input xs : f32[n]\noutput y = xs[5]", {"xs": np.ones(2, np.float32)}, eqfuse.BoundsError, "E-INDEX"),
        ("input a : i64\noutput y = 1 / a", {"a": np.int64(0)}, eqfuse.DivisionByZeroError, "E-DIV-ZERO"),
    ],
)
def test_errors_have_their_class_and_code(src, inputs, cls, code):
    with pytest.raises(cls) as info:
        eqfuse.compile(src)(**inputs)
    assert info.value.code == code
    assert str(info.value).startswith(f"error[{code}]: ")
    assert isinstance(info.value, eqfuse.Error)
    # picklable, for Dask's workers
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is cls and again.code == code and str(again) == str(info.value)


def test_messages_are_the_command_lines(tmp_path, eqfuse_bin):
    bad = tmp_path / "bad.eqf"
    bad.write_text("input xs : f32[n]\noutput y = map (\\x -> x && true) xs\n")
    cli = subprocess.run([eqfuse_bin, "run", str(bad)], capture_output=True, text=True, env={"NO_COLOR": "1"})
    with pytest.raises(eqfuse.TypeCheckError) as info:
        eqfuse.compile(bad)
    assert str(info.value).strip() == cli.stderr.strip()
    oob = tmp_path / "oob.eqf"
    oob.write_text("input xs : f64[n]\noutput y = xs[5]\n")
    np.save(tmp_path / "xs.npy", np.ones(2))
    cli = subprocess.run(
        [eqfuse_bin, "run", str(oob), "--input", f"xs={tmp_path / 'xs.npy'}"], capture_output=True, text=True, env={"NO_COLOR": "1"}
    )
    with pytest.raises(eqfuse.BoundsError) as info:
        eqfuse.compile(oob)(xs=np.ones(2))
    assert cli.stderr.strip().startswith(str(info.value).splitlines()[0])


def test_inputs_are_read_in_place_and_outputs_handed_over():
    p = eqfuse.compile(DOT)
    x, y = np.arange(1 << 16, dtype=np.float32), np.ones(1 << 16, np.float32)
    assert eqfuse._convert("xs", x, np.dtype(np.float32)) is x
    before = _eqfuse._input_copies()
    out = p(xs=x, ys=y)
    assert _eqfuse._input_copies() == before, "an input was copied"
    # the result's memory is the Rust vector's, owned by NumPy now: no copy on the way out
    assert type(out["z"].base).__name__ == "PySliceContainer"
    assert out["z"].flags.c_contiguous and out["z"].flags.writeable


def test_conversions_that_lose_nothing_are_made_and_others_refused():
    p = eqfuse.compile("input xs : f64[n]\noutput s = reduce (+) 0 xs")
    assert p(xs=np.arange(4, dtype=np.int32))["s"] == 6.0  # int32 -> float64: exact
    assert p(xs=np.arange(4, dtype=np.float32))["s"] == 6.0
    assert p(xs=[1, 2, 3])["s"] == 6.0  # a list takes the declared dtype
    strided = np.arange(8, dtype=np.float64)[::2]
    assert p(xs=strided)["s"] == 12.0
    fortran = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    q = eqfuse.compile("input a : f64[n, m]\noutput r = reduce (+) 0 a")
    np.testing.assert_array_equal(q(a=fortran)["r"], [3.0, 12.0])
    big_endian = np.arange(3, dtype=">f8")
    assert p(xs=big_endian)["s"] == 3.0
    f = eqfuse.compile("input xs : f32[n]\noutput s = reduce (+) 0 xs")
    with pytest.raises(eqfuse.InputError, match="float64, the program declares float32"):
        f(xs=np.ones(3))
    i = eqfuse.compile("input xs : i32[n]\noutput s = reduce (+) 0 xs")
    with pytest.raises(eqfuse.InputError, match="float64 values, the program declares int32"):
        i(xs=[1.5, 2.0])
    with pytest.raises(eqfuse.InputError, match="int64, the program declares int32"):
        i(xs=np.arange(3))


def test_the_gil_is_released_while_a_plan_runs():
    p = eqfuse.compile("input xs : f64[n]\noutput s = reduce (+) 0 (map (\\x -> sin (exp (x * 0.001))) xs)")
    x = np.random.default_rng(0).random(1 << 24)
    t = time.perf_counter()
    p(xs=x)
    one = time.perf_counter() - t
    done = threading.Event()
    worker = threading.Thread(target=lambda: (p(xs=x), p(xs=x), done.set()))
    gaps, last = [], time.perf_counter()
    worker.start()
    while not done.is_set():
        now = time.perf_counter()
        gaps.append(now - last)
        last = now
    worker.join()
    # holding the GIL, a run would stop this loop for the whole run
    assert max(gaps) < 0.5 * one, (max(gaps), one)


def test_programs_pickle():
    p = eqfuse.compile(DOT)
    q = pickle.loads(pickle.dumps(p))
    x = np.arange(3, dtype=np.float32)
    assert q(x, x)["dot"] == p(x, x)["dot"] == 5.0


def test_reference_backend_and_unknown_backend():
    p = eqfuse.compile(DOT, backend="reference")
    assert p.backend == "reference"
    assert p(np.ones(2, np.float32), np.ones(2, np.float32))["dot"] == 2.0
    with pytest.raises(ValueError, match="choose auto, cpu, cuda or reference"):
        eqfuse.compile(DOT, backend="tpu")
