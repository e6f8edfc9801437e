#!/usr/bin/env bash
# One short device call with everything a GPU session checks and times, for a lease of a
# few minutes (run_on_gpu.sh is the long form, one process per case). On the GPU machine,
# from the repository root, after
#
#   TEST_ARGS="-p eqfuse-exec-cuda" TESTS="gpu-*" EXTRA_CONFORMANCE=$EQFUSE_EXTRA_CONFORMANCE \
#     scripts/gpu/build.sh
#
# on the build machine. Steps, each under its own time limit (seconds in brackets):
#
#   0. the GPU, the driver and where NVRTC is;
#   1. one program through the command line (smoke test) [45];
#   2. the GPU conformance test binary: every case, optimised and unfused, at two block
#      sizes, in one process (device-bin/tests/gpu-*) [150];
#   3. bandwidth ceilings and peers' primitives with CuPy at 2^27 f32: a device-to-device
#      copy, a sum, an inclusive scan, a compaction (scripts/gpu/ceilings.py) [45];
#   4. `eqfuse bench --backend cuda --scale 8` (2^27 elements for the 1-d programs) [150];
#   5. the peers (CuPy, JAX) at 2^27 (scripts/gpu/peers.py) [100];
#   6. matrix products (cuBLAS through `contract` kernels), f32 and f64 at 2048^3 and
#      4096^3, and one-head attention, with `eqfuse bench`, against CuPy's matmul [150];
#   7. row blocks: softmax_rows and a layer normalisation over f32[32768, 4096], each row
#      block as one kernel and phase by phase, against CuPy and JAX [150];
#   8. `eqfuse calibrate --backend cuda --json` into a scratch config folder: the GPU's cost parameters
#      measured on the device (probes through the CUDA backend), then `explain --backend
#      cuda` of softmax_rows with them in place, in a scratch config folder [120].
#
# SKIP="3 5" leaves steps out; BENCH_PROGRAMS and PEER_PROGRAMS (space- and comma-separated
# names) restrict steps 4 and 5. Results go to $OUT (default device-bin/results): log.txt,
# smoke.txt, gpu_tests.txt, ceilings.txt, ceilings.json, bench.txt, peers.json, gemm.txt, rowblocks.txt,
# calibrate.txt (each step's
# standard error goes to log.txt). The last lines printed are a summary.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-device-bin/results}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
skip() { [[ " ${SKIP:-} " == *" $1 "* ]]; }
summary=()

# 0. driver, NVRTC
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
for lib in $(python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia
    dirs = set()
    for p in nvidia.__path__:
        for pat in ("libnvrtc.so*", "libcublas.so*"):
            for f in glob.glob(os.path.join(p, "**", pat), recursive=True):
                dirs.add(os.path.dirname(f))
    print("\n".join(sorted(dirs)))
except Exception:
    pass
PY
); do LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$lib"; done
# cudarc looks for cuBLAS as libcublas.so or libcublas.so.12: where only a newer major
# (libcublas.so.13) is on the path, give it the plain name
links="${TMPDIR:-/tmp}/eqfuse-libs"
IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
plain=""; versioned=""
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  [ -e "$d/libcublas.so" ] || [ -e "$d/libcublas.so.12" ] && plain=1
  [ -z "$versioned" ] && versioned=$(ls "$d"/libcublas.so.[0-9]* 2>/dev/null | head -1)
done
if [ -z "$plain" ] && [ -n "$versioned" ]; then
  mkdir -p "$links" && ln -sf "$versioned" "$links/libcublas.so" && LD_LIBRARY_PATH="$links:${LD_LIBRARY_PATH:-}"
fi
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  ls /usr/local/cuda/lib64 2>/dev/null | grep -E 'nvrtc|cublas' | head
} 2>&1 | tee "$OUT/log.txt"

root=$(cat device-bin/BUILD_ROOT 2>/dev/null || true)
if [ -n "$root" ] && [ ! -e "$root" ] && [ "$root" != "$PWD" ]; then
  mkdir -p "$(dirname "$root")" 2>/dev/null && ln -s "$PWD" "$root" 2>/dev/null || true
fi

step() { # name limit output-file command...: stdout to the file (its end to the log), stderr to the log
  local name=$1 limit=$2 file=$3
  shift 3
  local t0=$SECONDS
  echo "== $name" | tee -a "$OUT/log.txt"
  timeout "$limit" "$@" >"$file" 2>>"$OUT/log.txt"
  local rc=$?
  [ "$file" = "$OUT/log.txt" ] || tail -25 "$file" | tee -a "$OUT/log.txt"
  summary+=("$name: exit $rc in $((SECONDS - t0)) s")
  echo "== $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$OUT/log.txt"
}

# 1. smoke
skip 1 || step smoke 45 "$OUT/smoke.txt" device-bin/eqfuse run examples/dotp.eqf --random-inputs 1 --backend cuda

