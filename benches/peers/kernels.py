"""Kernel shapes of real programs (issue 43) against NumPy, numexpr and JAX-CPU, in one run.

    python benches/peers/kernels.py [path/to/eqfuse]   (NumPy; numexpr and JAX where installed:
                                                        benches/peers/run.sh sets up a venv)

Programs (benches/peers/kernels/*.eqf, some in two phrasings): a clamped 5-point stencil
under a `log` (2048^2 f32; clamps written with `clamp`, and with `min`/`max`), a map over
`[2^18, 5, 3]` f32 (short inner dimensions), column sums of a `[2^20, 16]` f32 matrix
scaled by rows (a transposed matrix-vector product), Game of Life on a 4096^2 torus
(wrapped with `%`, and with selects), and the first index of a value in 2^24 f32 as a
`min` over a select.

For each program the inputs are written once as .npy files; `eqfuse run` computes
eqfuse's outputs on them and every peer's outputs are checked against those (a peer that
disagrees is reported and not timed); each peer is timed (best of 7 runs, JAX with
`block_until_ready` after a warm-up that compiles it); then `eqfuse bench --inputs` times
eqfuse's optimised plan. Prints one table: milliseconds per tool, and eqfuse's time over
the fastest peer's.
"""
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent / "kernels"


def best(f, reps=7):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def stencil(xp, a):
    p = xp.pad(a, 1, mode="edge")
    return xp.log(1 + a + 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, 2:] + p[1:-1, :-2]))


def life(xp, g):
    s = sum(xp.roll(xp.roll(g, di, 0), dj, 1) for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj)
    return ((s == 3) | ((s == 2) & (g == 1))).astype(xp.int32)


def cases():
    """(name, program files, inputs, {peer: (prepare, run)}): `prepare(xp)` is done once."""
    rng = np.random.default_rng(11)
    a = rng.random((2048, 2048), dtype=np.float32)
    sob = (rng.random((1 << 18, 5, 3), dtype=np.float32) * 0.999 + 0.001).astype(np.float32)
    mat = rng.random((1 << 20, 16), dtype=np.float32)
    x = rng.random(1 << 20, dtype=np.float32)
    g = (rng.random((4096, 4096)) < 0.3).astype(np.int32)
    d = rng.random(1 << 24, dtype=np.float32)
    m = np.float32(d[(1 << 23) + 12345])
    idx = np.arange(d.size, dtype=np.float32)
    inf = np.float32(np.inf)

    def ne_stencil(ne_):
        def run():
            p = np.pad(a, 1, mode="edge")
            return ne_.evaluate("log(1 + c + 0.25 * (n + s + e + w))",
                                local_dict=dict(c=a, n=p[:-2, 1:-1], s=p[2:, 1:-1], e=p[1:-1, 2:], w=p[1:-1, :-2]))
        return run

    ne = {
        "clamped_stencil": ne_stencil,
        "short_inner_map": lambda ne_: lambda: ne_.evaluate("sqrt(0 - log(p))", local_dict=dict(p=sob)),
        "argmin_select": lambda ne_: lambda: ne_.evaluate(
            "min(where(d == m, i, inf))", local_dict=dict(d=d, m=m, i=idx, inf=inf)),
    }
    return [
        ("clamped_stencil", ["clamped_stencil", "clamped_stencil_minmax"], {"a": a},
         lambda xp, c: stencil(xp, c["a"]), ne.get("clamped_stencil")),
        ("short_inner_map", ["short_inner_map"], {"sob": sob},
         lambda xp, c: xp.sqrt(0 - xp.log(c["sob"])), ne.get("short_inner_map")),
        ("column_sums", ["column_sums"], {"a": mat, "x": x},
         lambda xp, c: c["a"].T @ c["x"], None),
        ("torus_life", ["torus_life", "torus_life_select"], {"g": g},
         lambda xp, c: life(xp, c["g"]), None),
        ("argmin_select", ["argmin_select"], {"d": d, "m": m},
         lambda xp, c: xp.min(xp.where(c["d"] == c["m"], xp.arange(c["d"].size, dtype=xp.float32), xp.inf)),
         ne.get("argmin_select")),
    ]


def peers():
    out = {"numpy": np}
    try:
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", False)
        out["jax"] = jnp
    except ImportError:
        pass
    try:
        import numexpr
        out["numexpr"] = numexpr
    except ImportError:
        pass
    return out


def eqfuse_time(eqfuse, program, d):
    out = subprocess.run([eqfuse, "bench", str(program), "--inputs", str(d)], capture_output=True, text=True).stdout
    m = re.search(r"^optimised\s+\d+\s+\d+\s+\S+\s+([\d.]+)(ms|s|µs)", out, re.M)
    if not m:
        return None, out.strip()[-300:]
    return float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "µs": 1e-6}[m.group(2)], None


def main(eqfuse):
    libs = peers()
    names = [p for p in ("numpy", "numexpr", "jax") if p in libs]
    print(f"{'program':24}" + "".join(f"{p:>10}" for p in names) + f"{'eqfuse':>10} {'vs fastest':>11}")
    for name, files, inputs, f, ne_f in cases():
        with tempfile.TemporaryDirectory() as tmp:
            d = pathlib.Path(tmp)
            for k, v in inputs.items():
                np.save(d / f"{k}.npy", v)
            subprocess.run([eqfuse, "run", str(HERE / f"{files[0]}.eqf"), "--inputs", str(d), "--out", str(d / "out")],
                           check=True, capture_output=True)
            want = np.load(d / "out" / "o.npy")
            times = {}
            for p in names:
                if p == "numexpr":
                    if ne_f is None:
                        continue
                    run = ne_f(libs[p])
                elif p == "jax":
                    import jax
                    dev = {k: jax.device_put(v) for k, v in inputs.items()}
                    jf = jax.jit(lambda c: f(libs[p], c))
                    run = lambda jf=jf, dev=dev: jf(dev).block_until_ready()
                else:
                    run = lambda: f(np, inputs)
                got = np.asarray(run())
                if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True):
                    print(f"  {name}: {p} disagrees with eqfuse (not timed)")
                    continue
                times[p] = best(run)
            fastest = min(times.values()) if times else None
            for prog in files:
                t_eq, err = eqfuse_time(eqfuse, HERE / f"{prog}.eqf", d)
                cells = "".join(f"{times[p]*1e3:9.2f}m" if p in times else f"{'-':>10}" for p in names)
                if t_eq is None:
                    print(f"{prog:24}{cells}  eqfuse bench failed: {err!r}")
                    continue
                ratio = f"{t_eq / fastest:10.2f}x" if fastest else ""
                print(f"{prog:24}{cells}{t_eq*1e3:9.2f}m {ratio}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "target/release/eqfuse")
