"""The job's verdict from the summaries of its files (one `denpex diagnose` or many, merged).

The decision is a function of the set of file summaries alone (they are put in a canonical order
first), so ``denpex merge`` over the partial summaries of several machines gives the verdict one
``denpex diagnose`` over all the files would give.

Order of failures across files: by wall-clock stamp when every candidate has one (the line's own,
else the nearest stamped line before it), else by the torchrun ``error.json`` timestamps, else by
causal role (an initiating error before collateral) and then by rank.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from denpex.errors import DenpexError
from denpex.logs.ranks import TableEntry, choose_suspect, global_from_table, writer_name
from denpex.logs.timestamps import format_stamp

SCHEMA = "denpex.diagnosis/1"
MAX_TOP_FINDINGS = 1000


def files_of(doc: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The file summaries in a diagnosis document (or a bare file summary)."""
    if not isinstance(doc, dict):
        raise DenpexError(f"{where}: not a denpex summary (expected a JSON object)")
    if doc.get("schema") == "denpex.file-summary/1":
        return [doc]
    if doc.get("schema") != SCHEMA:
        raise DenpexError(f"{where}: not a denpex summary (schema {doc.get('schema')!r})")
    files = doc.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) and "source" in f for f in files):
        raise DenpexError(f"{where}: a diagnosis without file summaries (made by an older denpex?)")
    return files


def _canon(s: dict[str, Any]) -> tuple[Any, ...]:
    src = s["source"]
    return (s.get("host") or "", src.get("node") or "", src.get("attempt") or 0,
            src["rank"] if src.get("rank") is not None else -1,
            src["local_rank"] if src.get("local_rank") is not None else -1, src["display"])


def merge_summaries(summaries: list[dict[str, Any]], inputs: list[str],
                    warnings: list[str] | None = None) -> dict[str, Any]:
    """One diagnosis document for a job from its file summaries."""
    seen: set[tuple[Any, ...]] = set()
    raw: list[dict[str, Any]] = []
    for s in sorted(summaries, key=_canon):
        key = (*_canon(s), s.get("bytes"))
        if key not in seen:
            seen.add(key)
            raw.append(s)
    # ranks are mapped on copies: a mapping one machine's files allow (a single node) may not hold for
    # the job, so the summaries written out keep what their files said and each merge decides again.
    # Shallow copies: _set_rank copies what it changes (a deep copy of a thousand summaries cost
    # more than deciding on them)
    files = [dict(s) for s in raw]
    notes_job: list[str] = []
    _map_ranks(files, notes_job)
    warn = list(warnings or []) + [w for s in files for w in s.get("warnings", [])]
    verdict = _decide(files, notes_job)
    first = _first_error(files)
    findings = sorted((f for s in files for f in s.get("findings", [])),
                      key=lambda f: (f.get("file") or "", f["line"]))[:MAX_TOP_FINDINGS]
    doc = {
        "schema": SCHEMA,
        "input": {"source": ", ".join(inputs), "files": len(files),
                  "bytes": sum(int(s.get("bytes") or 0) for s in files),
                  "lines": sum(int(s.get("lines") or 0) for s in files),
                  "truncated_last_line": any(s.get("truncated") for s in files)},
        "summary": _summary(verdict, files, first),
        "warnings": warn,
        "verdict": verdict,
        "findings": findings,
        "first_error": first,
        "files": raw,
    }
    return doc


def _hostname() -> str:
    """socket.gethostname() without importing socket (3 ms of every run): on POSIX both are uname's
    node name."""
    if hasattr(os, "uname"):
        return os.uname().nodename
    import socket

    return socket.gethostname()


def stamp_host(summaries: list[dict[str, Any]]) -> None:
    """Mark each summary with the machine it was made on (a node's logs have the same paths)."""
    host = _hostname()
    for s in summaries:
        s.setdefault("host", host)


# --- ranks --------------------------------------------------------------------------------------


def _map_ranks(files: list[dict[str, Any]], notes: list[str]) -> None:
    table = [TableEntry(r, lr, h) for s in files for r, lr, h in s.get("table", [])]
    runs = {(s.get("host"), s["source"].get("run")) for s in files if s["source"].get("kind") in ("torchrun", "error.json")}
    single_node = len(runs) == 1 and not table
    for s in files:
        src = s["source"]
        if src.get("rank") is not None or src.get("local_rank") is None:
            continue
        got: tuple[int, str] | None = None
        line_ranks = s.get("line_ranks") or {}
        if line_ranks:
            top, n = max(line_ranks.items(), key=lambda kv: (kv[1], -int(kv[0])))
            got = int(top), f"the file's own [rank{top}]: prefixes ({n} lines)"
        if got is None:
            got = global_from_table(src["local_rank"], _host_in(src.get("node"), table), table)
        if got is None and single_node:
            got = src["local_rank"], "one node (a single torchrun run folder): global rank = local rank"
        if got is not None:
            _set_rank(s, got[0], got[1])


