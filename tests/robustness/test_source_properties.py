"""Property tests for the source analyser and its fix edits, on random and mutated Python.

Inputs: the rule book's own source examples (invalid, valid, fixed) and the scenario files, mutated
(characters deleted, inserted and replaced, lines duplicated, dropped and re-indented, odd unicode,
NUL and lone carriage returns, huge lines, deep nesting) and spliced together; plus arbitrary text.
For every input, `analyse_source`:
  - never raises and returns within TIME_LIMIT_S (a SIGALRM bounds each call: a hang fails, not stalls);
  - offers only well-formed fixes: edits inside the text, ordered, non-overlapping;
  - each fix changes the text only inside its edits (checked against an independent splice), and leaves
    Python that parses whenever the input parsed;
  - a fix applied is not offered again at the same place: re-analysing the fixed text and applying the
    fixes of the same rule there changes nothing more (fix idempotence);
  - the analyser's incremental path (same path, text changed) gives the findings a fresh parse gives.
The API is reached only through `analyse` below (the analyser's details may still change).
"""

from __future__ import annotations

import ast
import signal
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count, pairwise
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from denpex.rulebook import load_rulebook
from tests.conftest import REPO

TIME_LIMIT_S = 10
T = TypeVar("T")
_fresh = count()


def analyse(text: str, path: str | None = None) -> list[Any]:
    """The one adapter to the analyser: findings for `text` (a fresh path unless one is given)."""
    from denpex.source import analyse_source

    return list(analyse_source(text, path or f"/fuzz/fresh_{next(_fresh)}.py"))


def apply(text: str, edits: Any) -> str:
    from denpex.source import apply_edits

    return str(apply_edits(text, list(edits)))


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def on_alarm(_sig: int, _frame: Any) -> None:
        raise TimeoutError(f"analyser call took over {seconds}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def bounded(fn: Callable[..., T], *args: Any) -> T:
    with time_limit(TIME_LIMIT_S):
        return fn(*args)


def parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


# --- inputs ------------------------------------------------------------------------------------------------

def _seeds() -> list[str]:
    out: list[str] = []
    for rule in load_rulebook().rules:
        if rule.source is not None:
            out += [t for t in (rule.source.invalid, rule.source.valid, rule.source.fixed) if t]
    for p in sorted((REPO / "tests" / "lsp").glob("workspace*/**/*.py")):
        out.append(p.read_text(encoding="utf-8"))
    assert len(out) > 20, len(out)
    return out


SEEDS = _seeds()
ODD = ["\u00e9", "\U0001F600", "\u200b", "\ufeff", "\u2028", "\u0301", "\u0394", "\r", "\r\n", "\t", "\x00",
       "\x0c", "\\", "'", '"', '"""', "(", ")", "[", "]", "{", "}", ":", "#", "@", "with ", "def ", " ", "\n",
       "torch.cuda.graph(g)", ".item()", "async ", "await ", "lambda: ", "if x:", "else:", "*", "**", "=", "."]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    if draw(st.booleans()):
        text = text + "\n" + draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.integers(0, 8))
        i = draw(st.integers(0, len(text)))
        if op == 0:  # delete a span
            text = text[:i] + text[i + draw(st.integers(1, 30)):]
        elif op == 1:  # insert odd characters
            text = text[:i] + "".join(draw(st.lists(st.sampled_from(ODD), min_size=1, max_size=4))) + text[i:]
        elif op == 2:  # insert arbitrary characters (surrogates excluded: not valid in a str from a file)
            text = text[:i] + draw(st.text(st.characters(exclude_categories=["Cs"]), max_size=8)) + text[i:]
        else:
            lines = text.split("\n")
            j = min(i, len(lines) - 1)
            if op == 3:
                lines.insert(j, lines[j])
            elif op == 4:
                del lines[j]
            elif op == 5:
                lines[j] = draw(st.sampled_from(["", "  ", "\t", "        "])) + lines[j].lstrip()
            elif op == 6:
                lines.insert(j, "x = '" + "a" * draw(st.integers(1_000, 200_000)) + "'")  # a huge line
            elif op == 7:
                depth = draw(st.integers(10, 400))
                lines.insert(j, "y = " + "(" * depth + "1" + ")" * depth)  # deep nesting
            else:
                lines.insert(j, "    " * draw(st.integers(0, 60)) + "pass")
            text = "\n".join(lines)
    return text


