"""Kinds of parameters from the calls that reach them: what the caller passed for `scores` decides whether
`keep = scores > t` in the callee is a tensor mask, through every call level between it and the capture. A
parameter of another function than the frame's (an `__init__` parameter stored on `self` and read in
`forward`) is typed from that function's call sites in the workspace (Values.parameter_kind).

The walker's frames hold each entered function's bindings (`Env`: parameter -> the caller's argument, with
the caller's own bindings); `param_kinds` turns them into the `params` callback of `FileIndex.kind`.
"""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.resolve.callgraph import Env
from denpex.source.resolve.index import FileIndex, FuncInfo, Kind, ParamKinds

_MAX_HOPS = 16  # call levels followed back towards the capture; deeper chains stay unknown


def param_kinds(ix: FileIndex, env: Env, func: FuncInfo | None, hops: int = _MAX_HOPS) -> ParamKinds | None:
    """The kind of a parameter of `func` (in `ix`) read at a node, from the argument `env` binds it to; None
    for a name read in another function (a closure's or another method's parameter of the same spelling)."""
    if func is None or not env.params or hops <= 0:
        return None
    fn_id = func.node.id
    values = env.values

    def of(name: str, node: Node) -> Kind | None:
        holder = ix.enclosing_function(node)
        if holder is None:
            return None
        if holder.node.id != fn_id:
            # another function's parameter (`self.gen = gen` in `__init__`, read in `forward`): typed from that
            # function's call sites in the workspace
            return values.parameter_kind(ix, holder, name) if values is not None else None
        b = env.get(name)
        if b is None:
            return None
        outer = param_kinds(b.ix, b.env, b.ix.enclosing_function(b.node), hops - 1)
        k = b.ix.kind(b.node, 0, outer)
        return None if k.cat in ("unknown", "param") else k

    return of
