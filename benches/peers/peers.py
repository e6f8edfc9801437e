#!/usr/bin/env python3
"""eqfuse's CPU benchmark programs written in NumPy, numexpr and JAX (jit), timed next to
`eqfuse bench` on the same inputs at the same sizes, in one run.

For each program:

1. `eqfuse bench --filter NAME --dump-inputs DIR` writes the exact inputs `eqfuse bench`
   times (its seeded generator, its sizes) as .npy files;
2. `eqfuse run tests/conformance/NAME/program.eqf --inputs DIR --out DIR --backend cpu`
   computes eqfuse's outputs on them;
3. each peer runs once and its outputs are compared with eqfuse's; a peer that disagrees
   is reported ("mismatch") and not timed (this run also compiles JAX's version);
4. in each of --rounds interleaved rounds, each peer is timed (the median of repeated
   runs: at least --min-runs runs and at least --min-time-ms, as `eqfuse bench` does; JAX
   waits with block_until_ready), then `eqfuse bench --filter NAME --json --min-time-ms MS`
   times eqfuse's optimised plan, its unfused plan and the hand-written Rust+rayon loop;
   each figure reported is the median of its rounds' medians, so that on a shared machine
   every tool sees the same share of the noise.

Writes results.json, results.md (a Markdown table of medians and ratios) and peers.png (a
bar chart of time relative to the hand-written loop) into --out-dir.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ["dotp", "saxpy", "map_chain", "blackscholes", "softmax_rows", "variance", "nbody", "mandelbrot"]
PEERS = ["numpy", "numexpr", "jax"]

# The memory-bound programs, each with the fewest bytes it must move, from its input
# bytes: dotp reads its two inputs; saxpy and map_chain read theirs and write an output
# of the size of one input; variance reads its input twice (the exact mean is needed
# before the deviations, and 2^24 f64 do not stay in the cache between the two passes).
MEMORY_BOUND = {
    "dotp": lambda ins: ins,
    "saxpy": lambda ins: ins + ins // 2,
    "map_chain": lambda ins: 2 * ins,
    "variance": lambda ins: 2 * ins,
}
STEPS = 24  # mandelbrot's unrolled steps (tests/conformance/mandelbrot/program.eqf)

# Comparison tolerances, per program: |got - want| <= atol + rtol * |want| elementwise, with
# at most `frac` of the elements outside (eqfuse bench's own check allows 1e-3). atol is
# relative to max |want| for "atol_rel" (sums whose terms cancel), absolute otherwise.
TOLERANCE = {
    "dotp": dict(rtol=1e-3, atol_rel=1e-4, frac=0.0),  # 2^24-term f32 sum: order differs
    "saxpy": dict(rtol=1e-5, atol=1e-6, frac=0.0),
    "map_chain": dict(rtol=1e-5, atol=1e-6, frac=0.0),
    "blackscholes": dict(rtol=1e-3, atol=1e-3, frac=1e-3),
    "softmax_rows": dict(rtol=1e-3, atol=1e-7, frac=1e-3),
    "variance": dict(rtol=1e-9, atol=1e-12, frac=0.0),
    "nbody": dict(rtol=1e-3, atol_rel=1e-4, frac=1e-3),  # 4096-term sums with cancellation
    "mandelbrot": dict(rtol=0.0, atol=0.0, frac=1e-3),  # escape counts: FMA may move a few
}


# ---------------------------------------------------------------------------------------
# The programs, as a user of each library would write them. Each takes the inputs as
# keyword arguments and returns a dict of outputs named as the .eqf program names them.


def cnd_text(d):
    """blackscholes' cumulative normal distribution, as numexpr text over variable `d`."""
    return (
        f"where({d} > 0, 1.0 - W, W)".replace(
            "W",
            f"(0.3989422804014327 * exp(-0.5 * {d} * {d}) * (K * (0.31938153 + K * (-0.356563782 + K * "
            f"(1.781477937 + K * (-1.821255978 + K * 1.330274429))))))",
        ).replace("K", f"(1.0 / (1.0 + 0.2316419 * abs({d})))")
    )


