#!/usr/bin/env bash
# On the BUILD machine (with Rust), from anywhere in the repository: builds the release
# `eqfuse` binary and every release test binary, and copies them (stripped) into the
# git-ignored folder device-bin/ for a GPU machine that has no Rust:
#
#   device-bin/eqfuse          the command line (run, explain, bench, ...)
#   device-bin/tests/NAME      the test binaries (`cargo test --no-run --release`)
#   device-bin/BUILD_ROOT      the repository path the test binaries were built in
#
# Then, on the GPU machine, from the repository root: scripts/gpu/run_on_gpu.sh
#
# TEST_ARGS (default `--workspace`) picks what `cargo test --no-run` builds, and TESTS (a
# shell glob, default `*`) which test binaries are kept: `TEST_ARGS="-p eqfuse-exec-cuda"
# TESTS="gpu-*" scripts/gpu/build.sh` keeps only the CUDA executor's GPU tests, so that
# the folder fits a device call's 64 MiB. With EXTRA_CONFORMANCE=DIR the cases in DIR are
# copied to device-bin/conformance-extra (scripts/gpu/session.sh runs them too).
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build --release
cargo test ${TEST_ARGS:---workspace} --no-run --release --message-format=json >target/device-test-bins.json

rm -rf device-bin
mkdir -p device-bin/tests
cp target/release/eqfuse device-bin/eqfuse
python3 - <<'PY'
import fnmatch, json, os, shutil
keep = os.environ.get("TESTS", "*")
seen = set()
for line in open("target/device-test-bins.json"):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    exe = m.get("executable")
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and exe:
        name = os.path.basename(exe)
        if name not in seen and fnmatch.fnmatch(name, keep):
            seen.add(name)
            shutil.copy2(exe, os.path.join("device-bin", "tests", name))
print(f"{len(seen)} test binaries")
PY
pwd >device-bin/BUILD_ROOT
if [ -n "${EXTRA_CONFORMANCE:-}" ]; then
  cp -r "$EXTRA_CONFORMANCE" device-bin/conformance-extra
fi
# release builds keep line tables: strip them so the folder stays small
if command -v strip >/dev/null; then
  strip device-bin/eqfuse device-bin/tests/* 2>/dev/null || true
fi
du -sh device-bin
