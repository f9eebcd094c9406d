"""One file's summary: its own verdict plus the facts a job-wide decision needs.

A summary is plain JSON (``denpex diagnose --format json`` carries one per file under
``files``), so the summaries of files scanned on different machines can be merged later
(``denpex merge``) with the same decision as one ``denpex diagnose`` over all the files.

A big file is cut into byte ranges at line ends and the ranges are scanned in parallel; each
range starts its context window with the bytes before it, and its counts are added in order,
so the result is the one of a single pass.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from denpex.errors import DenpexError
from denpex.logs.attribution import Attribution
from denpex.logs.bounded import Bounded
from denpex.logs.diagnose import (
    Diagnosis,
    _Collector,
    _decide,
    add_first_error,
    matcher_for,
    needs_first_error,
    set_first_error,
)
from denpex.logs.layout import LogSource, read_error_json
from denpex.logs.matcher import Matcher
from denpex.logs.ranks import (
    Launch,
    TableEntry,
    choose_suspect,
    fill,
    global_from_table,
    launch_facts,
    table_entry,
    writer_name,
)
from denpex.logs.scanner import HEAD, LineHit, ScanStats, Window, iter_line_hits, open_log
from denpex.logs.timestamps import last_stamp
from denpex.rulebook import RuleBook

SUMMARY = "denpex.file-summary/1"
_RANK_PREFIX = re.compile(rb"^\[rank(\d{1,6})\]:", re.M)
LOOKBACK = 1 << 20  # bytes before a range that its context window starts with
MIN_RANGE = 48 << 20  # smaller ranges cost more in starting a worker than they save
MAX_FINDINGS = 400  # per file in a summary; the first ones by line
COLLATERAL_CONTEXT = 20  # lines kept before a first collateral or launcher report


class FileCollector(_Collector):
    """The diagnoser's collector, completing each line's writer from the file's path, and
    keeping the writer-level facts (watchdog SeqNum, last enqueued work, failure table)."""

    def __init__(self, matcher: Matcher, context_n: int, base: Attribution | None) -> None:
        super().__init__(matcher, context_n)
        self.base = base
        self.table: list[TableEntry] = []
        self.line_ranks: Counter[int] = Counter()  # [rankN]: prefixes in this file
        self.writer_timeout: dict[str, int] = {}
        self.writer_enqueued: dict[str, int] = {}
        self.stats = ScanStats()

    def lookback(self, lh: LineHit) -> int:
        # the context of a line with no initiating hit is cut to its last COLLATERAL_CONTEXT lines
        # below: decode only those (the same lines) instead of 200
        if any(h.signature.role == "initiating" for h in lh.hits):
            return super().lookback(lh)
        return min(COLLATERAL_CONTEXT, super().lookback(lh))

    def on_hit(self, lh: LineHit, window: Window, start: int) -> None:
        raw = lh.who
        if raw.rank is not None and raw.evidence and raw.evidence[0].startswith("prefix [rank"):
            self.line_ranks[raw.rank] += 1
        lh.who = fill(raw, self.base)
        if "(local_rank:" in lh.text:
            entry = table_entry(lh.text, window.lines_before(start, 4))
            if entry is not None:
                self.table.append(entry)
        before_t, before_e = len(self.timed_out_seq), dict(self.last_enqueued)
        known = len(self.contexts)
        super().on_hit(lh, window, start)
        if len(self.contexts) != known and not any(h.signature.role == "initiating" for h in lh.hits):
            # a watchdog or launcher line has no traceback of its own: a short context serves it, and
            # spares the frame walk over 200 lines in each of a thousand ranks' files
            for hit in lh.hits:
                f0 = self.first_by_rule_role.get((hit.signature.rule_id, hit.signature.role))
                if f0 is not None and f0.line == lh.line and id(f0) in self.contexts:
                    self.contexts[id(f0)] = self.contexts[id(f0)][-COLLATERAL_CONTEXT:]
        w = writer_name(lh.who.rank, lh.who.local_rank, lh.who.node)
        if w is None:
            return
        if lh.who.rank is not None:
            if len(self.timed_out_seq) != before_t and lh.who.rank in self.timed_out_seq:
                self.writer_timeout.setdefault(w, self.timed_out_seq[lh.who.rank])
            if self.last_enqueued.get(lh.who.rank) != before_e.get(lh.who.rank):
                self.writer_enqueued[w] = self.last_enqueued[lh.who.rank]
            return
        # a writer known only by its local rank: the base collector keys these facts by rank
        from denpex.logs.diagnose import _LAST_ENQ, _SEQ_TIMEOUT

        text = lh.text
        if "SeqNum=" in text and "imeout" in text:
            m = _SEQ_TIMEOUT.search(text)
            if m:
                self.writer_timeout.setdefault(w, int(m.group(1)))
        if "nqueued" in text:
            m2 = _LAST_ENQ.search(text)
            if m2:
                self.writer_enqueued[w] = int(m2.group(1))


def base_attribution(src: LogSource) -> Attribution | None:
    if src.rank is None and src.local_rank is None and src.node is None:
        return None
    return Attribution(rank=src.rank, local_rank=src.local_rank, node=src.node,
                       evidence=[f"path {src.display}: " + "; ".join(src.evidence)] if src.evidence else [])


def split_points(path: str, parts: int) -> list[tuple[int, int]]:
    """Byte ranges of about equal size (at least MIN_RANGE) that end at line ends."""
    size = os.path.getsize(path)
    parts = max(1, min(parts, size // MIN_RANGE))
    if parts == 1:
        return [(0, size)]
    cuts = [0]
    with open(path, "rb") as fh:
        for i in range(1, parts):
            fh.seek(size * i // parts)
            chunk = fh.read(1 << 20)
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            pos = size * i // parts + nl + 1
            if pos > cuts[-1] and pos < size:
                cuts.append(pos)
    cuts.append(size)
    return [(cuts[i], cuts[i + 1]) for i in range(len(cuts) - 1)]


def scan_range(path: str, start: int, end: int, book: RuleBook | None, context: int,
               base: Attribution | None) -> FileCollector:
    """Scan bytes [start, end) of a file; line numbers count from the range's first line."""
    matcher = matcher_for(book)
    c = FileCollector(matcher, context, base)
    stats = c.stats
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise DenpexError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with fh:
        window = Window()
        if start > 0:
            lo = max(0, start - LOOKBACK)
            fh.seek(lo)
            prime = fh.read(start - lo)
            if lo > 0:
                prime = prime[prime.find(b"\n") + 1:]
            window.prime(prime)
        try:
            ranged: Any = Bounded(fh, start, end)  # a BinaryIO in all the scanner uses
            for _lh in iter_line_hits(ranged, matcher, stats, c.on_hit, None, window):
                pass
        except OSError as exc:
            raise DenpexError(f"{path}: read failed: {exc.strerror or exc}") from None
    return c


