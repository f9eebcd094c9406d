"""`denpex diagnose DIR | FILES...` on job log folders in each real layout, as a user runs it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.logs import folder_builders as fb
from tests.logs.test_cli import denpex


def verdict(*args: str) -> tuple[int, dict[str, Any]]:
    r = denpex("diagnose", *args, "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_torchrun_log_dir_first_failure_is_not_the_first_file(tmp_path: Path) -> None:
    run = fb.torchrun_single_node(tmp_path, fail=2, later=0)
    rc, doc = verdict(str(tmp_path))
    v = doc["verdict"]
    failing = run / "attempt_0" / "2" / "stderr.log"
    assert rc == 1 and doc["input"]["files"] == 10
    assert v["rule"] == "capture-item-sync"
    assert v["file"] == str(failing)
    assert v["line"] == line_of(failing, fb.E900)
    # a single node's agent: global rank = the local rank of the folder
    assert v["rank"] == 2 and v["local_rank"] == 2
    assert any("attempt_0/2/" in e for e in v["attribution"])
    assert v["ordered_by"] == "timestamps"
    # rank 0 (the first file) failed too, but six seconds later: a competing hypothesis, not the verdict
    alt = [a for a in v["alternatives"] if a.get("file")]
    assert alt and alt[0]["rule"] == "cuda-illegal-memory-access" and alt[0]["rank"] == 0
    assert "08:15:09" in alt[0]["why_not_first"]
    # the watchdog-only ranks are collateral
    assert any("nccl-watchdog-timeout" in n for n in v["notes"])


def test_torchrun_text_names_file_and_line(tmp_path: Path) -> None:
    run = fb.torchrun_single_node(tmp_path)
    r = denpex("diagnose", str(tmp_path))
    assert r.returncode == 1, r.stderr
    out = r.stdout.decode()
    failing = run / "attempt_0" / "2" / "stderr.log"
    assert f"first failure: {failing}:{line_of(failing, fb.E900)}, rank 2" in out


def test_error_json_alone_is_read(tmp_path: Path) -> None:
    run = fb.torchrun_single_node(tmp_path)
    only = run / "attempt_0" / "2" / "error.json"
    rc, doc = verdict(str(only))
    assert rc == 1 and doc["verdict"]["rule"] == "capture-item-sync"
    assert doc["verdict"]["file"] == str(only)


def test_last_attempt_only_with_a_warning(tmp_path: Path) -> None:
    fb.torchrun_single_node(tmp_path / "a", fail=2)
    run0 = tmp_path / "a" / "none_k2j4x9qz"
    # attempt_1: the restart failed on rank 3 instead
    for lr in range(4):
        d = run0 / "attempt_1" / str(lr)
        lines = fb.progress("", "09:00:00") + (fb.item_traceback() if lr == 3 else [])
        fb.write(d / "stderr.log", lines)
    rc, doc = verdict(str(tmp_path / "a"))
    assert rc == 1 and doc["verdict"]["rank"] == 3
    assert "/attempt_1/3/" in doc["verdict"]["file"]
    assert any("attempt_1 only" in w and "attempt_0" in w for w in doc["warnings"])


def test_slurm_per_task_files_task_id_is_the_rank(tmp_path: Path) -> None:
    fb.slurm_per_task(tmp_path, fail=5, later=1)
    rc, doc = verdict(str(tmp_path))
    v = doc["verdict"]
    f = tmp_path / "slurm-4242_5.out"
    assert rc == 1 and v["rule"] == "capture-item-sync" and v["rank"] == 5
    assert v["file"] == str(f) and v["line"] == line_of(f, fb.E900)
    assert any("Slurm task id" in e for e in v["attribution"])
    assert [a["rank"] for a in v["alternatives"] if a.get("file")] == [1]


def test_slurm_files_given_one_by_one_get_the_folders_ranks(tmp_path: Path) -> None:
    """`denpex diagnose job_777_*.out` (srun --output=job_%j_%t.out): the shell gives the files one by one;
    each gets the task id the folder gives it, whatever the name's head and whichever files are named."""
    fb.slurm_per_task(tmp_path, fail=5, later=1, name="job_777_{t}.out")
    f = tmp_path / "job_777_5.out"
    _rc, folder = verdict(str(tmp_path))
    files = sorted(str(p) for p in tmp_path.glob("job_777_*.out"))
    for args in (files, list(reversed(files)), [str(f), str(tmp_path / "job_777_1.out")]):
        rc, doc = verdict(*args)
        v = doc["verdict"]
        assert rc == 1 and v["rule"] == "capture-item-sync" and v["rank"] == 5, args
        assert v["file"] == str(f) and v["line"] == folder["verdict"]["line"] == line_of(f, fb.E900)
        assert v["attribution"] == folder["verdict"]["attribution"]
        assert {s["source"]["rank"] for s in doc["files"]} <= set(range(8))
    # one file of the series named alone: its folder still says which task wrote it
    rc, doc = verdict(str(f))
    assert rc == 1 and doc["verdict"]["rank"] == 5 and doc["verdict"]["attribution"] == folder["verdict"]["attribution"]
    # a lone numbered file with no series beside it says nothing about a rank
    lone = tmp_path / "other"
    lone.mkdir()
    (lone / "job_777_5.out").write_bytes(f.read_bytes())
    rc, doc = verdict(str(lone / "job_777_5.out"))
    assert rc == 1 and doc["verdict"]["rank"] is None


