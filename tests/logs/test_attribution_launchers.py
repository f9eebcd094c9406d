"""Ranks from launcher prefixes that issue 22's held-out logs (tests/data/fresh60) carry: horovodrun's own
"[rank]<stderr>:", with its --timestamp-output date before it, next to Open MPI's "[job,rank]<stderr>:"."""

from __future__ import annotations

import pytest

from denpex.logs.attribution import attribute, strip_prefixes


@pytest.mark.parametrize(("line", "rank", "rest"), [
    ("Fri Sep 25 16:52:35 2020[3]<stderr>:2020-09-25 16:52:35.948682: F tensorflow/x.cc:34] boom", 3,
     "2020-09-25 16:52:35.948682: F tensorflow/x.cc:34] boom"),
    ("[2]<stdout>:step 3", 2, "step 3"),
    ("[1,17]<stderr>:boom", 17, "boom"),
])
def test_launcher_prefix_gives_the_rank(line: str, rank: int, rest: str) -> None:
    assert attribute(line).rank == rank
    assert strip_prefixes(line) == rest


def test_a_bracketed_number_elsewhere_is_no_prefix() -> None:
    assert attribute("loss [3]<- not a prefix").rank is None
    assert attribute("x [3]<stderr>: later on the line").rank is None
