#!/usr/bin/env bash
# The CPU peer comparison, in one command, from anywhere:
#
#   benches/peers/run.sh [peers.py options]    (e.g. --programs dotp,saxpy --min-time-ms 400)
#   benches/peers/run.sh contractions [--sizes 512,2048]   (matrix products and attention
#                                               against NumPy's @ and JAX: contractions.py)
#   benches/peers/run.sh rowblocks              (softmax and a layer normalisation, row
#                                               blocks on and off, against NumPy and JAX)
#
# 1. creates benches/peers/.venv and installs numpy, numexpr, jax[cpu] and matplotlib into
#    it from PyPI (once; PYTHON= picks the interpreter, default python3);
# 2. builds eqfuse (`cargo build --release`);
# 3. runs benches/peers/peers.py: for each of dotp, saxpy, map_chain, blackscholes,
#    softmax_rows, variance, nbody and mandelbrot, the exact inputs of `eqfuse bench`
#    (`eqfuse bench --dump-inputs`), eqfuse's outputs on them (`eqfuse run`), NumPy, numexpr
#    and JAX (jit) checked against those outputs and timed, then `eqfuse bench --json` for
#    eqfuse optimised, eqfuse unfused and the hand-written Rust+rayon loop.
#
# EQFUSE_BIN=path/to/eqfuse skips the build and times that binary instead (it needs
# `bench --dump-inputs`).
#
# Writes benches/peers/results.md (the table), results.json and peers.png (the chart).
# Takes about 5 minutes on 2 cores. Exits non-zero when a peer's result differs from
# eqfuse's (that peer is not timed) or fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$here/.venv"

if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import numpy, numexpr, jax, matplotlib' 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet numpy numexpr "jax[cpu]" matplotlib
fi

bin="${EQFUSE_BIN:-}"
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --release --bin eqfuse)
  bin="$root/target/release/eqfuse"
fi

case "${1:-}" in
  contractions | rowblocks)
    script="$here/$1.py"
    shift
    exec "$venv/bin/python" "$script" --eqfuse "$bin" "$@"
    ;;
esac
exec "$venv/bin/python" "$here/peers.py" --eqfuse "$bin" "$@"
