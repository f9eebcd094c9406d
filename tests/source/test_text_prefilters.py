"""The whole-workspace text searches take a cheaper path (a substring test before the regex, a literal
search with the character before tested apart): the answers must be the regexes' own."""

from __future__ import annotations

import random
import re
from types import SimpleNamespace
from typing import Any

from denpex.source.resolve.workspace import Workspace, _spells_call, _spells_word
from denpex.source.rules import _frozen
from denpex.source.rules._frozen import files_with

WORDS = ["step", "steps", "_step", "step_", "replay", "g", "forward", "x.step", "run"]
GLUE = ["(", "(", " (", "\n(", " ", "  ", "\n", "(", ")", ".", "=", "+=", "==", "@", "é", "_", "1", "\t", ", ", "def ", "self."]


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(WORDS) if rng.random() < 0.5 else rng.choice(GLUE) for _ in range(n))


def test_spells_call_is_the_lookbehind_pattern() -> None:
    rng = random.Random(3)
    checked = found = 0
    for _ in range(4000):
        text = _text(rng, rng.randint(0, 30))
        word = rng.choice(["step", "g", "run", "steps"])
        want = re.search(rf"(?<!\w){re.escape(word)}\s*\(", text) is not None
        assert _spells_call(text, word) == want, (text, word)
        checked += 1
        found += want
    assert checked == 4000 and 200 < found < 3800  # both answers were tested


def test_spells_word_is_the_lookbehind_pattern() -> None:
    rng = random.Random(4)
    checked = found = 0
    for _ in range(4000):
        text = _text(rng, rng.randint(0, 30))
        word = rng.choice(["step", "g", "run", "steps", "_step"])
        want = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) is not None
        assert _spells_word(text, word) == want, (text, word)
        checked += 1
        found += want
    assert checked == 4000 and 200 < found < 3800  # both answers were tested


def _resolver(ws: Workspace) -> Any:
    return SimpleNamespace(lookup_module=ws.lookup_module)


def test_needles_change_no_answer_of_files_with() -> None:
    rng = random.Random(5)
    ws = Workspace()
    for i in range(60):
        ws.add_text(f"/w/m{i}.py", _text(rng, 40))
    resolver = _resolver(ws)
    cases: list[tuple[str, tuple[str, ...]]] = []
    for w in ("step", "g", "run"):
        cases += [
            (rf"\.{re.escape(w)}\s*(?:[-+*/|&]|//)?=(?!=)", ("." + w,)),
            (rf"\.{re.escape(w)}\s*\(", ("." + w,)),
            (rf"(?<!\w){re.escape(w)}(?!\w)", (w,)),
            (rf"\b{re.escape(w)}\s*\(", (w,)),
            (rf"(?<![\w.]){re.escape(w)}(?!\w)", (w,)),
        ]
    cases.append((r"@\s*(?:\w+\.)*(?:run|step)\b", ("run", "step")))
    cases.append((r"\.replay\(", (".replay(",)))
    cases.append((r"cuda\.graph\(|capture_begin\(|make_graphed_callables\(", ("cuda.graph(", "capture_begin(", "make_graphed_callables(")))
    sizes = set()
    for pattern, needles in cases:
        plain = [ix.path for ix in files_with(resolver, pattern)]
        ws.generation += 1  # a fresh answer, not the one remembered for this generation
        _frozen._MATCHES.clear()  # nor each file's remembered match
        fast = [ix.path for ix in files_with(resolver, pattern, needles=needles)]
        assert fast == plain, pattern
        sizes.add(len(plain))
    assert len(sizes) > 3 and max(sizes) > 0  # the cases are not all empty


def test_attribute_write_files_are_what_the_pattern_finds() -> None:
    """One read of every text for all attributes gives, per attribute, the files of its own pattern, in order;
    an edited file is read again and no other answer changes."""
    rng = random.Random(6)
    glue = [*GLUE, "= 1", " += 2", " //= 3", " == 4", " =="]
    ws = Workspace()
    for i in range(80):
        ws.add_text(f"/w/m{i}.py", "".join(rng.choice(WORDS) if rng.random() < 0.5 else rng.choice(glue)
                                           for _ in range(40)))
    resolver = _resolver(ws)

    def both(attr: str) -> tuple[list[str], list[str]]:
        plain = [ix.path for ix in files_with(resolver, rf"\.{re.escape(attr)}\s*(?:[-+*/|&]|//)?=(?!=)")]
        return [ix.path for ix in _frozen._attribute_write_files(resolver, attr)], plain

    sizes = set()
    for _round in range(2):
        for attr in ("step", "steps", "_step", "g", "run", "replay", "forward", "absent"):
            fast, plain = both(attr)
            assert fast == plain, attr
            sizes.add(len(plain))
        ws.add_text("/w/m3.py", "self.absent = 1\nx.run += 1\n")  # an edit: only this file is read again
    assert len(sizes) >= 3 and 0 in sizes and max(sizes) > 5, sizes
