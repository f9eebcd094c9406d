"""The cut-message table (logs/truncated.py) kept in the per-user cache: a table read back from it is the
table a fresh build gives, made of the book's own objects, and a change to what the table reads of the book
makes another entry."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from denpex.logs import truncated
from denpex.rulebook import RuleBook, load_rulebook


def _rows_of(table: truncated.Table) -> list[tuple[object, ...]]:
    return [(k.text, id(k.sig), id(k.entry), k.body, k.open_end, k.generic) for k in table.known]


def test_cached_table_equals_a_fresh_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_CACHE_DIR", str(tmp_path))
    book = load_rulebook()
    fresh = truncated.Table(truncated.known_messages(book))
    written = truncated._cached_table(book)  # builds and writes the entry
    assert list(tmp_path.glob("truncated-*.pickle")), "no cache entry was written"

    def no_build(_book: RuleBook) -> list[truncated.Row]:
        raise AssertionError("the table was rebuilt although the cache holds it")

    monkeypatch.setattr(truncated, "_rows", no_build)
    read = truncated._cached_table(book)
    assert len(fresh.known) > 500
    # the same messages, signatures and code entries (the book's own objects, not copies), in the same order
    assert _rows_of(read) == _rows_of(fresh) == _rows_of(written)
    assert read.texts == fresh.texts and read.longest == fresh.longest
    # and it answers a cut line as the fresh table does
    line = "RuntimeError: CUDA error: an illegal memory access was"
    assert [(h.signature.rule_id, h.start, h.end, h.entry) for h in read.complete(line, set())] == \
        [(h.signature.rule_id, h.start, h.end, h.entry) for h in fresh.complete(line, set())] != []


def test_the_key_follows_the_books_messages() -> None:
    book = load_rulebook()
    rule = next(r for r in book.rules if r.codes)
    entry = rule.codes[0]
    changed = dataclasses.replace(entry, messages=(*entry.messages, "a message no table had before"))
    other = RuleBook([dataclasses.replace(rule, codes=(changed, *rule.codes[1:])) if r is rule else r
                      for r in book.rules])
    assert truncated._book_key(other) != truncated._book_key(book)
    assert truncated._book_key(RuleBook(list(book.rules))) == truncated._book_key(book)


def test_cache_off_builds_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DENPEX_CACHE_DIR", "")
    book = load_rulebook()
    assert _rows_of(truncated._cached_table(book)) == _rows_of(truncated.Table(truncated.known_messages(book)))
