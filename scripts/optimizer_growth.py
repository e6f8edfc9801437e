#!/usr/bin/env python3
"""Plots the optimiser-growth benchmark (benches/optimizer_growth.rs) and fits the growth
exponent between each pair of sizes: docs/optimizer-growth.png.

    cargo bench --bench optimizer_growth
    python3 scripts/optimizer_growth.py [target/criterion] [docs/optimizer-growth.png]

Reads criterion's estimates (`optimize/<shape>/<n>/new/estimates.json`, the mean) and
prints a Markdown table of the times and the exponents log(t2/t1)/log(n2/n1).
"""
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

root = sys.argv[1] if len(sys.argv) > 1 else "target/criterion"
out = sys.argv[2] if len(sys.argv) > 2 else "docs/optimizer-growth.png"
data = {}
for shape in ("chain", "mixed", "wide", "nest"):
    d = os.path.join(root, "optimize_" + shape)
    if not os.path.isdir(d):
        continue
    for n in os.listdir(d):
        est = os.path.join(d, n, "new", "estimates.json")
        if n.isdigit() and os.path.exists(est):
            with open(est) as f:
                data.setdefault(shape, {})[int(n)] = json.load(f)["mean"]["point_estimate"] / 1e9

print("| shape | " + " | ".join(f"{n} ops" for n in sorted({n for s in data.values() for n in s})) + " | exponents |")
print("| --- " * (2 + len({n for s in data.values() for n in s})) + "|")
fig, ax = plt.subplots(figsize=(6, 4))
for shape, pts in sorted(data.items()):
    ns = sorted(pts)
    ts = [pts[n] for n in ns]
    exps = [math.log(ts[i + 1] / ts[i]) / math.log(ns[i + 1] / ns[i]) for i in range(len(ns) - 1)]
    print(f"| {shape} | " + " | ".join(f"{t:.2f} s" for t in ts) + " | " +
          ", ".join(f"{ns[i]}→{ns[i + 1]}: {e:.2f}" for i, e in enumerate(exps)) + " |")
    ax.loglog(ns, ts, "o-", label=shape)
if data:
    ns = sorted({n for s in data.values() for n in s})
    t0 = min(min(p.values()) for p in data.values())
    ax.loglog(ns, [t0 * n / ns[0] for n in ns], "k--", lw=0.8, label="linear")
ax.set_xlabel("array operations")
ax.set_ylabel("optimisation time (s)")
ax.set_title("eqfuse optimisation time against program size")
ax.grid(True, which="both", lw=0.3)
ax.legend()
fig.tight_layout()
fig.savefig(out, dpi=120)
print(f"wrote {out}")
