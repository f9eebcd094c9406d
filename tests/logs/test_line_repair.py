"""Lines that are not whole (issue 22, robust line reading): messages cut short, an exception's message on
the next line, wrapped Triton/NVRM lines and interleaved terminate output. tests/data/line_repair holds
real-shaped logs (gold.tsv: rule, line, confidence and repair of each verdict, and its source)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from denpex.logs import truncated
from denpex.logs.diagnose import diagnose_stream, diagnose_text, matcher_for
from denpex.logs.diagnose_file import diagnose_path
from denpex.logs.matcher import Hit
from denpex.logs.truncated import MIN_BODY, MIN_CUT, literal_head, table_for
from denpex.rulebook import load_rulebook
from denpex.rulebook.codes import CodeTable
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "line_repair"


def _gold() -> list[tuple[str, str, int, str, str]]:
    rows = []
    for line in (DATA / "gold.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, rule, lineno, confidence, repair, _source = line.split("\t")
        rows.append((name, rule, int(lineno), confidence, repair))
    return rows


GOLD = _gold()


def test_every_log_has_a_gold_row() -> None:
    assert sorted(p.name for p in DATA.glob("*.log")) == sorted(r[0] for r in GOLD)


@pytest.mark.parametrize("case", GOLD, ids=[r[0] for r in GOLD])
def test_verdict_rule_line_confidence(case: tuple[str, str, int, str, str]) -> None:
    name, rule, lineno, confidence, repair = case
    d = diagnose_path(DATA / name)
    assert d.verdict is not None
    v = d.verdict
    assert (v.rule.id, v.finding.line, v.confidence) == (rule, lineno, confidence)
    assert (v.finding.repair.kind if v.finding.repair is not None else "") == repair
    if repair in ("truncated", "ambiguous-cut", "interleaved"):
        assert v.confidence != "high"
        assert any("truncated" in n or "interleaved" in n for n in v.notes), v.notes


def test_cli_says_truncated_and_caps_confidence() -> None:
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(DATA / "truncated_eof.log"), "--format", "json"],
                       capture_output=True, timeout=120, check=False)
    assert r.returncode == 1, r.stderr
    v = json.loads(r.stdout)["verdict"]
    assert v["confidence"] == "medium"
    assert v["status_code"]["name"] == "cudaErrorIllegalAddress"
    assert any(n.startswith("Matched a truncated line") for n in v["notes"])
    assert v["rank"] == 1


# --- the table of known messages, from the rule book ---------------------------------------------


def _lcp(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_every_cuda_error_message_completes_past_its_shared_part_and_not_before() -> None:
    """For each cudaGetErrorString text behind 'CUDA error: ', a line cut one character past what it shares
    with any other message of the book's table names its code, and a cut inside the shared part names none."""
    book = load_rulebook()
    rule = book.get("cuda-runtime-error")
    assert rule is not None
    m = matcher_for(book)
    msgs = sorted({"CUDA error: " + t for e in rule.codes for t in e.messages})
    table = CodeTable.of(rule)
    by_text = {"CUDA error: " + t: table.lookup("message", t) for e in rule.codes for t in e.messages}
    checked = ambiguous = 0
    for full in msgs:
        entry = by_text[full]
        others = [o for o in msgs if o != full and by_text[o] is not entry]
        shared = max((_lcp(full, o) for o in others), default=0)
        cut = max(shared + 1, MIN_CUT, len("CUDA error: ") + MIN_BODY)
        while cut < len(full) and full[cut - 1].isspace():
            cut += 1  # a line's trailing blanks are no part of what it says
        if cut >= len(full) or any(o.startswith(full[:cut]) and len(o) < len(full) for o in others):
            continue  # no cut of this message is unambiguous (it is another message's start, or too short)
        if any(full[:cut].startswith(o) for o in others):
            continue  # the cut holds a whole shorter message ('operation not permitted o'): the table reads that
        line = "RuntimeError: " + full[:cut]
        hits = [h for h in m.match_text(line) if h.signature.rule_id == "cuda-runtime-error"]
        assert [h.entry for h in hits] == [entry], (line, hits)
        assert hits[0].repair is not None and hits[0].repair.kind == "truncated"
        checked += 1
        if shared + 1 > cut - 1 >= max(MIN_CUT, len("CUDA error: ") + MIN_BODY):
            short = "RuntimeError: " + full[: cut - 1]
            assert all(h.entry is not entry for h in m.match_text(short)), short
            ambiguous += 1
    assert checked > 100 and ambiguous > 10, (checked, ambiguous)