INPUTS = st.one_of(mutated(), st.text(max_size=400), st.sampled_from(SEEDS))


# --- checks ------------------------------------------------------------------------------------------------

def check_edits_well_formed(text: str, edits: Any) -> list[tuple[int, int, str]]:
    """Edits inside the text and non-overlapping; returns them as (start, end, new) offsets."""
    lines = text.split("\n")
    starts = [0]
    for ln in lines[:-1]:
        starts.append(starts[-1] + len(ln) + 1)
    spans = []
    for e in edits:
        assert 0 <= e.start_line < len(lines) and 0 <= e.end_line < len(lines), e
        assert 0 <= e.start_col <= len(lines[e.start_line]) and 0 <= e.end_col <= len(lines[e.end_line]), e
        a, b = starts[e.start_line] + e.start_col, starts[e.end_line] + e.end_col
        assert a <= b, e
        spans.append((a, b, e.new_text))
    spans.sort(key=lambda s: (s[0], s[1]))
    for x, y in pairwise(spans):
        assert x[1] <= y[0], ("overlapping edits", x, y)
    return spans


def splice(text: str, spans: list[tuple[int, int, str]]) -> str:
    out, pos = [], 0
    for a, b, new in spans:
        out += [text[pos:a], new]
        pos = b
    return "".join(out) + text[pos:]


def fixes_of(findings: list[Any]) -> Iterator[tuple[Any, Any]]:
    for f in findings:
        for fx in (*f.fixes, *([f.suppression] if f.suppression is not None else [])):
            if fx.edits:
                yield f, fx


def check_text(text: str) -> None:
    findings = bounded(analyse, text)
    src_parses = parses(text)
    for f, fx in fixes_of(findings):
        spans = check_edits_well_formed(text, fx.edits)
        out = apply(text, fx.edits)
        assert out == splice(text, spans), ("a fix changed text outside its edits", f.rule, fx.title)
        if src_parses:
            assert parses(out), ("a fix broke parsing", f.rule, fx.title, out)


SETTINGS = settings(max_examples=500, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.large_base_example,
                                           HealthCheck.data_too_large])


@SETTINGS
@given(INPUTS)
def test_analyser_never_raises_and_fixes_are_local(text: str) -> None:
    check_text(text)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_a_fix_applied_is_not_offered_again(text: str) -> None:
    """After a fix is applied, the re-analysed text does not offer that same fix with the same edits
    again (applying it a second time would change the text once more)."""
    for f, fx in list(fixes_of(bounded(analyse, text)))[:6]:
        once = apply(text, fx.edits)
        for g, gx in fixes_of(bounded(analyse, once)):
            if g.rule == f.rule and gx.title == fx.title and gx.edits == fx.edits:
                assert apply(once, gx.edits) == once, ("fix applies twice", f.rule, fx.title, fx.edits)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(SEEDS), st.lists(mutated(), min_size=1, max_size=4))
def test_incremental_analysis_matches_a_fresh_one(first: str, edits: list[str]) -> None:
    """The analyser caches per path and re-uses work across edits; the result must not depend on it."""
    path = "/fuzz/incremental.py"
    bounded(analyse, first, path)
    for text in edits:
        inc = bounded(analyse, text, path)
        fresh = bounded(analyse, text)

        def key(found: list[Any]) -> list[tuple[Any, ...]]:
            # a message may name a line of the file by the file's name ("captured at incremental.py:11"): the
            # fresh analysis runs under another name, which is all that may differ
            return [(f.rule, f.start_line, f.start_col, f.end_line, f.end_col,
                     f.message.replace(Path(f.path).name, "<this file>"), f.fixes) for f in found]

        assert key(inc) == key(fresh)
