"""denpex.startcode's cache of re's compiled patterns: the same Pattern objects as re's own compile
(CPython's Pattern equality compares the flags, the pattern and the whole compiled code), from a fresh
cache and from its file; patterns re warns about, and invalid ones, behave as without the cache; a
one-shot command answers the same with and without its caches. Also rule_files' walk against the
pathlib expression it replaced."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from denpex import startcode
from denpex.rulebook.loader import rule_files

ROOT = Path(__file__).resolve().parent.parent
SMALL = ROOT / "tests" / "data" / "fresh40" / "02_vllm_watchdog_ima_rank0.log"

# a spread of what re compiles: groups (named, nested), flags given and inline, bytes, look-arounds,
# repeats up to re's MAXREPEAT, sets, backreferences, conditionals, Unicode (flags as int: re._compile
# hands them over so)
_GIVEN: list[tuple[str | bytes, int]] = [
    (r"", 0),
    (r"(?P<rank>\d+)\]:(?P<rest>.*)", 0),
    (r"\[(?:default|rank)(\d+)\]:\s*", re.IGNORECASE),
    (r"(?x) a  b # comment\n c", 0),
    (r"(?i)cuda error: (?P<msg>[^\n]+)", 0),
    (r"(?<=x)y(?!z)", re.MULTILINE | re.DOTALL),
    (r"a{2,}b{0,4294967294}c*?", 0),
    (r"(a)(b)?(?(2)c|d)\1", 0),
    (r"[^\W\d_]+ü€", re.UNICODE),
    (r"\bword\b", re.ASCII),
    (b"(?P<k>[a-z]+)=\\d+", 0),
    (b"\\w+", re.LOCALE),
    (r"^\s*File \"(?P<path>[^\"]+)\", line (?P<line>\d+)", re.MULTILINE),
]
PATTERNS: list[tuple[str | bytes, int]] = [(p, int(f)) for p, f in _GIVEN]


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[str | bytes, int], startcode.ReArgs]:
    from re import _compiler  # type: ignore[attr-defined]

    own = _compiler.compile if _compiler.compile is not startcode._re_compile else startcode._RE_COMPILE
    args: dict[tuple[str | bytes, int], startcode.ReArgs] = {}
    monkeypatch.setattr(startcode, "_re_args", args)
    monkeypatch.setattr(startcode, "_RE_COMPILE", own)
    return args


needs_versions = pytest.mark.skipif(sys.version_info[:2] not in startcode._RE_VERSIONS,
                                    reason="the cache follows re._compiler of 3.11-3.13")


@needs_versions
def test_cached_patterns_equal_re_own(fresh: dict[tuple[str | bytes, int], startcode.ReArgs]) -> None:
    own = startcode._RE_COMPILE
    for pattern, flags in PATTERNS:
        first = startcode._re_compile(pattern, flags)  # parsed here, kept
        assert (pattern, flags) in fresh
        again = startcode._re_compile(pattern, flags)  # from the cache
        mine = own(pattern, flags)
        for got in (first, again):
            assert got == mine, pattern  # flags, pattern and compiled code
            assert got.groupindex == mine.groupindex and got.groups == mine.groups
        assert again.groupindex is not first.groupindex or not first.groupindex
    text = "[rank12]: CUDA error: an illegal memory access\n  File \"/x/y.py\", line 7"
    got = startcode._re_compile(r"(?P<rank>\d+)\]:(?P<rest>.*)", 0).search(text)
    assert got is not None and got.group("rank") == "12" and got.groupdict()["rest"].startswith(" CUDA")


@needs_versions
def test_cache_file_round_trip(tmp_path: Path, fresh: dict[tuple[str | bytes, int], startcode.ReArgs],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    own = startcode._RE_COMPILE
    for pattern, flags in PATTERNS:
        startcode._re_compile(pattern, flags)
    path = tmp_path / "re-code.marshal"
    startcode._write(path, dict(fresh))
    back = startcode._read(path)
    assert isinstance(back, dict) and all(startcode._valid_re(k, v) for k, v in back.items())
    monkeypatch.setattr(startcode, "_re_args", back)
    for pattern, flags in PATTERNS:
        assert startcode._re_compile(pattern, flags) == own(pattern, flags)
    # a damaged file is not used
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    assert startcode._read(path) is None


@needs_versions
def test_warned_and_invalid_patterns_are_re_own(fresh: dict[tuple[str | bytes, int], startcode.ReArgs]) -> None:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        got = startcode._re_compile(r"[[a]", 0)  # re: "Possible nested set at position 1"
        assert got == startcode._RE_COMPILE(r"[[a]", 0)
    assert any(issubclass(w.category, FutureWarning) for w in said)
    assert (r"[[a]", 0) not in fresh  # not cached: the next run warns again
    with pytest.raises(re.error):
        startcode._re_compile(r"(unclosed", 0)
    assert (r"(unclosed", 0) not in fresh


def _diagnose(env: dict[str, str]) -> tuple[int, dict[str, object]]:
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(SMALL), "--format", "json"],
                       capture_output=True, env=env, cwd=ROOT, timeout=120, check=False)
    doc = json.loads(r.stdout)
    for f in doc.get("files", []):
        f.get("source", {}).pop("host", None)
    return r.returncode, doc


def test_one_shot_answers_the_same_with_its_caches(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DENPEX_CACHE_DIR"}
    off = _diagnose({**env, "DENPEX_CACHE_DIR": ""})
    cache = tmp_path / "cache"
    first = _diagnose({**env, "DENPEX_CACHE_DIR": str(cache)})
    if sys.version_info[:2] in startcode._RE_VERSIONS:
        assert list(cache.glob("re-code-*.marshal")), sorted(p.name for p in cache.iterdir())
    second = _diagnose({**env, "DENPEX_CACHE_DIR": str(cache)})  # from the caches
    assert off[0] == 1 and off[1].get("verdict") is not None
    assert first == off and second == off


def _rglob_rule_files(directory: Path) -> list[Path]:
    """What rule_files gave before its os.scandir walk."""
    return sorted(p for p in directory.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def test_rule_files_as_the_pathlib_walk(tmp_path: Path) -> None:
    root = tmp_path / "rules"
    for rel in ("a.yaml", "b.yml", "a-b.yaml", "a/b.yaml", "a/c/d.yml", ".hidden.yaml", ".yaml", "x.",
                "a..yaml", "note.txt", "z/y.YAML", "dir.yaml/inner.yaml"):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("id: x\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.yaml").write_text("id: o\n")
    (root / "linked").symlink_to(outside, target_is_directory=True)  # not entered, as rglob
    (root / "file-link.yaml").symlink_to(outside / "o.yaml")  # a link to a file counts
    (root / "dangling.yaml").symlink_to(tmp_path / "missing.yaml")
    assert rule_files(root) == _rglob_rule_files(root)
    assert "a-b.yaml" in [p.name for p in rule_files(root)]
    for shipped in (ROOT / "rules",):
        assert rule_files(shipped) == _rglob_rule_files(shipped)
