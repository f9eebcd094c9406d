"""The denpex guard's own report lines name their rule: `denpex diagnose` takes the rule id the guard printed.

The guard (denpex.guard) prints one line per finding to stderr,
    denpex-guard: <rule-id> (<CODE>): <message>
and, when it refuses a replay, raises denpex.guard.GuardError, whose traceback ends in
    denpex.guard.GuardError: <rule-id> (<CODE>): <message>
Under torchrun both carry the [rankN]: prefix. The freed- and moved-input messages start with the folklore
phrase "CUDA graph replay detected invalidated memory buffer", which replay-rebound-static-input matches on
its own; on a guard line the rule id the guard printed must win. Each log below goes through the CLI as a
user runs it (a process, a file, --format json).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.logs.test_cli import denpex

GUARD_INIT = "/w/.venv/lib/python3.11/site-packages/denpex/guard/__init__.py"

# (rule, code, message, the user's line the guard refused a replay at)
CASES: list[tuple[str, str, str, int]] = [
    ("replay-freed-input", "DPX301",
     "CUDA graph replay detected invalidated memory buffer: float32[1048576] allocated at /w/train.py:8, "
     "captured at /w/train.py:22, freed at /w/train.py:24 (graph captured at /w/train.py:21, replayed at "
     "/w/train.py:26)", 26),
    ("replay-rebound-static-input", "DPX300",
     "CUDA graph replay detected invalidated memory buffer: float32[8, 256] allocated at /w/a.py:9, captured at "
     "/w/a.py:30, moved (its storage now lives at another address) before this replay at /w/a.py:35", 35),
    ("replay-rebound-static-input", "DPX300",
     "static input 'static_x' (float32[8, 256], captured at /w/a.py:30) was rebound to another tensor and never "
     "refreshed before this replay at /w/a.py:35: the graph still reads the old tensor; refresh it with "
     "static_x.copy_(new)", 35),
    ("replay-shape-change", "DPX305",
     "static input 'static_x' was captured as float32[8, 256] at /w/a.py:30 and is now float32[4, 256] at this "
     "replay (/w/a.py:35): the graph still reads 8 rows", 35),
    ("replay-output-kept-without-clone", "DPX302",
     "graph output float32[4096] (captured at /w/a.py:23) is kept across replays: 3 references at replay 3, "
     "growing since replay 1 (held by list 'outs'); every kept entry aliases one buffer that each replay "
     "overwrites; keep out.clone()", 26),
    ("replay-frozen-python-scalar", "DPX303",
     "'scale' was 2.0 when the graph was captured (read at /w/a.py:23) and is 3.0 at this replay (/w/a.py:26): "
     "the graph keeps using 2.0", 26),
    ("replay-frozen-python-scalar", "DPX303",
     "branch condition 'freeze' at /w/a.py:40 was True at capture and is False at this replay (/w/a.py:60): "
     "the graph keeps the branch taken at capture", 60),
    ("replay-differs-from-eager", "DPX308",
     "graphed callable 'Block.forward' (graphed at /w/m.py:50) differs from eager at call 2: output 0 max abs "
     "diff 0.731 (rtol 1e-3); explained by: replay-frozen-python-scalar at /w/m.py:31", 60),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def training(prefix: str = "") -> list[str]:
    return [
        f"{prefix}[2026-12-02 10:00:01] epoch 0 step 0 loss 2.3041 lr 1.0e-03",
        f"{prefix}[2026-12-02 10:00:02] epoch 0 step 1 loss 2.2817 lr 1.0e-03",
        f"{prefix}[2026-12-02 10:00:02] warmup done; capturing train_step into a CUDA graph",
        f"{prefix}[2026-12-02 10:00:03] epoch 0 step 2 loss 2.2590 lr 1.0e-03 (replay)",
    ]


def refusal(rule: str, code: str, message: str, user_line: int, prefix: str = "",
            cls: str = "denpex.guard.GuardError") -> list[str]:
    """The traceback of the GuardError that refused the replay (Python names the class by its defining
    module: denpex.guard.report.GuardError unless the guard sets __module__ to denpex.guard)."""
    return [f"{prefix}{t}" for t in (
        "Traceback (most recent call last):",
        f'  File "/w/train.py", line {user_line}, in <module>',
        "    g.replay()",
        f'  File "{GUARD_INIT}", line 141, in replay',
        "    raise GuardError(finding)",
        f"{cls}: {rule} ({code}): {message}",
    )]


def diagnose(tmp_path: Path, lines: list[str]) -> dict[str, Any]:
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = denpex("diagnose", str(log), "--format", "json")
    assert r.returncode == 1, r.stderr.decode()
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def check(out: dict[str, Any], rule: str, line: int, rank: int | None, lines: list[str]) -> None:
    v = out["verdict"]
    assert (v["rule"], v["line"], v["rank"], v["confidence"]) == (rule, line, rank, "high"), v
    assert v["via"] is None
    assert v["text"] == lines[line - 1]
    # no other rule claims the guard's lines (the freed message holds the folklore phrase of DPX300)
    guard_lines = {n for n, t in enumerate(lines, start=1) if "denpex-guard: " in t or "GuardError: " in t}
    others = [(f["rule"], f["line"]) for f in out["findings"] if f["line"] in guard_lines and f["rule"] != rule]
    assert others == []
    assert [a for a in v["alternatives"] if a["line"] in guard_lines] == []


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_guard_line_then_refusal_traceback(tmp_path: Path, case: tuple[str, str, str, int]) -> None:
    rule, code, message, user_line = case
    lines = [*training(), f"denpex-guard: {rule} ({code}): {message}", *refusal(rule, code, message, user_line)]
    out = diagnose(tmp_path, lines)
    check(out, rule, 5, None, lines)
    assert out["verdict"]["rule"] == rule and out["verdict"]["code"] == code


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_torchrun_rank3(tmp_path: Path, case: tuple[str, str, str, int]) -> None:
    """Four ranks; rank 3's guard line and refusal carry torchrun's [rank3]: prefix."""
    rule, code, message, user_line = case
    lines: list[str] = ["+ torchrun --standalone --nproc-per-node 4 /w/train.py"]
    for step in training():
        lines += [f"[rank{r}]:{step}" for r in range(4)]
    lines.append(f"[rank3]: denpex-guard: {rule} ({code}): {message}")
    guard_at = len(lines)
    lines += refusal(rule, code, message, user_line, prefix="[rank3]: ")
    lines += [
        "W1202 10:00:04.120000 311 torch/distributed/elastic/multiprocessing/api.py:1012] Sending process 402 "
        "closing signal SIGTERM",
        "E1202 10:00:04.310000 311 torch/distributed/elastic/multiprocessing/api.py:986] failed (exitcode: 1) "
        "local_rank: 3 (pid: 405) of binary: /w/.venv/bin/python3",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "/w/train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        "  time      : 2026-12-02_10:00:04",
        "  host      : node7",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : 1 (pid: 405)",
        "============================================================",
    ]
    out = diagnose(tmp_path, lines)
    check(out, rule, guard_at, 3, lines)
    assert "prefix [rank3]" in out["verdict"]["attribution"]


@pytest.mark.parametrize("cls", ["denpex.guard.GuardError", "denpex.guard.report.GuardError"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_refusal_traceback_alone(tmp_path: Path, case: tuple[str, str, str, int], cls: str) -> None:
    """Only the exception (the finding line went elsewhere): its last line is the verdict."""
    rule, code, message, user_line = case
    lines = [*training(), *refusal(rule, code, message, user_line, cls=cls)]
    out = diagnose(tmp_path, lines)
    check(out, rule, len(lines), None, lines)
    frames = out["verdict"]["frames"]
    assert {"path": "/w/train.py", "line": user_line} in [{k: f[k] for k in ("path", "line")} for f in frames]


def test_frozen_scalar_explains_the_eager_difference(tmp_path: Path) -> None:
    """The guard reports the frozen value, then the difference it explains: the cause is the verdict."""
    scalar = next(c for c in CASES if c[0] == "replay-frozen-python-scalar")
    differs = next(c for c in CASES if c[0] == "replay-differs-from-eager")
    lines = [*training(), f"denpex-guard: {scalar[0]} ({scalar[1]}): {scalar[2]}",
             "[2026-12-02 10:00:04] epoch 0 step 3 loss 2.2402 lr 1.0e-03 (replay)",
             f"denpex-guard: {differs[0]} ({differs[1]}): {differs[2]}"]
    out = diagnose(tmp_path, lines)
    v = out["verdict"]
    assert (v["rule"], v["line"]) == ("replay-frozen-python-scalar", 5)
    assert [(a["rule"], a["line"]) for a in v["alternatives"]] == [("replay-differs-from-eager", 7)]


def test_wrong_code_is_not_a_guard_line(tmp_path: Path) -> None:
    """The rule id and its own code together name the rule; a mismatched pair names nothing of the guard's."""
    msg = CASES[0][2]
    lines = [*training(), f"denpex-guard: replay-freed-input (DPX300): {msg}"]
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = denpex("diagnose", str(log), "--format", "json")
    out = json.loads(r.stdout)
    assert "replay-freed-input" not in {f["rule"] for f in out["findings"]}