def array_programs(xp):
    """The programs written with an array library `xp` (numpy or jax.numpy)."""

    def dotp(xs, ys):
        return {"dot": xp.dot(xs, ys)}

    def saxpy(alpha, xs, ys):
        return {"zs": alpha * xs + ys}

    def map_chain(xs):
        a = xs + 1
        b = a * 2
        c = b - 3
        return {"d": xp.sqrt(xp.abs(c))}

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
        c1, c2 = cnd(d1), cnd(d2)
        return {"call": s * c1 - e * c2, "put": e * (1.0 - c2) - s * (1.0 - c1)}

    def softmax_rows(m):
        e = xp.exp(m - xp.max(m, axis=1, keepdims=True))
        return {"sm": e / xp.sum(e, axis=1, keepdims=True)}

    def variance(xs):
        n = xs.shape[0]
        mean = xp.sum(xs) / n
        d = xs - mean
        return {"m": mean, "var": xp.sum(d * d) / n}

    def nbody(px, py, pz, mass):
        dx = px[None, :] - px[:, None]
        dy = py[None, :] - py[:, None]
        dz = pz[None, :] - pz[:, None]
        d2 = dx * dx + dy * dy + dz * dz + 0.01
        w = mass[None, :] * (1.0 / (d2 * xp.sqrt(d2)))
        return {"ax": xp.sum(w * dx, axis=1), "ay": xp.sum(w * dy, axis=1), "az": xp.sum(w * dz, axis=1)}

    def mandelbrot(cr, ci):
        # the program's 24 unrolled steps: an escaped point keeps its z and its count
        zr, zi = cr, ci
        n = xp.zeros(cr.shape, dtype=xp.int64)
        for _ in range(STEPS):
            esc = zr * zr + zi * zi > 4.0
            zr, zi = xp.where(esc, zr, zr * zr - zi * zi + cr), xp.where(esc, zi, 2.0 * zr * zi + ci)
            n = xp.where(esc, n, n + 1)
        return {"count": n}

    return {k: v for k, v in locals().items() if k in PROGRAMS}


def numexpr_programs(ne):
    """The programs written with numexpr: each `evaluate` is one blocked, multithreaded
    pass; softmax_rows' row reductions (an axis reduction numexpr cannot fuse with the rest)
    are NumPy's."""
    ev = ne.evaluate

    def dotp(xs, ys):
        return {"dot": ev("sum(xs * ys)")}

    def saxpy(alpha, xs, ys):
        return {"zs": ev("alpha * xs + ys")}

    def map_chain(xs):
        return {"d": ev("sqrt(abs((xs + 1) * 2 - 3))")}

    def blackscholes(s, x, t):
        d1 = ev("(log(s / x) + (0.02 + 0.5 * 0.3 * 0.3) * t) / (0.3 * sqrt(t))")
        d2 = ev("d1 - 0.3 * sqrt(t)")
        c1 = ev(cnd_text("d1"))
        c2 = ev(cnd_text("d2"))
        return {
            "call": ev("s * c1 - x * exp(-0.02 * t) * c2"),
            "put": ev("x * exp(-0.02 * t) * (1.0 - c2) - s * (1.0 - c1)"),
        }

    def softmax_rows(m):
        mx = m.max(axis=1, keepdims=True)
        e = ev("exp(m - mx)")
        s = e.sum(axis=1, keepdims=True)
        return {"sm": ev("e / s")}

    def variance(xs):
        n = xs.shape[0]
        mean = float(ev("sum(xs)")) / n
        return {"m": mean, "var": float(ev("sum((xs - mean) * (xs - mean))")) / n}

    def nbody(px, py, pz, mass):
        # one broadcast expression per output, reduced along the rows
        pi_x, pi_y, pi_z = px[:, None], py[:, None], pz[:, None]
        mj = mass[None, :]
        pj_x, pj_y, pj_z = px[None, :], py[None, :], pz[None, :]
        w = (
            "mj * (1.0 / (((pj_x - pi_x) ** 2 + (pj_y - pi_y) ** 2 + (pj_z - pi_z) ** 2 + 0.01)"
            " * sqrt((pj_x - pi_x) ** 2 + (pj_y - pi_y) ** 2 + (pj_z - pi_z) ** 2 + 0.01)))"
        )
        return {
            "ax": ev(f"sum({w} * (pj_x - pi_x), axis=1)"),
            "ay": ev(f"sum({w} * (pj_y - pi_y), axis=1)"),
            "az": ev(f"sum({w} * (pj_z - pi_z), axis=1)"),
        }

    def mandelbrot(cr, ci):
        zr, zi = cr, ci
        n = np.zeros(cr.shape, dtype=np.int64)
        for _ in range(STEPS):
            esc = ev("zr * zr + zi * zi > 4.0")
            zr, zi, n = (
                ev("where(esc, zr, zr * zr - zi * zi + cr)"),
                ev("where(esc, zi, 2.0 * zr * zi + ci)"),
                ev("where(esc, n, n + 1)"),
            )
        return {"count": n}

    return {k: v for k, v in locals().items() if k in PROGRAMS}


