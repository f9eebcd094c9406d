"""The VS Code extension's own suites (plain-Node unit tests, .vsix build, real code-server e2e).

They live in vscode-extension/ and are driven by its scripts/ci.sh; this test makes them part
of the one test command. Set DENPEX_SKIP_VSCODE=1 to leave them out of a quick local run.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.conftest import REPO


def test_vscode_extension_suites() -> None:
    if os.environ.get("DENPEX_SKIP_VSCODE") == "1":
        pytest.skip("DENPEX_SKIP_VSCODE=1")
    if shutil.which("node") is None and os.environ.get("CI") != "true":
        pytest.skip("Node.js is not installed (CI installs nothing it cannot find: it fails instead)")
    r = subprocess.run(
        ["bash", str(REPO / "vscode-extension" / "scripts" / "ci.sh")],
        capture_output=True, text=True, timeout=1800, check=False,
    )
    # the steps' own output (stdout) is what says which step failed; pip's warnings fill stderr
    tail = r.stdout[-4500:] + "\n--- stderr ---\n" + r.stderr[-1500:]
    assert r.returncode == 0, tail
    assert "unit tests" in r.stdout and ".vsix" in r.stdout, tail
