"""Issue 12's real H200 runs (tests/data/logs12/gpu) and local crashes: `denpex diagnose` names the rule,
the line, the phase and whether it is a CUDA-graph failure; and every GPU log diagnosed before the new
families existed is still diagnosed with the same rule and line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from denpex.logs import diagnose_path
from tests.conftest import DATA, REPO

LOGS12 = DATA / "logs12"

# log -> (rule, text of the verdict line (its first line holding it), phase, graph-related, code named)
EXPECTED: dict[str, tuple[str, str, str | None, str, str | None]] = {
    "gpu/oom_capture_graphed_callables.log": (
        "alloc-oom-during-capture", "CUDA out of memory. Tried to allocate 400.00 GiB", "capture", "yes", None),
    "gpu/oom_capture_single.log": (
        "cuda-oom", "CUDA out of memory. Tried to allocate 400.00 GiB", None, "depends", None),
    "gpu/oom_capture_pool.log": ("cuda-oom", "CUDA out of memory. Tried to allocate 256.00 MiB", None, "depends", None),
    "gpu/illegal_address_replay.blocking.log": (
        "cuda-illegal-memory-access", "an illegal memory access was encountered", "replay", "yes",
        "cudaErrorIllegalAddress"),
    # without CUDA_LAUNCH_BLOCKING the fault is reported at torch.cuda.synchronize(): no frame says replay
    "gpu/illegal_address_replay.log": (
        "cuda-illegal-memory-access", "an illegal memory access was encountered", None, "depends",
        "cudaErrorIllegalAddress"),
    "gpu/illegal_address_coredump.log": (
        "cuda-coredump-exception", "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS", None, "depends",
        "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS"),
    "gpu/device_assert_replay.blocking.log": (
        "cuda-device-side-assert", "Assertion `ind >=0", "replay", "yes", None),
    "gpu/device_assert_replay.log": ("cuda-device-side-assert", "Assertion `ind >=0", None, "depends", None),
    "gpu/barrier_in_capture.log": (
        "dist-p2p-barrier-in-capture", "operation not permitted when stream is capturing", "capture", "yes",
        "cudaErrorStreamCaptureUnsupported"),
    "gpu/nccl_duplicate_gpu.log": ("nccl-warn", "NCCL WARN Duplicate GPU detected", None, "no", "duplicate-gpu"),
    "gpu/jax_oom.log": ("cuda-oom", "RESOURCE_EXHAUSTED: Out of memory while trying to allocate", None, "depends", None),
    "local/segfault_python.log": ("process-crash-signal", "Fatal Python error: Segmentation fault", None, "depends", "SIGSEGV"),
    "local/sigbus_python.log": ("process-crash-signal", "Fatal Python error: Bus error", None, "no", "SIGBUS"),
    "local/sigill_python.log": ("process-crash-signal", "Fatal Python error: Illegal instruction", None, "no", "SIGILL"),
    # faulthandler's "Fatal Python error: Aborted" is collateral (process-killed-by-signal); bash's report is the crash
    "local/sigabrt_python.log": ("process-crash-signal", "Aborted                 (core dumped)", None, "depends", "SIGABRT"),
    # 'terminate called after throwing ...' and its what() line are one event: the what() line is more specific
    "local/terminate_cpp.log": ("nccl-watchdog-timeout", "what():  [Rank 0] Watchdog caught", None, "yes", None),
}
HEALTHY = ["gpu/oom_capture_cached.log", "gpu/pool_reuse_after_free.log"]


def _first_line_with(path: Path, needle: str) -> int:
    with open(path, "rb") as fh:
        for no, raw in enumerate(fh, start=1):
            if needle.encode() in raw:
                return no
    raise AssertionError(f"{needle!r} not in {path}")


def _cli_json(path: Path) -> dict[str, object]:
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "denpex", "diagnose", "--format", "json", str(path)],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert proc.stdout, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ground_truth_log_is_diagnosed(name: str) -> None:
    path = LOGS12 / name
    rule, needle, phase, related, code = EXPECTED[name]
    out = _cli_json(path)
    v = out["verdict"]
    assert isinstance(v, dict), f"{name}: no verdict"
    assert v["rule"] == rule, f"{name}: {v['rule']} (via {v['via']})"
    assert v["line"] == _first_line_with(path, needle), f"{name}: line {v['line']}: {v['text']}"
    assert (v["phase"] or {}).get("name") == phase, f"{name}: phase {v['phase']}"
    assert v["graph_related"] == related
    assert ((v["status_code"] or {}).get("name")) == code


@pytest.mark.parametrize("name", HEALTHY)
def test_successful_runs_get_no_error_verdict(name: str) -> None:
    d = diagnose_path(LOGS12 / name)
    assert d.verdict is None or d.verdict.rule.severity != "error"


def test_capture_verdict_says_what_capture_changes() -> None:
    d = diagnose_path(LOGS12 / "gpu/oom_capture_graphed_callables.log")
    assert d.verdict is not None and d.verdict.via == "cuda-oom"
    notes = " ".join(d.verdict.notes)
    assert "During capture:" in notes and "private memory pool" in notes


def test_adjacent_failure_says_so_and_keeps_its_own_fix() -> None:
    d = diagnose_path(LOGS12 / "gpu/nccl_duplicate_gpu.log")
    assert d.verdict is not None
    assert d.verdict.notes[0].startswith("Adjacent failure: this is not a CUDA-graph bug")
    assert "torch.cuda.set_device(local_rank)" in d.verdict.fix_text()


def test_private_pool_figure_of_the_oom_message_is_explained() -> None:
    d = diagnose_path(LOGS12 / "gpu/oom_capture_single.log")
    assert d.verdict is not None
    assert any(n.startswith("2.00 MiB of the memory PyTorch holds sits in CUDA-graph private pools") for n in d.verdict.notes)


def test_text_report_names_code_and_phase() -> None:
    proc = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(LOGS12 / "gpu/illegal_address_replay.blocking.log")],
                          capture_output=True, text=True, cwd=REPO, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert "code: cudaErrorIllegalAddress (700): an illegal memory access was encountered" in proc.stdout
    assert "phase: replay (frame replay in graphs.py)" in proc.stdout


def test_versions_of_the_runs_are_recorded() -> None:
    text = (LOGS12 / "versions.txt").read_text()
    for needle in ("Driver Version: 580.159.04", "torch 2.11.0+cu130 cuda 13.0", "NVIDIA H200", "nccl (2, 28, 9)"):
        assert needle in text


def _verdicts_before() -> dict[str, dict[str, object] | None]:
    data: dict[str, dict[str, object] | None] = json.loads((LOGS12 / "verdicts-before-issue12.json").read_text())
    return data


def test_every_gpu_log_is_diagnosed_as_before_the_new_families() -> None:
    """Snapshot taken before issue 12's families: same rule (and refinement) on the same line, or still none."""
    before = _verdicts_before()
    assert len(before) >= 190
    changed = []
    for rel, want in before.items():
        d = diagnose_path(REPO / rel)
        got = None if d.verdict is None else {"rule": d.verdict.rule.id, "via": d.verdict.via,
                                               "line": d.verdict.finding.line}
        if got != want:
            changed.append(f"{rel}: {want} -> {got}")
    assert not changed, "\n".join(changed)


