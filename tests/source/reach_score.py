"""Scoring `denpex scan` against the `# ruleid:` / `# ok:` annotations of the reach workspaces
(tests/data/reach), shared by tests/source/test_reach.py and bench/bench_reach.py.

Annotations, semgrep-style, on the line they judge:
- `# ruleid: RULE`: a real hazard that RULE must flag on this line;
- `# ok: RULE`: a look-alike RULE must not flag;
- `# todoruleid: RULE`: a real hazard the analyser is not expected to reach (beyond any sane budget); a finding
  there counts as a bonus hit, its absence as nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REACH = REPO / "tests" / "data" / "reach"

_ANNOT = re.compile(r"#\s*(ruleid|ok|todoruleid):\s*([a-z0-9-]+)")
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".ruff_cache"}

Key = tuple[str, int]  # (path relative to the workspace root, 1-based line)


@dataclass
class LineNotes:
    ruleid: set[str] = field(default_factory=set)
    ok: set[str] = field(default_factory=set)
    todo: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    rule: str
    severity: str


@dataclass
class Score:
    name: str
    hazards: set[tuple[str, int, str]] = field(default_factory=set)  # annotated ruleid (path, line, rule)
    hits: set[tuple[str, int, str]] = field(default_factory=set)
    bonus: set[tuple[str, int, str]] = field(default_factory=set)  # todoruleid lines found anyway
    false_ok: list[Finding] = field(default_factory=list)  # a finding of RULE on a `# ok: RULE` line
    false_error: list[Finding] = field(default_factory=list)  # error-level, on a line annotated for no rule
    wrong_rule: list[Finding] = field(default_factory=list)  # on a hazard line, by a rule not annotated there
    other: list[Finding] = field(default_factory=list)  # warning/info on an unannotated line

    @property
    def missed(self) -> set[tuple[str, int, str]]:
        return self.hazards - self.hits

    @property
    def false_positives(self) -> list[Finding]:
        return self.false_ok + self.false_error


def python_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        out.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return out


def annotations_of_text(text: str) -> dict[int, LineNotes]:
    """1-based line -> its annotations."""
    notes: dict[int, LineNotes] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        for m in _ANNOT.finditer(line):
            n = notes.setdefault(i, LineNotes())
            {"ruleid": n.ruleid, "ok": n.ok, "todoruleid": n.todo}[m.group(1)].add(m.group(2))
    return notes


def annotations_in(root: Path) -> dict[Key, LineNotes]:
    out: dict[Key, LineNotes] = {}
    for f in python_files(root):
        rel = f.relative_to(root).as_posix()
        text = f.read_text(encoding="utf-8", errors="replace")
        for line, n in annotations_of_text(text).items():
            out[(rel, line)] = n
    return out


def scan(root: Path, *extra: str) -> list[Finding]:
    """`denpex scan . --format json` run in `root`, as a user runs it at a project root."""
    r = subprocess.run([sys.executable, "-m", "denpex", "scan", ".", "--format", "json", *extra], cwd=root,
                       capture_output=True, text=True, timeout=600, check=False)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"denpex scan {root} exited {r.returncode}: {r.stderr.strip()[-2000:]}")
    data = json.loads(r.stdout)
    return [Finding(Path(d["path"]).as_posix().removeprefix("./"), int(d["line"]), d["rule"], d["severity"])
            for d in data["diagnostics"]]


def score(name: str, notes: dict[Key, LineNotes], findings: list[Finding]) -> Score:
    s = Score(name)
    for (path, line), n in notes.items():
        s.hazards.update((path, line, r) for r in n.ruleid)
    for f in findings:
        n = notes.get((f.path, f.line), LineNotes())
        key = (f.path, f.line, f.rule)
        if f.rule in n.ruleid:
            s.hits.add(key)
        elif f.rule in n.todo:
            s.bonus.add(key)
        elif f.rule in n.ok:
            s.false_ok.append(f)
        elif n.ruleid or n.todo:
            s.wrong_rule.append(f)
        elif f.severity == "error":
            s.false_error.append(f)
        else:
            s.other.append(f)
    return s


def score_dir(root: Path, name: str | None = None) -> Score:
    return score(name or root.name, annotations_in(root), scan(root))


def workspaces() -> list[Path]:
    """Every reach workspace: one folder per resolution case, then the realistic programs."""
    return [d for group in ("cases", "programs") for d in sorted((REACH / group).iterdir()) if d.is_dir()]


def describe(f: Finding) -> str:
    return f"{f.path}:{f.line} {f.rule} [{f.severity}]"