class Peer:
    """A library: its programs, how to put inputs where it computes, and how to wait."""

    def __init__(self, name, threads):
        self.name = name
        self.put = lambda a: a
        self.wait = lambda out: out
        if name == "numpy":
            self.version = np.__version__
            self.programs = array_programs(np)
        elif name == "numexpr":
            import numexpr as ne

            ne.set_num_threads(threads)
            self.version = ne.__version__
            self.programs = numexpr_programs(ne)
        elif name == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)  # variance and mandelbrot are f64
            jax.config.update("jax_platforms", "cpu")
            import jax.numpy as jnp

            self.version = jax.__version__
            self.programs = {k: jax.jit(f) for k, f in array_programs(jnp).items()}
            self.put = jax.device_put
            self.wait = jax.block_until_ready
        else:
            raise ValueError(name)


# ---------------------------------------------------------------------------------------


def sh(cmd, **kw):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stderr}")
    return r.stdout


def load_dir(d):
    return {p.stem: np.load(p) for p in sorted(Path(d).glob("*.npy"))}


def compare(name, got, want):
    """None when `got` matches `want` (dicts of outputs), else what differs."""
    tol = TOLERANCE[name]
    for k, w in want.items():
        if k not in got:
            return f"no output `{k}`"
        g = np.asarray(got[k])
        w = np.asarray(w)
        if g.shape != w.shape:
            return f"`{k}`: shape {g.shape}, eqfuse {w.shape}"
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        atol = tol.get("atol", 0.0) + tol.get("atol_rel", 0.0) * float(np.max(np.abs(w64), initial=0.0))
        err = np.abs(g64 - w64)
        bad = ~(err <= atol + tol["rtol"] * np.abs(w64))
        nbad = int(np.count_nonzero(bad))
        if nbad > tol["frac"] * w64.size:
            i = int(np.argmax(np.where(bad, err, -1.0)))
            return (
                f"`{k}`: {nbad} of {w64.size} elements differ (worst: {g64.flat[i]!r} vs eqfuse "
                f"{w64.flat[i]!r}; rtol {tol['rtol']}, atol {atol:.3g})"
            )
    return None


def median_time(run, min_runs, min_time):
    times = []
    started = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - started < min_time:
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
        if len(times) >= 1000:
            break
    return statistics.median(times), len(times)


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.0f} GiB"
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "python": platform.python_version()}


def wait_for_quiet(threshold, max_wait):
    """Waits (at most `max_wait` seconds) until the 1-minute load average is below
    `threshold`: the machine may be shared. Returns the load average then."""
    started = time.perf_counter()
    while os.getloadavg()[0] >= threshold and time.perf_counter() - started < max_wait:
        time.sleep(5)
    return round(os.getloadavg()[0], 2)


