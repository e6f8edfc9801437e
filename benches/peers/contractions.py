"""Contractions against NumPy's `@` (OpenBLAS) and JAX-CPU, in one run on this machine.

    benches/peers/run.sh contractions [--sizes 512,2048] [--min-time-ms 1000]

For each size n and each of f32 and f64: the matrix product written the natural way,

    output c = reduce (+) 0 (generate [n, n, n] (\\i j p -> a[i, p] * b[p, j]))

and a one-head attention (q·kᵀ, a row softmax, ·v) at n × 64. Inputs are written as `.npy`;
eqfuse's result (`eqfuse run`) is checked against NumPy's with a tolerance (a contraction
sums in another order); then NumPy, JAX (jit, compile excluded) and `eqfuse bench` (the
optimised plan, median of its runs) are timed in turn. Writes `contractions.md` and
`contractions.json` beside this script.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402  (the peers' timing and machine description)

MATMUL = """-- the natural matrix product
input a : {t}[n, k]
input b : {t}[k, m]
output c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))
"""

ATTENTION = (ROOT / "tests" / "conformance" / "attention" / "program.eqf").read_text()


def median_time(run, min_runs, min_time):
    """peers.py's median timing (the seconds only)."""
    return peers.median_time(run, min_runs, min_time)[0]


def eqfuse_bench(eqfuse, prog, inputs, min_time_ms):
    out = subprocess.run(
        [eqfuse, "bench", str(prog), "--inputs", str(inputs), "--min-time-ms", str(min_time_ms)],
        capture_output=True, text=True, check=True,
    ).stdout
    for line in out.splitlines():
        if line.startswith("optimised"):
            # plan kernels native compile min median max
            return float(line.split()[5].removesuffix("ms")) / 1e3
    raise RuntimeError(f"no optimised row in:\n{out}")


def eqfuse_run(eqfuse, prog, inputs, out):
    subprocess.run([eqfuse, "run", str(prog), "--inputs", str(inputs), "--out", str(out)],
                   capture_output=True, text=True, check=True)
    return {p.stem: np.load(p) for p in Path(out).glob("*.npy")}


def explain_kinds(eqfuse, prog):
    out = subprocess.run([eqfuse, "explain", str(prog), "--json"], capture_output=True, text=True, check=True)
    return [k["kind"] for k in json.loads(out.stdout)["kernels"]]


def attention_np(xp, q, k, v):
    s = q @ k.T
    e = xp.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eqfuse", required=True)
    ap.add_argument("--sizes", default="512,2048")
    ap.add_argument("--min-time-ms", type=int, default=1000)
    args = ap.parse_args()

    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_platforms", "cpu")
    import jax.numpy as jnp

    jmatmul = jax.jit(lambda a, b: a @ b)
    jattention = jax.jit(lambda q, k, v: attention_np(jnp, q, k, v))
    rows = []
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cases = []
        for n in [int(x) for x in args.sizes.split(",")]:
            for t in ("f32", "f64"):
                cases.append(("matmul", n, t))
        cases.append(("attention", 2048, "f32"))
        for what, n, t in cases:
            dt = np.float32 if t == "f32" else np.float64
            case = tmp / f"{what}-{n}-{t}"
            (case / "in").mkdir(parents=True)
            if what == "matmul":
                prog = case / "matmul.eqf"
                prog.write_text(MATMUL.format(t=t))
                ins = {"a": rng.random((n, n), dtype=np.float64).astype(dt),
                       "b": rng.random((n, n), dtype=np.float64).astype(dt)}
                ref = lambda x: x["a"] @ x["b"]  # noqa: E731
                jfn = lambda x: jmatmul(x["a"], x["b"])  # noqa: E731
                out_name, shape = "c", f"{n}×{n} · {n}×{n}"
            else:
                prog = case / "attention.eqf"
                prog.write_text(ATTENTION)
                ins = {k: (rng.random((n, 64), dtype=np.float64) - 0.5).astype(dt) for k in "qkv"}
                ref = lambda x: attention_np(np, x["q"], x["k"], x["v"])  # noqa: E731
                jfn = lambda x: jattention(x["q"], x["k"], x["v"])  # noqa: E731
                out_name, shape = "o", f"n={n}, d=64"
            for k, v in ins.items():
                np.save(case / "in" / f"{k}.npy", v)
            want = ref(ins)
            got = eqfuse_run(args.eqfuse, prog, case / "in", case / "out")[out_name]
            tol = 1e-3 if t == "f32" else 1e-9
            ok = bool(np.allclose(got, want, rtol=tol, atol=tol * float(np.max(np.abs(want)))))
            jins = {k: jax.device_put(v) for k, v in ins.items()}
            jax.block_until_ready(jfn(jins))
            np_s = median_time(lambda: ref(ins), 5, args.min_time_ms / 1e3)
            jax_s = median_time(lambda: jax.block_until_ready(jfn(jins)), 5, args.min_time_ms / 1e3)
            eq_s = eqfuse_bench(args.eqfuse, prog, case / "in", args.min_time_ms)
            kinds = explain_kinds(args.eqfuse, prog)
            row = dict(program=what, size=shape, type=t, eqfuse_s=eq_s, numpy_s=np_s, jax_s=jax_s,
                       matches_numpy=ok, kernels=kinds)
            rows.append(row)
            print(f"{what} {shape} {t}: eqfuse {eq_s * 1e3:.2f} ms, NumPy {np_s * 1e3:.2f} ms, "
                  f"JAX {jax_s * 1e3:.2f} ms, matches {ok}, kernels {kinds}", file=sys.stderr)

    meta = dict(date=time.strftime("%Y-%m-%d %H:%M"), **peers.machine(), numpy=np.__version__, jax=jax.__version__)
    (HERE / "contractions.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=2) + "\n")
    lines = [
        "# Contractions against NumPy and JAX-CPU",
        "",
        f"{meta['date']}, {meta['cpu']}, {meta['cores']} cores; NumPy {meta['numpy']}, JAX {meta['jax']}. "
        "Medians; `benches/peers/run.sh contractions`.",
        "",
        "| program | size | type | eqfuse | NumPy | JAX jit | eqfuse / fastest peer | kernels |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        best = min(r["numpy_s"], r["jax_s"])
        lines.append(
            f"| {r['program']} | {r['size']} | {r['type']} | {r['eqfuse_s'] * 1e3:.2f} ms | "
            f"{r['numpy_s'] * 1e3:.2f} ms | {r['jax_s'] * 1e3:.2f} ms | {r['eqfuse_s'] / best:.2f}× | "
            f"{', '.join(r['kernels'])}{'' if r['matches_numpy'] else ' (MISMATCH)'} |"
        )
    (HERE / "contractions.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if not all(r["matches_numpy"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
