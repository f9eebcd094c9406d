"""The closed loop on a GPU (tests/gpu/closed_loop.py), as a pytest test.

Skipped unless an NVIDIA GPU and PyTorch with CUDA are present (CI has neither). On a GPU machine it runs every
case, writes the report under pytest's tmp_path and fails if any rule's claim or any of its fixes fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _gpu_reason() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return "no nvidia-smi: no NVIDIA GPU here"
    try:
        import torch
    except Exception:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False"
    return None


pytestmark = [pytest.mark.gpu, pytest.mark.slow]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    reason = _gpu_reason()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("gpu_loop")
    subprocess.run([sys.executable, str(HERE / "closed_loop.py"), "--out", str(out)], timeout=1800, check=False)
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def test_every_failing_example_fails_and_is_diagnosed(report: dict) -> None:
    bad = {c["case"]: c["reasons"] for c in report["cases"] if not c["claim_ok"]}
    assert not bad


def test_diagnosed_line_is_the_scanned_line(report: dict) -> None:
    bad = {c["case"]: c.get("line_mismatch") for c in report["cases"] if not c["line_ok"]}
    assert not bad


def test_every_fix_runs_and_matches_eager(report: dict) -> None:
    bad = {f"{c['case']}: {f['title']}": f["reason"] for c in report["cases"] for f in c["fixes"] if not f["ok"]}
    assert not bad