def test_collect_one_file_diagnoses_it_with_the_folders_ranks(tmp_path: Path) -> None:
    """`denpex collect FILE` (the library's diagnose_path, also used by `denpex run`) reads the writer from
    the path as `denpex diagnose DIR` does."""
    fb.slurm_per_task(tmp_path / "job", fail=5, later=1, name="job_777_{t}.out")
    run = fb.torchrun_single_node(tmp_path / "tr", fail=2, later=0)
    for log, key, want in ((tmp_path / "job" / "job_777_5.out", "rank", 5),
                           (run / "attempt_0" / "2" / "stderr.log", "local_rank", 2)):
        out = tmp_path / f"bundles-{key}"
        out.mkdir()
        r = denpex("collect", str(log), "--out", str(out))
        assert r.returncode == 0, r.stderr
        (bundle,) = out.iterdir()
        v = json.loads((bundle / "diagnosis.json").read_text())["verdict"]
        assert v[key] == want and v["attribution"], v
        assert any(str(log) in e for e in v["attribution"])


def test_per_pod_files_lines_carry_the_rank(tmp_path: Path) -> None:
    fb.kubeflow_pods(tmp_path, fail_rank=5)
    rc, doc = verdict(str(tmp_path))
    v = doc["verdict"]
    f = tmp_path / "trainer-worker-1.log"
    assert rc == 1 and v["rule"] == "capture-item-sync"
    assert v["rank"] == 5 and v["node"] == "trainer-worker-1"
    assert v["file"] == str(f) and v["line"] == line_of(f, fb.E900)


def test_files_given_one_by_one_and_a_bundle(tmp_path: Path) -> None:
    fb.slurm_per_task(tmp_path / "s", fail=5, later=1)
    bundle = tmp_path / "denpex-bundle-1"
    fb.write(bundle / "output.log", fb.progress("", "08:15:30") + fb.illegal_traceback())
    (bundle / "manifest.json").write_text("{}")
    (bundle / "env.json").write_text("{}")
    files = [str(tmp_path / "s" / f"slurm-4242_{t}.out") for t in (0, 5, 7)]
    rc, doc = verdict(*files, str(bundle))
    assert rc == 1 and doc["input"]["files"] == 4
    assert doc["verdict"]["file"].endswith("slurm-4242_5.out") and doc["verdict"]["rank"] == 5
    assert any(a.get("file", "").endswith("output.log") for a in doc["verdict"]["alternatives"])


def test_only_watchdogs_suspect_is_the_verdicts_rank(tmp_path: Path) -> None:
    fb.only_watchdogs(tmp_path, behind=3)
    rc, doc = verdict(str(tmp_path))
    v = doc["verdict"]
    assert rc == 1 and v["rule"] == "nccl-watchdog-timeout" and v["confidence"] == "low"
    assert v["rank"] == 3
    assert "last enqueued NCCL work is 6" in v["attribution"][0]
    assert v["suspect"]["file"] == str(tmp_path / "rank_3.log")
    assert 3 in v["suspect_ranks"]


def test_only_watchdogs_suspect_never_entered(tmp_path: Path) -> None:
    fb.only_watchdogs(tmp_path, behind=None, silent=1)
    rc, doc = verdict(str(tmp_path))
    v = doc["verdict"]
    assert rc == 1 and v["rank"] == 1
    assert "never reported collective SeqNum=7" in v["attribution"][0]


def test_single_file_watchdogs_suspect_in_rank(tmp_path: Path) -> None:
    lines = []
    for r in range(4):
        lines += fb.watchdog(r, "08:15:33", 7, 6 if r == 2 else 7)
    p = fb.write(tmp_path / "console.log", lines)
    rc, doc = verdict(str(p))
    assert rc == 1 and doc["verdict"]["rank"] == 2
    assert "last enqueued NCCL work is 6" in doc["verdict"]["attribution"][0]


