"""replay-output-under-input-key (DPX315): captured code writes its output under the key it read its input from
(`td["h"] = self.block(td["h"])`, a TensorDict-style module). After the capture `td["h"]` is the graph's output
buffer, not the input the graph reads, so host code that refreshes `td["h"]` in place before a replay writes into
the output: the replay reads the capture-time input and overwrites what was written (silently wrong).

Error where the capture's file shows the refresh: `S["h"].copy_(...)` (or `fill_`, `zero_`, an item store into
it) on the object the captured code received, after the capture, in a file that replays the graph. Without a
refresh in sight there is no finding: a host that refreshes the original input tensor is correct."""

from __future__ import annotations

import re

from tree_sitter import Node

from denpex.source.resolve.callgraph import Binding
from denpex.source.resolve.index import FileIndex
from denpex.source.rules._api import Frame, Hazard, SourceRule, Walk
from denpex.source.rules._frozen import where
from denpex.source.syntax.parse import strip_parens, walk

_HAZARD = "output-under-input-key"
_KEYS = frozenset({"string", "integer"})
_MAX_HOPS = 8


def _assignment(w: Walk, node: Node, frame: Frame) -> None:
    if w.region.kind not in ("graph", "capture_begin", "wrapper", "graphed_callables"):
        return  # torch.compile keeps Python-level dict writes out of the graph's memory reuse story
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if left is None or right is None or left.type != "subscript":
        return
    ix = frame.ix
    obj, key = left.child_by_field_name("value"), left.child_by_field_name("subscript")
    if obj is None or key is None or key.type not in _KEYS or obj.type not in ("identifier", "attribute"):
        return
    target = ix.text(left)
    aliases = _aliases(ix, node, target, frame)
    if not any((n.type == "subscript" and ix.text(n) == target) or (n.type == "identifier" and ix.text(n) in aliases)
               for n in walk(right)):
        return  # `td["out"] = f(td["h"])`: another key, the input stays where the host refreshes it
    host = _host_object(w, obj, frame)
    if host is None:
        return
    refresh = _refresh(w, host, ix.text(key))
    if refresh is None:
        return
    rix, at = refresh
    w.report(_HAZARD, left, frame, message=(
        f"`{target}` is rebound to this captured output, so after the capture `{host}[{ix.text(key)}]` is the "
        f"graph's output buffer; {where(rix, at)} refreshes it in place before a replay, which writes into the "
        "output, not the input the graph reads: every replay reads the capture-time input tensor (or its freed "
        "memory) instead (silently wrong). "
        "Write the output under another key, or refresh the input tensor captured"))


def _aliases(ix: FileIndex, node: Node, target: str, frame: Frame) -> set[str]:
    """Local names bound to `target` earlier in the same function (`raw = td["h"]`, then `td["h"] = f(raw)`)."""
    fn = frame.func.node if frame.func is not None else None
    if fn is None:
        return set()
    out: set[str] = set()
    for n in walk(fn):
        if n.start_byte >= node.start_byte:
            break
        if n.type == "assignment":
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            if left is not None and right is not None and left.type == "identifier" and ix.text(right) == target:
                out.add(ix.text(left))
    return out


def _host_object(w: Walk, obj: Node, frame: Frame) -> str | None:
    """How the capture's own file spells the object the captured code writes into: the name itself for a
    statement of the region, else the caller's argument the parameter is bound to (followed up the calls)."""
    ix, env, node = frame.ix, frame.env, obj
    for _ in range(_MAX_HOPS):
        root = node
        while root.type == "attribute":
            o = root.child_by_field_name("object")
            if o is None:
                return None
            root = o
        if root.type != "identifier":
            return None
        b: Binding | None = env.get(ix.text(root))
        if b is None:
            break
        if root is not node:
            return None  # `self.cache[...]` with `self` bound: not followed
        node, ix, env = strip_parens(b.node), b.ix, b.env
    if ix is not w.region.ix:
        return None
    if frame.depth > 0 and node is obj:
        return None  # a name of the called function itself (a local dict), not something the host holds
    return ix.text(node)


def _refresh(w: Walk, host: str, key: str) -> tuple[FileIndex, Node] | None:
    """The first in-place refresh of `host[key]` after the capture in the capture's file, when the file replays."""
    region = w.region
    ix = region.ix
    data = ix.src.data
    if b"replay(" not in data and region.kind != "graphed_callables":
        return None  # never replayed here: the refresh feeds no graph
    rx = re.compile(
        rf"(?<![\w.]){re.escape(host)}\[\s*{re.escape(key)}\s*\]\s*"
        r"(?:\.(?:copy_|fill_|zero_|add_|mul_|sub_|div_|clamp_|uniform_|normal_)\(|\[[^\]\n]*\]\s*=(?!=))".encode())
    for m in rx.finditer(data, region.end_byte):
        at = ix.src.root.descendant_for_byte_range(m.start(), m.start() + 1)
        if at is None:
            continue
        return ix, at
    return None


RULE = SourceRule(
    id="replay-output-under-input-key",
    hazards=(Hazard(_HAZARD, eager_fallback=False),),
    on_node={"assignment": (_assignment,)},
)
