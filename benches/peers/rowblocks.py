"""Row programs against NumPy and JAX-CPU, in one run on this machine.

    benches/peers/run.sh rowblocks [--rows 4096] [--cols 4096] [--min-time-ms 1000]

`softmax_rows` (examples/softmax_rows.eqf) and a layer normalisation over an `f32[r, c]`
matrix: eqfuse's optimised plan (`eqfuse bench`, median) with its row blocks, the same plan
run phase by phase (`EQFUSE_NO_ROWBLOCK=1`), NumPy and JAX (jit, compile excluded). eqfuse's
results are checked against NumPy's first. Writes `rowblocks.md` beside this script.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import contractions  # noqa: E402  (eqfuse's bench and run)
import peers  # noqa: E402  (timing and the machine's description)

LAYERNORM = """-- per-row mean, variance and normalise
input x : f32[r, c]
let mean = map (\\s -> s / f32 c) (reduce (+) 0 x)
let d = generate [r, c] (\\i j -> x[i, j] - mean[i])
let var = map (\\s -> s / f32 c) (reduce (+) 0 (map (\\v -> v * v) d))
output y = generate [r, c] (\\i j -> d[i, j] / sqrt (var[i] + 0.00001))
"""


def softmax(xp, m):
    e = xp.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def layernorm(xp, x):
    d = x - x.mean(axis=1, keepdims=True)
    return d / xp.sqrt((d * d).mean(axis=1, keepdims=True) + np.float32(1e-5))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eqfuse", required=True)
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--min-time-ms", type=int, default=1000)
    args = ap.parse_args()

    import jax

    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp

    rng = np.random.default_rng(11)
    x = (rng.random((args.rows, args.cols), dtype=np.float64) * 8 - 4).astype(np.float32)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, src, inp, out, fn in [
            ("softmax_rows", (ROOT / "examples" / "softmax_rows.eqf").read_text(), "m", "sm", softmax),
            ("layernorm", LAYERNORM, "x", "y", layernorm),
        ]:
            case = tmp / name
            (case / "in").mkdir(parents=True)
            prog = case / "program.eqf"
            prog.write_text(src)
            np.save(case / "in" / f"{inp}.npy", x)
            want = fn(np, x)
            got = contractions.eqfuse_run(args.eqfuse, prog, case / "in", case / "out")[out]
            ok = bool(np.allclose(got, want, rtol=1e-4, atol=1e-5))
            jfn = jax.jit(lambda a, fn=fn: fn(jnp, a))
            jx = jax.device_put(x)
            jax.block_until_ready(jfn(jx))
            t = args.min_time_ms / 1e3
            np_s = peers.median_time(lambda: fn(np, x), 5, t)[0]
            jax_s = peers.median_time(lambda: jax.block_until_ready(jfn(jx)), 5, t)[0]
            eq_s = contractions.eqfuse_bench(args.eqfuse, prog, case / "in", args.min_time_ms)
            os.environ["EQFUSE_NO_ROWBLOCK"] = "1"
            try:
                phased_s = contractions.eqfuse_bench(args.eqfuse, prog, case / "in", args.min_time_ms)
            finally:
                del os.environ["EQFUSE_NO_ROWBLOCK"]
            rows.append((name, eq_s, phased_s, np_s, jax_s, ok))
            print(f"{name}: eqfuse {eq_s * 1e3:.2f} ms (phase by phase {phased_s * 1e3:.2f} ms), "
                  f"NumPy {np_s * 1e3:.2f} ms, JAX {jax_s * 1e3:.2f} ms, matches {ok}", file=sys.stderr)
    m = peers.machine()
    lines = [
        "# Row programs against NumPy and JAX-CPU",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M')}, {m['cpu']}, {m['cores']} cores; NumPy {np.__version__}, "
        f"JAX {jax.__version__}; `f32[{args.rows}, {args.cols}]`. Medians; `benches/peers/run.sh rowblocks`.",
        "",
        "| program | eqfuse (row block) | eqfuse (phase by phase) | NumPy | JAX jit | eqfuse / fastest peer |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, eq_s, phased_s, np_s, jax_s, ok in rows:
        lines.append(
            f"| {name}{'' if ok else ' (MISMATCH)'} | {eq_s * 1e3:.2f} ms | {phased_s * 1e3:.2f} ms | "
            f"{np_s * 1e3:.2f} ms | {jax_s * 1e3:.2f} ms | {eq_s / min(np_s, jax_s):.2f}× |"
        )
    (HERE / "rowblocks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not all(r[-1] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
