"""The guard's words: its rule codes are the rule book's, each finding is said once as one stderr line, and
under torchrun the line carries the rank. Needs no torch (report.py imports only the standard library)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from denpex.guard import GuardError
from denpex.guard.report import CODES, PREFIX, Finding, Reporter, describe, say
from denpex.rulebook import load_rulebook
from tests.conftest import REPO

GUARD = REPO / "server" / "denpex" / "guard"


def rule_files() -> dict[str, str]:
    """id -> code of every rule file under rules/."""
    out: dict[str, str] = {}
    for path in sorted((REPO / "rules").glob("*/*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        out[doc["id"]] = doc["code"]
    return out


def test_codes_agree_with_the_rule_files() -> None:
    files = rule_files()
    for rule, code in CODES.items():
        assert rule in files, f"{rule}: no rule file under rules/"
        assert files[rule] == code, f"{rule}: the guard says {code}, the rule book {files[rule]}"


def test_codes_agree_with_the_loaded_rule_book() -> None:
    book = load_rulebook()
    for rule, code in CODES.items():
        r = book.get(rule)
        assert r is not None and r.id == rule and r.code == code, rule
        assert book.get(code) is r


def test_codes_are_distinct() -> None:
    assert len(set(CODES.values())) == len(CODES)


def rules_the_guard_reports() -> set[str]:
    """The rule of every Finding(...) the guard's source builds with a literal rule id."""
    found: set[str] = set()
    for path in GUARD.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Finding"):
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value)
            elif isinstance(first, ast.Name):
                # `rule = "a" if ... else "b"; Finding(rule, ...)`: the literals assigned to that name
                values = [a.value for a in ast.walk(tree) if isinstance(a, ast.Assign)
                          and any(isinstance(t, ast.Name) and t.id == first.id for t in a.targets)]
                literals = {c.value for v in values for c in ast.walk(v)
                            if isinstance(c, ast.Constant) and isinstance(c.value, str)}
                assert literals, f"{path.name}:{node.lineno}: Finding({first.id}, ...) from no literal"
                found |= literals
            else:
                raise AssertionError(f"{path.name}:{node.lineno}: Finding with a rule that is not a literal")
    return found


def test_every_rule_the_guard_reports_has_a_code() -> None:
    reported = rules_the_guard_reports()
    assert reported, "no Finding(...) found in the guard's source"
    assert reported <= set(CODES), reported - set(CODES)


def test_finding_line() -> None:
    f = Finding("replay-freed-input", "float32[8] freed at a.py:3")
    assert f.line() == "replay-freed-input (DPX301): float32[8] freed at a.py:3"


def test_reporter_says_each_key_once(capsys: pytest.CaptureFixture[str]) -> None:
    rep = Reporter()
    f = Finding("replay-frozen-python-scalar", "'scale' was 2.0")
    assert rep.report(f, ("graph", "scale")) is True
    assert rep.report(f, ("graph", "scale")) is False
    assert rep.report(Finding("replay-frozen-python-scalar", "'lr' was 0.1"), ("graph", "lr")) is True
    err = capsys.readouterr().err
    assert err == (f"{PREFIX}: replay-frozen-python-scalar (DPX303): 'scale' was 2.0\n"
                   f"{PREFIX}: replay-frozen-python-scalar (DPX303): 'lr' was 0.1\n")
    assert [x.message for x in rep.findings] == ["'scale' was 2.0", "'lr' was 0.1"]


def test_refuse_says_it_then_raises_the_same_line(capsys: pytest.CaptureFixture[str]) -> None:
    rep = Reporter()
    f = Finding("replay-freed-input", "gone")
    for _ in range(2):
        with pytest.raises(GuardError) as info:
            rep.refuse(f, "k")
        assert str(info.value) == "replay-freed-input (DPX301): gone"
    assert capsys.readouterr().err == "denpex-guard: replay-freed-input (DPX301): gone\n"
    assert GuardError.__module__ == "denpex.guard" and issubclass(GuardError, RuntimeError)


@pytest.mark.parametrize(("rank", "world", "prefix"), [
    (None, None, ""), ("3", "8", "[rank3]: "), ("0", "1", ""), ("2", None, "")])
def test_say_tags_the_rank_under_torchrun(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                          rank: str | None, world: str | None, prefix: str) -> None:
    for key, value in (("RANK", rank), ("WORLD_SIZE", world)):
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    say("off: nothing is checked")
    assert capsys.readouterr().err == f"{prefix}denpex-guard: off: nothing is checked\n"


def test_say_survives_a_closed_stderr(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stream = (tmp_path / "err").open("w")
    stream.close()
    monkeypatch.setattr("sys.stderr", stream)
    say("still running")  # no exception


def test_describe() -> None:
    assert describe((8, 256), "torch.float32") == "float32[8, 256]"
    assert describe((), "torch.int64") == "int64[]"
