"""Shared test helpers: where the repository and the shared research folder are."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
GPU_RESULTS = SHARED / "gpu" / "results"


def need_shared() -> Path:
    if not GPU_RESULTS.is_dir():
        pytest.skip(f"{GPU_RESULTS} is not present (the shared research folder sits beside the checkout)")
    return GPU_RESULTS
