"""The code base stays ruff- and mypy-clean (strict), as the project requires."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize("tool", ["ruff", "mypy"])
def test_linters_are_clean(tool: str) -> None:
    if tool == "ruff":
        cmd = [sys.executable, "-m", "ruff", "check", "server", "tests", "bench"]
    else:
        cmd = [sys.executable, "-m", "mypy"]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