def join_ranges(parts: list[FileCollector]) -> FileCollector:
    """One collector from the collectors of consecutive ranges, as a single pass would leave it."""
    first = parts[0]
    total = first.stats
    for p in parts[1:]:
        st = p.stats
        shift = total.lines
        for key, f in p.findings.items():
            f.line += shift
            ctx = p.contexts.get(id(f))
            if ctx is not None:
                p.contexts[id(f)] = [(n + shift, t) for n, t in ctx]
            old = first.findings.get(key)
            if old is None:
                first.findings[key] = f
                if (f.rule, f.role) not in first.first_by_rule_role:
                    first.first_by_rule_role[(f.rule, f.role)] = f
                if ctx is not None and len(first.contexts) < 256:
                    first.contexts[id(f)] = p.contexts[id(f)]
            else:
                old.count += f.count
                old.ranks |= f.ranks
        for r, seq in p.timed_out_seq.items():
            first.timed_out_seq.setdefault(r, seq)
        first.last_enqueued.update(p.last_enqueued)
        first.root_cause_ranks += p.root_cause_ranks
        # facts the decision reads by line (framework phase lines, torch graph frames)
        for name in ("phase_marks", "graph_frames"):
            mine, theirs = getattr(first, name, None), getattr(p, name, None)
            if isinstance(mine, list) and isinstance(theirs, list):
                mine.extend((ln + shift, *rest) for ln, *rest in theirs)
                del mine[256:]
        first.phase_marks += [(n + shift, lit, ph) for n, lit, ph in p.phase_marks]
        first.graph_frames += [(n + shift, fn, ph) for n, fn, ph in p.graph_frames]
        first.table += p.table
        first.line_ranks.update(p.line_ranks)
        for w, seq in p.writer_timeout.items():
            first.writer_timeout.setdefault(w, seq)
        first.writer_enqueued.update(p.writer_enqueued)
        total.bytes += st.bytes
        total.lines += st.lines
        total.candidates += st.candidates
        total.truncated_last_line = st.truncated_last_line
    return first


