"""`denpex run --guard[=MODE] -- CMD`: the guard's hook folder first on the job's PYTHONPATH, the mode in
DENPEX_GUARD. Real processes, as a user runs them: a bad mode is refused before anything starts, an
interpreter without torch says once that nothing is checked, one with torch gets the guard the moment it
imports torch (even where Denpex itself is not installed), and what the guard says is diagnosed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.guard.fake_graph import SERVER, child_env

OFF_NO_TORCH = "denpex-guard: off: PyTorch is not installed in this interpreter; nothing is checked"


def denpex(*args: str, env: dict[str, str] | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -m denpex ARGS` of this checkout (its server/ first on the path), without putting that on the
    PYTHONPATH the job inherits: what the job sees is what `env` says."""
    code = f"import sys; sys.path[0] = {str(SERVER)!r}; from denpex.cli import console; console()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, timeout=180,
                          env=child_env() if env is None else env, cwd=cwd, check=False)


def env_without_path() -> dict[str, str]:
    env = child_env()
    env.pop("PYTHONPATH", None)
    return env


def guard_lines(stderr: bytes) -> list[str]:
    return [line for line in stderr.decode().splitlines() if line.startswith("denpex-guard: ")]


def nothing_captured() -> list[str]:
    """What a guarded job's own process that captured nothing says at its exit: without CUDA, that nothing
    was checked (the hook turns the guard on without asking CUDA at import)."""
    import torch

    if torch.cuda.is_available():
        return []
    return [f"denpex-guard: off: CUDA is not available (torch {torch.__version__}); nothing was checked"]


@pytest.mark.parametrize(("mode", "reason"), [
    ("bogus", "unknown guard mode 'bogus' (use refuse, warn, compare[:N], notrace)"),
    ("warn,compare:0", "compare:0: the number of compared calls must be a positive integer"),
])
def test_bad_mode_exits_2_with_one_line(tmp_path: Path, mode: str, reason: str) -> None:
    marker = tmp_path / "ran"
    r = denpex("run", "--no-bundle", f"--guard={mode}", "--", "touch", str(marker))
    assert r.returncode == 2
    assert r.stderr.decode() == f"denpex: error: --guard: {reason}\n"
    assert r.stdout == b""
    assert not marker.exists()  # refused before the command started


def python_without_torch() -> str | None:
    """A Python 3 interpreter of this machine that cannot import torch (the system one, usually), by its
    real path."""
    candidates = [shutil.which("python3"), "/usr/bin/python3", getattr(sys, "_base_executable", None)]
    for cand in candidates:
        if not cand or not os.path.exists(cand):
            continue
        r = subprocess.run(
            [cand, "-c", "import importlib.util, sys\n"
                         "if sys.version_info >= (3, 8) and importlib.util.find_spec('torch') is None:\n"
                         "    print(sys.executable)"],
            capture_output=True, text=True, timeout=60, env=env_without_path(), check=False)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip()
    return None


def test_interpreter_without_torch_says_off_once_and_runs(tmp_path: Path) -> None:
    py = python_without_torch()
    if py is None:
        pytest.skip("no Python without torch on this machine")
    r = denpex("run", "--no-bundle", "--guard", "--", py, "-c", "print(1)", env=env_without_path())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"1\n"
    assert r.stderr.decode().splitlines() == [OFF_NO_TORCH]
    # a Python the job starts (a grandchild of denpex) says nothing: the line is the job's, once
    code = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'print(2)'], check=True); print(1)"
    r = denpex("run", "--no-bundle", "--guard=warn", "--", py, "-c", code, env=env_without_path())
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"2\n1\n"
    assert r.stderr.decode().splitlines() == [OFF_NO_TORCH]


def test_hook_passes_on_to_the_sitecustomize_it_shadows(tmp_path: Path) -> None:
    own = tmp_path / "site"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import sys\nsys.own_site_ran = getattr(sys, 'own_site_ran', 0) + 1\n")
    env = {**env_without_path(), "PYTHONPATH": str(own)}
    code = "import sys, sitecustomize; print(sys.own_site_ran, sitecustomize.__file__)"
    r = denpex("run", "--no-bundle", "--guard", "--", sys.executable, "-c", code, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode() == f"1 {own / 'sitecustomize.py'}\n"


JOB = """
import os
import sys

import torch

import denpex.guard as guard

print("PATCHED", hasattr(torch.cuda.CUDAGraph, "_denpex_guard_originals"))
s = guard._state
print("STATE", s is not None and s.refuse, s is not None and s.trace)
print("MODE", os.environ.get("DENPEX_GUARD"))
"""


@pytest.mark.parametrize(("flag", "state"), [
    ("--guard", "True True"), ("--guard=warn,notrace", "False False"), ("--guard=compare:2", "True True")])
def test_torch_job_gets_the_guard_and_exits_0(tmp_path: Path, flag: str, state: str) -> None:
    pytest.importorskip("torch")
    job = tmp_path / "job.py"
    job.write_text(JOB)
    r = denpex("run", "--no-bundle", flag, "--", sys.executable, str(job))
    assert r.returncode == 0, r.stderr
    out = dict(line.split(" ", 1) for line in r.stdout.decode().splitlines())
    assert out == {"PATCHED": "True", "STATE": state, "MODE": flag.partition("=")[2] or "refuse"}
    assert guard_lines(r.stderr) == nothing_captured()


def test_job_that_never_imports_torch_does_not_get_it(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    code = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'denpex')))"
    r = denpex("run", "--no-bundle", "--guard", "--", sys.executable, "-c", code)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"[]\n"
    assert guard_lines(r.stderr) == []


