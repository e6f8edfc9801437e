"""Shared helpers of the Python test suite: where the repository and its conformance cases
are, and the command-line binary (for comparing messages)."""

from __future__ import annotations

import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def case_dirs() -> list[pathlib.Path]:
    """The conformance cases: the repository's (version 1's, then version 2's), then those
    `EQFUSE_EXTRA_CONFORMANCE` names."""
    roots = [REPO / "tests" / "conformance", REPO / "tests" / "conformance-v2"]
    extra = os.environ.get("EQFUSE_EXTRA_CONFORMANCE")
    if extra:
        roots.append(pathlib.Path(extra))
    out = []
    for root in roots:
        out.extend(sorted(p for p in root.iterdir() if (p / "case.toml").is_file()))
    return out


@pytest.fixture(scope="session")
def eqfuse_bin() -> str:
    """The command-line binary: `EQFUSE_BIN`, else the release build of this checkout."""
    path = os.environ.get("EQFUSE_BIN") or str(REPO / "target" / "release" / "eqfuse")
    assert os.path.isfile(path), f"no eqfuse binary at {path}: build it (cargo build --release) or set EQFUSE_BIN"
    return path
