"""Does the cost model agree with the machine? Every program of the suites (examples,
phrasings, version 2 and kernel benchmarks; conformance programs with their own inputs
scaled up where random inputs fit them) is optimised and timed with its unfused plan
(`eqfuse bench PROGRAM`, which times the two interleaved, run by run:
docs/design-decisions.md, decision 17); the table gives predicted against measured times,
and the summary the Spearman rank correlation of predicted and measured times over every
(program, plan) pair, and the programs whose optimised plan is measurably slower than the
unfused one.

    python3 benches/model.py [path/to/eqfuse] [--min-time-ms MS] [--filter TEXT] [--skip TEXT]...

Sizes: a phrasing set's `bench` sizes; for other programs every size name is given so
that its largest input has about 2^22 elements (a name's extent is the smallest that any
input's rank asks of it). Inputs are `--random-inputs 1` (floats in [0, 1), integers in
0..16); a program that fails on them (offsets that must be sorted, say) is listed as
skipped. One run; a benchmark, never a test.

MODEL_CAP_S (default 60) caps each program's time, in seconds: its `check`, `explain` and
`bench` together (the unfused integer matrix products of the conformance suite take minutes
each). A program over the cap is stopped (its process group killed), listed as skipped with
the reason, and the run goes on. A pair measured more than 5% slower optimised is marked `(one plan)`
when its optimised plan is the unfused plan (the same kernels, work and predicted time:
its two times differ by the run's noise), else timed RECHECK (4) more times and reported
with the median of its ratios. `--skip TEXT` (repeatable) leaves out every program whose
path or label contains TEXT; `--filter TEXT` keeps only those whose label contains it.
"""
import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import time
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
ELEMENTS = 1 << 22
# more `bench` calls for a pair measured slower optimised, when its two plans differ
RECHECK = 4
# programs whose random inputs need sizes of their own
SIZES = {
    "benches/peers/kernels/short_inner_map.eqf": {"paths": 262144},
    "benches/peers/kernels/column_sums.eqf": {"r": 1 << 20, "c": 16},
    "benches/v2/jacobi.eqf": {"h": 1024, "w": 1024},
    # quadratic work: all pairs of bodies
    "examples/nbody.eqf": {"n": 4096},
    # cubic work: matrix products at 512 (2048, from the 2^22 elements, takes minutes unfused)
    "examples/matmul.eqf": {"n": 512, "k": 512, "m": 512},
    "tests/conformance/int_matmul/program.eqf": {"n": 512, "k": 512, "m": 512},
    "tests/conformance/matmul/program.eqf": {"n": 512, "k": 512, "m": 512},
    "tests/conformance/matmul_transposed/program.eqf": {"n": 512, "k": 512, "m": 512},
    # products that are not contractions, at the same size
    "tests/conformance/maxplus/program.eqf": {"n": 512, "k": 512, "m": 512},
    "tests/conformance/matmul_subblock/program.eqf": {"n": 512, "k": 512, "q": 512, "m": 512},
}


class OverCap(Exception):
    """A program ran past its MODEL_CAP_S."""


def run_capped(args, deadline):
    """`subprocess.run(args)`, text output captured, killed (its whole process group: the
    C compiler `eqfuse` may have started too) at `deadline` (`time.monotonic()`)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise OverCap()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=left)
    except BaseException as e:  # the cap, or Ctrl-C: the child is in a session of its own
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        if isinstance(e, subprocess.TimeoutExpired):
            raise OverCap() from None
        raise
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def programs():
    """(label, path, sizes or None)."""
    out = []
    for d in sorted((ROOT / "tests/phrasings").iterdir()):
        if (d / "set.toml").exists():
            bench = tomllib.loads((d / "set.toml").read_text()).get("bench", {})
            for p in sorted(d.glob("*.eqf")):
                out.append((f"phrasings/{d.name}/{p.stem}", p, bench))
    for pattern in ["examples/*.eqf", "benches/v2/*.eqf", "benches/peers/kernels/*.eqf",
                    "tests/conformance/*/program.eqf"]:
        for p in sorted(ROOT.glob(pattern)):
            rel = str(p.relative_to(ROOT))
            label = rel.removesuffix("/program.eqf").removesuffix(".eqf")
            out.append((label, p, SIZES.get(rel)))
    return out


def guess_sizes(eqfuse, path, deadline):
    """Every size name of `path`'s inputs, so that its largest input has ~ELEMENTS."""
    out = run_capped([eqfuse, "check", str(path)], deadline).stdout
    sizes = {}
    for m in re.finditer(r"^\s+input\s+\w+\s*:\s*\w+\[([^\]]*)\]", out, re.M):
        names = [n.strip() for n in m.group(1).split(",")]
        per = max(2, round(ELEMENTS ** (1 / len(names))))
        for n in names:
            if re.fullmatch(r"[A-Za-z_]\w*", n):
                sizes[n] = min(sizes.get(n, per), per)
    return sizes


def predicted(eqfuse, path, sizes, deadline):
    args = [eqfuse, "explain", str(path), "--json"]
    for k, v in sizes.items():
        args += ["--size", f"{k}={v}"]
    r = run_capped(args, deadline)
    if r.returncode != 0:
        return None
    d = json.loads(r.stdout)
    return d["predicted_s"] * 1e3, d["unfused"]["predicted_s"] * 1e3, one_plan(d)