def _host_in(node: str | None, table: list[TableEntry]) -> str | None:
    if node is None:
        return None
    parts = node.split("/")
    for e in table:
        if e.host is not None and e.host in parts:
            return e.host
    return node


def _set_rank(s: dict[str, Any], rank: int, why: str) -> None:
    """Give a (shallow-copied) summary its global rank; every dict it changes is copied first, so
    the summary it was copied from keeps what its file said."""
    src = s["source"] = dict(s["source"])
    old = writer_name(None, src.get("local_rank"), src.get("node"))
    new = f"rank {rank}"
    src["rank"] = rank
    src["evidence"] = [*src.get("evidence", []), why]
    for key in ("timed_out", "last_enqueued"):
        facts = s.get(key) or {}
        if old in facts:
            facts = s[key] = dict(facts)
            facts[new] = facts.pop(old)

    def mapped(f: dict[str, Any]) -> dict[str, Any]:
        if f.get("rank") is not None or f.get("local_rank") != src.get("local_rank"):
            return f
        f = dict(f)
        f["rank"] = rank
        ev = "attribution" if "attribution" in f else "evidence"
        f[ev] = [*f.get(ev, []), why]
        return f

    if s.get("verdict"):
        s["verdict"] = mapped(s["verdict"])
    if (s.get("first_error") or {}).get("found"):
        s["first_error"] = mapped(s["first_error"])
    if s.get("findings"):
        s["findings"] = [mapped(f) for f in s["findings"]]


# --- the decision -------------------------------------------------------------------------------


def _writer(s: dict[str, Any]) -> str | None:
    src = s["source"]
    return writer_name(src.get("rank"), src.get("local_rank"), src.get("node"))


def _rank_key(s: dict[str, Any]) -> tuple[int, str]:
    v = s["verdict"]
    r = v.get("rank")
    return (r if r is not None else 1 << 30, s["source"]["display"])


def _decide(files: list[dict[str, Any]], job_notes: list[str]) -> dict[str, Any] | None:
    with_v = [s for s in files if s.get("verdict")]
    if not with_v:
        return None
    initiating = [s for s in with_v if s.get("role") == "initiating"]
    pool = initiating or [s for s in with_v if s.get("role") == "collateral"] or with_v
    pool = _drop_error_json_twins(pool)
    ordered, how = _order(pool)
    first = ordered[0]
    v = dict(first["verdict"])
    v["file"] = first["source"]["display"]
    v["ordered_by"] = how
    v["notes"] = list(v.get("notes", []))
    v["alternatives"] = list(v.get("alternatives", []))
    for s in ordered[1:]:
        ov = s["verdict"]
        if s.get("role") != first.get("role"):
            continue
        v["alternatives"].append({
            "rule": ov["rule"], "title": ov.get("title"), "line": ov["line"], "rank": ov.get("rank"),
            "file": s["source"]["display"],
            "why_not_first": _why_later(first, s, how),
        })
        if len(v["alternatives"]) >= 16:
            break
    if len(files) > 1:
        order = "no other file has one" if how == "the only candidate" else f"ordered by {how}"
        v["notes"].insert(0, f"{len(files)} files read; first failure in {v['file']} ({order}).")
    if first.get("role") != "initiating":
        _suspect(v, files)
    collateral = Counter(
        (f["rule"]) for s in files for f in s.get("findings", [])
        if f.get("role") == "collateral" and s is not first
    )
    if collateral and len(files) > 1:
        v["notes"].append("collateral in the other files: " + "; ".join(f"{n}x {r}" for r, n in sorted(collateral.items())))
    v["notes"] = job_notes + v["notes"]
    return v


