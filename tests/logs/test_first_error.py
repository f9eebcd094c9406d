"""A first-error answer for any log: the line found by its shape when no rule names a failure.

The gathered logs (tests/data/first_error/, gold.tsv) are real outputs posted in public issue threads
where no CUDA-graph rule applies; each is diagnosed by the CLI as a user runs it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DATA
from tests.logs import folder_builders as fb
from tests.logs.test_cli import denpex

GATHERED = DATA / "first_error"
NOT_HERE = "the initiating error is not in this log"
NOT_KNOWN = "not a known CUDA-graph failure"


def gold() -> list[dict[str, str]]:
    with open(GATHERED / "gold.tsv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def diagnosed(*args: str, stdin: bytes | None = None) -> tuple[int, dict[str, Any]]:
    r = denpex("diagnose", *args, "--format", "json", stdin=stdin)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def test_gathered_logs_name_the_gold_line(capsys: pytest.CaptureFixture[str]) -> None:
    rows = gold()
    assert len(rows) >= 12 and sum(1 for r in rows if not r["line"]) >= 3
    misses: list[str] = []
    lines_ok = ranks_ok = ranked = collateral_ok = 0
    for row in rows:
        rc, doc = diagnosed(str(GATHERED / row["file"]))
        fe = doc["first_error"]
        v = doc["verdict"]
        if row["line"]:  # an initiating line a person names: the first-error answer names it
            assert v is None and rc == 0, (row["file"], v)  # no rule applies to these logs
            got = fe and fe.get("found") and fe["line"]
            if got == int(row["line"]):
                lines_ok += 1
                assert fe["confidence"] in ("low", "medium") and fe["known"] is False
                assert fe["text"] == (GATHERED / row["file"]).read_text().splitlines()[got - 1]
            else:
                misses.append(f"{row['file']}: gold line {row['line']}, got {got}")
            if row["rank"]:
                ranked += 1
                ranks_ok += bool(fe) and fe.get("rank") == int(row["rank"])
        else:  # only collateral: no confident verdict, and the answer says the initiating error is elsewhere
            confident = v is not None and v["confidence"] != "low"
            if not confident and fe is not None and fe["found"] is False and fe["what"] == NOT_HERE:
                collateral_ok += 1
            else:
                misses.append(f"{row['file']}: collateral only, got verdict {v and v['rule']} / {fe}")
    n_lines = sum(1 for r in rows if r["line"])
    n_coll = len(rows) - n_lines
    held = sum(1 for r in rows if r["set"] == "held-out")
    with capsys.disabled():
        print(f"\nfirst-error answers on {len(rows)} gathered logs ({held} held out from tuning): initiating line "
              f"named {lines_ok}/{n_lines} ({100 * lines_ok / n_lines:.0f}%); 'not in this log' for collateral-only "
              f"logs {collateral_ok}/{n_coll}; rank named {ranks_ok}/{ranked} where the gold has one")
    assert not misses, misses


def test_text_output_says_what_it_is() -> None:
    r = denpex("diagnose", str(GATHERED / "tgi_flash_attention_notimplemented.log"))
    out = r.stdout.decode()
    assert r.returncode == 0, r.stderr  # not a known diagnosis: the exit code of "nothing known"
    assert "No known CUDA-graph failure signature found." in out
    assert NOT_KNOWN in out and "first error: line 9" in out and "confidence medium" in out
    assert "NotImplementedError: Sharded Llama requires Flash Attention enabled models." in out
    assert "evidence:" in out and "denpex run -- CMD" in out
    r = denpex("diagnose", str(GATHERED / "vllm_engine_core_see_root_cause_above.log"))
    assert r.returncode == 0 and NOT_HERE in r.stdout.decode()
    r = denpex("diagnose", str(GATHERED / "vllm_kv_cache_valueerror.log"), "--format", "markdown")
    assert r.returncode == 0 and NOT_KNOWN in r.stdout.decode() and "ValueError: The model" in r.stdout.decode()


def test_json_fields_are_added_not_renamed() -> None:
    rc, doc = diagnosed(str(GATHERED / "airflow_scheduler_keyerror.log"))
    assert rc == 0 and doc["schema"] == "denpex.diagnosis/1"
    assert {"schema", "input", "summary", "warnings", "verdict", "findings", "files"} <= doc.keys()
    fe = doc["first_error"]
    for key in ("found", "known", "what", "kind", "line", "text", "rank", "attribution", "confidence",
                "context", "frames", "reported_by", "notes", "evidence", "file"):
        assert key in fe, key
    assert fe["kind"] == "exception" and fe["line"] == 13 and fe["reported_by"]["line"] == 1
    assert fe["frames"][-1]["function"] == "_process_executor_events"
    assert fe["context"]["end_line"] == 13 and fe["file"] == str(GATHERED / "airflow_scheduler_keyerror.log")
    assert doc["files"][0]["first_error"]["line"] == 13
    assert "first error by the shape of the line" in doc["summary"]
    # a log a rule diagnoses has no first-error block: the pass does not run there
    rc, doc = diagnosed(str(DATA.parent.parent / "examples" / "a1_rank1_dies.log"))
    assert rc == 1 and doc["verdict"]["rule"] == "capture-item-sync" and doc["first_error"] is None


BENIGN = """\
2026-12-01 08:15:01,000 INFO eval: errors=0 error_rate: 0.01 failed_requests: 0
2026-12-01 08:15:02,000 INFO tests: 0 failed, 12 passed
export ERROR_LEVEL=3 NCCL_DEBUG=WARN
python train.py --max-errors 10 --on-error retry
[rank0]: step 100 loss 2.31 grad_norm 0.9 errors: 0
INFO 12-01 08:15:03 [metrics.py:88] Avg prompt throughput: 12.0 tokens/s, failed: 0, error count: 0
2026-12-01 08:15:04,000 WARNING retrying after error code 503 from the hub
Error: 0
"""


def test_benign_error_words_are_no_answer(tmp_path: Path) -> None:
    log = tmp_path / "benign.log"
    log.write_text(BENIGN)
    rc, doc = diagnosed(str(log))
    assert rc == 0 and doc["verdict"] is None and doc["first_error"] is None
    assert doc["summary"] == "No known CUDA-graph failure signature found."


def test_standard_input_gets_the_answer() -> None:
    data = (GATHERED / "state_dict_size_mismatch.log").read_bytes()
    rc, doc = diagnosed("-", stdin=data)
    assert rc == 0 and doc["first_error"]["line"] == 10 and doc["first_error"]["kind"] == "exception"


def test_collateral_verdict_keeps_its_verdict_and_gets_the_first_error(tmp_path: Path) -> None:
    """The rules see only the watchdog; the line that says what failed is an exception they do not know."""
    lines = [
        *fb.watchdog(0, "08:15:40", 7, 7),
        "[rank1]:Traceback (most recent call last):",
        '[rank1]:  File "/workspace/train.py", line 12, in <module>',
        "[rank1]:    batch = next(it)",
        "[rank1]:IndexError: list index out of range",
        *fb.watchdog(2, "08:15:41", 7, 7),
    ]
    log = fb.write(tmp_path / "job.log", lines)
    rc, doc = diagnosed(str(log))
    assert rc == 1 and doc["verdict"]["rule"] == "nccl-watchdog-timeout" and doc["verdict"]["confidence"] == "low"
    fe = doc["first_error"]
    assert fe["found"] and fe["line"] == 6 and fe["rank"] == 1 and fe["kind"] == "exception"
    out = denpex("diagnose", str(log)).stdout.decode()
    assert "the rules found only collateral" in out and "IndexError: list index out of range" in out


def _cascade(root: Path) -> None:
    """Per-rank files: rank 2 raises first (08:15:03), rank 0 later (08:15:09), ranks 1 and 3 time out."""
    for r in range(4):
        lines = fb.progress("", "08:15:01")
        if r in (0, 2):
            hms = "08:15:03" if r == 2 else "08:15:09"
            lines += [f"2026-12-01 {hms},500 ERROR worker {r} crashed", "Traceback (most recent call last):",
                      '  File "/workspace/train.py", line 77, in step', "    cfg = table[key]",
                      f"KeyError: 'layer{r}'"]
        else:
            lines += fb.watchdog(r, "08:15:33", 7, 7, prefix=False)
        fb.write(root / f"rank_{r}.log", lines)


def test_folder_orders_the_files_first_errors_by_time(tmp_path: Path) -> None:
    _cascade(tmp_path)
    rc, doc = diagnosed(str(tmp_path))
    assert rc == 1 and doc["verdict"]["rule"] == "nccl-watchdog-timeout"  # the rules' verdict: collateral
    fe = doc["first_error"]
    assert fe["file"] == str(tmp_path / "rank_2.log") and fe["rank"] == 2 and fe["text"] == "KeyError: 'layer2'"
    assert fe["ordered_by"] == "timestamps" and fe["reported_by"]["text"].endswith("ERROR worker 2 crashed")
    assert [a["rank"] for a in fe["alternatives"]] == [0]
    # the same job merged from per-file summaries gives the same answer
    parts = []
    for r in range(4):
        _rc, one = diagnosed(str(tmp_path / f"rank_{r}.log"))
        part = tmp_path / f"part{r}.json"
        part.write_text(json.dumps(one))
        parts.append(str(part))
    merged = denpex("merge", *parts, "--format", "json")
    assert merged.returncode == 1, merged.stderr
    mfe = json.loads(merged.stdout)["first_error"]
    assert (mfe["file"], mfe["line"], mfe["rank"]) == (fe["file"], fe["line"], fe["rank"])


def test_folder_of_collateral_only(tmp_path: Path) -> None:
    fb.only_watchdogs(tmp_path)
    _rc, doc = diagnosed(str(tmp_path))
    assert doc["verdict"]["confidence"] == "low"
    assert doc["first_error"]["found"] is False and doc["first_error"]["what"] == NOT_HERE


def test_no_scan_where_a_rule_found_the_initiating_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from denpex.logs import first_error
    from denpex.logs.layout import source_of
    from denpex.logs.summary import summarise

    def boom(*_a: Any, **_k: Any) -> None:
        raise AssertionError("first-error pass ran on a diagnosed log")

    monkeypatch.setattr(first_error, "scan", boom)
    src = source_of(DATA.parent.parent / "examples" / "a1_rank1_dies.log")
    _summary, d = summarise(src, first_error=True)
    assert d.verdict is not None and d.first_error is None


def test_native_and_crate_key_search_give_the_same_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    from denpex.logs import first_error
    from denpex.logs.diagnose import matcher_for

    matcher = matcher_for(None)

    def answers() -> list[Any]:
        out = []
        for row in gold():
            with open(GATHERED / row["file"], "rb") as fh:
                fe = first_error.scan(fh, matcher)
            out.append(fe.to_json() if fe is not None else None)
        return out

    first = answers()
    monkeypatch.setattr(first_error._Keys, "_native", None)
    monkeypatch.setattr(first_error._Keys, "_planned", True)
    assert answers() == first
