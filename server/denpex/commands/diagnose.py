"""`denpex diagnose`: what failed first in a log, a job's log folder or many files, and what to do."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from denpex.errors import DenpexError
from denpex.logs.json_text import dumps_report

if TYPE_CHECKING:
    from denpex.logs.diagnose import Diagnosis
    from denpex.logs.layout import LogSource


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "diagnose",
        help="diagnose a log, a job's log folder, or many log files",
        description=(
            "Find the first CUDA-graph failure in a log, terminal output or traceback: the rule, "
            "the file and line, the rank/node/process, the cause, the fix and a verification command. "
            "A folder is read as a job's logs (torchrun --log-dir, Slurm per-task files, one file per "
            "pod or rank), its files scanned in parallel. --format json writes a summary that "
            "`denpex merge` combines with those of other machines. When no rule names a failure, the "
            "first error line found by its shape is shown (not a diagnosis). "
            "Exit 0: no known failure found (also when a first error line is shown); 1: a failure was "
            "diagnosed; 2: bad usage or unreadable input."
        ),
    )
    p.add_argument("files", nargs="*", default=["-"], metavar="FILE|DIR",
                   help="log files, log folders, denpex bundles, or '-' for standard input (default)")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.add_argument("--context", type=int, default=100, metavar="N",
                   help="lines kept before the initiating line (default 100)")
    p.add_argument("--rules", action="append", default=[], metavar="DIR",
                   help="also load the rule files in DIR (repeatable)")
    p.add_argument("--control", metavar="GOOD",
                   help="a healthy run of the same job: report the first line before the failure it lacks")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes for folders and big files (default: the usable cores)")
    p.add_argument("--node-rank", type=int, default=None, metavar="N",
                   help="torchrun --node_rank of these logs: local ranks become N*nproc_per_node+local")
    p.add_argument("--nproc-per-node", type=int, default=None, metavar="K",
                   help="torchrun --nproc_per_node of these logs (with --node-rank)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    # heavy imports here: `denpex --help` and other subcommands should not pay for them
    from denpex.logs.layout import discover
    from denpex.rulebook import load_rulebook

    if args.context < 0:
        raise DenpexError("--context must be 0 or more")
    if args.jobs is not None and args.jobs < 1:
        raise DenpexError("--jobs must be 1 or more")
    if (args.node_rank is None) != (args.nproc_per_node is None):
        raise DenpexError("--node-rank and --nproc-per-node go together")
    if args.rules:
        load_rulebook(args.rules)  # a broken rule folder is reported once, before any work
    inputs: list[str] = list(args.files)
    if inputs == ["-"]:
        return _stdin(args)
    if "-" in inputs:
        raise DenpexError("'-' (standard input) cannot be mixed with files")
    layout = discover(inputs)
    _apply_node_rank(layout.sources, args.node_rank, args.nproc_per_node)
    if len(layout.sources) == 1 and not layout.warnings:
        return _one_file(args, layout.sources[0])
    if args.control:
        raise DenpexError("--control compares one failing log with one healthy log; give one file")
    return _many(args, inputs, layout.sources, layout.warnings)


def _apply_node_rank(sources: list[LogSource], node_rank: int | None, nproc: int | None) -> None:
    if node_rank is None or nproc is None:
        return
    for s in sources:
        if s.rank is None and s.local_rank is not None:
            s.rank = node_rank * nproc + s.local_rank
            s.evidence.append(f"--node-rank {node_rank} --nproc-per-node {nproc}: global rank "
                              f"{node_rank} x {nproc} + {s.local_rank}")


def _stdin(args: argparse.Namespace) -> int:
    import tempfile

    from denpex.logs.diagnose import add_first_error, matcher_for, needs_first_error
    from denpex.logs.layout import LogSource
    from denpex.logs.scanner import iter_line_hits
    from denpex.logs.summary import FileCollector, diagnose_collector, map_local_rank, to_summary
    from denpex.rulebook import load_rulebook

    if args.control:
        raise DenpexError("--control needs the failing log as a file, not standard input")
    book = load_rulebook(args.rules) if args.rules else None
    matcher = matcher_for(book)
    c = FileCollector(matcher, args.context, None)
    # a copy of what was read, in memory up to 64 MiB: the first-error pass reads it again when no rule
    # finds an initiating failure (a pipe cannot be read twice)
    with tempfile.SpooledTemporaryFile(max_size=64 << 20) as copy:
        try:
            for _lh in iter_line_hits(_Tee(sys.stdin.buffer, copy), matcher, c.stats, c.on_hit):  # type: ignore[arg-type]
                pass
        except OSError as exc:
            raise DenpexError(f"<stdin>: read failed: {exc.strerror or exc}") from None
        d = diagnose_collector(c, args.context, "<stdin>", b"")
        if needs_first_error(d):
            copy.seek(0)
            add_first_error(d, copy, matcher)  # type: ignore[arg-type]
            map_local_rank(d, c.table, bytes(c.stats.head))
    src = LogSource("<stdin>", "<stdin>", "file")
    _emit_one(d, args, to_summary(src, d, c, None))
    return 1 if d.verdict is not None else 0


def _one_file(args: argparse.Namespace, src: LogSource) -> int:
    from denpex.logs.parallel import (
        BIG_FILE,
        current_book,
        default_jobs,
        init_worker,
        summarise_big,
    )
    from denpex.logs.summary import summarise

    show_progress = sys.stderr.isatty()
    jobs = default_jobs() if args.jobs is None else args.jobs
    init_worker(args.rules, args.context)
    book = current_book()
    try:
        big = src.kind != "error.json" and os.path.getsize(src.path) >= BIG_FILE and jobs > 1
    except OSError:
        big = False
    if show_progress:
        sys.stderr.write("denpex: scanning ...")
        sys.stderr.flush()
    if big:
        summary, d = summarise_big(src, args.rules, args.context, jobs, first_error=True)
    else:
        summary, d = summarise(src, book, args.context, first_error=True)
    if show_progress:
        sys.stderr.write("\r\x1b[K")
    if args.control and d.verdict is not None:
        from denpex.logs.control import first_divergence  # --control only

        d.verdict.first_divergence = first_divergence(src.path, args.control, d.verdict.finding.line)
    _emit_one(d, args, summary)
    return 1 if d.verdict is not None else 0


def _emit_one(d: Diagnosis, args: argparse.Namespace, summary: dict[str, Any]) -> None:
    from denpex.logs.merge import stamp_host

    if args.format == "json":
        # a copy with JSON's types (render_json's value), through the C encoder: render_json
        # indents, which only the pure-Python encoder does (2 ms of a big log's run)
        doc = json.loads(json.dumps(d.to_json(), ensure_ascii=False))
        if doc.get("verdict") is not None:
            doc["verdict"]["file"] = summary["source"]["display"]
        if doc.get("first_error") is not None:
            doc["first_error"]["file"] = summary["source"]["display"]
        stamp_host([summary])
        doc["files"] = [summary]
        sys.stdout.write(dumps_report(doc) + "\n")
    elif args.format == "markdown":
        from denpex.logs.render import render_markdown  # not on the JSON path (textwrap, report)

        sys.stdout.write(render_markdown(d))
    else:
        from denpex.logs.render import render_text

        colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
        sys.stdout.write(render_text(d, colour=colour))
    sys.stdout.flush()


def _many(args: argparse.Namespace, inputs: list[str], sources: list[LogSource], warnings: list[str]) -> int:
    from denpex.logs.merge import merge_summaries, stamp_host
    from denpex.logs.parallel import summarise_all

    summaries, not_read = summarise_all(sources, args.rules, args.context, args.jobs)
    if not summaries:
        raise DenpexError("no file could be read: " + "; ".join(not_read))
    _first_errors(summaries, sources, args)
    stamp_host(summaries)
    doc = merge_summaries(summaries, inputs, warnings + not_read)
    emit_doc(doc, args.format, args.color)
    return 1 if doc["verdict"] is not None else 0


def _first_errors(summaries: list[dict[str, Any]], sources: list[LogSource], args: argparse.Namespace) -> None:
    """When no file of the job holds an initiating failure a rule knows, each file's first error line
    (the merge orders them as it orders verdicts), read in parallel. A job with one costs nothing more."""
    if any(s.get("role") == "initiating" for s in summaries):
        return
    from denpex.logs.parallel import first_errors_all

    by_path = {src.path: src for src in sources}
    todo = [(s, by_path[s["source"]["path"]]) for s in summaries
            if s.get("first_error") is None and s["source"]["path"] in by_path]
    found = first_errors_all([src for _s, src in todo], args.rules, args.context, args.jobs)
    for (s, _src), fe in zip(todo, found, strict=True):
        s["first_error"] = fe


class _Tee:
    """A binary stream that keeps a copy of what is read from it."""

    def __init__(self, src: Any, copy: Any) -> None:
        self.src, self.copy = src, copy

    def read(self, n: int = -1) -> bytes:
        data: bytes = self.src.read(n)
        self.copy.write(data)
        return data

    def readinto(self, b: Any) -> int:
        n: int = self.src.readinto(b) or 0
        self.copy.write(memoryview(b)[:n])
        return n

    def seekable(self) -> bool:
        return False


def emit_doc(doc: dict[str, Any], fmt: str, color: str) -> None:
    from denpex.logs.report import render_doc_markdown, render_doc_text

    if fmt == "json":
        sys.stdout.write(dumps_report(doc) + "\n")
    elif fmt == "markdown":
        sys.stdout.write(render_doc_markdown(doc))
    else:
        colour = color == "always" or (color == "auto" and sys.stdout.isatty())
        sys.stdout.write(render_doc_text(doc, colour=colour))
    sys.stdout.flush()