# 2. conformance on the device, in one process
if ! skip 2; then
  extra=()
  [ -d device-bin/conformance-extra ] && extra=(env EQFUSE_EXTRA_CONFORMANCE="$PWD/device-bin/conformance-extra")
  for t in device-bin/tests/gpu-*; do
    step "conformance $(basename "$t")" 150 "$OUT/gpu_tests.txt" "${extra[@]}" "$t" --test-threads=1 --nocapture
  done
fi

# 3. ceilings and the peers' primitives
skip 3 || step ceilings 45 "$OUT/ceilings.txt" python3 scripts/gpu/ceilings.py --out "$OUT/ceilings.json"

# 4. eqfuse's benchmarks (the table, printed a line per program as it goes)
# (BENCH_PROGRAMS="dotp scans ..." benchmarks only those)
bench_all() {
  if [ -z "${BENCH_PROGRAMS:-}" ]; then
    device-bin/eqfuse bench --backend cuda --scale "${BENCH_SCALE:-8}"
    return
  fi
  for p in $BENCH_PROGRAMS; do
    device-bin/eqfuse bench --backend cuda --scale "${BENCH_SCALE:-8}" --filter "$p" || return
  done
}
export -f bench_all
skip 4 || step bench 150 "$OUT/bench.txt" bash -c bench_all

# 5. the peers
skip 5 || step peers 100 "$OUT/peers.json" python3 scripts/gpu/peers.py --scale "${PEER_SCALE:-27}" --repeats 10 \
  ${PEER_PROGRAMS:+--programs "$PEER_PROGRAMS"}

# 6. matrix products: eqfuse (cuBLAS through the contract kernels) against CuPy's matmul
gemm_all() {
  printf 'input a : f64[n, k]\ninput b : f64[k, m]\noutput c = reduce (+) 0 (generate [n, m, k] (\\i j p -> a[i, p] * b[p, j]))\n' >"$OUT/matmul64.eqf"
  for n in 2048 4096; do
    echo "-- f32 $n^3"
    device-bin/eqfuse bench examples/matmul.eqf --backend cuda --random-inputs 1 --size n=$n --size k=$n --size m=$n --min-time-ms 200 || return
    echo "-- f64 $n^3"
    device-bin/eqfuse bench "$OUT/matmul64.eqf" --backend cuda --random-inputs 1 --size n=$n --size k=$n --size m=$n --min-time-ms 200 || return
  done
  echo "-- attention n=4096 d=64"
  device-bin/eqfuse bench examples/attention.eqf --backend cuda --random-inputs 1 --size n=4096 --size d=64 --min-time-ms 200 || return
  python3 scripts/gpu/ceilings.py --gemm
}
export -f gemm_all
skip 6 || step gemm 150 "$OUT/gemm.txt" bash -c gemm_all

# 7. row blocks: softmax_rows and a layer normalisation over f32[32768, 4096], eqfuse with
# each row block as one kernel and phase by phase (EQFUSE_NO_ROWBLOCK=1), then CuPy and JAX
rows_all() {
  printf -- '-- per-row mean, variance and normalise\ninput x : f32[r, c]\nlet mean = map (\\s -> s / f32 c) (reduce (+) 0 x)\nlet d = generate [r, c] (\\i j -> x[i, j] - mean[i])\nlet var = map (\\s -> s / f32 c) (reduce (+) 0 (map (\\v -> v * v) d))\noutput y = generate [r, c] (\\i j -> d[i, j] / sqrt (var[i] + 0.00001))\n' >"$OUT/layernorm.eqf"
  for p in examples/softmax_rows.eqf "$OUT/layernorm.eqf"; do
    for no in "" 1; do
      echo "-- $p${no:+ (phase by phase)}"
      env ${no:+EQFUSE_NO_ROWBLOCK=1} device-bin/eqfuse bench "$p" --backend cuda --random-inputs 1 --size r=32768 --size c=4096 --min-time-ms 300 || return
    done
  done
  python3 scripts/gpu/peers.py --scale 27 --repeats 20 --programs softmax_rows,layernorm
}
export -f rows_all
skip 7 || step rowblocks 150 "$OUT/rowblocks.txt" bash -c rows_all

# 8. the GPU's cost parameters, measured (saved to a scratch folder, then used by explain)
calibrate_gpu() {
  local cfg="${TMPDIR:-/tmp}/eqfuse-calibrate-cfg"
  rm -rf "$cfg" && mkdir -p "$cfg"
  XDG_CONFIG_HOME="$cfg" device-bin/eqfuse calibrate --backend cuda --json || return
  XDG_CONFIG_HOME="$cfg" device-bin/eqfuse explain examples/softmax_rows.eqf --backend cuda --size r=32768 --size c=4096 | head -4
}
export -f calibrate_gpu
skip 8 || step calibrate 120 "$OUT/calibrate.txt" bash -c calibrate_gpu

echo "== summary" | tee -a "$OUT/log.txt"
printf '%s\n' "${summary[@]}" | tee -a "$OUT/log.txt"
