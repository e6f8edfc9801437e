#!/usr/bin/env bash
# The phrasing suite's measured spread (docs/phrasings.md): every member of every set of
# tests/phrasings/ timed with `eqfuse bench` (its optimised plan, random inputs at the set's
# `bench` sizes from set.toml), and each set's spread, max / min of its members' times (a
# timing, never a test).
#
#   benches/phrasings.sh [SET_FILTER] [MIN_TIME_MS]
#
# ROUNDS (default 5) rounds per set. A round is one `eqfuse bench A.eqf B.eqf ...
# --min-time-ms MIN_TIME_MS` call (a fresh process) that times every member of the set
# interleaved, in rounds of one run of each in one order (`eqfuse::bench::interleaved`,
# docs/design-decisions.md, decision 17): a busy period of the machine falls
# on all members alike, and no member finds its arrays still in the shared L3 cache from
# its own last run (on this machine an 8M-element map ran in 0.87 ms or 1.2-1.4 ms from one
# call to the next, by what else held the cache, when members were timed one call each).
# Each round starts one member later on the command line (round 1: a b c, round 2: b c a,
# ...): in one call the program named first ran up to 1.3x slower than alone in a stencil
# (`torus_wraps`, whichever member it was; the cause is not found: running the members in
# the reverse order within each round kept the first *named* one slow), so every member
# is named first in some rounds and not in others. A member's time is the least over the
# rounds of its per-call minimum (`min_ms`): interference, and that position, only add
# time. Where the interleaved call
# fails (a member does not run), the round times each member in a call of its own, and the
# failure is reported.
#
# "one plan": yes when every member's optimised plan (the `plan:` section of
# `eqfuse explain PROG --size k=v ...` at the set's bench sizes) is the same up to the names
# of arrays: input, size and intermediate array names are renamed in order of first
# appearance before hashing, and a kernel written as a `map` counts as the `generate` it
# compiles to. "no" lists the groups of members that share a plan. A "*" marks
# a set where some member's plan at the bench sizes differs from its plan at the default
# sizes, which is the plan `eqfuse bench` times (docs/explain.md, "The plan that runs").
#
# EQFUSE (default target/release/eqfuse) names the binary; build it first
# (`cargo build --release`). Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
EQFUSE=${EQFUSE:-target/release/eqfuse}
FILTER=${1:-}
MIN_MS=${2:-300}
ROUNDS=${ROUNDS:-5}
exec python3 - "$EQFUSE" "$FILTER" "$MIN_MS" "$ROUNDS" <<'EOF'
import hashlib, json, pathlib, re, subprocess, sys, tomllib

eqfuse, want, min_ms, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
if not rounds.isdigit() or int(rounds) < 1:
    sys.exit(f"ROUNDS must be a positive integer, not {rounds!r}")
rounds = int(rounds)
root = pathlib.Path("tests/phrasings")
STAT = "min_ms"  # the per-call figure of `eqfuse bench --json` (see the header)

def size_args(sizes):
    return [a for k, v in sizes.items() for a in ("--size", f"{k}={v}")]

def bench_json(progs, sizes):
    args = [eqfuse, "bench", *map(str, progs), "--random-inputs", "1", "--json",
            "--min-time-ms", min_ms, *size_args(sizes)]
    out = subprocess.run(args, capture_output=True, text=True, timeout=1200)
    if out.returncode != 0:
        names = " ".join(p.name for p in progs)
        raise RuntimeError(f"{names}: bench failed: {out.stderr.strip()[:300]}")
    got = json.loads(out.stdout)
    return got if isinstance(got, list) else [got]

def optimised_ms(obj):
    for plan in obj["plans"]:
        if plan["plan"] == "optimised":
            if plan.get("not_run") or plan.get(STAT) is None:
                raise RuntimeError(f"{obj['program']}: optimised plan not run: {plan.get('not_run')}")
            return float(plan[STAT])
    raise RuntimeError(f"{obj['program']}: no optimised plan")

