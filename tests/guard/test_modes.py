"""The guard's modes (DENPEX_GUARD, enable(mode=...), `denpex run --guard=MODE`): what each word sets, and
a one-line reason for a word that is not one. Needs no torch."""

from __future__ import annotations

import pytest

from denpex.guard import Options, parse_mode


@pytest.mark.parametrize(("text", "want"), [
    ("", Options(refuse=True, compare=0, trace=True)),
    ("on", Options()),
    ("1", Options()),
    ("true", Options()),
    ("refuse", Options()),
    ("warn", Options(refuse=False)),
    ("notrace", Options(trace=False)),
    ("compare", Options(compare=3)),
    ("compare:5", Options(compare=5)),
    ("warn,compare:2", Options(refuse=False, compare=2)),
    (" warn , notrace ", Options(refuse=False, trace=False)),
    ("warn,refuse", Options(refuse=True)),  # the last word of the two wins
    ("refuse,warn", Options(refuse=False)),
    ("warn,on", Options(refuse=False)),  # `on` turns the guard on, it does not undo warn
    ("compare:2,compare", Options(compare=3)),
])
def test_parse_mode(text: str, want: Options) -> None:
    assert parse_mode(text) == want


@pytest.mark.parametrize(("text", "reason"), [
    ("bogus", "unknown guard mode 'bogus' (use refuse, warn, compare[:N], notrace)"),
    ("warn,strict", "unknown guard mode 'strict' (use refuse, warn, compare[:N], notrace)"),
    ("Warn", "unknown guard mode 'Warn' (use refuse, warn, compare[:N], notrace)"),
    ("compare:0", "compare:0: the number of compared calls must be a positive integer"),
    ("compare:-1", "compare:-1: the number of compared calls must be a positive integer"),
    ("compare:x", "compare:x: the number of compared calls must be a positive integer"),
    ("compare:2.5", "compare:2.5: the number of compared calls must be a positive integer"),
    ("comparex", "unknown guard mode 'comparex' (use refuse, warn, compare[:N], notrace)"),
])
def test_parse_mode_errors_are_one_line(text: str, reason: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_mode(text)
    assert str(info.value) == reason
    assert "\n" not in str(info.value)
