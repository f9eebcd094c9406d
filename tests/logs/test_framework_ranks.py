"""Ranks from framework worker names (vLLM, SGLang, Ray, TGI, compile-cache paths), through the CLI.

The logs are excerpts of public threads (tests/data/framework_ranks/sources.tsv says what of each is
as posted). The rank is the global one only where the name gives enough to compute it; otherwise the
name is the process and the rank stays unknown. `attribution` says where each came from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from denpex.logs.attribution import attribute
from tests.conftest import REPO
from tests.logs.test_cli import denpex

DATA = REPO / "tests" / "data" / "framework_ranks"


def verdict(path: Path) -> dict[str, Any]:
    r = denpex("diagnose", str(path), "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    v: dict[str, Any] = json.loads(r.stdout)["verdict"]
    assert v is not None
    return v


@pytest.mark.parametrize(("log", "line", "rank", "process", "said"), [
    # vLLM's worker names: one of DP/PP/TP named, or every named rank outside the innermost 0
    ("vllm_worker_tp1_capture.log", 7, 1, "2352", "(Worker_TP1 pid=2352) (global rank 1: DP/PP not named"),
    ("vllm_pp0_tp1_capture.log", 14, 1, "4798", "(VllmWorker PP0_TP1 pid=4798) (global rank 1:"),
    # PP1_TP0 is rank TP + 0: the tensor-parallel size is not in the name, so the name is the process
    ("vllm_worker_pp1_tp0_capture.log", 7, None, "Worker_PP1_TP0 pid=957", "rank unknown: it needs the parallel sizes"),
    # SGLang logs the traceback as one record: the prefix is on its first line only
    ("sglang_tp1_scheduler_exception.log", 10, 1, None, "SGLang TP prefix TP1] (global rank 1"),
    ("sglang_dp1_tp1_scheduler_exception.log", 8, None, "DP1 TP1", "SGLang scheduler prefix DP1 TP1] (rank unknown"),
    # Ray: the actor's pid (and node where Ray gives the ip); stacked prefixes name the innermost writer
    ("ray_vllm_worker_no_ip.log", 6, None, "392789", "Ray actor prefix (RayWorkerWrapper pid=392789)"),
    ("ray_nested_in_engine_core.log", 6, None, "285", "Ray actor prefix (RayWorkerWrapper pid=285, ip=192.168.177.12)"),
    # weak: a compile-cache folder rank_<rank>_<dp rank>
    ("vllm_compile_cache_rank_weak.log", 2, 1, None, "weak evidence: compile-cache path rank_1_0"),
])
def test_rank_and_process_from_the_worker_name(log: str, line: int, rank: int | None, process: str | None,
                                                said: str) -> None:
    v = verdict(DATA / log)
    assert (v["line"], v["rank"], v["process"]) == (line, rank, process), v["attribution"]
    assert v["local_rank"] is None
    assert any(said in e for e in v["attribution"]), v["attribution"]


def test_sglang_traceback_line_says_where_its_rank_came_from() -> None:
    v = verdict(DATA / "sglang_tp1_scheduler_exception.log")
    assert v["attribution"] == ["SGLang TP prefix TP1] (global rank 1: DP/PP not named (size 1)), "
                                "on the traceback's first line (3)"]


def test_ray_ip_is_the_node() -> None:
    v = verdict(DATA / "ray_nested_in_engine_core.log")
    assert v["node"] == "192.168.177.12"
    text = denpex("diagnose", str(DATA / "vllm_worker_pp1_tp0_capture.log")).stdout.decode()
    assert "process Worker_PP1_TP0 pid=957" in text and "pid Worker_PP1_TP0" not in text


def test_tgi_shard_rank_field() -> None:
    r = denpex("diagnose", str(REPO / "tests" / "data" / "first_error" / "tgi_shard_signal4.log"), "--format", "json")
    fe = json.loads(r.stdout)["first_error"]
    assert fe["line"] == 5 and fe["rank"] == 0
    assert fe["attribution"] == ["a trailing rank=0 field (TGI's launcher ends its shard records so)"]


def test_vllm_executor_names_the_worker_that_died() -> None:
    died = (DATA / "vllm_worker_proc_died.log").read_text().splitlines()[1]
    a = attribute(died)
    assert (a.rank, a.process) == (0, "VllmWorker-0")
    assert a.evidence == ["vLLM's executor: VllmWorker-0 died (its worker of rank 0)"]


def test_weak_cache_rank_gives_way_to_every_other_source(tmp_path: Path) -> None:
    text = (DATA / "vllm_compile_cache_rank_weak.log").read_text()
    # a prefix on the line wins
    a = attribute("[rank3]: " + text.splitlines()[1])
    assert a.rank == 3 and not a.weak and a.evidence == ["prefix [rank3]"]
    # a per-rank file name wins too
    for r in range(4):
        (tmp_path / f"rank_{r}.log").write_text("step 1 ok\n" if r != 2 else text)
    v = verdict(tmp_path)
    assert v["rank"] == 2, v["attribution"]
    assert not any(e.startswith("weak evidence") for e in v["attribution"]), v["attribution"]


@pytest.mark.parametrize(("line", "rank", "process"), [
    ("(Worker_TP0_EP0 pid=955) INFO 02-10 20:34:43 [fp8.py:329] Using FLASHINFER_CUTLASS", 0, "955"),
    ("(Worker_DP1 pid=5) ERROR x", 1, "5"),
    ("(Worker_DP0_PP0_TP3_EP3 pid=6) ERROR x", 3, "6"),
    ("(Worker_DP1_TP0 pid=7) ERROR x", None, "Worker_DP1_TP0 pid=7"),
    ("(VllmWorker TP1 pid=77) ERROR x", 1, "77"),
    ("(VllmWorker rank=3 pid=4242) ERROR x", 3, "4242"),
    # EngineCore_DP0 is an engine process, a GPU rank only when TP and PP are 1: the pid, no rank
    ("(EngineCore_DP0 pid=1088) ERROR 12-17 23:28:01 [core.py:866] Exception: x", None, "1088"),
    ("(APIServer pid=64866) RuntimeError: Engine core initialization failed.", None, "64866"),
    ("(pid=4411) F1120 15:11:08.866851 140064546551232 core.py:90] GLEW initalization error", None, "4411"),
    ("[2025-04-22 15:12:46 DP0 TP3 EP3] x", 3, None),
    ("[2025-04-22 15:12:46 PP1 TP3] x", None, "PP1 TP3"),
    ("[2025-04-22 15:12:46 TP3 EP3 PP1] x", None, "TP3 EP3 PP1"),
    ("2024-03-06T17:53:22.336246Z  INFO shard-manager: text_generation_launcher: Starting shard rank=1", 1, None),
])
def test_name_forms(line: str, rank: int | None, process: str | None) -> None:
    a = attribute(line)
    assert (a.rank, a.process) == (rank, process), a.evidence
    assert a.evidence
