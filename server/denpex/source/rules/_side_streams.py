"""`with torch.cuda.stream(s):` inside a capture, and whether `s` is forked from and joined back into the
capturing stream (shared by capture-side-stream-no-fork and cuda-904-capture-unjoined)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tree_sitter import Node

from denpex.source.engine.facts import siblings
from denpex.source.resolve.index import positional
from denpex.source.rules._api import Frame, Walk


@dataclass(frozen=True)
class SideStream:
    item: Node  # the with-item `torch.cuda.stream(s)`
    name: str  # the stream's text, `s`
    forked: bool  # `s.wait_stream(...)` before the with-statement
    joined: bool  # `....wait_stream(s)` after it

    def fork_line(self, torch: str) -> str:
        return f"{self.name}.wait_stream({torch}.cuda.current_stream())"

    def join_line(self, torch: str) -> str:
        return f"{torch}.cuda.current_stream().wait_stream({self.name})"


def side_streams(w: Walk, node: Node, frame: Frame) -> Iterator[SideStream]:
    ix = frame.ix
    clause = next((c for c in node.children if c.type == "with_clause"), None)
    if clause is None:
        return
    for item in clause.named_children:
        v = item.child_by_field_name("value")
        if v is None or v.type != "call":
            continue
        f = v.child_by_field_name("function")
        if f is None or ix.qualname(f) != "torch.cuda.stream":
            continue
        args = positional(v)
        if not args:
            continue
        s = ix.text(args[0])
        r = w.region
        if r.stream_arg is not None and ix.text(r.stream_arg) == s and frame.ix is r.ix:
            continue  # the capturing stream itself
        if "current_stream" in s or _current_stream_value(w, args[0], frame):
            continue
        forked = any(f"{s}.wait_stream(" in ix.text(b).replace(" ", "") for b in siblings(node, after=False))
        joined = any(f".wait_stream({s})" in ix.text(a).replace(" ", "") for a in siblings(node, after=True))
        yield SideStream(item, s, forked, joined)


def _current_stream_value(w: Walk, arg: Node, frame: Frame) -> bool:
    """`s` is bound to `torch.cuda.current_stream(...)`, in this function or by a caller on the walked path
    (`run_stream = torch.cuda.current_stream(dev)` passed down): entering it stays on the capturing stream."""
    k = w.kind(arg, frame)
    n = k.node
    if k.cat != "stream" or n is None or n.type != "call":
        return False
    f = n.child_by_field_name("function")
    # the node may sit in a caller's file, so its own text is read: the called name is `current_stream`
    return f is not None and f.text is not None and f.text.decode("utf-8", "replace").rsplit(".", 1)[-1] == "current_stream"
