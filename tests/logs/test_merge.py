"""`denpex merge` gives the verdict one `denpex diagnose` over all the files gives; ranges and
worker processes give the result of one pass."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from denpex.logs import parallel, summary
from denpex.logs.layout import discover
from denpex.logs.merge import merge_summaries
from tests.logs import folder_builders as fb
from tests.logs.test_cli import denpex


def _json(r: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert r.returncode in (0, 1), r.stderr
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def test_merge_of_64_partial_summaries_equals_one_diagnose(tmp_path: Path) -> None:
    root = fb.node_rank_job(tmp_path / "job", fail=37)
    whole = _json(denpex("diagnose", str(root), "--format", "json"))
    v = whole["verdict"]
    failing = root / "node04" / "none_04q8w" / "attempt_0" / "5" / "stderr.log"
    assert v["rule"] == "capture-item-sync" and v["rank"] == 37 and v["file"] == str(failing)
    assert v["line"] == next(i for i, t in enumerate(failing.read_text().splitlines(), 1) if fb.E900 in t)
    rank_dirs = sorted(root.glob("node*/none_*/attempt_0/*"))
    assert len(rank_dirs) == 64

    def partial(i_dir: tuple[int, Path]) -> Path:
        i, d = i_dir
        out = tmp_path / f"part{i:02d}.json"
        r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(d), "--format", "json"],
                           capture_output=True, timeout=120, check=False)
        assert r.returncode in (0, 1), r.stderr
        out.write_bytes(r.stdout)
        return out

    with ThreadPoolExecutor(2) as ex:
        parts = list(ex.map(partial, enumerate(rank_dirs)))
    # no single partial sees the job's first failure and its competitor together
    assert sum(1 for p in parts if json.loads(p.read_text())["verdict"]["confidence"] == "high") == 2
    merged = _json(denpex("merge", *map(str, parts), "--format", "json"))
    assert merged["input"]["files"] == whole["input"]["files"] == 128
    assert merged["verdict"] == whole["verdict"]
    # merging merged summaries again changes nothing
    (tmp_path / "m.json").write_text(json.dumps(merged))
    again = _json(denpex("merge", str(tmp_path / "m.json"), str(parts[0]), "--format", "json"))
    assert again["verdict"] == whole["verdict"]
    text = denpex("merge", *map(str, parts[:8]), *map(str, parts[8:]))
    assert text.returncode == 1 and f"first failure: {failing}:" in text.stdout.decode()


def test_merge_per_node_summaries(tmp_path: Path) -> None:
    root = fb.node_rank_job(tmp_path / "job", nodes=4, per_node=4, fail=9)
    whole = _json(denpex("diagnose", str(root), "--format", "json"))
    parts = []
    for node in sorted(root.iterdir()):
        out = tmp_path / f"{node.name}.json"
        out.write_bytes(denpex("diagnose", str(node), "--format", "json").stdout)
        parts.append(str(out))
    merged = _json(denpex("merge", *parts, "--format", "json"))
    assert merged["verdict"] == whole["verdict"] and merged["verdict"]["rank"] == 9


def test_merge_bad_inputs_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("not json")
    (tmp_path / "y.json").write_text('{"schema": "something/1"}')
    for args in ([str(tmp_path / "x.json")], [str(tmp_path / "y.json")], [str(tmp_path / "nope.json")],
                 [str(tmp_path)]):
        r = denpex("merge", *args)
        err = r.stderr.decode()
        assert r.returncode == 2 and err.count("\n") == 1 and err.startswith("denpex: error:"), err


def test_merge_nothing_found_exits_zero(tmp_path: Path) -> None:
    fb.write(tmp_path / "a.log", fb.progress("", "08:00:00"))
    out = tmp_path / "a.json"
    out.write_bytes(denpex("diagnose", str(tmp_path / "a.log"), "--format", "json").stdout)
    r = denpex("merge", str(out))
    assert r.returncode == 0 and b"No known" in r.stdout


def _big_log(path: Path, blocks: int) -> tuple[int, int]:
    """A log of `blocks` filler blocks with the failing traceback in the middle of the last third."""
    filler = [f"[rank{r % 8}]:2026-12-01 08:{r % 60:02d}:00,000 INFO step {r}: loss 1.{r % 97:02d}" for r in range(400)]
    lines: list[str] = []
    target = 0
    for b in range(blocks):
        lines += filler
        if b == blocks * 2 // 3:
            lines += fb.watchdog(3, "08:15:33", 7, 7)
            target = len(lines) + 5
            lines += fb.item_traceback("[rank5]:")
    fb.write(path, lines)
    return target, len(lines)


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_ranges_give_the_single_pass_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: int) -> None:
    p = tmp_path / "big.log"
    line, total = _big_log(p, 60)
    src = discover([str(p)]).sources[0]
    one, _d1 = summary.summarise(src)
    monkeypatch.setattr(summary, "MIN_RANGE", 64 << 10)
    monkeypatch.setattr(summary, "LOOKBACK", 32 << 10)
    many, _dn = summary.summarise(src, ranges=parts)
    assert len(summary.split_points(str(p), parts)) == parts
    assert one["verdict"]["line"] == many["verdict"]["line"] == line
    assert one["lines"] == many["lines"] == total
    assert one["verdict"] == many["verdict"]
    assert [(f["rule"], f["line"], f["count"]) for f in one["findings"]] == \
        [(f["rule"], f["line"], f["count"]) for f in many["findings"]]
    assert one["timed_out"] == many["timed_out"] and one["last_enqueued"] == many["last_enqueued"]


def test_worker_processes_give_the_inline_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fb.slurm_per_task(tmp_path / "s", fail=5, later=1)
    _big_log(tmp_path / "s" / "console.txt", 30)
    layout = discover([str(tmp_path / "s")])
    inline, _w = parallel.summarise_all(layout.sources, [], 100, jobs=1)
    monkeypatch.setattr(parallel, "SMALL_JOB", 0)
    monkeypatch.setattr(parallel, "BIG_FILE", 256 << 10)  # the console file is cut into ranges too
    monkeypatch.setattr(summary, "MIN_RANGE", 64 << 10)
    pooled, _w = parallel.summarise_all(layout.sources, [], 100, jobs=2)
    a, b = merge_summaries(inline, ["s"]), merge_summaries(pooled, ["s"])
    assert a["verdict"] == b["verdict"] and a["verdict"]["rank"] == 5
    assert [s["lines"] for s in inline] == [s["lines"] for s in pooled]
    assert [s["verdict"] for s in inline] == [s["verdict"] for s in pooled]


def test_single_node_guess_of_one_machine_does_not_survive_the_merge(tmp_path: Path) -> None:
    # two nodes' --log-dir folders without [rankN] prefixes or a failure table: each alone looks like
    # a single node (global = local), together they are not, and the merge must not keep the guess
    fb.torchrun_single_node(tmp_path / "a", fail=2)
    for lr in range(4):  # the second node only timed out
        d = tmp_path / "b" / "none_zz" / "attempt_0" / str(lr)
        fb.write(d / "stderr.log", fb.progress("", "08:15:01") + fb.watchdog(lr, "08:15:33", 7, 7, prefix=False))
    one = _json(denpex("diagnose", str(tmp_path / "a"), "--format", "json"))
    assert one["verdict"]["rank"] == 2
    (tmp_path / "a.json").write_text(json.dumps(one))
    (tmp_path / "b.json").write_bytes(denpex("diagnose", str(tmp_path / "b"), "--format", "json").stdout)
    merged = _json(denpex("merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", "json"))
    v = merged["verdict"]
    assert v["file"].endswith("a/none_k2j4x9qz/attempt_0/2/stderr.log")
    assert v["rank"] is None and v["local_rank"] == 2
    whole = _json(denpex("diagnose", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json"))
    assert whole["verdict"] == v


def test_merge_leaves_the_summaries_it_was_given_as_they_were(tmp_path: Path) -> None:
    """Ranks are mapped on copies (a single node's local = global guess): the inputs are unchanged."""
    import copy

    root = fb.torchrun_single_node(tmp_path / "job", fail=2)
    sums, _warn = parallel.summarise_all(discover([str(root)]).sources, [], 100, jobs=1)
    before = copy.deepcopy(sums)
    doc = merge_summaries(sums, [str(root)])
    assert doc["verdict"]["rank"] == 2 and doc["verdict"]["local_rank"] == 2
    assert any(s["source"].get("rank") is None and s["source"].get("local_rank") == 2 for s in sums)
    assert sums == before
    assert doc["files"] == before


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="forked range workers need os.fork")
@pytest.mark.parametrize("jobs", [2, 3, 5])
def test_forked_range_workers_give_the_single_pass_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          jobs: int) -> None:
    """One big file alone: its ranges run in forked children (no executor), with the same answer."""
    p = tmp_path / "big.log"
    line, total = _big_log(p, 60)
    sources = discover([str(p)]).sources
    inline, _w = parallel.summarise_all(sources, [], 100, jobs=1)
    monkeypatch.setattr(parallel, "SMALL_JOB", 0)
    monkeypatch.setattr(parallel, "BIG_FILE", 256 << 10)
    monkeypatch.setattr(summary, "MIN_RANGE", 64 << 10)
    forks: list[int] = []
    real_fork = parallel.os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            forks.append(pid)
        return pid

    monkeypatch.setattr(parallel.os, "fork", counting_fork)
    forked, warnings = parallel.summarise_all(sources, [], 100, jobs=jobs)
    assert len(forks) == jobs - 1 and not warnings
    assert forked[0]["verdict"] == inline[0]["verdict"] and forked[0]["verdict"]["line"] == line
    assert forked[0]["lines"] == inline[0]["lines"] == total
    assert forked[0]["findings"] == inline[0]["findings"]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="forked range workers need os.fork")
