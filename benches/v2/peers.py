"""Language version 2's benchmarks against NumPy (and SciPy for the CSR product), in one
run: each program's inputs are written once, NumPy is timed on them, then `eqfuse bench`
times the program on the same files.

    python benches/v2/peers.py [path/to/eqfuse]      (NumPy and SciPy installed)

Programs (benches/v2/*.eqf): a 100-step 2-D Jacobi relaxation on 2048^2 f32, argmin over
2^24 f32 (the builtin and the reduction over a group), a CSR matrix-vector product with
row lengths from 1 to 10 000 (20 000 rows, and 400 000), a xorshift hash of 2^24 u32.
"""
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def best(f, reps=5):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def jacobi(d):
    rng = np.random.default_rng(1)
    t0 = rng.random((2048, 2048), dtype=np.float32)
    np.save(d / "t0.npy", t0)
    np.save(d / "steps.npy", np.array(100, dtype=np.int64))

    def run():
        t = t0.copy()
        u = t0.copy()
        for _ in range(100):
            u[1:-1, 1:-1] = 0.25 * (t[:-2, 1:-1] + t[2:, 1:-1] + t[1:-1, :-2] + t[1:-1, 2:])
            t, u = u, t
        return t
    return run, 100 * 2 * t0.nbytes


def argmin(d):
    x = np.random.default_rng(2).random(1 << 24, dtype=np.float32)
    np.save(d / "d.npy", x)
    return (lambda: np.argmin(x)), x.nbytes


def csr(d, m=20000):
    rng = np.random.default_rng(3)
    lens = np.minimum((rng.pareto(1.2, m) + 1).astype(np.int64), 10000)
    lens[rng.integers(0, m, 5)] = 10000
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    nnz = int(offsets[-1])
    k = 50000
    cols = rng.integers(0, k, nnz).astype(np.int64)
    vals = rng.random(nnz, dtype=np.float32)
    x = rng.random(k, dtype=np.float32)
    for n, a in [("offsets", offsets), ("cols", cols), ("vals", vals), ("x", x)]:
        np.save(d / f"{n}.npy", a)
    try:
        import scipy.sparse
        a = scipy.sparse.csr_matrix((vals, cols, offsets), shape=(m, k))
        return (lambda: a @ x), vals.nbytes + cols.nbytes
    except ImportError:
        return (lambda: np.add.reduceat(vals * x[cols], offsets[:-1])), vals.nbytes + cols.nbytes


def xorshift(d):
    xs = np.random.default_rng(4).integers(0, 2**32, 1 << 24, dtype=np.uint32)
    np.save(d / "xs.npy", xs)

    def run():
        x = xs
        a = x ^ (x << np.uint32(13)); b = a ^ (a >> np.uint32(17)); c = b ^ (b << np.uint32(5))
        e = c ^ (c << np.uint32(13)); f = e ^ (e >> np.uint32(17)); return f ^ (f << np.uint32(5))
    return run, 2 * xs.nbytes


def csr_large(d):
    return csr(d, m=400000)


CASES = [("jacobi", jacobi), ("argmin", argmin), ("argmin_group", argmin), ("csr", csr),
         ("csr_large", csr_large), ("xorshift", xorshift)]


def main(eqfuse):
    print(f"{'program':14} {'numpy':>10} {'eqfuse':>10} {'ratio':>7}  GB/s (eqfuse)")
    for name, make in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            d = pathlib.Path(tmp)
            run, nbytes = make(d)
            t_np = best(run)
            program = HERE / f"{name.removesuffix('_large')}.eqf"
            out = subprocess.run([eqfuse, "bench", str(program), "--inputs", str(d)],
                                 capture_output=True, text=True).stdout
            m = re.search(r"^optimised\s+\d+\s+\d+\s+\S+\s+([\d.]+)(ms|s|µs)", out, re.M)
            if not m:
                print(f"{name:14} {t_np*1e3:9.1f}ms  (eqfuse bench: {out.strip()[-200:]!r})")
                continue
            t_eq = float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "µs": 1e-6}[m.group(2)]
            print(f"{name:14} {t_np*1e3:9.1f}ms {t_eq*1e3:9.1f}ms {t_eq/t_np:7.2f}  {nbytes/t_eq/1e9:6.1f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/release/eqfuse")