def test_folklore_phrase_alone_is_still_rebound_static_input(tmp_path: Path) -> None:
    lines = [*training(), "[rank1]: RuntimeError: CUDA graph replay detected invalidated memory buffer"]
    out = diagnose(tmp_path, lines)
    assert (out["verdict"]["rule"], out["verdict"]["line"], out["verdict"]["rank"]) == (
        "replay-rebound-static-input", 5, 1)


def _guard_job(tmp_path: Path, rule: str, code: str, message: str) -> str:
    job = tmp_path / "job.py"
    job.write_text(
        "import sys\n"
        "print('step 0 loss 2.3041')\n"
        f"print({f'denpex-guard: {rule} ({code}): {message}'!r}, file=sys.stderr)\n"
        "print('step 1 loss 2.2817')\n"
        "sys.exit(0)\n",
        encoding="utf-8",
    )
    return str(job)


def test_run_expect_absent_fails_when_the_guard_reports_it(tmp_path: Path) -> None:
    rule, code, message, _line = CASES[0]
    r = denpex("run", "--no-bundle", "--expect-absent", rule, "--", sys.executable,
               _guard_job(tmp_path, rule, code, message))
    err = r.stderr.decode()
    assert r.returncode != 0, err
    assert "exited 0, but a signature expected absent appeared" in err
    assert f"--expect-absent {rule}: its signature appeared (first at output line " in err
    assert "verified" not in err


def test_run_expect_absent_of_the_folklore_rule_ignores_a_freed_input_report(tmp_path: Path) -> None:
    """The freed-input message holds DPX300's folklore phrase; it is not a DPX300 report."""
    rule, code, message, _line = CASES[0]
    r = denpex("run", "--no-bundle", "--expect-absent", "replay-rebound-static-input", "--", sys.executable,
               _guard_job(tmp_path, rule, code, message))
    err = r.stderr.decode()
    assert r.returncode == 0, err
    assert "verified: the command succeeded and replay-rebound-static-input" in err
