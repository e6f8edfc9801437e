"""f32 element-wise math against NumPy, in one run: `eqfuse bench` of `map (\\v -> f v) x`
over 2^24 standard-normal f32 values (default flags: every core) against NumPy's
`f(x, out=o)` (one thread, its best of 15). Prints a Markdown table.

    benches/peers/.venv/bin/python benches/peers/math_f32.py target/release/eqfuse
"""

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N = 1 << 24
FUNCTIONS = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "exp": np.exp, "log": np.log}


def numpy_ms(f, x):
    o = np.empty_like(x)
    best = float("inf")
    for _ in range(15):
        t = time.perf_counter()
        f(x, out=o)
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def eqfuse_ms(binary, name, tmp):
    src = Path(tmp) / f"{name}.eqf"
    src.write_text(f"input x : f32[n]\noutput o = map (\\v -> {name} v) x\n")
    out = subprocess.run(
        [binary, "bench", str(src), "--random-inputs", "1", "--size", f"n={N}"],
        capture_output=True, text=True, check=True,
    ).stdout
    m = re.search(r"optimised\s+\d+\s+\d+\s+\S+\s+([\d.]+)ms\s+([\d.]+)ms", out)
    return float(m.group(1)), float(m.group(2))


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/eqfuse"
    x = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    print("| function | eqfuse min | eqfuse median | NumPy min (1 thread) | eqfuse / NumPy |")
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, f in FUNCTIONS.items():
            arg = np.abs(x) + np.float32(0.5) if name == "log" else x
            np_ms = numpy_ms(f, arg)
            lo, med = eqfuse_ms(binary, name, tmp)
            print(f"| `{name}` | {lo:.2f} ms | {med:.2f} ms | {np_ms:.2f} ms | {lo / np_ms:.2f}× |")


if __name__ == "__main__":
    main()
