"""Which files a job's logs are, and who wrote each one, from the folder layout alone.

Layouts read (a path may hold several):

* torchrun ``--log-dir``: ``<log_dir>/<rdzv_run_id>_<random>/attempt_<N>/<local_rank>/{stdout,stderr}.log``
  and the ``error.json`` that ``@record`` writes next to them (PyTorch
  ``torch/distributed/elastic/multiprocessing/api.py``, ``DefaultLogsSpecs.reify``; the folder
  is the *local* rank; each node's agent makes its own ``<run_id>_<random>`` folder). Newer
  releases also write ``attempt_<N>/filtered_{stdout,stderr}.log``, a copy of the ranks chosen by
  ``--local-ranks-filter``: read only when there are no per-rank folders.
* Slurm per-task output (``srun --output=job-%j-%t.out``): ``%t`` is the task id, the global rank.
* one file per pod, worker or rank (``trainer-worker-3.log``, ``rank_12.log``, ``node07.out``).

Only the last attempt of a torchrun run is read: it is the one that ended the job. Earlier
attempts are reported in a warning so a reader knows they exist.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denpex.errors import DenpexError

LOG_SUFFIXES = {".log", ".out", ".err", ".txt", ".stdout", ".stderr", ""}
MAX_FILES = 100_000

_TORCHRUN = re.compile(r"(?:^|/)(?P<run>[^/]+)/attempt_(?P<attempt>\d+)/(?P<local>\d+)/(?P<name>stdout\.log|stderr\.log|error\.json)$")
_FILTERED = re.compile(r"(?:^|/)(?P<run>[^/]+)/attempt_(?P<attempt>\d+)/filtered_(?:stdout|stderr)\.log$")
# the last number in a file name, with the word in front of it
_NUMBERED = re.compile(r"^(?P<head>.*?)(?P<word>[A-Za-z]*)(?P<sep>[-_.]?)(?P<num>\d{1,6})(?P<tail>(?:\.[A-Za-z]{1,8})*)$")
_RANK_WORDS = {"rank", "task", "proc", "process", "worker", "gpu", "r", "t", ""}
_NODE_WORDS = {"node", "host", "pod", "master", "replica", "n"}


@dataclass
class LogSource:
    """One file of a job's logs and what its path says about its writer."""

    path: str  # as opened
    display: str  # as reported: relative to the folder given
    kind: str  # torchrun | slurm | per-rank | per-node | bundle | file | error.json
    rank: int | None = None
    local_rank: int | None = None
    node: str | None = None
    run: str | None = None  # torchrun's <run_id>_<random> folder: one per node's agent
    attempt: int | None = None
    stream: str | None = None
    evidence: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # asdict() recurses through deepcopy: 50 us a file, a tenth of a small file's summary
        return {"path": self.path, "display": self.display, "kind": self.kind, "rank": self.rank,
                "local_rank": self.local_rank, "node": self.node, "run": self.run,
                "attempt": self.attempt, "stream": self.stream, "evidence": list(self.evidence)}


@dataclass
class Layout:
    sources: list[LogSource]
    warnings: list[str] = field(default_factory=list)


def _walk(root: Path, warnings: list[str]) -> list[Path]:
    out: list[Path] = []
    todo = [root]
    while todo:
        base = todo.pop()
        try:
            with os.scandir(base) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            warnings.append(f"not read: {base}: {exc.strerror or exc}")
            continue
        names = {e.name for e in entries}
        if "manifest.json" in names and "output.log" in names:
            out.append(base / "output.log")  # a denpex bundle: its other files are no log
            continue
        subdirs: list[Path] = []
        for e in entries:
            if e.name.startswith("."):
                continue
            if e.is_dir(follow_symlinks=False):
                subdirs.append(base / e.name)
                continue
            if e.name != "error.json" and Path(e.name).suffix.lower() not in LOG_SUFFIXES:
                continue
            # a FIFO or device named like a log would block or never end; a dangling link is
            # reported when it is opened
            if e.is_symlink() or e.is_file(follow_symlinks=False):
                if e.is_symlink() and e.is_dir():
                    continue
                if e.is_symlink() and os.path.exists(e.path) and not e.is_file():
                    warnings.append(f"not read: {base / e.name}: not a regular file")
                    continue
                out.append(base / e.name)
            else:
                warnings.append(f"not read: {base / e.name}: not a regular file")
        todo.extend(reversed(subdirs))
        if len(out) > MAX_FILES:
            raise DenpexError(f"{root}: more than {MAX_FILES} files; give a narrower folder")
    return out


