"""The per-user cache of the parsed built-in rule book: same rules, refreshed when a file changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from denpex.rulebook import cache


def test_cached_value_is_reused_until_an_input_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "c"))
    src = tmp_path / "rule.yaml"
    src.write_text("one")
    builds: list[str] = []

    def build() -> str:
        builds.append(src.read_text())
        return src.read_text()

    assert cache.cached("t", [src], build) == "one"
    assert cache.cached("t", [src], build) == "one"
    assert builds == ["one"]  # the second call read the cache
    src.write_text("two, longer")  # size and mtime change: a new key
    assert cache.cached("t", [src], build) == "two, longer"
    assert builds == ["one", "two, longer"]
    assert len(list((tmp_path / "c").glob("t-*.pickle"))) == 1  # the stale entry is gone


def test_a_corrupt_or_unwritable_cache_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = tmp_path / "c"
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(where))
    src = tmp_path / "r.yaml"
    src.write_text("x")
    assert cache.cached("t", [src], lambda: 1) == 1
    for f in where.glob("t-*.pickle"):
        f.write_bytes(b"not a pickle")
    assert cache.cached("t", [src], lambda: 2) == 2
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(blocker / "sub"))  # cannot be created
    assert cache.cached("t", [src], lambda: 3) == 3
    monkeypatch.setenv("DENPEX_CACHE_DIR", "")  # off
    assert cache.cache_dir() is None
    assert cache.cached("t", [src], lambda: 4) == 4


def test_the_cached_rule_book_equals_the_parsed_one(tmp_path: Path) -> None:
    """Two fresh processes: the first parses and writes the cache, the second reads it back."""
    # the build's snapshot (denpex/_snapshot.pickle, present where the package was built or the developer ran
    # snapshot_build) answers before the per-user cache: set aside here, as in a checkout without one
    code = ("import pickle, sys; import denpex.snapshot as s; s.rulebook = lambda *a: None; "
            "from denpex.rulebook.loader import _builtin_rules, load_rule_file, "
            "rule_files, builtin_rules_dir; "
            "parsed = tuple(load_rule_file(p, validate=False) for p in rule_files(builtin_rules_dir())); "
            "got = _builtin_rules(); sys.exit(0 if got == parsed and len(got) > 50 else 1)")
    env = {**os.environ, "DENPEX_CACHE_DIR": str(tmp_path)}
    for _ in range(2):
        subprocess.run([sys.executable, "-c", code], env=env, check=True)
    assert len(list(tmp_path.glob("rulebook-*.pickle"))) == 1


def test_a_wrong_cached_prefilter_cover_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefilter's keys come from the cache only if they still cover every anchor."""
    import pickle

    from denpex.logs import matcher

    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path))
    anchors = (b"operation not permitted when stream is capturing", b"NCCL WARN ", b"SIGSEGV")
    good = matcher._cached_cover(anchors, 8)
    assert all(any(k in a for k in good) for a in anchors)
    (entry,) = tmp_path.glob("cover-keys-*.pickle")
    entry.write_bytes(pickle.dumps((b"zzzzzzzz",)))  # covers nothing
    assert matcher._cached_cover(anchors, 8) == good


def test_two_installs_keep_their_own_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two checkouts (or a checkout and a wheel) alternate without evicting each other."""
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "c"))
    a, b = tmp_path / "a" / "r.yaml", tmp_path / "b" / "r.yaml"
    for p in (a, b):
        p.parent.mkdir()
        p.write_text("same")
    builds: list[str] = []
    for _ in range(2):
        assert cache.cached("t", [a], lambda: builds.append("a") or "A") == "A"
        assert cache.cached("t", [b], lambda: builds.append("b") or "B") == "B"
    assert builds == ["a", "b"]
    assert len(list((tmp_path / "c").glob("t-*.pickle"))) == 2


def test_entries_of_many_installs_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path / "c"))
    last = None
    for i in range(cache.MAX_INSTALLS + 5):
        last = tmp_path / f"install{i}" / "r.yaml"
        last.parent.mkdir()
        last.write_text("x")
        assert cache.cached("t", [last], lambda i=i: i) == i  # type: ignore[misc]
    assert len(list((tmp_path / "c").glob("t-*.pickle"))) == cache.MAX_INSTALLS
    assert last is not None
    assert cache.cached("t", [last], lambda: -1) == cache.MAX_INSTALLS + 4  # the newest is kept
