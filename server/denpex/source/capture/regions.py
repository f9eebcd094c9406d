"""Capture regions: where CUDA-graph capture happens in a file.

Recognised openers (any import spelling, resolved through names.py):
- `with torch.cuda.graph(g, ...)` / `torch.cuda.graphs.graph`, also as one item of a multi-item or
  parenthesised `with`, and a context manager stored in a variable (`ctx = torch.cuda.graph(g)`, also
  `... if c else nullcontext()`) and entered later;
- `g.capture_begin()` ... `g.capture_end()` in one block;
- `torch.cuda.make_graphed_callables(fn_or_module, ...)`: the callable's body (a module's `forward`); the same
  for Transformer Engine's `make_graphed_callables`, tensordict's `CudaGraphModule`, moshi's `CUDAGraphed` and
  the names listed in configuration (`graphed-callables`);
- `torch.compile(..., mode="reduce-overhead" | "max-autotune")` as a call, decorator or rebinding, with
  `options={"triton.cudagraphs": True}`, or any compile when `torch._inductor.config.triton.cudagraphs = True`;
  the mode and options may come from a `**kwargs` dict; a mode the text leaves open (a variable, an unreadable
  `**kwargs`) opens an `uncertain` region, whose findings are at most warnings;
- project wrappers: a `@contextmanager` that yields inside `torch.cuda.graph`, a function that returns
  `torch.cuda.graph(...)`, and the names listed in configuration (`capture-wrappers`);
- built-in accelerator and library openers (openers.py): DeepSpeed's `get_accelerator().capture_to_graph(g)`,
  `thunder.jit(fn, use_cudagraphs=True)` / `transforms=[CUDAGraphTransform()]`, and tensordict's
  `CudaGraphModule(TensorDictModule(module, ...))` taken through to `module`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tree_sitter import Node

from denpex.source.capture.openers import (
    BUILTIN_CAPTURE_WRAPPERS,
    THUNDER_JIT,
    THUNDER_WORDS,
    through_wrappers,
    thunder_uses_cudagraphs,
)
from denpex.source.resolve.index import (
    GRAPHED_CALLABLE_WORDS,
    FileIndex,
    calls_named,
    kwarg,
    positional,
)
from denpex.source.syntax.chunks import SEED_WORDS
from denpex.source.syntax.parse import own_nodes, strip_parens, walk

GRAPH_CMS = frozenset({"torch.cuda.graph"})
GRAPHED_CALLABLES = frozenset({
    "torch.cuda.make_graphed_callables",
    "transformer_engine.pytorch.make_graphed_callables",  # Transformer Engine's (same calling convention)
    "transformer_engine.pytorch.graph.make_graphed_callables",
})
# graphed-callable classes of other libraries, by the end of their qualified names (often imported relatively)
GRAPHED_CALLABLE_SUFFIXES = ("tensordict.nn.CudaGraphModule", "cudagraphs.CudaGraphModule", "compile.CUDAGraphed")
CG_MODES = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}

_OPENERS = """
(with_statement) @with
(call function: (attribute attribute: (identifier) @meth) (#eq? @meth "capture_begin")) @begin
(call function: [(identifier) @cname (attribute attribute: (identifier) @cname)]
  (#any-of? @cname "make_graphed_callables" "compile")) @call
(assignment left: (attribute) @cfg_left right: (true)) @cfg
"""

if TYPE_CHECKING:
    from denpex.source.capture.entrypoints import EntryPoint


@dataclass
class CaptureRegion:
    kind: str  # graph | wrapper | capture_begin | graphed_callables | compile | entry
    ix: FileIndex
    site: Node  # node whose start is the capture site
    anchor: Node  # statement that opens the capture (with statement, begin statement, call statement)
    stmts: list[Node] = field(default_factory=list)  # statements captured directly
    callables: list[Node] = field(default_factory=list)  # expressions naming captured callables
    functions: list[Node] = field(default_factory=list)  # function_definition nodes captured (decorators)
    graph_name: str | None = None
    stream_arg: Node | None = None
    with_item: Node | None = None
    end_stmt: Node | None = None
    compiled_names: list[str] = field(default_factory=list)
    compile_call: Node | None = None
    mode_node: Node | None = None
    # a torch.compile whose mode the text does not settle (a variable, a `**kwargs` dict built elsewhere):
    # its findings are reported at a lower severity
    uncertain: bool = False
    # kind "entry": the framework preset entry point that captures this function (None: configured by the user)
    entry: EntryPoint | None = None

    @property
    def line(self) -> int:
        return self.site.start_point[0]

    @property
    def end_byte(self) -> int:
        if self.kind in ("graph", "wrapper"):
            return self.anchor.end_byte
        if self.end_stmt is not None:
            return self.end_stmt.end_byte
        return self.anchor.end_byte


def _string_value(ix: FileIndex, node: Node | None) -> str | None:
    if node is None:
        return None
    node = strip_parens(node)
    if node.type == "string":
        text = ix.text(node)
        for q in ('"""', "'''", '"', "'"):
            if text.endswith(q):
                start = text.find(q)
                return text[start + len(q) : len(text) - len(q)]
    if node.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(node), node)
        if assign is not None and assign.value is not None and assign.value.type == "string":
            return _string_value(ix, assign.value)
    return None


def contextmanager_wrappers(ix: FileIndex) -> set[str]:
    """Functions of this file that open a capture for their caller: a `@contextmanager` that yields inside
    `torch.cuda.graph`, or a function that returns `torch.cuda.graph(...)`."""
    out: set[str] = set()
    data = ix.src.data
    if b"graph" not in data and b"capture_begin" not in data:
        return out
    for dec in ix.caps.get("dec", []):
        if b"contextmanager" not in data[dec.start_byte : dec.end_byte]:
            continue
        dd = dec.parent
        fn_node = dd.child_by_field_name("definition") if dd is not None else None
        info = ix.by_node.get(fn_node.id) if fn_node is not None else None
        body = info.body if info is not None else None
        text = data[body.start_byte : body.end_byte] if body is not None else b""
        if info is None or body is None or (b"graph" not in text and b"capture_begin" not in text):
            continue
        if b"capture_begin" in text and _begins_before_yield(body):
            out.add(info.name)
            continue
        for n in walk(body):
            if n.type == "with_statement" and _graph_items(ix, n, set()) and any(c.type == "yield" for c in walk(n)):
                out.add(info.name)
                break
    for call in _returned_calls(ix):
        f = call.child_by_field_name("function")
        if f is not None and ix.qualname(f) in GRAPH_CMS:
            fn = ix.enclosing_function(call)
            if fn is not None:
                out.add(fn.name)
    return out


def _begins_before_yield(body: Node) -> bool:
    """A `@contextmanager` body that calls `<graph>.capture_begin(...)` and yields after it (`capture_end()` in
    its `finally`, or after the yield): the caller's `with` block is what the graph captures."""
    begin: int | None = None
    for n in own_nodes(body):  # the body's own code, in document order
        if n.type == "call":
            f = n.child_by_field_name("function")
            attr = f.child_by_field_name("attribute") if f is not None and f.type == "attribute" else None
            if attr is not None and attr.text == b"capture_begin":
                begin = n.start_byte if begin is None else min(begin, n.start_byte)
        elif n.type == "yield" and begin is not None and n.start_byte > begin:
            return True
    return False


_RETURNED_CALL = re.compile(rb"return[ \t]+([A-Za-z_][\w.]*)[ \t]*\(")


def _returned_calls(ix: FileIndex) -> list[Node]:
    """Calls returned directly (`return f(...)`) whose function may name torch.cuda.graph: its text spells
    graph, or its head may be bound to something that does. Found from the text: most returns are not looked
    up in the tree (and, in a lazily parsed file, no lookup asks for code)."""
    out: list[Node] = []
    find = ix.src.root.descendant_for_byte_range
    for m in _RETURNED_CALL.finditer(ix.src.data):
        name = m.group(1).decode("utf-8", "surrogatepass")
        if "graph" not in name and not ix.imports.may_bind(name.split(".", 1)[0], "graph"):
            continue
        tok = find(m.start(), m.start() + 6)
        p = tok.parent if tok is not None and tok.type == "return" and tok.start_byte == m.start() else None
        if p is not None and p.type == "return_statement":
            out.extend(c for c in p.named_children if c.type == "call")
    return out


def _is_graph_call(ix: FileIndex, node: Node, wrappers: set[str]) -> bool:
    node = strip_parens(node)
    if node.type != "call":
        return False
    f = node.child_by_field_name("function")
    if f is None:
        return False
    q = ix.qualname(f)
    if q is None:
        # method on an expression (get_accelerator().capture_to_graph(g))
        if f.type == "attribute":
            attr = f.child_by_field_name("attribute")
            return attr is not None and ix.text(attr) in wrappers
        return False
    return q in GRAPH_CMS or q in wrappers or q.rsplit(".", 1)[-1] in wrappers


def _graph_items(ix: FileIndex, with_stmt: Node, wrappers: set[str]) -> list[tuple[Node, Node, str]]:
    """(with_item, call node, kind) for each item of a with statement that opens a capture."""
    out: list[tuple[Node, Node, str]] = []
    clause = next((c for c in with_stmt.children if c.type == "with_clause"), None)
    if clause is None:
        return out
    for item in clause.named_children:
        if item.type != "with_item":
            continue
        value = item.child_by_field_name("value")
        if value is None:
            continue
        if value.type == "as_pattern" and value.named_child_count:
            value = value.named_children[0]
        value = strip_parens(value)
        candidates = [value]
        if value.type == "identifier":
            assign, _s, _p = ix.lookup(ix.text(value), value)
            if assign is not None and assign.value is not None:
                v = strip_parens(assign.value)
                candidates = [v, *(v.named_children if v.type == "conditional_expression" else [])]
        for cand in candidates:
            if cand.type == "call" and _is_graph_call(ix, cand, wrappers):
                f = cand.child_by_field_name("function")
                q = ix.qualname(f) if f is not None else None
                out.append((item, cand, "graph" if q in GRAPH_CMS else "wrapper"))
                break
    return out


def _ask_for_openers(ix: FileIndex, wrappers: set[str]) -> None:
    """A lazily parsed file: ask for the code that may open a capture without spelling a capture word (see
    chunks.SEED_WORDS): a wrapper's name, an import alias (`graph as G`), a module-level name bound to a
    capture context manager (`CM = torch.cuda.graph(g)`, entered elsewhere as `with CM:`)."""
    src = ix.src
    words = {"graph"}
    for w in wrappers:
        words.add(w.rsplit(".", 1)[-1])
    seeds = [w.decode() for w in SEED_WORDS]
    for local, full in ix.imports.names.items():  # the imports the tree holds; the others are in parsed chunks
        if any(w in full for w in seeds) and not any(w in local for w in seeds):
            words.add(local)
    for w in words:
        src.need_word(w)
    for name, assigns in ix.scope(src.root).assigns.items():
        for a in assigns:
            v = strip_parens(a.value) if a.value is not None else None
            if v is None or not any(w in ix.text(v) for w in words):
                continue
            if any(_is_graph_call(ix, c, wrappers) for c in (v, *v.named_children)):
                src.need_word(name)
                break


def _is_graphed_callable(q: str | None, graphed: frozenset[str]) -> bool:
    if q is None:
        return False
    return (q in GRAPHED_CALLABLES or q.endswith(GRAPHED_CALLABLE_SUFFIXES) or q in graphed
            or q.rsplit(".", 1)[-1] in graphed)


def _splat_dicts(ix: FileIndex, call: Node) -> tuple[list[Node], bool]:
    """The dictionaries a call's `**expr` arguments unpack (a dict display or a `dict(...)` call, directly or
    through a name assigned in scope), and whether one of them could not be read."""
    args = call.child_by_field_name("arguments")
    out: list[Node] = []
    unread = False
    for a in args.named_children if args is not None else []:
        if a.type != "dictionary_splat" or not a.named_child_count:
            continue
        expr = strip_parens(a.named_children[0])
        if expr.type == "identifier":
            assign, _s, _p = ix.lookup(ix.text(expr), expr)
            expr = strip_parens(assign.value) if assign is not None and assign.value is not None else expr
        f = expr.child_by_field_name("function") if expr.type == "call" else None
        if expr.type == "dictionary" or (f is not None and ix.text(f) == "dict"):
            out.append(expr)
        else:
            unread = True
    return out, unread


def _dict_value(ix: FileIndex, d: Node, key: str) -> Node | None:
    """The value for `key` in a dict display or a `dict(key=...)` call."""
    if d.type == "call":
        return kwarg(ix, d, key)
    for pair in d.named_children:
        if pair.type == "pair" and _string_value(ix, pair.child_by_field_name("key")) == key:
            return pair.child_by_field_name("value")
    return None


def _compile_mode(ix: FileIndex, call: Node) -> tuple[Node | None, str | None, bool]:
    """(the node giving a torch.compile call's mode, the mode when the text settles it, whether the text leaves
    open a CUDA-graph mode): `mode=` or a `**kwargs` dict's "mode"; a variable, an attribute, a conditional
    with a CUDA-graph branch, or an unreadable `**kwargs` leave it open."""
    node = kwarg(ix, call, "mode")
    unread = False
    if node is None:
        dicts, unread = _splat_dicts(ix, call)
        node = next((v for d in dicts if (v := _dict_value(ix, d, "mode")) is not None), None)
    if node is None:
        return None, None, unread
    mode = _string_value(ix, node)
    if mode is not None:
        return node, mode, False
    node_s = strip_parens(node)
    if node_s.type == "conditional_expression":
        branches = [_string_value(ix, c) for c in node_s.named_children[:1] + node_s.named_children[2:3]]
        return node, None, any(b in CG_MODES for b in branches) or any(b is None for b in branches)
    if node_s.type in ("none", "integer", "float", "true", "false"):
        return node, None, False
    return node, None, True


def find_regions(
    ix: FileIndex, wrappers: set[str] | frozenset[str] = frozenset(), cudagraph_flag: bool | None = None,
    graphed: frozenset[str] = frozenset(),
) -> list[CaptureRegion]:
    wrapper_names = set(wrappers) | contextmanager_wrappers(ix) | BUILTIN_CAPTURE_WRAPPERS
    if ix.src.lazy is not None:
        _ask_for_openers(ix, wrapper_names)
    caps = ix.caps
    regions: list[CaptureRegion] = []
    # triton.cudagraphs flag set anywhere in the file
    if cudagraph_flag is None:
        cudagraph_flag = False
        for left in caps.get("cfg_left", []):
            q = ix.qualname(left)
            if q is not None and q.endswith("triton.cudagraphs"):
                cudagraph_flag = True
    for w in caps.get("with", []):
        for item, call, kind in _graph_items(ix, w, wrapper_names):
            body = w.child_by_field_name("body")
            graph_arg = positional(call)
            gname = ix.text(graph_arg[0]) if graph_arg and kind == "graph" else None
            regions.append(
                CaptureRegion(
                    kind=kind, ix=ix, site=call, anchor=w,
                    stmts=[c for c in body.named_children if c.type != "comment"] if body is not None else [],
                    graph_name=gname, stream_arg=kwarg(ix, call, "stream"), with_item=item,
                )
            )
    for call in caps.get("begin", []):
        stmt = call.parent
        if stmt is None or stmt.type != "expression_statement":
            continue
        f = call.child_by_field_name("function")
        obj = f.child_by_field_name("object") if f is not None else None
        if obj is None:
            continue
        recv = ix.text(obj)
        stmts: list[Node] = []
        end_stmt: Node | None = None
        sib = stmt.next_named_sibling
        while sib is not None:
            t = ix.text(sib).replace(" ", "")
            if t.startswith(f"{recv}.capture_end("):
                end_stmt = sib
                break
            if sib.type != "comment":
                stmts.append(sib)
            sib = sib.next_named_sibling
        regions.append(
            CaptureRegion(kind="capture_begin", ix=ix, site=call, anchor=stmt, stmts=stmts, graph_name=recv,
                          end_stmt=end_stmt)
        )
    calls = caps.get("call", [])
    if graphed:
        extra = {n.rsplit(".", 1)[-1] for n in graphed} - set(GRAPHED_CALLABLE_WORDS)
        if extra:
            calls = sorted({c.id: c for w in extra for c in [*calls, *calls_named(ix.src, w)]}.values(),
                           key=lambda n: n.start_byte)
    if any(ix.has(w.encode()) for w in THUNDER_WORDS):  # thunder.jit with CUDA graphs (openers.py)
        ix.src.need_word("jit")
        calls = sorted({c.id: c for c in [*calls, *calls_named(ix.src, "jit")]}.values(), key=lambda n: n.start_byte)
    for call in calls:
        f = call.child_by_field_name("function")
        if f is None:
            continue
        q = ix.qualname(f)
        if _is_graphed_callable(q, graphed) or (q in THUNDER_JIT and thunder_uses_cudagraphs(ix, call)):
            pos = positional(call)
            if not pos:
                continue
            target = strip_parens(pos[0])
            callables = list(target.named_children) if target.type in ("tuple", "list") else [target]
            callables = [through_wrappers(ix, c) for c in callables]
            regions.append(
                CaptureRegion(kind="graphed_callables", ix=ix, site=call, anchor=ix.src.nav.statement_of(call),
                              callables=callables)
            )
        elif q == "torch.compile" or (
            f.type == "attribute" and ix.text(f.child_by_field_name("attribute") or f) == "compile"
            and (kwarg(ix, call, "mode") is not None or _has_splat(call)) and q is not None
            and not q.startswith("re.")
        ):
            mode_node, mode, open_mode = _compile_mode(ix, call)
            uses_cg = mode in CG_MODES or cudagraph_flag or _options_cudagraphs(ix, call)
            if not uses_cg and not open_mode:
                continue
            region = CaptureRegion(kind="compile", ix=ix, site=call, anchor=ix.src.nav.statement_of(call), compile_call=call,
                                   mode_node=mode_node, uncertain=not uses_cg)
            parent = call.parent
            if parent is not None and parent.type == "decorator":
                dd = parent.parent
                fn = dd.child_by_field_name("definition") if dd is not None else None
                if fn is not None and fn.type == "function_definition":
                    region.functions.append(fn)
                    name = fn.child_by_field_name("name")
                    if name is not None:
                        region.compiled_names.append(ix.text(name))
            else:
                pos = positional(call)
                if q == "torch.compile" and pos:
                    region.callables.append(pos[0])
                elif q != "torch.compile" and f.type == "attribute":
                    obj = f.child_by_field_name("object")
                    if obj is not None:
                        region.callables.append(obj)
                        region.compiled_names.append(ix.text(obj))
                if parent is not None and parent.type == "assignment":
                    assigned = parent.child_by_field_name("left")
                    if assigned is not None:
                        region.compiled_names.append(ix.text(assigned))
            regions.append(region)
    # bare @torch.compile decorators when the cudagraphs flag is on
    if cudagraph_flag:
        for finfo in ix.functions:
            for d in finfo.decorators:
                dexpr = d.named_children[0] if d.named_child_count else None
                if dexpr is not None and dexpr.type != "call" and ix.qualname(dexpr) == "torch.compile":
                    regions.append(CaptureRegion(kind="compile", ix=ix, site=dexpr, anchor=finfo.node,
                                                 functions=[finfo.node], compiled_names=[finfo.name]))
    regions.sort(key=lambda r: r.site.start_byte)
    return regions


def _has_splat(call: Node) -> bool:
    args = call.child_by_field_name("arguments")
    return args is not None and any(a.type == "dictionary_splat" for a in args.named_children)


def _options_cudagraphs(ix: FileIndex, call: Node) -> bool:
    opts = kwarg(ix, call, "options")
    if opts is None:
        dicts, _unread = _splat_dicts(ix, call)
        opts = next((v for d in dicts if (v := _dict_value(ix, d, "options")) is not None), None)
    if opts is None:
        return False
    opts = strip_parens(opts)
    if opts.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(opts), opts)
        if assign is None or assign.value is None:
            return False
        opts = assign.value
    for pair in opts.named_children:
        if pair.type == "pair":
            k = pair.child_by_field_name("key")
            v = pair.child_by_field_name("value")
            if k is not None and v is not None and _string_value(ix, k) == "triton.cudagraphs" and ix.text(v) == "True":
                return True
    return False




_WITH_OR_SCOPE = frozenset({"with_statement", "function_definition", "module"})


def opens_stream_context(ix: FileIndex, stmt: Node) -> bool:
    """`stmt` is a `with torch.cuda.stream(...)` (one of its items)."""
    if stmt.type != "with_statement":
        return False
    clause = next((c for c in stmt.children if c.type == "with_clause"), None)
    for item in clause.named_children if clause is not None else []:
        v = item.child_by_field_name("value")
        if v is not None and v.type == "call":
            f = v.child_by_field_name("function")
            if f is not None and ix.qualname(f) in ("torch.cuda.stream", "torch.cuda.StreamContext"):
                return True
    return False


def is_inside_stream_context(ix: FileIndex, node: Node) -> bool:
    """Lexically inside `with torch.cuda.stream(...)` (or a `torch.cuda.set_stream` earlier in the block)."""
    nav = ix.src.nav
    p = nav.enclosing(node, _WITH_OR_SCOPE)
    while p is not None and p.type == "with_statement":
        if opens_stream_context(ix, p):
            return True
        p = nav.enclosing(p, _WITH_OR_SCOPE)
    return False
