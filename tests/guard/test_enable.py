"""Turning the guard on in-process: enable() without torch or without CUDA says why it is off, in one line;
disable() takes the hooks off; `pytest -p denpex.guard` fails the test during which the guard reported
something (here on the fake capture of tests/guard/fake_graph.py, put under the plugin's state)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.guard.fake_graph import SERVER, child_env
from tests.guard.test_run_guard import python_without_torch

ENABLE = f"""
import sys
sys.path.insert(0, {str(SERVER)!r})
import denpex.guard as guard
print("ON", guard.enable())
print("FINDINGS", guard.findings(), guard.reporter() is None)
"""


def run_python(python: str, code: str, cwd: Path | None = None, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=180,
                          env=child_env(), cwd=cwd, check=False)


def guard_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("denpex-guard: ")]


def test_enable_without_torch_says_off() -> None:
    py = python_without_torch()
    if py is None:
        pytest.skip("no Python without torch on this machine")
    r = run_python(py, ENABLE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["ON False", "FINDINGS [] True"]
    assert guard_lines(r.stderr) == [
        "denpex-guard: off: PyTorch is not installed in this interpreter; nothing is checked"]


def test_enable_without_cuda_says_off_unless_asked_to_be_quiet() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    r = run_python(sys.executable, ENABLE)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["ON False", "FINDINGS [] True"]
    assert guard_lines(r.stderr) == [
        f"denpex-guard: off: CUDA is not available (torch {torch.__version__}); nothing is checked"]
    code = ENABLE.replace("guard.enable()", "guard.enable('warn', quiet_without_cuda=True)") + """
import torch
print("PATCHED", hasattr(torch.cuda.CUDAGraph, "_denpex_guard_originals"), guard._state.refuse)
guard.enable("refuse", quiet_without_cuda=True)  # again: changes the mode, keeps the state
print("AGAIN", guard._state.refuse)
guard.disable()
print("OFF", hasattr(torch.cuda.CUDAGraph, "_denpex_guard_originals"), guard._state)
"""
    r = run_python(sys.executable, code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["ON True", "FINDINGS [] False", "PATCHED True False", "AGAIN True",
                                     "OFF False None"]
    assert guard_lines(r.stderr) == []


CONFTEST = f"""
import sys
sys.path.insert(0, {str(SERVER)!r})
import torch

import denpex.guard as guard
from denpex.guard import patch, record, sites
from denpex.guard.lifecycle import State

record.TRACKED_DEVICES.add("cpu")
sites.skip_package(torch.__file__)


class FakeGraph:
    def capture_begin(self, *args, **kwargs):
        pass

    def capture_end(self):
        pass

    def replay(self):
        pass


# the plugin's pytest_configure calls enable(), which finds no CUDA and leaves the state alone
guard._state = State(refuse=False)
patch.install(FakeGraph, guard._state)
"""

TESTS = """
import torch

from conftest import FakeGraph


def test_clean():
    x = torch.randn(8)
    g = FakeGraph()
    g.capture_begin()
    y = x * 2
    g.capture_end()
    for _ in range(3):
        x.copy_(torch.randn(8))
        g.replay()


def test_freed():
    x = torch.randn(8)
    g = FakeGraph()
    g.capture_begin()
    y = x * 2
    g.capture_end()
    del x
    g.replay()


def test_after():
    pass
"""


def test_pytest_plugin_fails_the_test_that_made_a_finding(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_graphs.py").write_text(TESTS)
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "denpex.guard", "-q", "-p", "no:cacheprovider",
                        "-rA", "test_graphs.py"], capture_output=True, text=True, timeout=300,
                       env=child_env(), cwd=tmp_path, check=False)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "1 failed, 2 passed" in out, out
    assert "FAILED test_graphs.py::test_freed - Failed: denpex guard:" in out, out
    assert "PASSED test_graphs.py::test_clean" in out and "PASSED test_graphs.py::test_after" in out, out
    assert "replay-freed-input (DPX301): CUDA graph replay detected invalidated memory buffer" in out, out
    # the plugin is a new-style wrapper: failing a test from it is not a teardown error to pluggy
    assert "PluggyTeardownRaisedWarning" not in out + r.stderr, out
