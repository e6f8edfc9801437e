#!/usr/bin/env python3
"""Checks one conformance case run by `eqfuse run`: compare.py CASE_DIR OUT_DIR EXIT_CODE STDERR_FILE.

With `error = "E-CODE"` in CASE_DIR/case.toml the run must have failed (exit code 1) and
printed `error[E-CODE]` on stderr. Otherwise every output in `outputs` must be in OUT_DIR as
NAME.npy with the expected dtype and shape, its elements within `atol + rtol * |expected|`
of CASE_DIR/expected/NAME.npy (NaN matches NaN), at most `mismatch_fraction` of them
outside. Prints one line, `PASS name` or `FAIL name: why`, and exits 0 or 1.
"""

import sys
import tomllib
from pathlib import Path

import numpy as np


def check(case: Path, out: Path, code: int, stderr: str) -> str | None:
    spec = tomllib.loads((case / "case.toml").read_text())
    if "error" in spec:
        want = spec["error"]
        if code == 0:
            return f"expected {want}, but the run succeeded"
        if f"error[{want}]" not in stderr:
            return f"expected {want}, got: {stderr.strip()[:300]}"
        return None
    if code != 0:
        return f"the run failed: {stderr.strip()[:300]}"
    rtol, atol = float(spec.get("rtol", 0.0)), float(spec.get("atol", 0.0))
    frac = float(spec.get("mismatch_fraction", 0.0))
    for name in spec.get("outputs", []):
        want = np.load(case / "expected" / f"{name}.npy")
        path = out / f"{name}.npy"
        if not path.exists():
            return f"no output {name}.npy"
        got = np.load(path)
        if got.dtype != want.dtype or got.shape != want.shape:
            return f"{name}: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
        g = got.astype(np.float64).ravel()
        w = want.astype(np.float64).ravel()
        ok = (np.isnan(g) & np.isnan(w)) | (g == w) | (np.abs(g - w) <= atol + rtol * np.abs(w))
        bad = int((~ok).sum())
        if bad > int(np.floor(frac * w.size)):
            i = int(np.argmin(ok))
            return f"{name}: {bad} of {w.size} elements differ; first at {i}: got {g[i]}, expected {w[i]}"
    return None


def main() -> int:
    case, out, code, err = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    stderr = err.read_text(errors="replace") if err.exists() else ""
    why = check(case, out, code, stderr)
    label = f"{case.parent.name}/{case.name}"
    print(f"PASS {label}" if why is None else f"FAIL {label}: {why}")
    return 0 if why is None else 1


if __name__ == "__main__":
    sys.exit(main())