def diagnose_collector(c: FileCollector, context: int, source: str, head: bytes,
                       launch: Launch | None = None) -> Diagnosis:
    d = _decide(c, c.stats, context, source, head)
    promote_suspect(d, c)
    map_local_rank(d, c.table, launch if launch is not None else head)
    return d


def map_local_rank(d: Diagnosis, table: list[TableEntry], launch: Launch | bytes) -> None:
    """A verdict known only by its local rank gets the global rank torchrun's table gives, or
    the one the launch command implies (``launch`` may be the file's head, read for it only here:
    reading it for each of a thousand files that do not need it cost more than their scan)."""
    v = d.verdict
    if v is not None:
        v.finding.who = global_who(v.finding.who, table, launch)
    fe = d.first_error.found if d.first_error is not None else None
    if fe is not None:
        fe.who = global_who(fe.who, table, launch)


def global_who(who: Attribution, table: list[TableEntry], launch: Launch | bytes) -> Attribution:
    """A writer known only by its local rank, with the global rank the failure table or launch command gives."""
    if who.rank is not None or who.local_rank is None:
        return who
    got = global_from_table(who.local_rank, who.node, table)
    if got is None:
        if isinstance(launch, bytes):
            launch = launch_facts(launch.decode("utf-8", "replace"))
        got = launch.global_rank(who.local_rank)
    if got is None:
        return who
    return Attribution(rank=got[0], local_rank=who.local_rank, node=who.node,
                       process=who.process, device=who.device, evidence=[*who.evidence, got[1]])


def promote_suspect(d: Diagnosis, c: FileCollector) -> None:
    """When only collateral was found, the rank the NCCL numbers single out becomes the verdict's rank."""
    v = d.verdict
    if v is None or v.confidence != "low" or v.finding.role != "collateral":
        return
    ranks = {w: int(w.split()[-1]) for w in [*c.writer_timeout, *c.writer_enqueued] if w.startswith("rank ")}
    s = choose_suspect(c.writer_timeout, c.writer_enqueued, [], dict(ranks))
    if s is None or s.rank is None:
        return
    who = v.finding.who
    line_who = f"the line at {v.finding.line} is {who.label()}'s"
    v.finding.who = Attribution(rank=s.rank, node=who.node if who.rank == s.rank else None,
                                evidence=[s.evidence, line_who])
    if s.rank not in v.suspects:
        v.suspects = sorted({s.rank, *v.suspects})


def summarise(src: LogSource, book: RuleBook | None = None, context: int = 100,
              ranges: int = 1, pool: Any = None, progress: Callable[[int], None] | None = None,
              first_error: bool = False) -> tuple[dict[str, Any], Diagnosis]:
    """A file's summary (JSON) and its Diagnosis. With a pool, a big file's ranges run in it. With
    first_error, a file where no rule found an initiating failure is read again for its first error line
    (`denpex diagnose FILE`); a folder's files are not: the job decides that (see first_error_of)."""
    base = base_attribution(src)
    epoch = None
    head = b""
    data: bytes | None = None  # an error.json's text
    if src.kind == "error.json":
        got = read_error_json(src.path)
        if got is None:
            raise DenpexError(f"{src.display}: not a torchrun error.json")
        text, epoch = got
        data = text.encode("utf-8", "surrogatepass")
        matcher = matcher_for(book)
        c = FileCollector(matcher, context, base)
        for _lh in iter_line_hits(io.BytesIO(data), matcher, c.stats, c.on_hit):
            pass
        head = data[:65536]
    else:
        fh = open_log(src.path, src.display)
        with fh:
            try:
                size = os.fstat(fh.fileno()).st_size
                seekable = fh.seekable()
                if not seekable:  # a pipe (`denpex diagnose <(zcat job.log.gz)`): one pass, no head of its own
                    ranges = 1
                spans = split_points(src.path, ranges) if ranges > 1 else [(0, size)]
                if len(spans) > 1:
                    head = fh.read(HEAD)
            except OSError as exc:
                raise DenpexError(f"{src.display}: cannot read: {exc.strerror or exc}") from None
            if len(spans) == 1:
                # one pass over the handle already open (a folder of a thousand files pays per open);
                # the head is the scan's own first bytes, not a read of its own
                matcher = matcher_for(book)
                c = FileCollector(matcher, context, base)
                try:
                    for _lh in iter_line_hits(fh, matcher, c.stats, c.on_hit, progress):
                        pass
                except OSError as exc:
                    raise DenpexError(f"{src.display}: read failed: {exc.strerror or exc}") from None
                if seekable:
                    head = bytes(c.stats.head)
        if len(spans) > 1:
            if pool is not None:
                futures = [pool.submit(scan_range, src.path, a, b, book, context, base) for a, b in spans[1:]]
                parts = [scan_range(src.path, *spans[0], book, context, base)]
                parts += [f.result() for f in futures]
            else:
                parts = [scan_range(src.path, a, b, book, context, base) for a, b in spans]
            c = join_ranges(parts)
    # the worker's own c10d [rankN]: prefixes map its local rank to the global one (also on lines no
    # rule names, so the file's first 64 KiB are read for them)
    c.line_ranks.update(int(r) for r in _RANK_PREFIX.findall(head[:8192]))
    d = diagnose_collector(c, context, src.display, head)
    if first_error and needs_first_error(d):
        if data is None and ranges > 1 and callable(getattr(pool, "first_error_range", None)):
            _read_first_error_ranges(src, d, matcher_for(book), base, pool, ranges)
        else:
            _read_first_error(src, d, matcher_for(book), base, data)
        map_local_rank(d, c.table, head)
    return to_summary(src, d, c, epoch), d


