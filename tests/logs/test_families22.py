"""Issue 22's families as rules, through the CLI: each log of tests/data/families22 (gold.tsv: the rule, the
line and the status code its verdict must name, and where the excerpt comes from) diagnosed as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "families22"


def _gold() -> list[tuple[str, str, int, str]]:
    rows = []
    for line in (DATA / "gold.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, rule, lineno, code, _source = line.split("\t")
        rows.append((name, rule, int(lineno), code))
    return rows


GOLD = _gold()


def test_every_log_has_a_gold_row() -> None:
    assert sorted(p.name for p in DATA.glob("*.log")) == sorted(r[0] for r in GOLD)


@pytest.mark.parametrize("case", GOLD, ids=[r[0] for r in GOLD])
def test_cli_names_the_rule_line_and_code(case: tuple[str, str, int, str]) -> None:
    name, rule, lineno, code = case
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(DATA / name), "--format", "json"],
                       capture_output=True, timeout=120, check=False)
    assert r.returncode == 1, r.stderr
    verdict = json.loads(r.stdout)["verdict"]
    assert (verdict["rule"], verdict["line"]) == (rule, lineno)
    assert ((verdict.get("status_code") or {}).get("name") or "") == code


def test_custom_all_reduce_hint_names_the_file_line_and_the_workaround() -> None:
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(DATA / "vllm_custom_all_reduce_v1.log"),
                        "--format", "json"], capture_output=True, timeout=120, check=False)
    notes = json.loads(r.stdout)["verdict"]["notes"]
    assert any("custom_all_reduce.cuh:432" in n and "--disable-custom-all-reduce" in n for n in notes), notes
