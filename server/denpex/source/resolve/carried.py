"""Resolver answers one Document carries across its keystrokes (Values.carried, engine/units.py RegionCache): a
parameter's values from its callers in other files, kept while asking them read nothing of the edited file."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from denpex.source.resolve.index import FileIndex
from denpex.source.resolve.value_types import Func, Inst, Seq, Super, Value


@dataclass(frozen=True, eq=False)
class Carried:
    """A parameter's values from its callers (Values.from_callers) that read nothing of the analysed file: the
    function's file index, the answer, its GUESS bits, the words its call sites were found by (an edit of the
    analysed file that spells one may add a call site: the answer is dropped, engine/units.py) and the files
    its values name (each must still be indexed by the same FileIndex)."""

    ix: FileIndex
    found: list[Value]
    guess: int
    words: frozenset[str]
    files: tuple[FileIndex, ...]


@dataclass
class CarriedAnswers:
    """What one Document carries across its keystrokes (Values.carried): the answers that read nothing of it, and
    the parameters whose answer did (asked the usual way from then on)."""

    answers: dict[tuple[int, int, str], Carried] = field(default_factory=dict)
    bound: set[tuple[int, int, str]] = field(default_factory=set)

    def drop_spelled(self, text: str) -> None:
        """Drop the answers whose call sites were found by a word that `text` (an edit's old and new text) spells:
        the edited file may now call that function."""
        gone = [k for k, c in self.answers.items() if any(w in text for w in c.words)]
        for k in gone:
            del self.answers[k]


def files_named(vals: Iterable[Value]) -> list[FileIndex]:
    """Every file index the values name, through containers, bound instances and super()."""
    out: dict[int, FileIndex] = {}
    stack = list(vals)
    while stack:
        v = stack.pop()
        if isinstance(v, Seq):
            stack.extend(v.elems)
            continue
        out[id(v.ix)] = v.ix
        if isinstance(v, Inst) and v.site_ix is not None:
            out[id(v.site_ix)] = v.site_ix
        elif isinstance(v, Func):
            if v.bound is not None:
                stack.append(v.bound)
            if v.partial_ix is not None:
                out[id(v.partial_ix)] = v.partial_ix
        elif isinstance(v, Super):
            stack.append(v.this)
    return list(out.values())
