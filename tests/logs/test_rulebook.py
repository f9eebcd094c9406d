"""The rule book as a whole: schema-valid, unique ids, safe patterns, shipped in the wheel."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from denpex.rulebook import builtin_rules_dir, load_rulebook
from denpex.rulebook.safety import problems


def test_rule_book_loads_with_unique_ids_and_codes() -> None:
    book = load_rulebook()
    assert len(book.rules) >= 60
    assert len({r.id for r in book.rules}) == len(book.rules)
    assert len({r.code for r in book.rules}) == len(book.rules)


def test_every_regex_in_the_book_is_backtracking_safe() -> None:
    bad = []
    for rule in load_rulebook().rules:
        for sig in rule.signatures:
            if sig.regex is not None and problems(sig.regex):
                bad.append(f"{rule.path}: {sig.regex}")
        for pat in (rule.refine_code, rule.refine_context):
            if pat is not None and problems(pat):
                bad.append(f"{rule.path}: refine {pat}")
    assert not bad, bad


def test_file_name_matches_rule_id() -> None:
    for rule in load_rulebook().rules:
        assert rule.path.endswith(f"/{rule.id}.yaml"), rule.path


def test_refine_parents_exist() -> None:
    book = load_rulebook()
    for rule in book.rules:
        for parent in rule.refine_parents:
            assert book.get(parent) is not None, f"{rule.path}: unknown parent {parent}"


def test_seed_signatures_are_recognised_and_explained() -> None:
    """Both product-note signatures are in the book; the folklore one says what really happens."""
    book = load_rulebook()
    literals = {s.literal for r in book.rules for s in r.signatures if s.literal}
    assert "operation not permitted when stream is capturing" in literals
    # the folklore phrase is a regex signature (it steps aside on denpex guard lines, whose own rule id
    # names them); its anchor is the phrase itself
    folk = [r for r in book.rules
            if any("CUDA graph replay detected invalidated memory buffer" in s.anchor for s in r.signatures)]
    assert [r.id for r in folk] == ["replay-rebound-static-input"] and all(r.folklore for r in folk)
    assert re.search(r"copy_", folk[0].fix)


def test_schema_ships_next_to_rules() -> None:
    assert (builtin_rules_dir() / "rule.schema.json").is_file()


def test_every_shipped_rule_file_matches_the_schema() -> None:
    """Start-up skips validating the shipped rules, so this test is their schema check."""
    from denpex.rulebook.loader import load_rule_file, rule_files

    for path in rule_files(builtin_rules_dir()):
        load_rule_file(path, validate=True)  # raises RuleBookError naming file and field


# --- issue 12: status-code tables, hints, graph relation ---------------------------------------------


def _rule_yaml(extra_log: str = "", extra: str = "") -> str:
    return (
        "id: my-table\ncode: DPX999\ntitle: A user table rule\nfamily: cuda-runtime\nseverity: error\n"
        "root_cause: A status code that the user's own library prints.\nfix: Fix the call.\nverify: rerun it\n"
        "checklist: [check it]\nreferences: [my header]\n" + extra +
        "log:\n  signatures:\n    - {role: initiating, regex: 'MYLIB_(?P<name>[A-Z_]{2,20})', anchor: 'MYLIB_'}\n"
        + extra_log +
        "  examples: {match: ['MYLIB_BROKEN'], no_match: ['MYLIB_FINE']}\n"
    )


def test_a_table_signature_needs_a_table(tmp_path: Path) -> None:
    from denpex.errors import RuleBookError
    from denpex.rulebook.loader import load_rule_file

    p = tmp_path / "my-table.yaml"
    p.write_text(_rule_yaml())
    with pytest.raises(RuleBookError, match=r"\(\?P<name>\.\.\.\) group but the rule has no log.codes table"):
        load_rule_file(p)


def test_a_user_table_rule_names_its_codes(tmp_path: Path) -> None:
    from denpex.logs import diagnose_text
    from denpex.rulebook import load_rulebook

    d = tmp_path / "rules"
    d.mkdir()
    (d / "my-table.yaml").write_text(_rule_yaml("  codes:\n    - {name: BROKEN, number: 7, meaning: It broke.}\n"))
    book = load_rulebook([d])
    rule = book.get("my-table")
    assert rule is not None and rule.graph_related == "yes" and not rule.generic  # defaults of older rule files
    v = diagnose_text("error: MYLIB_BROKEN at init", book).verdict
    assert v is not None and v.rule.id == "my-table" and v.finding.entry is not None
    assert v.finding.entry.label() == "BROKEN (7)"
    assert diagnose_text("error: MYLIB_FINE", book).verdict is None  # not in the table: no finding


def test_an_unsafe_hint_regex_is_rejected(tmp_path: Path) -> None:
    from denpex.errors import RuleBookError
    from denpex.rulebook.loader import load_rule_file

    p = tmp_path / "my-table.yaml"
    p.write_text(_rule_yaml("  codes: [{name: BROKEN}]\n", "hints:\n  - {regex: '(a+)+b', note: a note that is long}\n"))
    with pytest.raises(RuleBookError, match=r"hints\[0\]\.regex can backtrack"):
        load_rule_file(p)


def test_generic_families_are_marked_and_have_a_table_or_wrapper() -> None:
    book = load_rulebook()
    generic = [r for r in book.rules if r.generic]
    assert len(generic) >= 15
    for r in generic:
        assert r.graph_related in ("no", "depends"), r.path
        assert r.codes or any(s.wrapper for s in r.signatures) or r.hints or r.id in (
            "dist-work-none-wait", "cpp-terminate"), r.path


def test_every_rule_says_whether_it_is_graph_related() -> None:
    for r in load_rulebook().rules:
        assert r.graph_related in ("yes", "no", "depends"), r.path