def discover(inputs: list[str]) -> Layout:
    """Every log file under the inputs (files or folders), with what their paths say.

    Files given one by one (the shell's expansion of ``job_777_*.out``) are classified together, and a
    numbered file is read as part of the series its folder holds: each gets the writer the folder would
    give it, whichever of the series' files were named."""
    layout = Layout([])
    given_files: list[Path] = []
    named: set[str] = set()
    for given in inputs:
        p = Path(given)
        if not p.exists():
            raise DenpexError(f"{given}: no such file or folder")
        if p.is_dir():
            files = _walk(p, layout.warnings)
            if not files:
                raise DenpexError(f"{given}: no log files in this folder")
            _classify(p, files, layout)
        elif p.as_posix() not in named:
            named.add(p.as_posix())
            given_files.append(p)
    if given_files:
        _classify(Path("."), given_files, layout, look_around=True)
    return layout


def source_of(path: Path, display: str | None = None) -> LogSource:
    """One file's LogSource as its folder's layout gives it (``diagnose_path``: the language server,
    ``denpex run``, ``denpex collect``), reported as ``display``."""
    layout = Layout([])
    _classify(path.parent, [path], layout, look_around=True)
    src = layout.sources[0] if layout.sources else LogSource(str(path), path.as_posix(), "file")
    if display is not None:
        src.display = display
    return src


def _classify(root: Path, files: list[Path], layout: Layout, look_around: bool = False) -> None:
    # paths are reported as given (folder + the rest), so one file reads the same whichever
    # folder or file list it was reached through (`denpex merge` relies on it)
    rel = {f: f.as_posix() for f in files}
    latest: dict[str, int] = {}  # run folder -> last attempt
    per_rank_runs: set[tuple[str, int]] = set()
    for f in files:
        m = _TORCHRUN.search(rel[f])
        if m:
            run_key = _run_key(rel[f], m)
            latest[run_key] = max(latest.get(run_key, -1), int(m.group("attempt")))
            per_rank_runs.add((run_key, int(m.group("attempt"))))
    skipped: dict[str, set[int]] = {}
    rest: list[Path] = []
    for f in files:
        r = rel[f]
        m = _TORCHRUN.search(r)
        fm = _FILTERED.search(r) if m is None else None
        if m is None and fm is None:
            rest.append(f)
            continue
        mm = m or fm
        assert mm is not None
        run_key = _run_key(r, mm)
        attempt = int(mm.group("attempt"))
        if run_key in latest and attempt < latest[run_key]:
            skipped.setdefault(run_key, set()).add(attempt)
            continue
        if fm is not None and (run_key, attempt) in per_rank_runs:
            continue  # a copy of per-rank files that are read anyway
        src = LogSource(str(f), r, "torchrun", run=run_key, attempt=attempt)
        if m is not None:
            src.local_rank = int(m.group("local"))
            src.stream = m.group("name").split(".")[0]
            if src.stream == "error":
                src.kind, src.stream = "error.json", None
            src.evidence.append(f"torchrun --log-dir folder attempt_{attempt}/{src.local_rank}/ (local rank)")
        # the agent's own folder names the writer's node: one <run_id>_<random> folder per node
        src.node = _node_label(r, mm)
        src.evidence.append(f"node: torchrun run folder {src.node}/ (one per node's agent)")
        layout.sources.append(src)
    for run_key, attempts in sorted(skipped.items()):
        layout.warnings.append(
            f"{run_key}: read attempt_{latest[run_key]} only (the last); earlier attempts "
            f"{', '.join(f'attempt_{a}' for a in sorted(attempts))} restarted after a failure of their own"
        )
    _classify_numbered(rest, rel, layout, look_around)


def _run_key(rel: str, m: re.Match[str]) -> str:
    return rel[: m.start("run") + len(m.group("run"))]


