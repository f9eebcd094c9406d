"""capture-foreign-thread (DPX119): a global-mode capture while another thread works on the GPU: a DataLoader's
pin-memory thread, or a worker thread that queries or synchronises an event or stream. That thread's CUDA calls
are illegal during a global capture and invalidate it. Read from the code (calls and keywords), not its text."""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.engine.facts import value_text
from denpex.source.engine.hits import Hit
from denpex.source.fixes import edits as F
from denpex.source.model import TextEdit
from denpex.source.resolve.callgraph import EMPTY_ENV, Resolver
from denpex.source.resolve.index import FileIndex, kwarg
from denpex.source.rules._api import Around, Hazard, RegionScan, SourceRule
from denpex.source.syntax.mentions import def_of
from denpex.source.syntax.parse import run_query, walk

_THREADS = ("threading.Thread", "threading.Timer", "concurrent.futures.ThreadPoolExecutor",
            "concurrent.futures.thread.ThreadPoolExecutor")
# calls a worker thread makes that are illegal while another thread captures in global mode
_CUDA_QUERIES = frozenset({"query", "synchronize", "elapsed_time"})
_PIN_QUERY = "(keyword_argument name: (identifier) @k value: (true)) @kw"


def _thread_calls(ix: FileIndex) -> list[Node]:
    """Constructions of threads in the file (`threading.Thread(...)`, a thread pool)."""
    ix.src.need_word("Thread", whole=False)
    out = []
    for call in run_query("(call) @call", ix.src.root).get("call", []):
        f = call.child_by_field_name("function")
        q = ix.qualname(f) if f is not None else None
        if q is not None and (q in _THREADS or q.endswith((".Thread", ".ThreadPoolExecutor"))):
            out.append(call)
    return out


def _pins(ix: FileIndex) -> bool:
    """`pin_memory=True` passed to a call (a DataLoader's pin-memory thread)."""
    ix.src.need_word("pin_memory")
    caps = run_query(_PIN_QUERY, ix.src.root)
    return any(ix.text(k) == "pin_memory" for k in caps.get("k", []))


def _queries_cuda(ix: FileIndex, fn: Node) -> Node | None:
    """A call in `fn`'s own body that queries or synchronises CUDA work (`ev.query()`, `torch.cuda.synchronize()`)."""
    body = fn.child_by_field_name("body")
    for n in walk(body) if body is not None else []:
        d = def_of(n) if n.type == "call" else None
        if d is None or d.id != fn.id:
            continue
        f = n.child_by_field_name("function")
        if f is None or f.type != "attribute":
            continue
        attr = f.child_by_field_name("attribute")
        name = ix.text(attr) if attr is not None else ""
        q = ix.qualname(f) or ""
        if name in _CUDA_QUERIES and (q.startswith("torch.cuda.") or not q.startswith(("time.", "os.", "threading."))):
            return n
    return None


def _querying_worker(ix: FileIndex, resolver: Resolver, threads: list[Node]) -> tuple[Node, Node] | None:
    """A thread whose target queries CUDA work: (the thread's construction, the query)."""
    for t in threads:
        target = kwarg(ix, t, "target")
        if target is None:
            continue
        for tgt in resolver.resolve_callable(ix, target, EMPTY_ENV):
            if tgt.ix is ix:
                q = _queries_cuda(ix, tgt.func.node)
                if q is not None:
                    return t, q
    return None


def _global_mode(scan: RegionScan) -> None:
    region = scan.region
    ix = region.ix
    if region.kind not in ("graph", "wrapper") or not ix.has(b"Thread"):
        return
    mode = kwarg(ix, region.site, "capture_error_mode")
    if mode is not None and not ("global" in ix.text(mode) or (
            mode.type == "identifier" and "thread_local" not in ix.text(mode) and "global" in value_text(ix, mode))):
        return
    threads = _thread_calls(ix)
    if not threads:
        return
    message = None
    if not _pins(ix):
        worker = _querying_worker(ix, scan.resolver, threads)
        if worker is None:
            return
        t, q = worker
        message = (f"A worker thread (line {ix.src.start(t)[0] + 1}) calls `{ix.text(q)}` (line "
                   f"{ix.src.start(q)[0] + 1}) while this capture runs in the default 'global' mode: a CUDA query "
                   "or synchronisation from another thread invalidates the capture; use "
                   "capture_error_mode=\"thread_local\"")
    if mode is not None:
        edit = F.replace_node(ix, mode, '"thread_local"')
    else:
        args = region.site.child_by_field_name("arguments")
        if args is None:
            return
        el, ec = ix.src.end(args)
        edit = TextEdit(el, ec - 1, el, ec - 1, ', capture_error_mode="thread_local"')
    fx = F.fix('Capture with capture_error_mode="thread_local"', "safe", [edit])
    scan.sink(Hit("pinning-thread-global-capture", ix, region.site, region, (), [fx] if fx else [], None, message))


RULE = SourceRule(
    id="capture-foreign-thread",
    hazards=(Hazard("pinning-thread-global-capture"),),
    around=(Around(30, _global_mode),),
)
