"""Inputs are converted exactly or refused: bool arrays with bytes other than 0 and 1, Python
numbers and lists out of the declared type's range, integers that a float input does not
hold exactly. Also Ctrl-C during a run, and backend names and devices checked at compile."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import eqfuse

COUNT = "input bs : bool[n]\noutput c = reduce (+) 0 (map (\\b -> if b then 1 else 0) bs)"
I32 = "input a : i32\noutput y = a"
I32S = "input a : i32[n]\noutput y = a"
F32 = "input a : f32\noutput y = a"
F64 = "input a : f64\noutput y = a"
F64S = "input a : f64[n]\noutput y = a"
F32S = "input a : f32[n]\noutput y = a"


def test_bool_array_with_other_bytes_is_normalised():
    bs = np.array([0, 1, 2, 255], np.uint8).view(np.bool_)
    assert eqfuse.compile(COUNT)(bs=bs)["c"] == 3
    # a valid bool array is still read in place
    ok = np.array([True, False, True])
    assert eqfuse._convert("bs", ok, np.dtype(np.bool_)) is ok


def test_python_int_out_of_i32_range_is_refused():
    with pytest.raises(eqfuse.InputError, match=r"input `a`: the value 1099511627776 does not fit int32"):
        eqfuse.compile(I32)(a=2**40)
    assert eqfuse.compile(I32)(a=-(2**31))["y"] == -(2**31)


def test_python_list_out_of_i32_range_is_refused():
    with pytest.raises(eqfuse.InputError, match=r"the value 8589934599 at \[0\] does not fit int32"):
        eqfuse.compile(I32S)(a=[2**33 + 7])
    with pytest.raises(eqfuse.InputError, match=r"the value 1180591620717411303424 at \[1\] does not fit int32"):
        eqfuse.compile(I32S)(a=[1, 2**70])


def test_python_float_out_of_f32_range_is_refused():
    with pytest.raises(eqfuse.InputError, match=r"the value 1e\+300 is out of the range of float32"):
        eqfuse.compile(F32)(a=1e300)
    p = eqfuse.compile(F32S)
    out = p(a=[float("inf"), float("nan"), 0.1])["y"]
    assert np.isinf(out[0]) and np.isnan(out[1]) and out[2] == np.float32(0.1)


def test_python_int_for_a_float_only_where_exact():
    with pytest.raises(eqfuse.InputError, match=r"the value 1152921504606846977 is not exactly a float64"):
        eqfuse.compile(F64)(a=2**60 + 1)
    assert eqfuse.compile(F32)(a=3)["y"] == 3.0
    assert eqfuse.compile(F64)(a=2**70)["y"] == 2.0**70
    with pytest.raises(eqfuse.InputError, match="is not exactly a float64"):
        eqfuse.compile(F64S)(a=[0, 2**70 + 1])


def test_int_array_for_a_float_only_where_exact():
    p = eqfuse.compile(F64S)
    exact = np.array([0, -(2**53), 2**53, 2**60, -(2**63)], np.int64)
    np.testing.assert_array_equal(p(a=exact)["y"], exact.astype(np.float64))
    with pytest.raises(eqfuse.InputError, match=r"the value 1152921504606846977 at \[1\] is not exactly a float64"):
        p(a=np.array([1, 2**60 + 1], np.int64))
    with pytest.raises(eqfuse.InputError, match=r"the value 9223372036854775807 at \[0\]"):
        p(a=np.array([2**63 - 1], np.int64))
    np.testing.assert_array_equal(p(a=np.array([2**64 - 1 - 2047], np.uint64))["y"], [2.0**64 - 2048])
    with pytest.raises(eqfuse.InputError, match=r"the value 18446744073709551615 at \[0\]"):
        p(a=np.array([2**64 - 1], np.uint64))
    # a pair NumPy does not call safe is refused by its dtypes, as the command line does
    with pytest.raises(eqfuse.InputError, match="converting would lose precision or range"):
        eqfuse.compile(F32S)(a=np.array([3], np.int32))


def test_float_array_for_a_narrower_float_is_refused():
    # by its dtype, whatever its values (docs/python.md): never silently inf
    with pytest.raises(eqfuse.InputError, match="converting would lose precision or range"):
        eqfuse.compile(F32S)(a=np.array([1e300]))


# one fused kernel that runs for many seconds: ~10 s on two cores at this size
LONG = "input x0 : f64[n]\noutput s = reduce (+) 0 (map (\\x -> iterate 20 (\\z -> 0.5 * z + 0.25 * sin z) x) x0)"


def test_ctrl_c_stops_a_run():
    p = eqfuse.compile(LONG)
    p(x0=np.full(10, 0.5))  # compiled and warm
    xs = np.full(10_000_000, 0.5)
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.5, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            p(x0=xs)
        stopped = time.monotonic()
    finally:
        timer.cancel()
    assert sent, "the run ended before the signal was sent"
    latency = stopped - sent[0]
    print(f"Ctrl-C latency: {latency * 1000:.1f} ms")
    assert latency < 1.0
    # the program runs again afterwards
    assert p(x0=np.full(4, 0.0))["s"] == 0.0


def test_cuda_is_checked_at_compile():
    has_gpu = eqfuse.compile(F64, backend="auto").backend == "cuda"
    if has_gpu:
        assert eqfuse.compile(F64, backend="cuda").backend == "cuda"
    else:
        with pytest.raises(eqfuse.DeviceError, match="backend `cuda` is not available"):
            eqfuse.compile(F64, backend="cuda")


def test_unknown_backend_is_a_value_error_listing_the_names():
    with pytest.raises(ValueError, match="unknown backend `tpu`; choose auto, cpu, cuda or reference") as info:
        eqfuse.compile(F64, backend="tpu")
    assert not isinstance(info.value, eqfuse.Error)