def test_no_timestamps_orders_by_rank(tmp_path: Path) -> None:
    fb.write(tmp_path / "rank_3.log", fb.item_traceback())
    fb.write(tmp_path / "rank_1.log", fb.illegal_traceback())
    rc, doc = verdict(str(tmp_path))
    assert rc == 1 and doc["verdict"]["rank"] == 1 and doc["verdict"]["ordered_by"].startswith("rank")


def test_two_nodes_failure_table_maps_local_rank(tmp_path: Path) -> None:
    fb.torchrun_two_nodes_with_table(tmp_path)
    rc, doc = verdict(str(tmp_path))
    v = doc["verdict"]
    assert rc == 1 and v["rule"] == "capture-item-sync"
    assert v["file"] == str(tmp_path / "gpu-b" / "none_bbbb2222" / "attempt_0" / "1" / "stderr.log")
    assert v["rank"] == 3 and v["local_rank"] == 1
    assert any("failure table" in e for e in v["attribution"])


def test_node_rank_option_maps_local_rank(tmp_path: Path) -> None:
    fb.torchrun_two_nodes_with_table(tmp_path)
    rc, doc = verdict(str(tmp_path / "gpu-b"), "--node-rank", "1", "--nproc-per-node", "2")
    assert rc == 1 and doc["verdict"]["rank"] == 3
    assert any("--node-rank 1" in e for e in doc["verdict"]["attribution"])


def test_console_log_default_prefix_becomes_global_rank(tmp_path: Path) -> None:
    lines = ["+ torchrun --nnodes 2 --node_rank 1 --nproc_per_node 4 train.py"]
    lines += fb.item_traceback("[default1]:")
    p = fb.write(tmp_path / "node1.console", lines)
    rc, doc = verdict(str(p))
    assert rc == 1 and doc["verdict"]["rank"] == 5 and doc["verdict"]["local_rank"] == 1
    assert any("node_rank 1" in e for e in doc["verdict"]["attribution"])


def test_console_log_failure_table_maps_default_prefix(tmp_path: Path) -> None:
    lines = [
        *fb.item_traceback("[default1]:"),
        "Root Cause (first observed failure):", "[0]:", "  time      : 2026-12-01_08:15:40",
        "  host      : gpu-b", "  rank      : 9 (local_rank: 1)", "  exitcode  : 1 (pid: 709)",
    ]
    p = fb.write(tmp_path / "console.log", lines)
    rc, doc = verdict(str(p))
    assert rc == 1 and doc["verdict"]["rank"] == 9
    assert any("failure table" in e for e in doc["verdict"]["attribution"])


def test_unreadable_and_empty_folder_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = denpex("diagnose", str(tmp_path / "empty"))
    assert r.returncode == 2 and r.stderr.decode().count("\n") == 1 and b"no log files" in r.stderr
    r = denpex("diagnose", str(tmp_path / "nope"), str(tmp_path / "empty"))
    assert r.returncode == 2 and b"no such file" in r.stderr and b"Traceback" not in r.stderr


def test_a_file_that_cannot_be_read_is_named_and_the_rest_diagnosed(tmp_path: Path) -> None:
    fb.slurm_per_task(tmp_path, fail=2, later=1, tasks=4)
    (tmp_path / "slurm-4242_9.out").symlink_to(tmp_path / "gone.out")  # dangling: open fails
    os.mkfifo(tmp_path / "stream.log")  # opening it would wait for a writer forever
    (tmp_path / "slurm-4242_3.out").write_bytes(b"\x00\xff\xfe binary \x1b[31m\r\n" * 50 + fb.E900.encode())
    rc, doc = verdict(str(tmp_path))
    assert rc == 1 and doc["verdict"]["rank"] == 2
    assert any("not read" in w and "slurm-4242_9.out" in w and "no such file" in w for w in doc["warnings"])
    assert any("slurm-4242_3.out" in w and "ends mid-line" in w for w in doc["warnings"])
    assert any("stream.log: not a regular file" in w for w in doc["warnings"])


def test_a_pipe_given_as_file(tmp_path: Path) -> None:
    import subprocess
    import sys

    p = fb.write(tmp_path / "x.log", fb.item_traceback("[rank3]:"))
    r = subprocess.run(["bash", "-c", f'"{sys.executable}" -m denpex diagnose <(cat "{p}") --format json'],
                       capture_output=True, timeout=120, check=False)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout)["verdict"]["rank"] == 3
