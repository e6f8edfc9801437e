"""Every conformance case through the Python package: outputs within the case's tolerances,
or the expected error code."""

from __future__ import annotations

import tomllib

import numpy as np
import pytest

import eqfuse
from conftest import case_dirs

CASES = case_dirs()


def test_there_are_cases():
    assert len(CASES) >= 30


def _close(got: np.ndarray, want: np.ndarray, rtol: float, atol: float, frac: float) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    g, w = got.astype(np.float64).ravel(), want.astype(np.float64).ravel()
    ok = (np.isnan(g) & np.isnan(w)) | (g == w) | (np.abs(g - w) <= atol + rtol * np.abs(w))
    assert (~ok).sum() <= int(np.floor(frac * w.size)), f"{(~ok).sum()} of {w.size} differ"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case):
    spec = tomllib.loads((case / "case.toml").read_text())
    inputs = {p.stem: np.load(p) for p in sorted((case / "inputs").glob("*.npy"))}
    if "error" in spec:
        with pytest.raises(eqfuse.Error) as info:
            eqfuse.compile(case / "program.eqf", backend="cpu")(**inputs)
        assert info.value.code == spec["error"], str(info.value)
        return
    out = eqfuse.compile(case / "program.eqf", backend="cpu")(**inputs)
    for name in spec["outputs"]:
        want = np.load(case / "expected" / f"{name}.npy")
        _close(out[name], want, spec.get("rtol", 0.0), spec.get("atol", 0.0), spec.get("mismatch_fraction", 0.0))
