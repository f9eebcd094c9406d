"""Normalisation and rank attribution on synthetic multi-rank logs built here."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.logs import diagnose_text
from denpex.logs.attribution import attribute, split_glued
from denpex.logs.normalise import clean, segments

E900 = "torch.AcceleratorError: CUDA error: operation not permitted when stream is capturing"


def test_ansi_and_half_stripped_codes_are_removed() -> None:
    assert clean("\x1b[31mERROR\x1b[0m done\x1b]0;title\x07") == "ERROR done"
    assert clean("[36mINFO[0m ok") == "INFO ok"
    assert clean("text\r") == "text"


def test_cr_progress_frames_are_all_kept() -> None:
    segs = segments("epoch 1:  10%|#  \repoch 1:  20%|## \r" + E900)
    assert segs[-1] == E900 and len(segs) == 3


def test_glued_rank_prefix_is_split() -> None:
    pieces = [p for _o, p in split_glued("[rank1] warmup ok: 2.0[rank0] warmup ok: 2.0")]
    assert pieces == ["[rank1] warmup ok: 2.0", "[rank0] warmup ok: 2.0"]


def test_prefix_forms_and_their_evidence() -> None:
    cases = {
        "[default0]:[rank3]: boom": (3, 0),
        "[1,17]<stderr>: boom": (17, None),
        "(VllmWorker rank=3 pid=4242) boom": (3, None),
        "(Worker_TP1 pid=99) boom": (1, None),
        "[2025-01-01 12:00:00 TP5] boom": (5, None),
        "12: boom": (12, None),
        "[PG ID 0 PG GUID 0(default_pg) Rank 6] Watchdog caught": (6, None),
    }
    for line, (rank, local) in cases.items():
        a = attribute(line)
        assert (a.rank, a.local_rank) == (rank, local), line
        assert a.evidence, line
    nccl = attribute("node-01:189884:189890 [3] NCCL WARN Cuda failure 'x'")
    assert (nccl.node, nccl.process, nccl.device) == ("node-01", "189884", 3)
    ray = attribute("(RayWorkerWrapper pid=812, ip=10.1.2.3) boom")
    assert (ray.process, ray.node) == ("812", "10.1.2.3")


def _rank_log(failing: int, ranks: int = 8) -> str:
    lines: list[str] = []
    for step in range(50):
        for r in range(ranks):
            lines.append(f"\x1b[32m[default{r}]:[rank{r}]:\x1b[0m step {step} loss 0.{step:03d}")
        lines.append(f"train:  {step * 2}%|{'#' * (step // 5)}\rtrain: {step * 2 + 1}%|")
    lines += [
        f"[default{failing}]:[rank{failing}]: Traceback (most recent call last):",
        f'[default{failing}]:[rank{failing}]:   File "/workspace/train.py", line 40, in main',
        f"[default{failing}]:[rank{failing}]:     scale = y.sum().item()",
        f"[default{failing}]:[rank{failing}]: {E900}",
    ]
    for r in range(ranks):
        if r != failing:
            lines.append(
                f"[default{r}]:[rank{r}]:[E1130 00:29:59.1 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                "Timeout(ms)=30000) ran for 30080 milliseconds before timing out."
            )
    return "\n".join(lines) + "\n"


def test_first_failing_rank_wins_over_later_timeouts() -> None:
    text = _rank_log(failing=5)
    d = diagnose_text(text)
    assert d.verdict is not None
    assert d.verdict.finding.who.rank == 5
    assert d.verdict.finding.who.local_rank == 5
    assert text.split("\n")[d.verdict.finding.line - 1].endswith("stream is capturing")
    assert any("watchdog" in n.lower() or "nccl-watchdog" in n for n in d.verdict.notes)


def test_line_numbers_survive_crlf_and_cr_bars() -> None:
    text = "a\r\nb 10%\rb 20%\r\n" + E900 + "\r\n"
    d = diagnose_text(text)
    assert d.verdict is not None and d.verdict.finding.line == 3


def test_invalid_utf8_and_nul_bytes_do_not_shift_lines() -> None:
    import io

    from denpex.logs import diagnose_stream

    data = b"\xff\xfe garbage \x00\x00\nline two \xc3\x28\n" + E900.encode() + b"\n"
    d = diagnose_stream(io.BytesIO(data))
    assert d.verdict is not None and d.verdict.finding.line == 3


def test_only_collateral_timeouts_names_suspects_from_sequence_numbers() -> None:
    lines = []
    for r in range(4):
        lines.append(
            f"[rank{r}]:[E1130 00:29:59 ProcessGroupNCCL.cpp:1] [Rank {r}] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=167, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600050 milliseconds before timing out."
        )
    for r in (4, 5):
        lines.append(
            f"[rank{r}]:[E1130 00:30:01 ProcessGroupNCCL.cpp:2] [PG ID 0 PG GUID 0(default_pg) Rank {r}] Received a "
            "dump signal due to a collective timeout from rank 1 and we will try our best to dump the debug info. "
            "Last enqueued NCCL work: 166, last completed NCCL work: 166."
        )
    d = diagnose_text("\n".join(lines) + "\n")
    assert d.verdict is not None
    assert d.verdict.confidence == "low"
    assert d.verdict.suspects == [4, 5]
    assert "collateral" in " ".join(d.verdict.notes).lower()


def test_nothing_known() -> None:
    d = diagnose_text("hello\nworld\n")
    assert d.verdict is None and not d.findings


def _scan(stream: object) -> tuple[list[tuple[int, str, tuple[str, ...]]], tuple[int, int, bool], list[list[int]]]:
    from denpex.logs.diagnose import matcher_for
    from denpex.logs.scanner import ScanStats, Window, iter_line_hits

    stats = ScanStats()
    ctx: list[list[int]] = []

    def on_context(lh: object, window: Window, start: int) -> None:
        ctx.append([n for n, _t in window.lines_before(start, 3)])

    hits = [(lh.line, lh.text, tuple(h.signature.rule_id for h in lh.hits))
            for lh in iter_line_hits(stream, matcher_for(None), stats, on_context)]  # type: ignore[arg-type]
    return hits, (stats.bytes, stats.lines, stats.truncated_last_line), ctx


def test_file_and_pipe_scans_agree_across_chunk_edges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file re-reads a chunk's partial last line, a pipe carries it over: the hits, line numbers,
    context lines and counts are the same, with lines longer than a chunk and a truncated end."""
    import io

    from denpex.logs import scanner

    monkeypatch.setattr(scanner, "CHUNK", 4096)
    monkeypatch.setattr(scanner, "MAX_CARRY", 16384)
    lines = []
    for i in range(400):
        lines.append(f"[rank{i % 8}]: step {i} " + "x" * (i * 37 % 700))
        if i % 97 == 5:
            lines.append(f"[rank{i % 8}]: {E900}")
        if i == 200:
            lines.append("y" * 20000 + E900)  # longer than a chunk and than the carry limit
    data = ("\n".join(lines) + "\n" + "[rank1]: " + E900).encode()  # no newline at the end
    p = tmp_path / "log"
    p.write_bytes(data)

    class Pipe(io.RawIOBase):
        def __init__(self) -> None:
            self.b = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            return self.b.read(min(n, 3000) if n > 0 else n)  # short reads, as a pipe gives

    with open(p, "rb") as fh:
        from_file = _scan(fh)
    from_pipe = _scan(Pipe())
    assert from_file == from_pipe
    hits, (nbytes, nlines, truncated), _ctx = from_file
    assert nbytes == len(data) and nlines == data.count(b"\n") + 1 and truncated
    e900_lines = [n for n, _t, rules in hits if any("900" in r for r in rules)]
    expected = [i + 1 for i, t in enumerate(data.decode().split("\n")) if E900 in t]
    assert e900_lines == expected
