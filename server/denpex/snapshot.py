"""What the package's YAML holds, parsed at build time: the built-in rule book (its Rule objects) and
the source analyser's entry-point presets (their data). A start with an empty per-user cache then
reads no YAML and imports neither PyYAML nor regex for them (about 0.2 s of CPU before the first
diagnostics of a small file).

hatch_build.py writes `_snapshot.pickle` into the wheel by running `python -m denpex.snapshot_build OUT`
against the source tree (an editable install gets it beside this module; git ignores it). Every entry
carries a digest of the content of what it was built from: the rule files and the rulebook modules
that build Rule objects, or the one preset file. An entry whose inputs changed since (an edited rule,
a new field in model.py) is not used: the caller parses the YAML as it would without a snapshot
(and the rule book then goes through the per-user cache, rulebook/cache.py). No snapshot at all (a
build without PyYAML) means the same.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from denpex.rulebook.model import Rule

PACKAGE = Path(__file__).resolve().parent
SNAPSHOT = PACKAGE / "_snapshot.pickle"
FORMAT = 2  # 2: the rule book's entry holds its rules pickled apart (unpickled only when current)
# the modules whose code decides what a rule file parses to (rulebook/cache.py keys on the same)
RULEBOOK_MODULES = ("model.py", "loader.py", "codes.py", "safety.py")
PRESETS = PACKAGE / "source" / "capture" / "presets"

_entries: dict[str, tuple[str, Any]] | None = None


def digest(files: Sequence[Path], root: Path) -> str:
    """Of the files' names (relative to root) and bytes, in order: two CRCs, not hashlib, whose import
    costs more than reading all the inputs."""
    a = b = 0
    top = str(root)
    top += "" if top.endswith(os.sep) else os.sep
    for f in files:
        path = str(f)
        # relative_to(root).as_posix(), without pathlib's cost per file (a start checks 122 files)
        rel = path[len(top):] if path.startswith(top) else f.relative_to(root).as_posix()
        name = (rel if os.sep == "/" else rel.replace(os.sep, "/")).encode() + b"\0"
        with open(path, "rb") as fh:
            data = fh.read()
        a = zlib.crc32(data, zlib.crc32(name, a))
        b = zlib.crc32(name + data[::-1], b)
    return f"{a:08x}{b:08x}-{len(files)}"


def _load() -> dict[str, tuple[str, Any]]:
    global _entries
    if _entries is None:
        _entries = {}
        try:
            import pickle

            with open(SNAPSHOT, "rb") as fh:
                data = pickle.load(fh)
            if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("entries"), dict):
                _entries = data["entries"]
        except Exception:  # missing, unreadable or of an older layout: parse as without it
            pass
    return _entries


def rulebook_digest(rules_dir: Path, files: Sequence[Path]) -> str:
    """Rule files named relative to their folder, then the modules by name: the same wherever installed."""
    a = digest(list(files), rules_dir)
    b = digest([PACKAGE / "rulebook" / m for m in RULEBOOK_MODULES], PACKAGE / "rulebook")
    return f"{a}/{b}"


def rulebook(rules_dir: Path, files: Sequence[Path]) -> tuple[Rule, ...] | None:
    """The built-in rules parsed from `files` (rule_files(rules_dir)), or None when the snapshot does
    not hold them as they are now."""
    entry = _load().get("rulebook")
    if entry is None or not isinstance(entry[1], bytes):
        return None
    try:
        if entry[0] != rulebook_digest(rules_dir, files):
            return None
    except (OSError, ValueError):
        return None
    import pickle

    # unpickled here, not with the file: only when current, and afresh for each call, so that the
    # rules' paths can be set on objects nobody else holds (dataclasses.replace on 118 rules cost 1 ms)
    pairs: list[tuple[str, Rule]] = pickle.loads(entry[1])
    top = str(rules_dir)
    top += "" if top.endswith(os.sep) else os.sep
    for rel, rule in pairs:
        # built elsewhere: each rule's path is where it lies in this install (str(rules_dir / rel))
        object.__setattr__(rule, "path", top + (rel if os.sep == "/" else rel.replace("/", os.sep)))
    return tuple(rule for _rel, rule in pairs)


def yaml_data(path: Path) -> Any:
    """The parsed content of one of the package's preset files, or None when the snapshot does not hold
    it as it is now (the caller parses it; a file holding only `null` is parsed again, to the same)."""
    try:
        rel = path.resolve().relative_to(PACKAGE).as_posix()
    except ValueError:
        return None  # not the package's file
    entry = _load().get(f"yaml:{rel}")
    if entry is None:
        return None
    try:
        if entry[0] != digest([path.resolve()], PACKAGE):
            return None
    except OSError:
        return None
    return entry[1]
