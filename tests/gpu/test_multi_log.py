"""Diagnosis of the committed real two-GPU log (runs everywhere, no GPU needed).

tests/gpu/results/logs/multi_rank1_lingers_nccl_timeout.log came from `tests/gpu/closed_loop.py --multi-only` on
2x H200: rank 1 fails inside CUDA-graph capture (.item()) and lingers; rank 0 waits in all_reduce until the NCCL
watchdog fires and aborts; torchrun's "Root Cause" then names the innocent rank 0.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

LOG = Path(__file__).resolve().parent / "results" / "logs" / "multi_rank1_lingers_nccl_timeout.log"


@pytest.fixture(scope="module")
def verdict() -> dict:
    p = subprocess.run([sys.executable, "-m", "denpex", "diagnose", "--format", "json", str(LOG)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    return json.loads(p.stdout)["verdict"]


def test_the_log_is_the_misleading_case() -> None:
    text = LOG.read_text(encoding="utf-8")
    assert "Watchdog caught collective operation timeout" in text
    root = re.search(r"Root Cause.*?rank\s*:\s*(\d+)", text, re.S)
    assert root is not None and root.group(1) == "0"


def test_names_the_capture_error_not_the_watchdog(verdict: dict) -> None:
    assert verdict["rule"] == "capture-item-sync"
    assert "operation not permitted when stream is capturing" in verdict["text"]
    assert verdict["rank"] != 0


def test_points_at_the_item_line(verdict: dict) -> None:
    frames = [f for f in verdict["frames"] if f["path"].endswith("rank1_capture_fails.py")]
    assert frames and frames[-1]["line"] == 40


def test_names_rank_1(verdict: dict) -> None:
    """rank 1's traceback has no prefix (traceback.print_exc()); the NCCL sequence numbers single it out."""
    assert verdict["rank"] == 1
    assert any("inferred" in e for e in verdict["attribution"])
