#!/usr/bin/env bash
# The optimiser's properties (tests/optimizer_props.rs: soundness, confluence, determinism,
# idempotence, termination) on N fresh random seeds, CASES cases each; prints one line per
# seed and the count that failed. A failing seed's output is kept in $OUT/seed_S.txt;
# rerun it with `EQFUSE_PROPTEST_SEED=S EQFUSE_PROPTEST_CASES=CASES cargo test --release
# --test optimizer_props`.
#
#   scripts/property_sweep.sh [N=100] [CASES=480] [STREAMS=2]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}
CASES=${2:-480}
STREAMS=${3:-2}
OUT=${OUT:-target/property-sweep}
mkdir -p "$OUT"
cargo test --release --test optimizer_props --no-run 2>&1 | tail -1
BIN=$(cargo test --release --test optimizer_props --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("profile", {}).get("test") and m.get("executable"): print(m["executable"])' | tail -1)
# a copy, so that a build while the sweep runs does not change what it tests
cp "$BIN" "$OUT/optimizer_props"
BIN="$PWD/$OUT/optimizer_props"
one() {
  local seed start r
  seed=$(od -An -N6 -tu8 /dev/urandom | tr -d ' ')
  start=$(date +%s)
  if EQFUSE_PROPTEST_SEED=$seed EQFUSE_PROPTEST_CASES=$CASES "$BIN" optimisation_is_ \
    optimised_plans_compute --test-threads 1 >"$OUT/seed_$seed.txt" 2>&1; then
    r=pass
    rm -f "$OUT/seed_$seed.txt"
  else
    r=FAIL
  fi
  echo "$seed $r $(($(date +%s) - start))s"
}
export -f one
export BIN CASES OUT
seq "$N" | xargs -P "$STREAMS" -I{} bash -c one | tee "$OUT/sweep.log"
echo "$(grep -c FAIL "$OUT/sweep.log" || true) of $N seeds failed ($CASES cases each)"
