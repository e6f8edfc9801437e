#!/usr/bin/env bash
# On the GPU machine (CUDA driver, NVRTC, Python with numpy; CuPy and JAX for the peers; no
# Rust needed), from the repository root, after scripts/gpu/build.sh filled device-bin/ on
# the build machine:
#
#   1. every conformance case (tests/conformance, and $EQFUSE_EXTRA_CONFORMANCE when set),
#      optimised and unfused (--no-opt), through `eqfuse run --backend cuda`, checked
#      against its expected outputs or error code by scripts/gpu/compare.py;
#   2. `eqfuse bench --backend cuda --json`;
#   3. scripts/gpu/peers.py: the same programs in CuPy and JAX;
#   4. with RUN_TESTS=1, every test binary in device-bin/tests (the CUDA executor's GPU
#      tests run for real there).
#
# Results go to $OUT (default device-bin/results): conformance.txt, bench.json,
# peers.json, tests.txt. Exits non-zero when a conformance case or a test fails.
# Environment: EQFUSE_BIN (default device-bin/eqfuse), BACKEND (default cuda; `cpu` or
# `reference` check the script itself on any machine), OUT, RUN_TESTS, SKIP_BENCH,
# SKIP_PEERS.
set -uo pipefail
cd "$(dirname "$0")/../.."

BIN="${EQFUSE_BIN:-device-bin/eqfuse}"
BACKEND="${BACKEND:-cuda}"
OUT="${OUT:-device-bin/results}"
mkdir -p "$OUT"
if [ ! -x "$BIN" ]; then
  echo "no $BIN: run scripts/gpu/build.sh on the build machine first" >&2
  exit 2
fi

# NVRTC and the driver: the CUDA toolkit's lib folder, and the pip wheel's (PyTorch and
# JAX install nvidia-cuda-nvrtc-cu12) when there is one.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if [ -d "$d" ]; then LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
done
pip_nvrtc=$(python3 -c 'import os, nvidia.cuda_nvrtc as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null || true)
if [ -n "$pip_nvrtc" ] && [ -d "$pip_nvrtc" ]; then LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$pip_nvrtc"; fi
export LD_LIBRARY_PATH
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"

# 1. conformance
pass=0
fail=0
: >"$OUT/conformance.txt"
extra=()
[ -n "${EQFUSE_EXTRA_CONFORMANCE:-}" ] && extra=("$EQFUSE_EXTRA_CONFORMANCE"/*/)
for dir in tests/conformance/*/ "${extra[@]}"; do
  [ -f "$dir/program.eqf" ] || continue
  dir="${dir%/}"
  set_name=$(basename "$(dirname "$dir")")
  [ "$dir" = "${dir#tests/conformance}" ] && set_name="extra"
  for mode in opt no-opt; do
    flags=()
    [ "$mode" = "no-opt" ] && flags=(--no-opt)
    res="$OUT/conformance/$set_name/$(basename "$dir")/$mode"
    rm -rf "$res"
    mkdir -p "$res"
    inputs=()
    [ -d "$dir/inputs" ] && inputs=(--inputs "$dir/inputs")
    "$BIN" run "$dir/program.eqf" "${inputs[@]}" --out "$res" --backend "$BACKEND" "${flags[@]}" \
      >"$res/stdout.txt" 2>"$res/stderr.txt"
    code=$?
    line=$(python3 scripts/gpu/compare.py "$dir" "$res" "$code" "$res/stderr.txt")
    ok=$?
    line="$line ($mode)"
    echo "$line" | tee -a "$OUT/conformance.txt"
    if [ $ok -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
  done
done
echo "conformance: $pass passed, $fail failed" | tee -a "$OUT/conformance.txt"

# 2. eqfuse's own benchmarks
if [ -z "${SKIP_BENCH:-}" ]; then
  # --scale 8: 2^27 elements for the 1-d programs, sizes that fill a GPU
  if "$BIN" bench --backend "$BACKEND" --scale "${BENCH_SCALE:-8}" --json >"$OUT/bench.json" 2>"$OUT/bench.stderr.txt"; then
    echo "bench: $OUT/bench.json"
  else
    echo "bench failed: see $OUT/bench.stderr.txt"
  fi
fi

# 3. the peers
if [ -z "${SKIP_PEERS:-}" ]; then
  if python3 scripts/gpu/peers.py >"$OUT/peers.json" 2>"$OUT/peers.stderr.txt"; then
    echo "peers: $OUT/peers.json"
  else
    echo "peers failed: see $OUT/peers.stderr.txt"
  fi
fi

# 4. the test binaries (they find test data by the path they were built in)
tests_failed=0
if [ -n "${RUN_TESTS:-}" ] && [ -d device-bin/tests ]; then
  root=$(cat device-bin/BUILD_ROOT 2>/dev/null || true)
  if [ -n "$root" ] && [ ! -e "$root" ] && [ "$root" != "$PWD" ]; then
    mkdir -p "$(dirname "$root")" 2>/dev/null && ln -s "$PWD" "$root" 2>/dev/null || true
  fi
  : >"$OUT/tests.txt"
  for t in device-bin/tests/*; do
    [ -x "$t" ] || continue
    if "$t" --test-threads=1 >>"$OUT/tests.txt" 2>&1; then
      echo "tests: $(basename "$t") ok"
    else
      echo "tests: $(basename "$t") FAILED"
      tests_failed=1
    fi
  done
fi

[ "$fail" -eq 0 ] && [ "$tests_failed" -eq 0 ]
