"""`denpex scan --jobs N`: capture files analysed by forked processes give the findings one process gives, byte
for byte, in the same order (engine/jobs.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from denpex.source.engine.jobs import WorkerError, can_fork, map_in_order

PROGRAMS = Path(__file__).resolve().parents[1] / "data" / "realistic"


def _scan(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "denpex", "scan", "--format", "json", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not can_fork(), reason="forked jobs need Linux")
def test_forked_jobs_give_the_one_process_output(tmp_path: Path) -> None:
    for sub in ("programs", "programs_new"):
        shutil.copytree(PROGRAMS / sub, tmp_path / sub)
    one = _scan(tmp_path, "--jobs", "1")
    assert one.returncode == 1, one.stderr
    found = json.loads(one.stdout)["diagnostics"]
    sites = {(d["capture_site"]["path"], d["capture_site"]["line"]) for d in found}
    assert len(found) > 20 and len(sites) > 10, (len(found), len(sites))  # many capture files, shared out among the children
    for jobs in ("2", "3", "0"):
        many = _scan(tmp_path, "--jobs", jobs)
        assert (many.returncode, many.stdout) == (one.returncode, one.stdout), jobs


def _pid(i: int) -> tuple[int, int]:
    return i * i, os.getpid()


@pytest.mark.skipif(not can_fork(), reason="forked jobs need Linux")
def test_map_in_order_runs_in_children_and_keeps_the_order() -> None:
    got = map_in_order(_pid, list(range(40)), 3)
    assert [sq for sq, _pid in got] == [i * i for i in range(40)]
    assert os.getpid() not in {p for _sq, p in got}
    assert {p for _sq, p in map_in_order(_pid, list(range(5)), 1)} == {os.getpid()}


def test_a_bad_job_count_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    for bad in ("-1", "many"):
        r = _scan(tmp_path, "--jobs", bad)
        assert r.returncode == 2 and "not a number of processes" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


LIB = "import torch\n\n\ndef step(x):\n    return x.sum().item()\n"
LIGHT = "import torch\nfrom lib import step\n\nx = torch.ones(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n" \
        "with torch.cuda.graph(g):\n    step(x)\n"


def _heavy(n: int) -> str:
    """A capture file that takes a while: many captures, each through its own chain of helpers to lib.step."""
    out = ["import torch", "from lib import step", "", "x = torch.ones(4, device='cuda')", ""]
    for i in range(n):
        out += [f"def h{i}(x):", f"    y = x * {i}", "    return step(y)", ""]
    for i in range(n):
        out += [f"g{i} = torch.cuda.CUDAGraph()", f"with torch.cuda.graph(g{i}):", f"    h{i}(x)", ""]
    return "\n".join(out)


@pytest.mark.skipif(not can_fork(), reason="forked jobs need Linux")
def test_the_first_capture_file_names_a_shared_finding_whichever_child_ends_first(tmp_path: Path) -> None:
    # a_heavy.py comes first and reaches lib.step's .item() too, but b_light.py's child is done long before
    (tmp_path / "lib.py").write_text(LIB)
    (tmp_path / "a_heavy.py").write_text(_heavy(400))
    (tmp_path / "b_light.py").write_text(LIGHT)
    for jobs in ("1", "2"):
        found = json.loads(_scan(tmp_path, "--jobs", jobs).stdout)["diagnostics"]
        in_lib = [d for d in found if d["path"] == "lib.py"]
        assert in_lib and all(d["capture_site"]["path"] == "a_heavy.py" for d in in_lib), (jobs, in_lib)


@pytest.mark.skipif(not can_fork(), reason="forked jobs need Linux")
def test_a_child_past_its_memory_budget_hands_its_place_to_a_fresh_one() -> None:
    got = map_in_order(_pid, list(range(12)), 2, budget_mb=0.001)  # every child is past it after one item
    assert [sq for sq, _pid in got] == [i * i for i in range(12)]
    assert len({p for _sq, p in got}) == 12  # one child per item
    kept = map_in_order(_pid, list(range(12)), 2, budget_mb=0)  # no budget: the two children take them all
    assert len({p for _sq, p in kept}) == 2


def _fails_on_three(i: int) -> int:
    if i == 3:
        raise ValueError("item three")
    return i


@pytest.mark.skipif(not can_fork(), reason="forked jobs need Linux")
def test_an_item_that_raises_in_a_child_is_raised_here_with_its_traceback() -> None:
    with pytest.raises(WorkerError, match="item three") as err:
        map_in_order(_fails_on_three, list(range(8)), 2)
    assert "_fails_on_three" in str(err.value) and "3" in str(err.value)
    assert not multiprocessing.active_children()  # no child left behind
