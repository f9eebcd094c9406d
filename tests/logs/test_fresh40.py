"""Issue 22's fresh logs (tests/data/fresh40, and the held-out tests/data/fresh60 collected after it): real
logs from public issue threads that gave no rule text.

Each log is diagnosed in-process as `denpex diagnose FILE` does (`diagnose_path`, the library call the
language server and `collect` use) and its answer is judged against gold.tsv with the bench's own
judge (bench/score_fresh_logs.py), so the gate and the measurement cannot drift apart: the line (and
rank, where the gold names one) that the verdict or the first-error answer gives must be the gold's;
a log whose initiating line is absent must not get a high-confidence verdict.

The logs Denpex misses today are strict xfails with the reason: one that starts passing fails the
test until its mark is removed, and a passing one that regresses fails it too.
"""

from __future__ import annotations

import pytest
from bench.score_fresh_logs import Gold, judge, read_gold

from denpex.logs.diagnose_file import diagnose_path
from tests.conftest import DATA

SETS = ("fresh40", "fresh60")
AT_LEAST = {"fresh40": 40, "fresh60": 20}  # logs each set must hold (issue 22: 40 fresh, then 20 more held out)
GOLDS = {name: read_gold(DATA / name) for name in SETS}

# set -> file -> why Denpex misses it (a strict xfail: one that starts passing fails until its mark goes)
MISSES: dict[str, dict[str, str]] = {
    "fresh40": {
    },
    "fresh60": {
        "33_cudasift_checkmsg_after_alloc_failures.log":
            "CudaSift prints 'Failed to allocate device data' (a bare printf, no shape of an error line) before the "
            "checkMsg CUDA error that the cuda-runtime-error rule names; both follow from the empty image",
    },
}


def _case(name: str, g: Gold) -> object:
    reason = MISSES[name].get(g.file)
    return pytest.param(name, g, id=f"{name}/{g.file}",
                        marks=pytest.mark.xfail(strict=True, reason=reason) if reason else ())


@pytest.mark.parametrize("name", SETS)
def test_every_log_has_one_gold_row_and_the_set_is_big_enough(name: str) -> None:
    folder, gold = DATA / name, GOLDS[name]
    names = [g.file for g in gold]
    assert sorted(p.name for p in folder.glob("*.log")) == sorted(names) and len(set(names)) == len(names)
    assert len(gold) >= AT_LEAST[name] and sum(1 for g in gold if g.line is None) >= 5
    assert set(MISSES[name]) <= set(names)
    for g in gold:  # the gold line is a line of the log, and the thread is a public GitHub thread
        assert g.url.startswith("https://github.com/") and ("/issues/" in g.url or "/pull/" in g.url), g
        if g.line is not None:
            n = len((folder / g.file).read_text(encoding="utf-8").splitlines())
            assert 1 <= g.line <= n, g


def test_no_thread_gives_logs_to_both_sets() -> None:
    urls = [{g.url for g in GOLDS[name]} for name in SETS]
    assert not set.intersection(*urls)


@pytest.mark.parametrize(("name", "gold"), [_case(n, g) for n in SETS for g in GOLDS[n]])
def test_answer_is_the_gold(name: str, gold: Gold) -> None:
    doc = diagnose_path(DATA / name / gold.file).to_json()
    j = judge(gold, doc)
    a = j.answer
    if gold.line is None:
        assert not j.confident_wrong, f"confident verdict on a log without its initiating line: {a}"
    else:
        assert j.line_ok, f"gold line {gold.line}, got {a}"
        assert j.rank_ok is not False, f"gold rank {gold.rank}, got {a}"