def _node_label(rel: str, m: re.Match[str]) -> str:
    """The run folder, with the folder above it (often the host name where logs were gathered)."""
    above = rel[: m.start("run")].rstrip("/").rsplit("/", 1)[-1]
    return f"{above}/{m.group('run')}" if above and above not in (".", "..") else m.group("run")


def _classify_numbered(files: list[Path], rel: dict[Path, str], layout: Layout, look_around: bool = False) -> None:
    """Files that differ only by a number (per task, rank, pod or node): the number says who. With
    look_around, a file named alone counts the files of its series in its folder."""
    groups: dict[tuple[str, str, str, str, str], list[tuple[Path, int]]] = {}
    lone: list[Path] = []
    for f in files:
        r = rel[f]
        parent, _, name = r.rpartition("/")
        m = _NUMBERED.match(name)
        if m is None:
            lone.append(f)
            continue
        key = (parent, m.group("head"), m.group("word"), m.group("sep"), m.group("tail"))
        groups.setdefault(key, []).append((f, int(m.group("num"))))
    for (_parent, head, word, sep, tail), members in groups.items():
        w = word.lower()
        slurm = "slurm" in head.lower()
        labelled = w in _RANK_WORDS - {"", "r", "t"} or w in _NODE_WORDS - {"n"} or (slurm and w == "")
        nums = [n for _f, n in members]
        known_word = w in _RANK_WORDS or w in _NODE_WORDS
        series = len(members)
        if look_around and known_word and series < 2 and not labelled:
            series += _siblings(members[0][0].parent, (head, word, sep, tail), members[0][1])
        if not known_word or (series < 2 and not labelled) or len(set(nums)) != len(nums):
            lone.extend(f for f, _n in members)
            continue
        template = f"{head}{word}{sep}<N>{tail}"
        slurm = slurm or (tail.lower() in (".out", ".err") and w == "")
        pod = w in ("master", "replica") or (w == "worker" and any(k[2].lower() == "master" for k in groups))
        for f, n in sorted(members, key=lambda x: x[1]):
            r = rel[f]
            if w in _NODE_WORDS or pod:
                src = LogSource(str(f), r, "per-node", node=Path(r).name.split(".")[0])
                src.evidence.append(f"node from the file name ({template}: one file per node or pod)")
            else:
                kind = "slurm" if slurm else "per-rank"
                src = LogSource(str(f), r, kind, rank=n)
                what = "Slurm task id %t" if slurm else "per-rank file"
                src.evidence.append(f"rank {n} from the file name ({template}: {what})")
            layout.sources.append(src)
    for f in sorted(lone):
        layout.sources.append(LogSource(str(f), rel[f], "file"))


def _siblings(folder: Path, key: tuple[str, str, str, str], num: int) -> int:
    """How many other files of `folder` share a numbered name's template (head, word, separator, tail)."""
    n = 0
    try:
        with os.scandir(folder if str(folder) else ".") as it:
            for e in it:
                m = _NUMBERED.match(e.name)
                if (m is not None and (m.group("head"), m.group("word"), m.group("sep"), m.group("tail")) == key
                        and int(m.group("num")) != num and e.is_file()):
                    n += 1
                    if n >= 1:
                        break
    except OSError:
        return 0
    return n


def read_error_json(path: str) -> tuple[str, int | None] | None:
    """The text of a torchrun error.json (`@record`): message and Python call stack, and its
    timestamp (seconds since the epoch); None when the file is not that shape."""
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(16 << 20).decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None
    msg = data.get("message") if isinstance(data, dict) else None
    if isinstance(msg, str):  # a child that failed before @record wrote its own shape
        return msg, None
    if not isinstance(msg, dict):
        return None
    extra = msg.get("extraInfo") if isinstance(msg.get("extraInfo"), dict) else {}
    stack = extra.get("py_callstack") if isinstance(extra, dict) else None
    text = stack if isinstance(stack, str) and stack.strip() else str(msg.get("message", ""))
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    try:
        epoch = int(str(stamp)) if stamp is not None else None
    except ValueError:
        epoch = None
    return text, epoch
