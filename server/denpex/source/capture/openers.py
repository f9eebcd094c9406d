"""Built-in capture openers of accelerator and library APIs, beyond what `capture-wrappers` and
`graphed-callables` list (they add to these, never replace them):

- DeepSpeed: `with get_accelerator().capture_to_graph(g):` (deepspeed/accelerator/cuda_accelerator.py returns
  `torch.cuda.graph(graph, pool, stream)`), a capture wrapper by its method name, whatever object it is called
  on (the accelerator's class is usually outside the user's workspace);
- Lightning Thunder: `thunder.jit(fn, use_cudagraphs=True)` (older releases) and
  `thunder.jit(fn, transforms=[CUDAGraphTransform()])` capture `fn`; a plain `thunder.jit(fn)` captures nothing;
- tensordict: `CudaGraphModule(TensorDictModule(module, in_keys, out_keys))` captures what the TensorDictModule
  calls, `module` (regions.py takes the graphed callable through the wrapper).
"""

from __future__ import annotations

from tree_sitter import Node

from denpex.source.resolve.index import FileIndex, kwarg, positional
from denpex.source.syntax.parse import strip_parens

BUILTIN_CAPTURE_WRAPPERS = frozenset({"capture_to_graph"})
THUNDER_JIT = frozenset({"thunder.jit"})
# words a file spells when it may call thunder.jit with CUDA graphs (the prefilter of the `jit` calls)
THUNDER_WORDS = ("use_cudagraphs", "CUDAGraphTransform")
# tensordict's module wrapper: calling one calls the module it was built with (its first argument, or `module=`)
_TD_MODULE = "TensorDictModule"


def thunder_uses_cudagraphs(ix: FileIndex, call: Node) -> bool:
    """`thunder.jit(fn, use_cudagraphs=True)` or `transforms=` naming a CUDAGraphTransform (directly, or a name
    bound to one in scope)."""
    flag = kwarg(ix, call, "use_cudagraphs")
    if flag is not None and strip_parens(flag).type == "true":
        return True
    tr = kwarg(ix, call, "transforms")
    if tr is None:
        return False
    tr = strip_parens(tr)
    elems = list(tr.named_children) if tr.type in ("list", "tuple") else [tr]
    for e in elems:
        e = strip_parens(e)
        if e.type == "identifier":
            assign, _s, _p = ix.lookup(ix.text(e), e)
            e = strip_parens(assign.value) if assign is not None and assign.value is not None else e
        if e.type == "call" and "CUDAGraphTransform" in ix.text(e.child_by_field_name("function") or e):
            return True
    return False


def _td_module_arg(ix: FileIndex, node: Node) -> Node | None:
    """The module a `TensorDictModule(module, ...)` call wraps (any import spelling: the qualified name's end)."""
    if node.type != "call":
        return None
    f = node.child_by_field_name("function")
    q = (ix.qualname(f) or ix.text(f)) if f is not None else ""
    if q.rsplit(".", 1)[-1] != _TD_MODULE:
        return None
    mod = kwarg(ix, node, "module")
    pos = positional(node)
    return mod if mod is not None else (pos[0] if pos else None)


def through_wrappers(ix: FileIndex, expr: Node) -> Node:
    """The callable a graphed callable really runs: `module` for `TensorDictModule(module, ...)`, spelled there or
    bound to a name in scope; `expr` itself otherwise."""
    e = strip_parens(expr)
    inner = _td_module_arg(ix, e)
    if inner is None and e.type == "identifier":
        assign, _s, _p = ix.lookup(ix.text(e), e)
        if assign is not None and assign.value is not None:
            inner = _td_module_arg(ix, strip_parens(assign.value))
    return inner if inner is not None else expr
