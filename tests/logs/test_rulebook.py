"""The rule book as a whole: schema-valid, unique ids, safe patterns, shipped in the wheel."""

from __future__ import annotations

import re

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
    folk = [r for r in book.rules
            if any(s.literal and "invalidated memory buffer" in s.literal for s in r.signatures)]
    assert folk and all(r.folklore for r in folk)
    assert re.search(r"copy_", folk[0].fix)


def test_schema_ships_next_to_rules() -> None:
    assert (builtin_rules_dir() / "rule.schema.json").is_file()


def test_every_shipped_rule_file_matches_the_schema() -> None:
    """Start-up skips validating the shipped rules, so this test is their schema check."""
    from denpex.rulebook.loader import load_rule_file, rule_files

    for path in rule_files(builtin_rules_dir()):
        load_rule_file(path, validate=True)  # raises RuleBookError naming file and field