def _first_error(files: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The job's first error line found by its shape, when no file holds an initiating failure a rule
    knows: the files' own first errors ordered as verdicts are (timestamps, error.json times, rank)."""
    if any(s.get("role") == "initiating" for s in files):
        return None
    from denpex.logs.first_error import NOT_HERE

    found = [s for s in files if (s.get("first_error") or {}).get("found")]
    if not found:
        seen = [s for s in files if s.get("first_error")]
        if not seen:
            return None
        coll = [{**c, "file": s["source"]["display"]} for s in seen for c in s["first_error"].get("collateral", [])]
        doc = dict(seen[0]["first_error"])
        doc.pop("file", None)
        doc["collateral"] = coll[:16]
        doc["notes"] = [f"Only collateral reports were found in {len(seen)} of {len(files)} files: {NOT_HERE}. "
                        "Look for an earlier error on another rank, thread or log file."]
        return doc
    # the pool _order sorts: each file's first error in the place of its verdict
    pool = [{"stamp": s["first_error"].get("stamp"), "epoch": s.get("epoch"), "source": s["source"],
             "verdict": {"rank": s["first_error"].get("rank")}, "summary": s} for s in found]
    ordered, how = _order(pool)
    top = ordered[0]
    fe = dict(top["summary"]["first_error"])
    fe["file"] = top["source"]["display"]
    fe["ordered_by"] = how
    fe["alternatives"] = [{"file": o["source"]["display"], "line": o["summary"]["first_error"].get("line"),
                           "rank": o["verdict"]["rank"], "text": o["summary"]["first_error"].get("text"),
                           "why_not_first": _why_later(top, o, how)} for o in ordered[1:9]]
    if len(files) > 1:
        order = "no other file has one" if how == "the only candidate" else f"ordered by {how}"
        fe["notes"] = [f"{len(files)} files read; first error in {fe['file']} ({order}).", *fe.get("notes", [])]
    return fe


def _drop_error_json_twins(pool: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A writer's error.json repeats the traceback of its stderr.log, which has lines and stamps."""
    logged = {(s["source"].get("run"), s["source"].get("local_rank"), s["verdict"]["rule"])
              for s in pool if s["source"].get("kind") != "error.json"}
    return [s for s in pool if s["source"].get("kind") != "error.json"
            or (s["source"].get("run"), s["source"].get("local_rank"), s["verdict"]["rule"]) not in logged] or pool


def _order(pool: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    if len(pool) == 1:
        return pool, "the only candidate"
    if all(s.get("stamp") for s in pool):
        return sorted(pool, key=lambda s: (tuple(s["stamp"]), _rank_key(s))), "timestamps"
    if all(s.get("epoch") is not None for s in pool):
        return sorted(pool, key=lambda s: (s["epoch"], _rank_key(s))), "error.json timestamps"
    stamped = [s for s in pool if s.get("stamp")]
    if stamped and len(stamped) >= len(pool) - 1 and len(stamped) > 1:
        rest = [s for s in pool if not s.get("stamp")]
        return sorted(stamped, key=lambda s: (tuple(s["stamp"]), _rank_key(s))) + sorted(rest, key=_rank_key), \
            "timestamps (files without one last)"
    return sorted(pool, key=_rank_key), "rank (the files carry no timestamps)"


def _why_later(first: dict[str, Any], s: dict[str, Any], how: str) -> str:
    if how.startswith("timestamps") and s.get("stamp") and first.get("stamp"):
        return (f"later: {format_stamp(tuple(s['stamp']))} against "  # type: ignore[arg-type]
                f"{format_stamp(tuple(first['stamp']))}")  # type: ignore[arg-type]
    if how.startswith("error.json"):
        return f"later error.json timestamp ({s.get('epoch')} against {first.get('epoch')})"
    return "no timestamps to order by: a higher rank, listed after"


def _suspect(v: dict[str, Any], files: list[dict[str, Any]]) -> None:
    timed: dict[str, int] = {}
    enq: dict[str, int] = {}
    for s in files:
        for w, n in (s.get("timed_out") or {}).items():
            timed[w] = min(n, timed.get(w, n))
        for w, n in (s.get("last_enqueued") or {}).items():
            enq[w] = min(n, enq.get(w, n))
    writers: list[str] = []
    rank_of: dict[str, int | None] = {}
    file_of: dict[str, str] = {}
    for s in files:
        w = _writer(s)
        if w is not None and w not in file_of:
            writers.append(w)
            rank_of[w] = s["source"].get("rank")
            file_of[w] = s["source"]["display"]
    for w in [*timed, *enq]:
        if w not in rank_of and w.startswith("rank ") and w[5:].isdigit():
            rank_of[w] = int(w[5:])
    sus = choose_suspect(timed, enq, writers, rank_of)
    if sus is None:
        return
    line_who = f"the line is {v.get('file')}:{v['line']} (rank {v.get('rank')})"
    v["rank"] = sus.rank
    v["local_rank"] = None
    v["node"] = None
    v["attribution"] = [sus.evidence, line_who]
    v["suspect"] = {"writer": sus.writer, "rank": sus.rank, "file": file_of.get(sus.writer),
                    "evidence": sus.evidence, "also": list(sus.also)}
    ranks = sorted({r for r in [sus.rank, *(rank_of.get(a) for a in sus.also)] if r is not None})
    v["suspect_ranks"] = sorted({*ranks, *(v.get("suspect_ranks") or [])})
    where = f" (its log: {file_of[sus.writer]})" if sus.writer in file_of else ""
    v["notes"].append(f"Suspect {sus.writer}{where}: {sus.evidence}.")


def _summary(v: dict[str, Any] | None, files: list[dict[str, Any]], first: dict[str, Any] | None = None) -> str:
    if v is None and first is not None:
        from denpex.logs.first_error import summary_line

        return summary_line(first)
    if v is None:
        if any(s.get("findings") for s in files):
            return "No failure diagnosed; related warnings were found (see findings)."
        return "No known CUDA-graph failure signature found."
    who = f"rank {v['rank']}" if v.get("rank") is not None else (
        f"local rank {v['local_rank']}" if v.get("local_rank") is not None else "unattributed")
    return f"{v['title']} — first at {v.get('file')}:{v['line']} ({who}); confidence {v['confidence']}."