def test_rule_examples_match_as_before() -> None:
    """Whole lines are never repaired: every rule's own match examples match with no repair on their hits."""
    book = load_rulebook()
    m = matcher_for(book)
    for rule in book.rules:
        for ex in rule.log_match_examples:
            for line in ex.splitlines():
                for h in m.match_text(line):
                    if h.signature.rule_id == rule.id:
                        assert h.repair is None, (rule.id, line)


def test_table_is_derived_from_the_book_and_kept_with_it() -> None:
    book = load_rulebook()
    t = table_for(book)
    assert table_for(book) is t
    texts = set(t.texts)
    assert "CUDA error: an illegal memory access was encountered" in texts  # cuda-runtime-error's table
    assert "operation not permitted when stream is capturing" in texts  # cuda-900's literal
    assert "terminate called after throwing an instance of '" in texts  # cpp-terminate's regex head
    assert "NVRM: Xid (" not in texts  # a regex head too short to say anything


@pytest.mark.parametrize(("pattern", "head", "group"), [
    (r"CUDA error: (?P<message>[^\n]{2,200})", "CUDA error: ", "message"),
    (r"\b(?P<name>cudaError[A-Z][A-Za-z0-9]{1,60})\b", "", "name"),
    (r"NVRM: Xid \([^)\n]{1,40}\): (?P<number>\d{1,3})\b", "NVRM: Xid (", None),
    (r"Failed: (?:Cuda error )?[^\s']{1,300}:\d{1,6}", "Failed: ", None),
    (r"abc?d", "ab", None),
    (r"a|b", "", None),
])
def test_literal_head(pattern: str, head: str, group: str | None) -> None:
    assert literal_head(pattern) == (head, group)


def test_natural_continuation_is_no_interleaving() -> None:
    """'... exception: ' then 'CUDA error: an illegal ...' is one message: no other rule is read into the cut."""
    m = matcher_for(None)
    line = ("[rank0]:[E219 12:14:43.351647859 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 0] Process group "
            "watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered")
    hits = m.match_text(line)
    assert all(h.repair is None for h in hits)
    assert {h.signature.rule_id for h in hits} == {"cuda-runtime-error", "cuda-illegal-memory-access"}


def test_fragment_cut_by_another_message() -> None:
    m = matcher_for(None)
    hits = m.match_text("CUDA error: an illegal memory acCUDA error: operation not permitted when stream is capturing")
    kinds = {h.signature.rule_id: (h.repair.kind if h.repair else None) for h in hits}
    assert kinds == {"cuda-illegal-memory-access": "interleaved", "cuda-900-capture-unsupported": None}


def test_too_short_a_cut_says_nothing() -> None:
    m = matcher_for(None)
    for line in ("RuntimeError: CUDA error: an", "RuntimeError: CUDA error: invalid", "RuntimeError: CUDA error: "):
        assert m.match_text(line) == [], line


def test_lines_without_a_rule_anchor_cost_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = truncated.Table.complete

    def spy(self: truncated.Table, text: str, already: set[tuple[str, int]]) -> list[Hit]:
        calls.append(text)
        got: list[Hit] = real(self, text, already)
        return got

    monkeypatch.setattr(truncated.Table, "complete", spy)
    benign = "".join(f"step {i} loss 0.25 lr 3e-4 tokens/s 81234\n" for i in range(2000))
    frames = 'Traceback (most recent call last):\n  File "/w/train.py", line 9, in <module>\n    main()\n' * 50
    d = diagnose_text(benign + frames + "RuntimeError: CUDA error: an illegal memory access was\n")
    assert d.verdict is not None and d.verdict.rule.id == "cuda-illegal-memory-access"
    assert calls == ["RuntimeError: CUDA error: an illegal memory access was"]


# --- joins -------------------------------------------------------------------------------------------