def test_a_forked_range_worker_that_fails_or_dies_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from denpex.errors import DenpexError

    p = tmp_path / "big.log"
    _big_log(p, 60)
    sources = discover([str(p)]).sources
    monkeypatch.setattr(parallel, "SMALL_JOB", 0)
    monkeypatch.setattr(parallel, "BIG_FILE", 256 << 10)
    monkeypatch.setattr(summary, "MIN_RANGE", 64 << 10)

    def fails(*_a: object) -> None:
        raise DenpexError(f"{p}: read failed: Input/output error")

    monkeypatch.setattr(parallel, "_range_work", fails)
    got, warnings = parallel.summarise_all(sources, [], 100, jobs=2)
    assert got == [] and warnings == [f"not read: {p}: read failed: Input/output error"]

    def dies(*_a: object) -> None:
        parallel.os._exit(9)

    monkeypatch.setattr(parallel, "_range_work", dies)
    got, warnings = parallel.summarise_all(sources, [], 100, jobs=2)
    assert got == [] and warnings == ["not read: a worker process ended without its result (killed?)"]


def test_summaries_are_stamped_with_the_name_socket_gives_the_host() -> None:
    import socket

    from denpex.logs.merge import stamp_host

    sums: list[dict[str, object]] = [{}, {"host": "given"}]
    stamp_host(sums)  # type: ignore[arg-type]
    assert sums == [{"host": socket.gethostname()}, {"host": "given"}]
