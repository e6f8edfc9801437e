"""What a call from Python costs over the plan itself: saxpy over 2^24 f32, timed through
`eqfuse.compile(...)(...)` and by `eqfuse bench` (the same plan, run from Rust), in one run.

    python python/bench/call_overhead.py [--eqfuse target/release/eqfuse]
"""

from __future__ import annotations

import argparse
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

import numpy as np

import eqfuse

REPO = pathlib.Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eqfuse", default=str(REPO / "target" / "release" / "eqfuse"))
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--reps", type=int, default=30)
    a = ap.parse_args()
    prog = REPO / "examples" / "saxpy.eqf"
    p = eqfuse.compile(prog, backend="cpu")
    rng = np.random.default_rng(1)
    xs, ys = rng.random(a.n, dtype=np.float32), rng.random(a.n, dtype=np.float32)
    alpha = np.float32(2.5)
    with tempfile.TemporaryDirectory() as d:
        for name, v in (("alpha", alpha), ("xs", xs), ("ys", ys)):
            np.save(pathlib.Path(d) / f"{name}.npy", v)
        rows = []
        for _ in range(2):  # interleaved: the machine's noise falls on both
            for _ in range(3):
                p(alpha, xs, ys)
            times = []
            for _ in range(a.reps):
                t = time.perf_counter()
                p(alpha, xs, ys)
                times.append(time.perf_counter() - t)
            py = statistics.median(times) * 1e3
            out = subprocess.run([a.eqfuse, "bench", str(prog), "--inputs", d], capture_output=True, text=True, check=True).stdout
            m = re.search(r"^optimised\s+\d+\s+\d+\s+\S+\s+(\S+)ms\s+(\S+)ms", out, re.M)
            assert m, out
            rust = float(m.group(2))
            rows.append((py, rust))
    for py, rust in rows:
        print(f"saxpy n={a.n}: from Python {py:.2f} ms, eqfuse bench {rust:.2f} ms, ratio {py / rust:.2f}")


if __name__ == "__main__":
    main()
