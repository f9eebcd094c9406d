"""The basics through Debian's Neovim (0.7.x) running headless: start, diagnostics, hover, code
actions, apply one. Skipped when `nvim` is not installed (.ci/run installs the `neovim` package)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HERE, SCENARIO

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim not installed (Debian package `neovim`, 0.7.x)")


def test_neovim_headless_smoke(tmp_path: Path) -> None:
    assert NVIM is not None
    work = tmp_path / "ws"
    work.mkdir()
    buggy = work / "train.py"
    shutil.copy(SCENARIO, buggy)
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "DENPEX_FILE": str(buggy),
        "DENPEX_ROOT": str(work),
        "DENPEX_OUT": str(out),
        "DENPEX_CMD": json.dumps([sys.executable, "-m", "denpex", "serve"]),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {HERE / 'nvim' / 'smoke.lua'}"],
        env=env, cwd=work, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )
    result = json.loads(out.read_text()) if out.exists() else {}
    assert proc.returncode == 0 and "error" not in result, (proc.returncode, result, proc.stdout, proc.stderr)
    assert result["steps"] == ["started", "diagnostics", "hover", "code actions", "applied"]
    assert result["diagnostic"]["lnum"] == 8 and result["diagnostic"]["source"] == "denpex"
    assert result["diagnostic"]["code"] == "DPX101"
    assert "Eager fallback" in result["hover"]
    assert any("eager" in t.lower() for t in result["actions"]), result["actions"]
    assert result["applied"].startswith("Disable DPX101")
    ast.parse(result["text"])
    assert "# denpex: ignore[capture-item-sync]" in result["text"].splitlines()[8]