def bench_program(name, args, peers, work):
    eqfuse = str(args.eqfuse)
    load = wait_for_quiet(args.quiet_load, args.quiet_wait_s) if args.quiet_wait_s > 0 else None
    # bench writes WORK/NAME/INPUT.npy; eqfuse's outputs go to WORK/NAME.eqfuse/
    inputs_dir, out_dir = work / name, work / f"{name}.eqfuse"
    shutil.rmtree(inputs_dir, ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    sh([eqfuse, "bench", "--filter", name, "--scale", str(args.scale), "--dump-inputs", str(work)])
    prog = ROOT / "tests" / "conformance" / name / "program.eqf"
    sh([eqfuse, "run", str(prog), "--inputs", str(inputs_dir), "--out", str(out_dir), "--backend", "cpu"])
    inputs, want = load_dir(inputs_dir), load_dir(out_dir)
    # 0-d inputs (saxpy's alpha) become scalars of their type
    inputs = {k: (v[()] if v.ndim == 0 else v) for k, v in inputs.items()}
    row = {"program": name, "load": load, "shapes": {k: list(np.shape(v)) for k, v in inputs.items()}, "peers": {}}
    # check every peer once (this run also compiles JAX's version)
    ready = {}
    for peer in peers:
        entry = row["peers"].setdefault(peer.name, {})
        fn = peer.programs.get(name)
        if fn is None:
            entry["skipped"] = "not expressible"
            continue
        try:
            args_ = {k: peer.put(v) for k, v in inputs.items()}
            t0 = time.perf_counter()
            got = peer.wait(fn(**args_))
            entry["first_run_s"] = time.perf_counter() - t0
            bad = compare(name, {k: np.asarray(v) for k, v in got.items()}, want)
            del got
            if bad:
                entry["mismatch"] = bad
                print(f"  {peer.name}: MISMATCH, not timed: {bad}", file=sys.stderr)
                continue
            ready[peer.name] = (fn, args_)
        except Exception as e:  # a peer that fails is reported, not fatal
            entry["error"] = f"{type(e).__name__}: {e}"
            print(f"  {peer.name}: ERROR {entry['error']}", file=sys.stderr)
    del want
    # rounds: every peer, then eqfuse bench, so that each sees the same share of a shared
    # machine's noise; the result is the median of the rounds' medians
    rounds = {p: [] for p in ready}
    benches = []
    calibrated = []
    for r in range(args.rounds):
        if name in MEMORY_BOUND:
            # the machine's streaming bandwidth in this round, as the cost model measures it
            # (read plus written bytes of `dst[i] = src[i] * a + b` over reused buffers)
            cal = json.loads(sh([eqfuse, "calibrate", "--no-save", "--json"]))
            calibrated.append(cal["bandwidth"])
            print(f"  [{r + 1}] calibrate: {cal['bandwidth'] / 1e9:.1f} GB/s", file=sys.stderr)
        for pname, (fn, args_) in ready.items():
            entry = row["peers"][pname]
            peer = next(p for p in peers if p.name == pname)
            try:
                t, n = median_time(lambda: peer.wait(fn(**args_)), args.min_runs, args.min_time_ms / 1e3)
                rounds[pname].append(t)
                entry["runs"] = entry.get("runs", 0) + n
                print(f"  [{r + 1}] {pname}: {t * 1e3:.3f} ms ({n} runs)", file=sys.stderr)
            except Exception as e:
                entry["error"] = f"{type(e).__name__}: {e}"
                print(f"  {pname}: ERROR {entry['error']}", file=sys.stderr)
        out = sh([eqfuse, "bench", "--filter", name, "--json", "--scale", str(args.scale),
                  "--min-time-ms", str(args.min_time_ms)])
        m = [x for x in json.loads(out) if x["program"] == name][0]
        benches.append(m)
        print(f"  [{r + 1}] eqfuse: opt {m['fused_s'] * 1e3:.3f} ms, unfused {m['unfused_s'] * 1e3:.3f} ms, "
              f"hand-written {m['handwritten_s'] * 1e3:.3f} ms", file=sys.stderr)
    in_bytes = sum(int(np.asarray(v).nbytes) for v in inputs.values())
    del inputs, ready
    for pname, ts in rounds.items():
        e = row["peers"][pname]
        if ts and "error" not in e:
            e["rounds_s"] = ts
            e["seconds"] = statistics.median(ts)
    m = dict(benches[0])
    for k in ("fused_s", "unfused_s", "handwritten_s", "copy_s"):
        m[k + "_rounds"] = [b[k] for b in benches]
        m[k] = statistics.median(b[k] for b in benches)
    row["eqfuse"] = m
    if name in MEMORY_BOUND:
        moved = MEMORY_BOUND[name](in_bytes)
        # per round: eqfuse's rate, and two measures of the machine's limit taken in the same
        # round: `eqfuse bench`'s copy of the input bytes (read and written once, into a
        # reused buffer, by memcpy) and calibrate's streaming figure
        rates = [moved / b["fused_s"] for b in benches]
        copies = [2 * in_bytes / b["copy_s"] for b in benches]
        row["bandwidth"] = {
            "bytes_moved": moved,
            "eqfuse_rounds_Bps": rates,
            "copy_rounds_Bps": copies,
            "calibrate_rounds_Bps": calibrated,
            "vs_copy": statistics.median(r / c for r, c in zip(rates, copies)),
            "vs_calibrate": statistics.median(r / c for r, c in zip(rates, calibrated)),
        }
    if not args.keep:
        shutil.rmtree(inputs_dir, ignore_errors=True)
        shutil.rmtree(out_dir, ignore_errors=True)
    return row


# ---------------------------------------------------------------------------------------
# Reports

COLUMNS = [  # (key, heading)
    ("eqfuse", "eqfuse optimised"),
    ("eqfuse_unfused", "eqfuse unfused"),
    ("handwritten", "hand-written Rust"),
    ("numpy", "NumPy"),
    ("numexpr", "numexpr"),
    ("jax", "JAX jit"),
]


def times_of(row):
    m = row["eqfuse"]
    t = {"eqfuse": m["fused_s"], "eqfuse_unfused": m["unfused_s"], "handwritten": m["handwritten_s"]}
    for p, e in row["peers"].items():
        t[p] = e.get("seconds")
    return t


def size_text(row):
    shapes = row["shapes"]
    big = max(shapes.values(), key=lambda s: int(np.prod(s)) if s else 1)
    if row["program"] == "nbody":
        return f"{big[0]} bodies"
    if len(big) == 1:
        n = big[0]
        return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)
    return " × ".join(map(str, big))


