"""Fits the cost model's rates to a machine: reads the table `benches/model.py` printed
(measured optimised and unfused times per program, with the sizes used), asks `eqfuse
explain --json` for each plan's work (the model's terms: launches, bytes, operations by
class, ...: the predicted time is linear in the inverse rates) and finds the non-negative
inverse rates that minimise the squared relative error of predicted against measured time.

    python3 benches/model.py > model.txt
    python3 benches/model_fit.py model.txt [path/to/eqfuse] [--folds K]

Prints the Spearman rank correlation of the current parameters (those `eqfuse` loads: the
defaults, or what `eqfuse calibrate` saved), of the fitted rates over every program, and
of rates fitted on all but one fold of the programs and scored on that fold (K-fold
cross-validation: how well the fit predicts programs it has not seen); then the fitted
rates as the TOML of `eqfuse calibrate`'s file, and the programs the fit predicts worst.
The work counts are those of the plans the current parameters choose: a fit that moves a
parameter far can change plans, so run `benches/model.py` again with the rates in place.
A benchmark's analysis, never a test.
"""
import argparse
import json
import math
import pathlib
import random
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benches"))
from model import spearman  # noqa: E402

# the terms of `Work` and the `CostParams` field each is priced at (count / rate, or
# count * seconds for `launches` and `code`)
TERMS = ["launches", "bytes", "cached", "flop", "div", "sqrt", "transcendental", "transcendental_f64", "int",
         "compare", "gather", "strided", "code", "gemm", "compact", "scan", "scatter"]
# the CostParams field of a term priced per unit where its name differs
FIELD = {"bytes": "bandwidth"}
CACHE_SPEEDUP = 10.0


def path_of(label):
    if label.startswith("phrasings/"):
        return ROOT / "tests" / f"{label}.eqf"
    if label.startswith("tests/conformance/"):
        return ROOT / label / "program.eqf"
    return ROOT / f"{label}.eqf"


def rows_of(table):
    """(label, sizes, measured optimised ms, measured unfused ms) from model.py's table."""
    out = []
    for line in pathlib.Path(table).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or "/" not in cells[3] or cells[0] in ("program", "---"):
            continue
        try:
            opt, unf = (float(x) for x in cells[3].split("/"))
        except ValueError:
            continue
        sizes = dict(kv.split("=") for kv in cells[1].split(", ") if "=" in kv)
        out.append((cells[0], sizes, opt, unf))
    return out


def works(eqfuse, label, sizes):
    args = [eqfuse, "explain", str(path_of(label)), "--json"]
    for k, v in sizes.items():
        args += ["--size", f"{k}={v}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    d = json.loads(r.stdout)
    return d["predicted_s"] * 1e3, d["work"], d["unfused"]["predicted_s"] * 1e3, d["unfused"]["work"]


def vector(work):
    """The work as coefficients of the unknowns x (seconds per unit of each term)."""
    return [float(work.get(t, 0.0)) for t in TERMS]


def fit(samples, fixed=None, iters=4000):
    """Non-negative x minimising sum ((a . x) / m - 1)^2 over samples (a, m): projected
    coordinate descent on the convex quadratic (rows scaled by 1 / m). `fixed` maps a term's
    index to its value, kept as it is."""
    fixed = fixed or {}
    n = len(TERMS)
    rows = [[c / (m * 1e-3) for c in a] for a, m in samples]
    x = [fixed.get(i, 0.0) for i in range(n)]
    g = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    b = [sum(r[i] for r in rows) for i in range(n)]
    for _ in range(iters):
        moved = 0.0
        for i in range(n):
            if g[i][i] <= 0 or i in fixed:
                continue
            rest = sum(g[i][j] * x[j] for j in range(n) if j != i)
            new = max(0.0, (b[i] - rest) / g[i][i])
            moved = max(moved, abs(new - x[i]) / (abs(x[i]) + 1e-30))
            x[i] = new
        if moved < 1e-9:
            break
    return x


def predict(a, x):
    return sum(c * v for c, v in zip(a, x)) * 1e3


def params_toml(x):
    lines = []
    for t, v in zip(TERMS, x):
        if t == "launches":
            lines.append(f"launch = {v:.3e}")
        elif t == "code":
            lines.append(f"code = {v:.3e}")
        elif t == "cached":
            lines.append(f"# cached bytes: {1 / v / CACHE_SPEEDUP:.3e} B/s as bandwidth" if v > 0 else "# cached: free")
        else:
            name = FIELD.get(t, t)
            lines.append(f"{name} = {1 / v:.3e}" if v > 0 else f"{name} = inf  # no cost found")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("table")
    ap.add_argument("eqfuse", nargs="?", default=str(ROOT / "target/release/eqfuse"))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--fix", action="append", default=[], metavar="PARAM=VALUE",
                    help="keep a parameter at a measured value (bandwidth=4.1e10, launch=2e-5)")
    args = ap.parse_args()
    fixed = {}
    for f in args.fix:
        name, value = f.split("=")
        v = float(value)
        term = {"bandwidth": "bytes", "launch": "launches"}.get(name, name)
        fixed[TERMS.index(term)] = v if term in ("launches", "code") else 1.0 / v
    samples, now, labels = [], [], []
    for label, sizes, opt, unf in rows_of(args.table):
        w = works(args.eqfuse, label, sizes)
        if w is None:
            print(f"skipped {label}: explain failed", file=sys.stderr)
            continue
        p_opt, w_opt, p_unf, w_unf = w
        for tag, p, work, m in (("opt", p_opt, w_opt, opt), ("unfused", p_unf, w_unf, unf)):
            samples.append((vector(work), m))
            now.append(p)
            labels.append(f"{label} ({tag})")
    meas = [m for _, m in samples]
    print(f"plans: {len(samples)}")
    print(f"Spearman, the parameters in use: {spearman(now, meas):.3f}")
    x = fit(samples, fixed)
    fitted = [predict(a, x) for a, _ in samples]
    print(f"Spearman, rates fitted to every plan: {spearman(fitted, meas):.3f}")
    # folds by program (both plans of a program in one fold)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    progs = sorted({l.rsplit(" (", 1)[0] for l in labels})
    random.Random(seed).shuffle(progs)
    fold_of = {p: i % args.folds for i, p in enumerate(progs)}
    held = [0.0] * len(samples)
    for k in range(args.folds):
        train = [s for s, l in zip(samples, labels) if fold_of[l.rsplit(" (", 1)[0]] != k]
        xk = fit(train, fixed)
        for i, (s, l) in enumerate(zip(samples, labels)):
            if fold_of[l.rsplit(" (", 1)[0]] == k:
                held[i] = predict(s[0], xk)
    print(f"Spearman, {args.folds}-fold cross-validated (seed {seed}): {spearman(held, meas):.3f}")
    print("\nfitted rates (the TOML of `eqfuse calibrate`):")
    print(params_toml(x))
    print("\nworst predicted (fitted rates), measured / predicted:")
    worst = sorted(zip(labels, meas, fitted), key=lambda t: -abs(math.log(t[1] / max(t[2], 1e-9))))
    for l, m, p in worst[:15]:
        print(f"  {l}: {m:.3f} / {p:.3f} ms ({m / max(p, 1e-9):.2f}x)")


if __name__ == "__main__":
    main()
