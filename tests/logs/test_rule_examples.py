"""Every rule's own log examples, run through the real diagnosis engine (no per-rule tests)."""

from __future__ import annotations

import pytest

from denpex.logs import diagnose_text
from denpex.rulebook import Rule, load_rulebook

BOOK = load_rulebook()
LOG_RULES = [r for r in BOOK.rules if r.has_log_side]


def _named(text: str) -> set[str]:
    d = diagnose_text(text)
    names = {f.rule for f in d.findings}
    if d.verdict is not None:
        names.add(d.verdict.rule.id)
    return names


def _cases(kind: str) -> list[tuple[Rule, int, str]]:
    out = []
    for rule in LOG_RULES:
        examples = rule.log_match_examples if kind == "match" else rule.log_no_match_examples
        out.extend((rule, i, ex) for i, ex in enumerate(examples))
    return out


def _id(case: tuple[Rule, int, str]) -> str:
    return f"{case[0].id}[{case[1]}]"


@pytest.mark.parametrize("case", _cases("match"), ids=_id)
def test_positive_example_is_found(case: tuple[Rule, int, str]) -> None:
    rule, _i, text = case
    assert rule.id in _named(text), f"{rule.path}: example not recognised:\n{text}"


@pytest.mark.parametrize("case", _cases("no_match"), ids=_id)
def test_negative_example_is_not_found(case: tuple[Rule, int, str]) -> None:
    rule, _i, text = case
    assert rule.id not in _named(text), f"{rule.path}: near-miss example wrongly matched:\n{text}"


def test_every_signature_is_exercised_by_an_example() -> None:
    """A signature no example reaches is untested text; each needs a positive example."""
    from denpex.logs.matcher import Matcher

    matcher = Matcher(BOOK)
    missing = []
    for rule in LOG_RULES:
        seen = set()
        for ex in rule.log_match_examples:
            for line in ex.splitlines():
                seen |= {(h.signature.rule_id, h.signature.index) for h in matcher.match_text(line)}
        for sig in rule.signatures:
            if (rule.id, sig.index) not in seen:
                missing.append(f"{rule.path}: signature {sig.index} ({sig.literal or sig.regex!r})")
    assert not missing, "signatures without a positive example:\n" + "\n".join(missing)


def test_regex_anchor_is_inside_every_regex_match() -> None:
    """The prefilter only sees anchors: a regex match without its anchor would be missed."""
    import regex

    bad = []
    for rule in LOG_RULES:
        for sig in rule.signatures:
            if sig.regex is None:
                continue
            flags = regex.IGNORECASE if sig.ignore_case else 0
            for ex in rule.log_match_examples:
                for m in regex.finditer(sig.regex, ex, flags):
                    hay = m.group(0).lower() if sig.ignore_case else m.group(0)
                    needle = sig.anchor.lower() if sig.ignore_case else sig.anchor
                    if needle not in hay:
                        bad.append(f"{rule.path}: anchor {sig.anchor!r} not in match {m.group(0)!r}")
    assert not bad, "\n".join(bad)
