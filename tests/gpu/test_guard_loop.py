"""The runtime guard on a GPU (tests/gpu/guard_loop.py), as a pytest test.

Skipped unless an NVIDIA GPU and PyTorch with CUDA are present (CI has neither). On a GPU machine it runs the
cases, their fixed twins and the guard's own cases under `denpex run --guard`'s hook and fails if a silent
rule's case is not named, a clean program gets a finding, or the seed's freed-input replay is not refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gpu.test_gpu_loop import _gpu_reason

HERE = Path(__file__).resolve().parent

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_guard_names_every_observable_silent_case(tmp_path: Path) -> None:
    reason = _gpu_reason()
    if reason:
        pytest.skip(reason)
    subprocess.run([sys.executable, str(HERE / "guard_loop.py"), "--out", str(tmp_path)], check=True)
    report = json.loads((tmp_path / "guard_report.json").read_text())
    bad = [r["name"] for r in report["programs"] if not r["ok"]]
    assert not bad, bad
    kinds = {r["expect"] for r in report["programs"]}
    assert {"clean", "refuse", "replay-freed-input", "replay-rebound-static-input"} <= kinds