def one_plan(d):
    """Whether `explain --json` output `d` shows the optimised plan to be the unfused plan:
    the same kernels, the same counted work, the same predicted time."""
    u = d["unfused"]
    return (d["predicted_s"] == u["predicted_s"] and d["work"] == u.get("work")
            and d.get("kernel_count") == u.get("kernels"))


def measured(eqfuse, path, sizes, min_ms, deadline):
    args = [eqfuse, "bench", str(path), "--random-inputs", "1", "--json", "--min-time-ms", str(min_ms)]
    for k, v in sizes.items():
        args += ["--size", f"{k}={v}"]
    r = run_capped(args, deadline)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["?"])[0][:80]
    plans = {p["plan"]: p for p in json.loads(r.stdout)["plans"]}
    got = [plans.get(k, {}).get("min_ms") for k in ("optimised", "unfused")]
    if None in got:
        return None, "not run"
    return tuple(got), None


def ranks(xs):
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("eqfuse", nargs="?", default=str(ROOT / "target/release/eqfuse"))
    ap.add_argument("--min-time-ms", type=int, default=200)
    ap.add_argument("--filter", default="")
    ap.add_argument("--skip", action="append", default=[], metavar="TEXT",
                    help="leave out the programs whose path or label contains TEXT (repeatable)")
    args = ap.parse_args()
    try:
        cap_s = float(os.environ.get("MODEL_CAP_S", "60"))
    except ValueError:
        cap_s = 0.0
    if not cap_s > 0:
        ap.error(f"MODEL_CAP_S must be a positive number of seconds, not {os.environ['MODEL_CAP_S']!r}")
    # the programs run in sessions of their own (so that the cap can stop a whole process
    # group), out of reach of the terminal's signals: stop them on the way out
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    rows, skipped, left_out, over = [], [], [], 0
    print("| program | sizes | predicted opt / unfused (ms) | measured opt / unfused (ms) | opt / unfused |")
    print("| --- | --- | ---: | ---: | ---: |")
    for label, path, sizes in programs():
        if args.filter not in label:
            continue
        rel = str(path.relative_to(ROOT))
        if any(s in rel or s in label for s in args.skip):
            left_out.append(label)
            continue
        deadline = time.monotonic() + cap_s
        try:
            sizes = sizes if sizes is not None else guess_sizes(args.eqfuse, path, deadline)
            pred = predicted(args.eqfuse, path, sizes, deadline)
            meas, why = measured(args.eqfuse, path, sizes, args.min_time_ms, deadline) if pred else (None, None)
        except OverCap:
            pred, meas, why = None, None, f"over the {cap_s:g} s cap (MODEL_CAP_S)"
            over += 1
        if pred is None or meas is None:
            skipped.append((label, why or "explain failed"))
            continue
        rows.append((label, pred, meas, path, sizes))
        size_text = ", ".join(f"{k}={v}" for k, v in sizes.items())
        print(f"| {label} | {size_text} | {pred[0]:.3f} / {pred[1]:.3f} | {meas[0]:.3f} / {meas[1]:.3f} "
              f"| {meas[0] / meas[1]:.2f} |", flush=True)
    p = [x for _, pr, *_ in rows for x in pr[:2]]
    m = [x for _, _, me, *_ in rows for x in me]
    slower = [(l, me[0] / me[1], pr[2], path, sizes) for l, pr, me, path, sizes in rows if me[0] > 1.05 * me[1]]
    print()
    print(f"programs measured: {len(rows)}; skipped: {len(skipped)} ({over} over the {cap_s:g} s cap); "
          f"left out by --skip: {len(left_out)}")
    if rows:
        print(f"Spearman rank correlation of predicted and measured (all plans): {spearman(p, m):.3f}")
        print(f"optimised only: {spearman([r[1][0] for r in rows], [r[2][0] for r in rows]):.3f}")
    same = sum(1 for _, _, one, *_ in slower if one)
    print(f"optimised more than 5% slower than unfused: {len(slower)} ({len(slower) - same} with a plan "
          f"of its own; {same} where the optimised plan is the unfused plan: the run's noise)")
    still = 0
    for l, r, one, path, sizes in slower:
        if one:
            print(f"  {l}: {r:.2f}x (one plan)")
            continue
        # a second opinion on plans of their own: RECHECK more `bench` calls, the median of
        # every call's ratio (the first one's included)
        again = []
        for _ in range(RECHECK):
            try:
                me, _ = measured(args.eqfuse, path, sizes, args.min_time_ms, time.monotonic() + cap_s)
            except OverCap:
                break
            if me:
                again.append(me[0] / me[1])
        median = statistics.median([r, *again])
        still += median > 1.05
        print(f"  {l}: {r:.2f}x; again {', '.join(f'{x:.2f}' for x in again) or '(not run)'}: "
              f"median {median:.2f}x")
    if len(slower) > same:
        print(f"slower after {RECHECK} more calls (median ratio over 1.05): {still} of {len(slower) - same}")
    for l, why in skipped:
        print(f"  skipped {l}: {why}")


if __name__ == "__main__":
    main()