def test_torch_job_where_denpex_is_not_installed(tmp_path: Path) -> None:
    # the job's interpreter has torch but not Denpex: a site folder with everything this interpreter has
    # but Denpex, read without `site` (-S) so that no .pth file brings Denpex back; the hook then exposes
    # only the guard's folder. Whatever else of Denpex the guard imported would stop it here.
    torch = pytest.importorskip("torch")
    site = Path(torch.__file__).resolve().parent.parent
    bare = tmp_path / "site-packages"
    bare.mkdir()
    for entry in site.iterdir():
        if entry.name.startswith(("denpex", "_editable_impl_denpex", "__editable__")) or entry.suffix == ".pth":
            continue
        (bare / entry.name).symlink_to(entry)
    job = tmp_path / "job.py"
    job.write_text(f"""
import sys
sys.path.append({str(bare)!r})
import sitecustomize  # what `site` would have imported: the guard's hook, first on PYTHONPATH
import torch
import denpex
import denpex.guard
print("FAKE", getattr(denpex, "__file__", None) is None and not hasattr(denpex, "__version__"))
print("PATCHED", hasattr(torch.cuda.CUDAGraph, "_denpex_guard_originals"))
print("OTHERS", *sorted(m for m in sys.modules if m.startswith("denpex.") and not m.startswith("denpex.guard")))
""")
    r = denpex("run", "--no-bundle", "--guard", "--", sys.executable, "-S", str(job), env=env_without_path(),
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == ["FAKE True", "PATCHED True", "OTHERS"], r.stderr
    assert guard_lines(r.stderr) == nothing_captured()


# A job whose graph is the CPU fake of tests/guard/fake_graph.py, put under the state the hook made from
# --guard's mode: what the guard then says goes through denpex run's diagnosis like any job's output.
FREED_JOB = """
import torch

import denpex.guard as guard
from denpex.guard import patch, record


class FakeGraph:
    def capture_begin(self, *args, **kwargs):
        pass

    def capture_end(self):
        pass

    def replay(self):
        print("REPLAYED")


record.TRACKED_DEVICES.add("cpu")
patch.install(FakeGraph, guard._state)
x = torch.randn(1024)
g = FakeGraph()
g.capture_begin()
out = x * 2
g.capture_end()
del x
g.replay()
"""


def test_refused_replay_is_diagnosed_by_run(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    job = tmp_path / "train.py"
    job.write_text(FREED_JOB)
    r = denpex("run", "--no-bundle", "--guard", "--", sys.executable, str(job))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert b"REPLAYED" not in r.stdout
    lines = guard_lines(r.stderr)
    assert lines[0].startswith("denpex-guard: replay-freed-input (DPX301): CUDA graph replay detected "), err
    at = {text: n for n, text in enumerate(FREED_JOB.splitlines(), 1)}
    assert (f"captured at {job}:{at['out = x * 2']}, freed at {job}:{at['del x']} (graph captured at "
            f"{job}:{at['g.capture_begin()']}, replayed at {job}:{at['g.replay()']})") in lines[0]
    assert lines[1:] == ["denpex-guard: checked 1 graph(s) over 0 replay(s): 1 finding(s) above"]
    assert "denpex.guard.GuardError: replay-freed-input (DPX301): " in err
    assert "denpex: the command failed (exit code 1)" in err
    assert "replay-freed-input" in err.split("denpex: the command failed", 1)[1]


def test_warned_replay_runs_and_fails_expect_absent(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    job = tmp_path / "train.py"
    job.write_text(FREED_JOB)
    r = denpex("run", "--no-bundle", "--guard=warn", "--expect-absent", "replay-freed-input", "--",
               sys.executable, str(job))
    err = r.stderr.decode()
    assert r.returncode == 1, err
    assert r.stdout == b"REPLAYED\n"
    lines = guard_lines(r.stderr)
    assert len(lines) == 2 and lines[0].startswith("denpex-guard: replay-freed-input (DPX301): "), err
    assert lines[1] == "denpex-guard: checked 1 graph(s) over 1 replay(s): 1 finding(s) above"
    assert "--expect-absent replay-freed-input: its signature appeared" in err
