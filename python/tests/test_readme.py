"""The README's Python blocks run as written, in order, from the repository's root."""

from __future__ import annotations

import os
import re

from conftest import REPO


def test_readme_python_blocks_run():
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) >= 2
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        namespace: dict = {}
        for block in blocks:
            exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    finally:
        os.chdir(cwd)