@pytest.mark.parametrize("name", ["oom_capture_single", "oom_capture_pool"])
def test_oom_inside_a_graph_block_of_the_users_file_is_an_oom_during_capture(name: str, tmp_path: Path) -> None:
    """Where the job's source is on the machine (diagnosing where it ran), the failing line of the H200 run lies
    in its `with torch.cuda.graph(g):` block, so the OOM is one of capture. The committed log names
    /workspace/cases12, which is not here: the copy of the log points at a copy of the program instead."""
    prog = REPO / "tests" / "gpu" / "cases12" / f"{name}.py"
    (tmp_path / prog.name).write_bytes(prog.read_bytes())
    log = tmp_path / f"{name}.log"
    log.write_text((LOGS12 / "gpu" / f"{name}.log").read_text().replace("/workspace/cases12", str(tmp_path)))
    v = _cli_json(log)["verdict"]
    assert isinstance(v, dict)
    assert (v["rule"], v["via"]) == ("alloc-oom-during-capture", "cuda-oom")
    assert v["phase"]["name"] == "capture" and "inside the `with ...graph(...)` block" in v["phase"]["evidence"]
    # without the source (the committed log), the log alone does not say capture
    assert _cli_json(LOGS12 / "gpu" / f"{name}.log")["verdict"]["rule"] == "cuda-oom"  # type: ignore[index]
