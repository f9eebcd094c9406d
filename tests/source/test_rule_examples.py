"""Every rule with a source side carries its own examples (semgrep-style annotations, Fixit-style generation):
each `# ruleid:` line is flagged, each `# ok:` line is not, `fixed` is the invalid example after the first
fix of each finding, and applying a finding's fix once leaves nothing for it to do."""

from __future__ import annotations

import ast

import pytest

from denpex.rulebook import Rule, load_rulebook
from tests.source.helpers import check_examples

BOOK = load_rulebook()
SOURCE_RULES = sorted((r for r in BOOK.rules if r.source is not None), key=lambda r: r.code)


def test_there_are_source_rules() -> None:
    assert len(SOURCE_RULES) >= 25


@pytest.mark.parametrize("rule", SOURCE_RULES, ids=lambda r: f"{r.code}-{r.id}")
def test_rule_examples(rule: Rule) -> None:
    problems = check_examples(rule, BOOK)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("rule", SOURCE_RULES, ids=lambda r: f"{r.code}-{r.id}")
def test_examples_are_python(rule: Rule) -> None:
    assert rule.source is not None
    for text in (rule.source.invalid, rule.source.valid, rule.source.fixed):
        if text is not None:
            ast.parse(text)


@pytest.mark.parametrize("rule", SOURCE_RULES, ids=lambda r: f"{r.code}-{r.id}")
def test_hazards_are_unique_across_rules(rule: Rule) -> None:
    assert rule.source is not None
    for other in SOURCE_RULES:
        if other is not rule and other.source is not None:
            assert not set(rule.source.hazards) & set(other.source.hazards), (rule.id, other.id)