def time_round(progs, sizes):
    """One round: the members' optimised plans timed interleaved in one `eqfuse bench`
    call, each member's per-call STAT in ms; on failure each member in a call of its own."""
    try:
        objs = bench_json(progs, sizes) if len(progs) > 1 else []
        if len(objs) == len(progs):
            return {p.stem: optimised_ms(o) for p, o in zip(progs, objs)}
    except Exception as e:
        print(f"<!-- interleaved: {e} -->", file=sys.stderr)
    out = {}
    for p in progs:
        try:
            out[p.stem] = optimised_ms(bench_json([p], sizes)[0])
        except Exception as e:  # a member that fails is reported, the others still run
            print(f"<!-- {e} -->", file=sys.stderr)
    return out

def plan_text(prog, sizes):
    """The `plan:` section of `explain`, array names renamed canonically."""
    out = subprocess.run([eqfuse, "explain", str(prog), *size_args(sizes)],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{prog}: explain failed: {out.stderr.strip()[:300]}")
    lines = out.stdout.splitlines()
    start = lines.index("plan:") + 1
    body = []
    for line in lines[start:]:
        if not line.startswith(" "):  # the next section (`optimised program:`)
            break
        body.append(line)
    names = set()
    for line in body:
        m = re.match(r"\s*(?:input|size)\s+(\w+)\s*:", line)  # input xs: f32[_], size n: i64
        if m:
            names.add(m.group(1))
        m = re.match(r"\s*k\d+\s.*->\s*(.+)$", line)  # k1 reduce over [n, m] -> e, z
        if m:
            names.update(n.strip() for n in m.group(1).split(","))
        m = re.match(r"\s*(\w+)\s*:\s*\w+\[.*\]\s*=", line)  # e: f32[_, _] = generate r5
        if m:
            names.add(m.group(1))
    canon = {}
    def rename(m):
        w = m.group(0)
        if w not in names:
            return w
        return canon.setdefault(w, f"v{len(canon)}")
    # a kernel's kind word (`map over`, `generate over`) is how it was written, not what
    # runs: both are generate lanes, compiled alike
    body = [re.sub(r"^(\s*k\d+ )map over", r"\1generate over", line) for line in body]
    return "\n".join(re.sub(r"\b\w+\b", rename, line) for line in body)

def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()[:16]

print(f"rounds: {rounds} (ROUNDS), each one `eqfuse bench` call timing the set's members "
      f"interleaved; min time per member and call: {min_ms} ms; a member's time: the least "
      f"over the rounds of its per-call {STAT.removesuffix('_ms')}")
print()
print(f"| set | sizes | members (least of {rounds} rounds' min ms) | spread | one plan |")
print("| --- | --- | --- | ---: | --- |")
for d in sorted(p for p in root.iterdir() if p.is_dir()):
    if want and want not in d.name:
        continue
    cfg = tomllib.loads((d / "set.toml").read_text())
    sizes = cfg.get("bench", cfg.get("sizes", {}))
    progs = sorted(d.glob("*.eqf"))
    # one plan? (cheap: explain takes milliseconds)
    plans, moved = {}, False
    for prog in progs:
        try:
            text = plan_text(prog, sizes)
            moved |= text != plan_text(prog, {})
            plans[prog.stem] = digest(text)
        except Exception as e:
            plans[prog.stem] = None
            print(f"<!-- {e} -->", file=sys.stderr)
    # R rounds, each one call that times the members interleaved
    samples = {prog.stem: [] for prog in progs}
    for r in range(rounds):
        k = r % len(progs)
        for stem, t in time_round(progs[k:] + progs[:k], sizes).items():
            samples[stem].append(t)
    times = [(n, min(s) if s else float("nan")) for n, s in samples.items()]
    ok = [t for _, t in times if t == t]
    spread = max(ok) / min(ok) if len(ok) == len(times) and min(ok) > 0 else float("nan")
    members = ", ".join(f"{n} {t:.3f}" for n, t in times)
    short = [n for n, s in samples.items() if 0 < len(s) < rounds]
    if short:
        members += " (" + ", ".join(f"{n}: {len(samples[n])} of {rounds} rounds" for n in short) + ")"
    groups = {}
    for n, h in plans.items():
        groups.setdefault(h, []).append(n)
    if None in groups:
        one = "?"
    elif len(groups) == 1:
        one = "yes"
    else:
        one = "no: " + " / ".join(" ".join(g) for g in groups.values())
    one += " *" if moved else ""
    size_text = " ".join(f"{k}={v}" for k, v in sizes.items())
    print(f"| {d.name} | {size_text} | {members} | {spread:.2f} | {one} |", flush=True)
EOF
