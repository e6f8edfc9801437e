#!/usr/bin/env python3
"""The device's ceilings and the library primitives eqfuse's kernels are judged against.

With CuPy at 2^27 f32 (--scale): a device-to-device copy (bytes read plus bytes written:
the bandwidth ceiling), `sum`, `cumsum` (an inclusive scan), a compaction (`x[x > 0]`) and
a dot product. Each is the median of --repeats runs timed with CUDA events after a warm-up,
on random data (never zeros). Prints a table; --out writes JSON:
  [{"op": "copy", "elements": 134217728, "seconds": ..., "bytes": ..., "gbps": ...}, ...]
where "bytes" is the fewest bytes the operation must move and "gbps" bytes over seconds.
"""

import argparse
import json
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=int, default=27)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--gemm", action="store_true", help="time CuPy's matmul instead (f32, f64; 2048^3, 4096^3)")
    args = ap.parse_args()
    import cupy as cp

    if args.gemm:
        return gemm(cp, args.repeats)

    n = 1 << args.scale
    rng = cp.random.default_rng(1)
    x = rng.uniform(-1, 1, n, dtype=cp.float32)
    y = rng.uniform(-1, 1, n, dtype=cp.float32)
    dst = cp.empty_like(x)
    kept = int((x > 0).sum())
    ops = {
        "copy": (lambda: dst.__setitem__(slice(None), x), 8 * n),
        "sum": (lambda: x.sum(), 4 * n),
        "dot": (lambda: cp.dot(x, y), 8 * n),
        "cumsum": (lambda: cp.cumsum(x, out=dst), 8 * n),
        "compact": (lambda: x[x > 0], 4 * n + 4 * kept),
    }
    rows = []
    for name, (fn, nbytes) in ops.items():
        fn()
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(args.repeats):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
        s = statistics.median(times)
        rows.append({"op": name, "elements": n, "seconds": s, "bytes": nbytes, "gbps": nbytes / s / 1e9})
        print(f"{name:8} {s * 1e3:9.3f} ms {nbytes / s / 1e9:8.0f} GB/s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def gemm(cp, repeats):
    """CuPy's matmul (cuBLAS, CuPy's default math mode) of random square matrices."""
    rng = cp.random.default_rng(1)
    for dtype in (cp.float32, cp.float64):
        for n in (2048, 4096):
            a = rng.uniform(-1, 1, (n, n)).astype(dtype)
            b = rng.uniform(-1, 1, (n, n)).astype(dtype)
            c = cp.matmul(a, b)
            cp.cuda.Device().synchronize()
            times = []
            for _ in range(repeats):
                e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                e0.record()
                cp.matmul(a, b, out=c)
                e1.record()
                e1.synchronize()
                times.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
            s = statistics.median(times)
            name = f"matmul {cp.dtype(dtype).name} {n}^3"
            print(f"{name:20} {s * 1e3:9.3f} ms {2 * n**3 / s / 1e12:8.1f} Tflop/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
