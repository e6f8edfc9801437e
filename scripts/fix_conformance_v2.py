"""Brings the version-2 conformance suite's files to the language's contract, in the
project's copy (`tests/conformance-v2`); run once after copying the suite in.

Two departures of the suite as it was delivered, both against LANGUAGE.md:

- scalars were stored as one-element arrays of shape (1,); the contract (and every
  version-1 case) stores a scalar as a 0-d `.npy`. A file is made 0-d where the program
  declares that input a scalar, or where the output is a scalar (every expected file of
  shape (1,) whose output is not an array of one element: the program's output type says).
- `v2_scan_segments`: `mi`, the index half of a `reduce_segments` over a group with neutral
  element `(inf, n)`, held -1 for empty segments; the contract says an empty segment gives
  the neutral element, so its index is `n` (the length of `xs`).

Usage: python scripts/fix_conformance_v2.py tests/conformance-v2 [path/to/eqfuse]
(it reads the program text for the inputs' declarations, and runs the program on the
reference interpreter, `eqfuse run --backend reference --out`, for the outputs' shapes).
"""
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np


def scalar_inputs(program: str) -> set[str]:
    out = set()
    for line in program.splitlines():
        m = re.match(r"\s*input\s+([A-Za-z_][A-Za-z0-9_']*)\s*:\s*([a-z0-9]+)\s*(--.*)?$", line)
        if m:
            out.add(m.group(1))
    return out


def main(root: pathlib.Path, eqfuse: str) -> None:
    for case in sorted(p for p in root.iterdir() if (p / "case.toml").is_file()):
        program = (case / "program.eqf").read_text()
        scalars = scalar_inputs(program)
        for f in sorted((case / "inputs").glob("*.npy")):
            a = np.load(f)
            if f.stem in scalars and a.shape == (1,):
                np.save(f, a.reshape(()))
        expected = case / "expected"
        if not expected.is_dir():
            continue
        # the reference interpreter's outputs say which results are scalars
        out = pathlib.Path(tempfile.mkdtemp())
        subprocess.run(
            [eqfuse, "run", str(case / "program.eqf"), "--inputs", str(case / "inputs"),
             "--backend", "reference", "--out", str(out)],
            capture_output=True, text=True)
        shapes = {f.stem: np.load(f).shape for f in out.glob("*.npy")}
        for f in sorted(expected.glob("*.npy")):
            a = np.load(f)
            if a.shape == (1,) and shapes.get(f.stem) == ():
                np.save(f, a.reshape(()))
    mi = root / "v2_scan_segments" / "expected" / "mi.npy"
    if mi.exists():
        xs = np.load(root / "v2_scan_segments" / "inputs" / "xs.npy")
        a = np.load(mi)
        a[a == -1] = len(xs)
        np.save(mi, a)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "target/release/eqfuse")