def fmt_ms(s):
    return f"{s * 1e3:.2f}" if s >= 1e-3 else f"{s * 1e3:.3f}"


def markdown(rows, meta):
    lines = [
        f"Measured {meta['date']} on {meta['machine']['cpu']} ({meta['machine']['cores']} cores, "
        f"{meta['machine']['memory']}); 1-minute load average {meta['load_before']} at the start, "
        f"{meta['load_after']} at the end (the machine is shared). "
        f"NumPy {meta['versions'].get('numpy', '?')}, numexpr {meta['versions'].get('numexpr', '?')} "
        f"({meta['threads']} threads), JAX {meta['versions'].get('jax', '?')} (CPU, `jax.jit`), "
        f"Python {meta['machine']['python']}. Median milliseconds (at least {meta['min_runs']} runs "
        f"and {meta['min_time_ms']} ms per entry, in each of {meta['rounds']} interleaved rounds: "
        "every peer then `eqfuse bench`; the median of the rounds' medians); in brackets, time relative to the hand-written "
        "Rust+rayon loop (lower is faster). *load*: the 1-minute load average when the program's "
        "measurements started.",
        "",
        "| program | size | " + " | ".join(h for _, h in COLUMNS) + " | fastest peer vs eqfuse | load |",
        "| --- | --- | " + " | ".join("---:" for _ in COLUMNS) + " | --- | ---: |",
    ]
    notes = []
    for row in rows:
        t = times_of(row)
        hw = t["handwritten"]
        cells = []
        for key, _ in COLUMNS:
            e = row["peers"].get(key, {})
            if t.get(key) is not None:
                cell = fmt_ms(t[key]) if key == "handwritten" else f"{fmt_ms(t[key])} ({t[key] / hw:.2f}×)"
            elif "skipped" in e:
                cell = "—"
            elif "mismatch" in e:
                cell = "mismatch"
                notes.append(f"{row['program']}, {key}: {e['mismatch']}")
            elif "error" in e:
                cell = "error"
                notes.append(f"{row['program']}, {key}: {e['error']}")
            else:
                cell = "—"
            cells.append(cell)
        peer_t = {p: t[p] for p in PEERS if t.get(p) is not None}
        if peer_t:
            best = min(peer_t, key=peer_t.get)
            r = t["eqfuse"] / peer_t[best]
            verdict = (
                f"{best} {r:.2f}× faster" if r > 1 else f"eqfuse {1 / r:.2f}× faster (than {best})"
            )
        else:
            verdict = "—"
        lines.append(f"| {row['program']} | {size_text(row)} | " + " | ".join(cells) + f" | {verdict} | {row.get('load') if row.get('load') is not None else '—'} |")
    lines.append("")
    lines.append("Where a peer beats eqfuse optimised:")
    lines.append("")
    wins = []
    for row in rows:
        t = times_of(row)
        for p in PEERS:
            if t.get(p) is not None and t[p] < t["eqfuse"]:
                wins.append(
                    f"- {row['program']}: {p} {fmt_ms(t[p])} ms vs eqfuse {fmt_ms(t['eqfuse'])} ms — "
                    f"{t['eqfuse'] / t[p]:.2f}× faster"
                )
    lines += wins or ["- none"]
    if notes:
        lines += ["", "Not timed:", ""] + [f"- {n}" for n in notes]
    bw = [row for row in rows if "bandwidth" in row]
    if bw:
        lines += [
            "",
            "Against the machine's bandwidth (memory-bound programs): the fewest bytes each "
            "program must move (reads plus writes) over eqfuse's optimised time, against two "
            "limits measured in the same round — `eqfuse bench`'s copy of the input bytes "
            "(memcpy into a reused buffer) and `eqfuse calibrate`'s streaming figure; the "
            "median of the rounds' ratios.",
            "",
            "| program | bytes moved | eqfuse | copy | calibrate | eqfuse / copy | eqfuse / calibrate |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in bw:
            b = row["bandwidth"]
            gb = lambda xs: f"{statistics.median(xs) / 1e9:.1f} GB/s"
            lines.append(
                f"| {row['program']} | {b['bytes_moved'] / 1e6:.0f} MB | {gb(b['eqfuse_rounds_Bps'])} | "
                f"{gb(b['copy_rounds_Bps'])} | {gb(b['calibrate_rounds_Bps'])} | "
                f"{b['vs_copy'] * 100:.0f}% | {b['vs_calibrate'] * 100:.0f}% |"
            )
    lines.append("")
    lines.append(
        "numexpr: `—` where the program is not a natural numexpr expression; softmax_rows' "
        "row max and row sum are NumPy's (numexpr evaluates `exp(m - mx)` and `e / s`)."
    )
    return "\n".join(lines) + "\n"


def chart(rows, path, meta):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [(k, h) for k, h in COLUMNS if k != "handwritten"]
    colors = {"eqfuse": "#1f77b4", "eqfuse_unfused": "#aec7e8", "numpy": "#ff7f0e", "numexpr": "#2ca02c",
              "jax": "#d62728"}
    fig, ax = plt.subplots(figsize=(11, 4.8), dpi=100)
    width = 0.8 / len(series)
    for si, (key, heading) in enumerate(series):
        xs, ys = [], []
        for ri, row in enumerate(rows):
            t = times_of(row)
            if t.get(key) is not None:
                xs.append(ri - 0.4 + width * (si + 0.5))
                ys.append(t[key] / t["handwritten"])
        ax.bar(xs, ys, width, label=heading, color=colors[key])
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--", label="hand-written Rust = 1")
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["program"] for r in rows])
    ax.set_ylabel("time / hand-written loop (log)")
    ax.set_title(f"CPU, {meta['machine']['cores']} cores, {meta['date'][:10]}: lower is faster")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=3)
    fig.tight_layout()
    fig.savefig(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--eqfuse", type=Path, default=ROOT / "target" / "release" / "eqfuse")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--scale", type=float, default=1.0, help="eqfuse bench --scale (1: its documented sizes)")
    ap.add_argument("--min-time-ms", type=int, default=500, help="per entry and round")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median of their medians)")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="numexpr's threads")
    ap.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "work")
    ap.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument("--quiet-load", type=float, default=1.0,
                    help="before each program, wait until the 1-minute load average is below this")
    ap.add_argument("--quiet-wait-s", type=float, default=60, help="... for at most this long (0: never wait)")
    ap.add_argument("--keep", action="store_true", help="keep the inputs and outputs under --work")
    args = ap.parse_args()

    peers = [Peer(p, args.threads) for p in args.peers.split(",") if p]
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "versions": {p.name: p.version for p in peers},
        "threads": args.threads,
        "min_time_ms": args.min_time_ms,
        "min_runs": args.min_runs,
        "rounds": args.rounds,
        "scale": args.scale,
        "load_before": f"{os.getloadavg()[0]:.2f}",
    }
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in [p for p in args.programs.split(",") if p]:
        print(f"{name}:", file=sys.stderr)
        rows.append(bench_program(name, args, peers, args.work))
    meta["load_after"] = f"{os.getloadavg()[0]:.2f}"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    md = markdown(rows, meta)
    (args.out_dir / "results.md").write_text(md)
    chart(rows, args.out_dir / "peers.png", meta)
    print(md)
    failed = [r["program"] for r in rows for e in r["peers"].values() if "mismatch" in e or "error" in e]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
