#!/usr/bin/env bash
# The phrasing suite's measured spread (docs/phrasings.md): every member of every set of
# tests/phrasings/ timed with `eqfuse bench` (its optimised plan, random inputs at the set's
# `bench` sizes from set.toml), and each set's spread, max / min of its members' times (one
# run; a timing, never a test).
#
#   benches/phrasings.sh [SET_FILTER] [MIN_TIME_MS]
#
# EQFUSE (default target/release/eqfuse) names the binary; build it first
# (`cargo build --release`). Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
EQFUSE=${EQFUSE:-target/release/eqfuse}
FILTER=${1:-}
MIN_MS=${2:-300}
exec python3 - "$EQFUSE" "$FILTER" "$MIN_MS" <<'EOF'
import pathlib, re, subprocess, sys, tomllib

eqfuse, want, min_ms = sys.argv[1], sys.argv[2], sys.argv[3]
root = pathlib.Path("tests/phrasings")
row = re.compile(r"^optimised\s+\d+\s+\d+\s+\S+\s+([\d.]+)(ms|s|us|µs)\s+([\d.]+)(ms|s|us|µs)")
unit = {"s": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3}

def time_ms(prog, sizes):
    args = [eqfuse, "bench", str(prog), "--random-inputs", "1", "--min-time-ms", min_ms]
    for k, v in sizes.items():
        args += ["--size", f"{k}={v}"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=600)
    for line in out.stdout.splitlines():
        m = row.match(line)
        if m:
            return float(m.group(1)) * unit[m.group(2)], float(m.group(3)) * unit[m.group(4)]
    raise RuntimeError(f"{prog}: no timing\n{out.stdout}\n{out.stderr}")

print("| set | sizes | members (min ms) | spread |")
print("| --- | --- | --- | ---: |")
for d in sorted(p for p in root.iterdir() if p.is_dir()):
    if want and want not in d.name:
        continue
    cfg = tomllib.loads((d / "set.toml").read_text())
    sizes = cfg.get("bench", cfg.get("sizes", {}))
    times = []
    for prog in sorted(d.glob("*.eqf")):
        try:
            lo, _median = time_ms(prog, sizes)
            times.append((prog.stem, lo))
        except Exception as e:  # a member that fails is reported, the others still run
            times.append((prog.stem, float("nan")))
            print(f"<!-- {e} -->", file=sys.stderr)
    ok = [t for _, t in times if t == t]
    spread = max(ok) / min(ok) if len(ok) == len(times) and min(ok) > 0 else float("nan")
    members = ", ".join(f"{n} {t:.3f}" for n, t in times)
    size_text = " ".join(f"{k}={v}" for k, v in sizes.items())
    print(f"| {d.name} | {size_text} | {members} | {spread:.2f} |", flush=True)
EOF
