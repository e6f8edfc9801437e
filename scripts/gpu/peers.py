#!/usr/bin/env python3
"""Times eqfuse's benchmark programs written by hand in CuPy and in JAX (jit) on the GPU.

The same programs as tests/conformance/<name>/program.eqf, at the sizes `eqfuse bench`
uses on a GPU: 2^26 elements (dotp, saxpy, map_chain, sum_of_squares, blackscholes;
softmax_rows as [2^14, 2^12]; mandelbrot as [2^13, 2^13] with 24 steps) and nbody with
16384 bodies. Each timing is the median of --repeats runs after one warm-up run (which
also compiles the JAX version), synchronised with the device; inputs are on the device
before timing starts.

Prints one JSON list on stdout:
  [{"program": "dotp", "elements": 67108864, "peer": "cupy", "seconds": 1.2e-4,
    "repeats": 20}, ...]
A peer that is not installed, or a program that fails, gives an entry with "error"
instead of "seconds". `--peers numpy --scale 12` runs the same code on the CPU with numpy
at a small size: a smoke test that needs no GPU.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

PROGRAMS = ["dotp", "saxpy", "map_chain", "sum_of_squares", "softmax_rows", "blackscholes", "nbody", "mandelbrot"]
# also timed when asked for (--programs): a layer normalisation over the rows of an
# f32[r, c] matrix, as scripts/gpu/session.sh's step 7 writes it for eqfuse
EXTRA = ["layernorm"]


def shapes(name, scale):
    """Input shapes of `name` at 2^scale elements (nbody: bodies)."""
    n = 1 << scale
    if name in ("softmax_rows", "layernorm"):
        # rows of 4096 (at 2^26: [16384, 4096])
        return (1 << (scale - 12), 1 << 12) if scale > 12 else (1 << (scale // 2), 1 << (scale - scale // 2))
    if name == "mandelbrot":
        return (1 << (scale // 2), 1 << (scale - scale // 2))
    if name == "nbody":
        return (16384 if scale >= 20 else 1 << max(scale // 2, 4),)
    return (n,)


def elements(name, scale):
    return int(np.prod(shapes(name, scale)))


def make_inputs(name, scale, rng):
    """numpy inputs of the program (as the conformance cases' generators make them)."""
    shp = shapes(name, scale)
    f32 = lambda lo, hi: rng.uniform(lo, hi, size=shp).astype(np.float32)
    if name == "dotp":
        return {"xs": f32(-1, 1), "ys": f32(-1, 1)}
    if name == "saxpy":
        return {"alpha": np.float32(2.5), "xs": f32(-1, 1), "ys": f32(-1, 1)}
    if name == "map_chain":
        return {"xs": f32(-10, 10)}
    if name == "sum_of_squares":
        return {"n": int(shp[0])}
    if name == "softmax_rows":
        return {"m": f32(-5, 5)}
    if name == "layernorm":
        return {"x": f32(-4, 4)}
    if name == "blackscholes":
        return {"s": f32(5, 30), "x": f32(1, 100), "t": f32(0.25, 10)}
    if name == "nbody":
        return {"px": f32(-1, 1), "py": f32(-1, 1), "pz": f32(-1, 1), "mass": f32(0.1, 1)}
    if name == "mandelbrot":
        h, w = shp
        re = np.linspace(-2.0, 0.6, w)
        im = np.linspace(-1.2, 1.2, h)
        return {"cr": np.tile(re, (h, 1)), "ci": np.tile(im[:, None], (1, w))}
    raise ValueError(name)


def program(name, xp):
    """The program as a function of its inputs (keyword arguments), written with `xp`
    (numpy, cupy or jax.numpy) the way a user of that library would write it."""

    if name == "dotp":
        return lambda xs, ys: xp.dot(xs, ys)

    if name == "saxpy":
        return lambda alpha, xs, ys: alpha * xs + ys

    if name == "map_chain":
        return lambda xs: xp.sqrt(xp.abs((xs + 1) * 2 - 3))

    if name == "sum_of_squares":

        def sum_of_squares(n):
            i = xp.arange(n, dtype=xp.int64)
            return xp.sum(i * i)

        return sum_of_squares

    if name == "softmax_rows":

        def softmax_rows(m):
            e = xp.exp(m - xp.max(m, axis=1, keepdims=True))
            return e / xp.sum(e, axis=1, keepdims=True)

        return softmax_rows

    if name == "layernorm":

        def layernorm(x):
            d = x - xp.mean(x, axis=1, keepdims=True)
            return d / xp.sqrt(xp.mean(d * d, axis=1, keepdims=True) + np.float32(1e-5))

        return layernorm

    if name == "blackscholes":

        def cnd(d):
            k = 1.0 / (1.0 + 0.2316419 * xp.abs(d))
            w = (
                0.3989422804014327
                * xp.exp(-0.5 * d * d)
                * (k * (0.31938153 + k * (-0.356563782 + k * (1.781477937 + k * (-1.821255978 + k * 1.330274429)))))
            )
            return xp.where(d > 0, 1.0 - w, w)

        def blackscholes(s, x, t):
            d1 = (xp.log(s / x) + (0.02 + 0.5 * 0.3 * 0.3) * t) / (0.3 * xp.sqrt(t))
            d2 = d1 - 0.3 * xp.sqrt(t)
            e = x * xp.exp(-0.02 * t)
            call = s * cnd(d1) - e * cnd(d2)
            put = e * (1.0 - cnd(d2)) - s * (1.0 - cnd(d1))
            return call, put

        return blackscholes

    if name == "nbody":

        def nbody(px, py, pz, mass):
            dx = px[None, :] - px[:, None]
            dy = py[None, :] - py[:, None]
            dz = pz[None, :] - pz[:, None]
            d2 = dx * dx + dy * dy + dz * dz + 0.01
            w = mass[None, :] * (1.0 / (d2 * xp.sqrt(d2)))
            return xp.sum(w * dx, axis=1), xp.sum(w * dy, axis=1), xp.sum(w * dz, axis=1)

        return nbody

    if name == "mandelbrot":

        def mandelbrot(cr, ci):
            zr, zi = cr, ci
            n = xp.zeros(cr.shape, dtype=xp.int64)
            for _ in range(24):
                esc = zr * zr + zi * zi > 4.0
                zr, zi = (
                    xp.where(esc, zr, zr * zr - zi * zi + cr),
                    xp.where(esc, zi, 2.0 * zr * zi + ci),
                )
                n = xp.where(esc, n, n + 1)
            return n

        return mandelbrot

    raise ValueError(name)


class Peer:
    """A library: how to put inputs on the device, build the function, and wait."""

    def __init__(self, name):
        self.name = name
        if name == "cupy":
            import cupy

            self.xp = cupy
            self.put = lambda a: cupy.asarray(a) if isinstance(a, np.ndarray) else a
            self.build = lambda f: f
            self.sync = lambda out: cupy.cuda.Device().synchronize()
        elif name == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp

            self.xp = jnp
            self.put = lambda a: jax.device_put(a) if isinstance(a, np.ndarray) else a
            self.build = self._jit
            self.sync = jax.block_until_ready
            self.jax = jax
        elif name == "numpy":
            self.xp = np
            self.put = lambda a: a
            self.build = lambda f: f
            self.sync = lambda out: None
        else:
            raise ValueError(f"unknown peer {name}")

    def _jit(self, f):
        # sizes (sum_of_squares' n) are static: they shape arrays
        return lambda **kw: self._jitted(f, kw)

    def _jitted(self, f, kw):
        static = tuple(sorted(k for k, v in kw.items() if isinstance(v, int)))
        key = (id(f), static)
        cache = self.__dict__.setdefault("_cache", {})
        if key not in cache:
            cache[key] = self.jax.jit(f, static_argnames=static)
        return cache[key](**kw)


def time_program(peer, name, scale, repeats, rng):
    inputs = {k: peer.put(v) for k, v in make_inputs(name, scale, rng).items()}
    fn = peer.build(program(name, peer.xp))
    peer.sync(fn(**inputs))  # warm-up, compilation
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(**inputs)
        peer.sync(out)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peers", default="cupy,jax", help="comma-separated: cupy, jax, numpy")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--scale", type=int, default=26, help="2^scale elements (default 26)")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    results = []
    for peer_name in [p for p in args.peers.split(",") if p]:
        try:
            peer = Peer(peer_name)
        except Exception as e:  # not installed
            for name in args.programs.split(","):
                results.append({"program": name, "elements": elements(name, args.scale), "peer": peer_name,
                                "error": f"{type(e).__name__}: {e}"})
            continue
        for name in [p for p in args.programs.split(",") if p]:
            entry = {"program": name, "elements": elements(name, args.scale), "peer": peer_name}
            try:
                rng = np.random.default_rng(42)
                entry["seconds"] = time_program(peer, name, args.scale, args.repeats, rng)
                entry["repeats"] = args.repeats
            except Exception as e:
                entry["error"] = f"{type(e).__name__}: {e}"
            print(json.dumps(entry), file=sys.stderr)
            results.append(entry)
    json.dump(results, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