def test_next_line_message_reports_the_exception_line_with_its_frames() -> None:
    d = diagnose_path(DATA / "next_line_message.log")
    v = d.verdict
    assert v is not None
    assert v.finding.text == "[rank0]:RuntimeError: CUDA error: an illegal memory access was encountered"
    assert v.context[-1][0] == v.finding.line - 1  # the context ends right above the exception line
    assert [f.function for f in v.frames][-1] == "synchronize"
    assert v.finding.who.rank == 0


@pytest.mark.parametrize("header", ["RuntimeError:", "torch.AcceleratorError: ", "[rank2]:RuntimeError: "])
def test_bare_exception_header_of_any_class(header: str) -> None:
    text = f"step 3\n{header}\nCUDA error: device-side assert triggered\n"
    d = diagnose_text(text)
    assert d.verdict is not None
    assert (d.verdict.rule.id, d.verdict.finding.line) == ("cuda-device-side-assert", 2)


def test_header_of_another_rank_is_not_joined() -> None:
    d = diagnose_text("[rank1]:RuntimeError: \n[rank0]:CUDA error: device-side assert triggered\n")
    assert d.verdict is not None and d.verdict.finding.line == 2


def test_triton_assert_wrapped_names_the_size_hint() -> None:
    d = diagnose_path(DATA / "triton_assert_wrapped.log")
    v = d.verdict
    assert v is not None
    assert "Assertion `index out of bounds: 0 <= tmp4 < 50257` failed." in v.finding.text
    assert any("50257" in n for n in v.notes), v.notes
    assert any(f.rule == "cuda-device-side-assert" and f.count == 2 for f in d.findings)


def test_nvrm_wrapped_names_the_xid() -> None:
    d = diagnose_path(DATA / "nvrm_xid_wrapped.log")
    v = d.verdict
    assert v is not None and v.finding.entry is not None
    assert v.finding.entry.number == 79


def test_a_wrap_is_not_joined_where_each_line_matches_alone() -> None:
    """Two whole lines stay two findings on their own lines."""
    text = ("RuntimeError: CUDA error: device-side assert triggered\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    d = diagnose_text(text)
    assert {(f.rule, f.line) for f in d.findings if f.role == "initiating"} >= {
        ("cuda-device-side-assert", 1), ("cuda-illegal-memory-access", 2)}
    assert all(f.repair is None for f in d.findings)


# --- interleaved terminate output ----------------------------------------------------------------------


def test_interleaved_terminates_of_a_watchdog_timeout_are_collateral() -> None:
    """Two ranks' 'terminate called ... c10::DistBackendError' pieces, run together on one line, are the NCCL
    teardown each rank prints, not a C++ crash of their own: the log holds only collateral."""
    for path in (DATA / "terminate_interleaved_deepep.log",
                 REPO / "tests" / "data" / "fresh40" / "03_openr1_interleaved_watchdog_timeout.log"):
        d = diagnose_path(path)
        assert d.verdict is not None and d.verdict.confidence == "low", path
        assert d.verdict.finding.role == "collateral"
        assert not any(f.rule == "cpp-terminate" for f in d.findings), path


def test_interleaved_terminate_is_named_when_its_message_is_not_known() -> None:
    text = ("terminate called after throwing an instance of 'terminate called after throwing an instance of "
            "'my::ErrorTypemy::ErrorType'\n'\n  what():    what():  something only my library says\n")
    d = diagnose_stream(io.BytesIO(text.encode()))
    v = d.verdict
    assert v is not None and v.rule.id == "cpp-terminate" and v.finding.line == 1
    assert v.confidence == "medium"
    assert any("interleaved" in n for n in v.notes)


def test_a_folder_of_rank_files_reads_repaired_lines(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "rank0.log").write_bytes((DATA / "next_line_message.log").read_bytes())
    (folder / "rank1.log").write_bytes((DATA / "truncated_eof.log").read_bytes())
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(folder), "--format", "json"],
                       capture_output=True, timeout=120, check=False)
    assert r.returncode == 1, r.stderr
    v = json.loads(r.stdout)["verdict"]
    assert (v["rule"], v["line"], v["rank"]) == ("cuda-illegal-memory-access", 11, 0)
    assert v["text"].endswith("RuntimeError: CUDA error: an illegal memory access was encountered")