def _read_first_error_ranges(src: LogSource, d: Diagnosis, matcher: Matcher, base: Attribution | None,
                             pool: Any, ranges: int) -> None:
    """The first-error pass of a big file over its ranges, the first here and the rest in the pool's
    workers (first_error_ranges: the answer of one pass)."""
    from denpex.logs.first_error_ranges import scan_ranges

    def call(prev: int, start: int, end: int, last: bool) -> Any:
        return pool.first_error_range(src.path, prev, start, end, last, base, d.context_n)

    try:
        set_first_error(d, scan_ranges(src.path, matcher, base, d.context_n, ranges, call))
    except (OSError, DenpexError) as exc:
        d.warnings.append(f"first error not looked for: {exc}")


def _read_first_error(src: LogSource, d: Diagnosis, matcher: Matcher, base: Attribution | None,
                      data: bytes | None) -> None:
    if data is not None:
        add_first_error(d, io.BytesIO(data), matcher, base)
        return
    try:
        with open_log(src.path, src.display) as fh:
            add_first_error(d, fh, matcher, base)
    except (OSError, DenpexError) as exc:
        d.warnings.append(f"first error not looked for: {exc}")


def first_error_of(src: LogSource, book: RuleBook | None, context: int) -> dict[str, Any] | None:
    """The first error line of one file of a job whose files hold no initiating failure (JSON, or None
    when the file has no error line at all); the job's answer is the first of these (merge)."""
    from denpex.logs.first_error import scan

    matcher = matcher_for(book)
    base = base_attribution(src)
    try:
        if src.kind == "error.json":
            got = read_error_json(src.path)
            if got is None:
                return None
            fe = scan(io.BytesIO(got[0].encode("utf-8", "surrogatepass")), matcher, base, context)
        else:
            with open_log(src.path, src.display) as fh:
                fe = scan(fh, matcher, base, context)
    except (OSError, DenpexError):
        return None
    if fe is None:
        return None
    doc = fe.to_json(context)
    doc["file"] = src.display
    return doc


def to_summary(src: LogSource, d: Diagnosis, c: FileCollector, epoch: int | None) -> dict[str, Any]:
    doc = d.to_json()
    v = doc["verdict"]
    stamp = None
    if d.verdict is not None:
        stamp = last_stamp(d.verdict.context, d.verdict.finding.text)
        v["file"] = src.display
    findings = doc["findings"][:MAX_FINDINGS]
    for f in findings:
        f["file"] = src.display
    fe = doc.get("first_error")
    if fe is not None:
        fe["file"] = src.display
    return {
        "schema": SUMMARY,
        "source": src.to_json(),
        "bytes": d.stats.bytes, "lines": d.stats.lines,
        "warnings": [f"{src.display}: {w}" for w in d.warnings],
        "verdict": v,
        "role": d.verdict.finding.role if d.verdict is not None else None,
        "stamp": list(stamp) if stamp is not None else None,
        "epoch": epoch,
        "findings": findings,
        "findings_total": len(doc["findings"]),
        "timed_out": c.writer_timeout,
        "last_enqueued": c.writer_enqueued,
        "root_cause_ranks": list(c.root_cause_ranks),
        "table": [[e.rank, e.local_rank, e.host] for e in c.table],
        "line_ranks": {str(r): n for r, n in c.line_ranks.most_common(8)},
        "first_error": fe,
    }
