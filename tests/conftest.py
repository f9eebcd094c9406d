"""Shared test helpers: where the repository and its test data are."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
# real H200 outputs of the GPU scenarios, copied in so a clone needs nothing beside it (tests/data/README.md)
GPU_DATA = DATA / "gpu"
GPU_RESULTS = GPU_DATA / "results"
