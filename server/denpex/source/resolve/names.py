"""Import and alias resolution: turn `t.cuda.graph`, `cuda.graph`, `graph` into `torch.cuda.graph`.

Like torchfix's qualified-name matching: every `import` / `from ... import` in the file (at any depth, since
imports inside functions are common in real projects) maps a local name to a dotted qualified name. A name
that no import binds resolves to itself, so snippets that never import torch still match.

A relative import is resolved against the importing file's folder, as Python resolves it inside a package
(namespace packages included: a folder without `__init__.py` is walked like any other): `from ..utils import f`
in `pkg/sub/run.py` binds `f` to `pkg.utils.f`, `from . import b` to `pkg.sub.b` (a submodule or a name of
`pkg/sub/__init__.py`: the lookup tells which). The name is the file's path in dots (`path_parts`), which
`Workspace.lookup_module` maps back to the file. An import that climbs above the path keeps its dots, and
names no module: nothing, rather than a module of the same name elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

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
    # a name bound by a relative import -> its target as the file's text spells it, dots dropped: what the lazy
    # parse's import table (syntax.chunks) holds for it, so the two compare as they do for absolute imports
    spelled: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    stars: list[str] = field(default_factory=list)  # the modules of `from M import *`, in order

    def star_modules(self) -> list[str]:
        """The modules whose public names `from M import *` binds here (in a lazily parsed file, every star import
        of its text is asked for: it may sit in a chunk the tree does not hold)."""
        if self.src is not None:
            self.src.need_star_imports()
        return self.stars

    def lookup(self, name: str) -> str | None:
        found = self.names.get(name)
        if self.src is not None:
            self.src.need_import(name, self.spelled.get(name, found))
        return found

    def bind(self, local: str, full: str, spelled: str | None = None) -> None:
        self.names[local] = full
        if spelled is None:
            self.spelled.pop(local, None)
        else:
            self.spelled[local] = spelled

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
        if word in self.spelled.get(name, self.names.get(name, "")):
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


def path_parts(path: str) -> list[str]:
    """A file's path as module parts (`pkg/sub/run.py` -> pkg, sub, run; a package's `__init__.py` is the
    package), without a drive or root: the name a resolved relative import gives a module of that folder."""
    p = PurePath(path)
    return module_parts(p.with_suffix("").parts) if p.name else []


def module_parts(parts: Sequence[str]) -> list[str]:
    """Path parts (suffix dropped) as module parts: a package's `__init__` is the package; no root or drive."""
    out = list(parts[:-1] if parts and parts[-1] == "__init__" else parts)
    return [x for x in out if x not in ("/", "\\") and not x.endswith(":")]


def _folder_parts(path: str | None) -> list[str]:
    """The module parts of the folder a file sits in (its package, for a relative import)."""
    if path is None:
        return []
    p = PurePath(path)
    return [x for x in p.parent.parts if x not in ("/", "\\", ".") and not x.endswith(":")]


def _from_module(text: str, folder: list[str]) -> tuple[str, str | None]:
    """(module, spelled) of a `from MODULE import`: an absolute module as written (spelled None); a relative one
    resolved against the importing file's folder, with its text minus the dots as `spelled` (what HEAD-style
    tables hold). One dot is the folder itself, each further dot one folder up; an import that climbs above
    the path keeps its dots (a name no module has)."""
    rest = text.lstrip(".")
    level = len(text) - len(rest)
    if level == 0:
        return text, None
    up = level - 1
    if up > len(folder):
        return text, rest
    base = [*folder[: len(folder) - up], *([rest] if rest else [])]
    return ".".join(base), rest


def build_imports(src: ParsedSource, caps: dict[str, list[Node]] | None = None,
                  path: str | None = None) -> ImportMap:
    """The file's imports; `path` (the file's path) resolves its relative imports (without it the file is taken
    to sit at the top: `from . import b` is `b`, `from .. import b` names nothing)."""
    out = ImportMap(src=src if src.lazy is not None else None)
    if caps is None:
        caps = run_query(_IMPORTS, src.root)
    for node in caps.get("imp", []):
        for child in node.named_children:
            if child.type == "dotted_name":
                full = _dotted(src, child)
                out.modules.add(full)
                head = full.split(".")[0]
                if head not in out.names:
                    out.bind(head, head)
            elif child.type == "aliased_import":
                name = child.child_by_field_name("name")
                alias = child.child_by_field_name("alias")
                if name is not None and alias is not None:
                    full = _dotted(src, name)
                    out.modules.add(full)
                    out.bind(src.node_text(alias), full)
    folder: list[str] | None = None
    for node in caps.get("from", []):
        module = node.child_by_field_name("module_name")
        if module is None:
            continue
        text = _dotted(src, module)
        if text.startswith(".") and folder is None:
            folder = _folder_parts(path)
        mod, spelled = _from_module(text, folder or [])
        # the module set stays as the lazy parse's table spells it (dots dropped): entrypoints asks it for a
        # framework's prefixes, and a parsed and an unparsed import must answer alike
        out.modules.add(spelled if spelled is not None else mod)
        if any(c.type == "wildcard_import" for c in node.named_children):
            out.stars.append(mod)
        for child in node.children_by_field_name("name"):
            if child.type == "dotted_name":
                dname = _dotted(src, child)
                out.bind(dname.split(".")[0], f"{mod}.{dname}" if mod else dname,
                         None if spelled is None else f"{spelled}.{dname}" if spelled else dname)
            elif child.type == "aliased_import":
                name_node = child.child_by_field_name("name")
                alias_node = child.child_by_field_name("alias")
                if name_node is not None and alias_node is not None:
                    iname = _dotted(src, name_node)
                    out.bind(src.node_text(alias_node), f"{mod}.{iname}" if mod else iname,
                             None if spelled is None else f"{spelled}.{iname}" if spelled else iname)
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
