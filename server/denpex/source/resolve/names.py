"""Import and alias resolution: turn `t.cuda.graph`, `cuda.graph`, `graph` into `torch.cuda.graph`.

Like torchfix's qualified-name matching: every `import` / `from ... import` in the file (at any depth, since
imports inside functions are common in real projects) maps a local name to a dotted qualified name. A name
that no import binds resolves to itself, so snippets that never import torch still match.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from denpex.source.syntax.chunks import UNKNOWN
from denpex.source.syntax.parse import ParsedSource, run_query

_IMPORTS = """
(import_statement) @imp
(import_from_statement) @from
(future_import_statement) @fut
"""


@dataclass
class ImportMap:
    """Local name -> qualified name, plus the modules imported (for workspace resolution). Read `names` and
    `modules` through `lookup`, `items` and `all_modules`: in a lazily parsed file they ask for the imports
    the tree does not hold yet."""

    names: dict[str, str] = field(default_factory=dict)
    modules: set[str] = field(default_factory=set)
    src: ParsedSource | None = field(default=None, repr=False, compare=False)

    def lookup(self, name: str) -> str | None:
        found = self.names.get(name)
        if self.src is not None:
            self.src.need_import(name, found)
        return found

    def items_for(self, target: str) -> list[str]:
        """Local names bound to the qualified name `target`, in binding order."""
        if self.src is not None:
            self.src.need_binding_of(target)
        return [local for local, full in self.names.items() if full == target]

    def all_modules(self) -> set[str]:
        if self.src is not None:
            return self.modules | self.src.unparsed_modules()
        return self.modules

    def may_bind(self, name: str, word: str) -> bool:
        """Whether an import of the file (parsed or not) may bind `name` to a qualified name spelling `word`;
        asks for nothing (a cheap test before a `lookup`)."""
        if word in self.names.get(name, ""):
            return True
        lazy = self.src.lazy if self.src is not None else None
        return lazy is not None and any(t is not None and (word in t or t == UNKNOWN)
                                        for _i, t in lazy.imports.get(name, ()))

    def resolve_dotted(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        target = self.lookup(head)
        if target is None:
            return dotted
        return f"{target}.{rest}" if rest else target


def _dotted(src: ParsedSource, node: Node) -> str:
    return src.node_text(node).replace(" ", "").replace("\\\n", "")


def build_imports(src: ParsedSource, caps: dict[str, list[Node]] | None = None) -> ImportMap:
    out = ImportMap(src=src if src.lazy is not None else None)
    if caps is None:
        caps = run_query(_IMPORTS, src.root)
    for node in caps.get("imp", []):
        for child in node.named_children:
            if child.type == "dotted_name":
                full = _dotted(src, child)
                out.modules.add(full)
                head = full.split(".")[0]
                out.names.setdefault(head, head)
            elif child.type == "aliased_import":
                name = child.child_by_field_name("name")
                alias = child.child_by_field_name("alias")
                if name is not None and alias is not None:
                    full = _dotted(src, name)
                    out.modules.add(full)
                    out.names[src.node_text(alias)] = full
    for node in caps.get("from", []):
        module = node.child_by_field_name("module_name")
        if module is None:
            continue
        mod = _dotted(src, module).lstrip(".")
        out.modules.add(mod)
        for child in node.children_by_field_name("name"):
            if child.type == "dotted_name":
                dname = _dotted(src, child)
                out.names[dname.split(".")[0]] = f"{mod}.{dname}" if mod else dname
            elif child.type == "aliased_import":
                name_node = child.child_by_field_name("name")
                alias_node = child.child_by_field_name("alias")
                if name_node is not None and alias_node is not None:
                    iname = _dotted(src, name_node)
                    out.names[src.node_text(alias_node)] = f"{mod}.{iname}" if mod else iname
    return out


def dotted_of(src: ParsedSource, node: Node) -> str | None:
    """`a.b.c` for an identifier/attribute chain, else None (calls, subscripts ...)."""
    parts: list[str] = []
    n = node
    while True:
        if n.type == "identifier":
            parts.append(src.node_text(n))
            break
        if n.type == "attribute":
            attr = n.child_by_field_name("attribute")
            obj = n.child_by_field_name("object")
            if attr is None or obj is None:
                return None
            parts.append(src.node_text(attr))
            n = obj
            continue
        if n.type == "parenthesized_expression" and n.named_child_count == 1:
            n = n.named_children[0]
            continue
        return None
    return ".".join(reversed(parts))


def qualname(src: ParsedSource, imports: ImportMap, node: Node) -> str | None:
    dotted = dotted_of(src, node)
    if dotted is None:
        return None
    return canonical(imports.resolve_dotted(dotted))


# spellings of one API under different module paths
_CANON = {
    "torch.cuda.graphs.graph": "torch.cuda.graph",
    "torch.cuda.graphs.CUDAGraph": "torch.cuda.CUDAGraph",
    "torch.cuda.graphs.make_graphed_callables": "torch.cuda.make_graphed_callables",
    "torch.cuda.graphs.graph_pool_handle": "torch.cuda.graph_pool_handle",
    "torch.cuda.graphs.is_current_stream_capturing": "torch.cuda.is_current_stream_capturing",
    "torch.cuda.amp.GradScaler": "torch.amp.GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.random.manual_seed": "torch.manual_seed",
    "torch.cuda.random.manual_seed": "torch.cuda.manual_seed",
    "torch.nn.modules.linear.Linear": "torch.nn.Linear",
}


def canonical(name: str) -> str:
    return _CANON.get(name, name)
