"""Issue 21's code fixes for replay-nested-static-input (DPX312: refresh the nested static inputs in place, through
a recursive copy helper) and replay-graph-cache-key (DPX314: key the graph cache by full shapes). Each fix is
applied to the GPU case of tests/gpu/frozen_state and to two more shapes; the fixed file must parse, lose the
finding and gain no other; shapes outside what the fix can tell offer no code fix (the rule's prose stays)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from denpex.source import analyse_source
from denpex.source.engine.analyse import apply_edits, apply_fixes
from denpex.source.model import Fix, SourceFinding

GPU = Path(__file__).resolve().parents[1] / "gpu" / "frozen_state"
NESTED = "replay-nested-static-input"
CACHE = "replay-graph-cache-key"


def _findings(text: str, rule: str) -> list[SourceFinding]:
    return [f for f in analyse_source(text, "case.py") if f.rule == rule]


def _code_fixes(f: SourceFinding) -> list[Fix]:
    return [fx for fx in f.fixes if not fx.title.startswith(("Disable", "Eager", "Run without"))]


def _fixed(text: str, rule: str) -> str:
    """The file after the finding's one code fix: it is unsafe, parses, clears the rule and adds no finding."""
    found = _findings(text, rule)
    assert len(found) == 1, found
    fixes = _code_fixes(found[0])
    assert len(fixes) == 1, [fx.title for fx in found[0].fixes]
    assert fixes[0].safety == "unsafe"
    out = apply_edits(text, fixes[0].edits)
    ast.parse(out)
    assert _findings(out, rule) == []
    before = {(f.rule, f.message) for f in analyse_source(text, "case.py") if f.rule != rule}
    after = {(f.rule, f.message) for f in analyse_source(out, "case.py")}
    assert after <= before, after - before
    return out


def _no_code_fix(text: str, rule: str) -> None:
    found = _findings(text, rule)
    assert found, "the shape must still be flagged"
    assert all(_code_fixes(f) == [] for f in found), [fx.title for f in found for fx in f.fixes]


def _changed_lines(a: str, b: str) -> tuple[list[str], list[str]]:
    """Lines only in a, lines only in b (the fix touches nothing else)."""
    la, lb = a.splitlines(), b.splitlines()
    return [x for x in la if x not in lb], [x for x in lb if x not in la]


def _helper(fixed: str) -> Any:
    """The copy helper the fix inserted, compiled on its own and bound to the real torch."""
    tree = ast.parse(fixed)
    defs = [d for d in tree.body if isinstance(d, ast.FunctionDef) and d.name.startswith("copy_nested_")]
    assert len(defs) == 1
    env: dict[str, Any] = {"torch": torch}
    exec(compile(ast.Module(body=[defs[0]], type_ignores=[]), "helper.py", "exec"), env)
    return env[defs[0].name]


# ---- replay-nested-static-input ---------------------------------------------------------------------------------
NESTED_METHOD = """
    import torch


    def clone_arg(a):
        if isinstance(a, torch.Tensor):
            return a.clone()
        if isinstance(a, dict):
            return {k: clone_arg(v) for k, v in a.items()}
        if isinstance(a, (list, tuple)):
            return type(a)(clone_arg(v) for v in a)
        return a


    def refresh(static, new):
        for d, s in zip(static, new):
            if torch.is_tensor(d):  # TOP
                d.copy_(s)


    class Graphed:
        def __init__(self, module):
            self.module = module
            self.graph = None

        def __call__(self, *args):
            if self.graph is None:
                self.static_args = [clone_arg(a) for a in args]
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.static_out = self.module(*self.static_args)
            refresh(self.static_args, args)
            self.graph.replay()
            return self.static_out
"""

NESTED_FUNCTION = """
    import torch as th


    def clone_arg(a):
        if isinstance(a, th.Tensor):
            return a.clone()
        if isinstance(a, dict):
            return {k: clone_arg(v) for k, v in a.items()}
        return a


    def run(model, batches):
        static = [clone_arg(a) for a in batches[0]]
        g = th.cuda.CUDAGraph()
        with th.cuda.graph(g):
            out = model(*static)
        results = []
        for batch in batches:
            for dst, src in zip(static, batch):
                if isinstance(dst, th.Tensor):  # TOP
                    dst.copy_(src)  # the top level only
            g.replay()
            results.append(out.clone())
        return results
"""


def test_nested_fix_on_the_gpu_case() -> None:
    text = (GPU / f"{NESTED}.py").read_text()
    out = _fixed(text, NESTED)
    gone, new = _changed_lines(text, out)
    assert [ln.strip() for ln in gone] == ["if isinstance(dst, torch.Tensor):", "dst.copy_(src)"]
    assert "            copy_nested_(dst, src)" in new
    assert "for dst, src in zip(self.static_args, args, strict=False):" in out  # the loop's header stays


def test_nested_fix_through_a_refresh_function_handed_the_container() -> None:
    text = textwrap.dedent(NESTED_METHOD)
    out = _fixed(text, NESTED)
    assert "    for d, s in zip(static, new):\n        copy_nested_(d, s)\n" in out
    assert out.index("def copy_nested_(") < out.index("def clone_arg(")


def test_nested_fix_in_a_function_with_an_aliased_torch() -> None:
    text = textwrap.dedent(NESTED_FUNCTION)
    out = _fixed(text, NESTED)
    assert "isinstance(dst, th.Tensor):\n        dst.copy_(src)" in out  # the helper uses the file's alias
    assert "        for dst, src in zip(static, batch):\n            copy_nested_(dst, src)\n        g.replay()" in out


def test_nested_fix_helper_copies_every_nested_tensor_in_place() -> None:
    copy = _helper(_fixed(textwrap.dedent(NESTED_METHOD), NESTED))
    x, mask, ids = torch.zeros(2), torch.zeros(3), torch.zeros(1)
    extras: dict[str, Any] = {"mask": mask, "ids": [ids, 7]}
    static: list[Any] = [x, extras, None]
    storage = [x.data_ptr(), mask.data_ptr(), ids.data_ptr()]
    # the new batch lists its dict's keys in another order: a flatten of both sides would mix them up
    new = [torch.ones(2), {"ids": [torch.full((1,), 5.0), 9], "mask": torch.full((3,), 2.0)}, None]
    for d, s in zip(static, new, strict=True):
        copy(d, s)
    assert x.tolist() == [1.0, 1.0] and mask.tolist() == [2.0, 2.0, 2.0] and ids.tolist() == [5.0]
    assert extras["ids"][1] == 7 and static[2] is None  # non-tensors stay as captured
    assert static[0] is x and extras["mask"] is mask and extras["ids"][0] is ids  # the same buffers, in place
    assert [x.data_ptr(), mask.data_ptr(), ids.data_ptr()] == storage


TWO_LOOPS = """
    import torch


    def clone_arg(a):
        if isinstance(a, dict):
            return {k: clone_arg(v) for k, v in a.items()}
        return a.clone()


    class Encoder:
        def __call__(self, *args):
            if self.graph is None:
                self.static_args = [clone_arg(a) for a in args]
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.out = self.module(*self.static_args)
            for dst, src in zip(self.static_args, args):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)
            self.graph.replay()
            return self.out


    class Decoder:
        def __call__(self, *args):
            if self.graph is None:
                self.static_in = [clone_arg(a) for a in args]
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.out = self.module(*self.static_in)
            for dst, src in zip(self.static_in, args):
                if isinstance(dst, torch.Tensor):
                    dst.copy_(src)
            self.graph.replay()
            return self.out
"""


def test_nested_fix_inserts_the_helper_once_for_two_loops() -> None:
    text = textwrap.dedent(TWO_LOOPS)
    assert len(_findings(text, NESTED)) == 2
    once = apply_fixes(text, _findings(text, NESTED), unsafe=True)
    assert once.count("def copy_nested_") == 1 and len(_findings(once, NESTED)) == 1  # one place: one per pass
    twice = apply_fixes(once, _findings(once, NESTED), unsafe=True)
    ast.parse(twice)
    assert twice.count("def copy_nested_") == 1 and _findings(twice, NESTED) == []  # the second reuses it
    assert twice.count("            copy_nested_(dst, src)\n") == 2


@pytest.mark.parametrize("change", [
    # the body does more than copy: which of its statements belongs to the refresh is not known
    ("                dst.copy_(src)\n", "                dst.copy_(src)\n                n_copied = 1\n"),
    # the copy passes options the helper would drop
    ("dst.copy_(src)", "dst.copy_(src, non_blocking=True)"),
    # the guard tests more than tensorness
    ("if isinstance(dst, torch.Tensor):", "if isinstance(dst, torch.Tensor) and dst.is_floating_point():"),
    # a third loop target: what it is for is not known
    ("for dst, src in zip(self.static_args, args, strict=False):",
     "for dst, src, _m in zip(self.static_args, args, args, strict=False):"),
])
def test_nested_shapes_the_fix_cannot_tell_offer_no_code_fix(change: tuple[str, str]) -> None:
    text = (GPU / f"{NESTED}.py").read_text()
    assert change[0] in text
    _no_code_fix(text.replace(change[0], change[1], 1), NESTED)


# ---- replay-graph-cache-key -------------------------------------------------------------------------------------
CACHE_TWO = """
    import torch


    class BucketCache:
        def __init__(self, fn):
            self.fn = fn
            self.entries = {}

        def _capture(self, q, d):
            static_q, static_d = q.clone(), d.clone()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = self.fn(static_q, static_d)
            return g, static_q, static_d, out

        def __call__(self, q, d):
            key = q.size(1)  # KEY
            if key not in self.entries:
                self.entries[key] = self._capture(q, d)
                print(f"captured {key} ({len(self.entries)} graphs)")
            g, static_q, static_d, out = self.entries[key]
            static_q[:len(q)].copy_(q)
            static_d[:len(q)].copy_(d)
            g.replay()
            return out[:len(q)]
"""

CACHE_MODULE = """
    import logging

    import torch

    log = logging.getLogger("cache")
    _GRAPHS = {}


    def _capture(fn, x):
        static_x = x.clone()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = fn(static_x)
        return g, static_x, out


    def scored(fn, x):
        key = x.shape[1]  # KEY
        entry = _GRAPHS.get(key)
        if entry is None:
            entry = _GRAPHS[key] = _capture(fn, x)
            log.info("bucket %r: %d graphs", key, len(_GRAPHS))
        g, static_x, out = entry
        n = x.shape[0]
        static_x[:n].copy_(x)
        g.replay()
        return out[:n]


    def reset():
        _GRAPHS.clear()
"""


def test_cache_key_fix_on_the_gpu_case() -> None:
    text = (GPU / f"{CACHE}.py").read_text()
    out = _fixed(text, CACHE)
    assert _changed_lines(text, out) == (["        key = q.shape[1]"], ["        key = tuple(q.shape)"])


def test_cache_key_fix_keys_by_every_copied_input() -> None:
    text = textwrap.dedent(CACHE_TWO)
    out = _fixed(text, CACHE)
    assert _changed_lines(text, out) == (["        key = q.size(1)  # KEY"],
                                         ["        key = (tuple(q.shape), tuple(d.shape))  # KEY"])


def test_cache_key_fix_on_a_module_level_cache_read_by_get_and_logged_with_r() -> None:
    text = textwrap.dedent(CACHE_MODULE)
    out = _fixed(text, CACHE)
    assert _changed_lines(text, out) == (["    key = x.shape[1]  # KEY"], ["    key = tuple(x.shape)  # KEY"])


@pytest.mark.parametrize("change", [
    # the key is logged as a number: a tuple would break the %d
    ('log.info("bucket %r: %d graphs", key, len(_GRAPHS))', 'log.info("bucket %d: %d graphs", key, len(_GRAPHS))'),
    # the key is formatted with a numeric spec in an f-string
    ('log.info("bucket %r: %d graphs", key, len(_GRAPHS))', 'print(f"bucket {key:>4}")'),
    # the key leaves the function
    ("    return out[:n]", "    return out[:n], key"),
    # another function looks the cache up by its own key
    ("    _GRAPHS.clear()", "    return _GRAPHS[1024]"),
    # the key is bound twice
    ("    g.replay()\n", "    g.replay()\n    key = None\n"),
])
def test_cache_key_shapes_the_fix_cannot_tell_offer_no_code_fix(change: tuple[str, str]) -> None:
    text = textwrap.dedent(CACHE_MODULE)
    assert change[0] in text
    _no_code_fix(text.replace(change[0], change[1], 1), CACHE)


def test_cache_key_spelled_inline_offers_no_code_fix() -> None:
    # the key is the store's own subscript: the lookups spelling it again would be left behind
    text = (GPU / f"{CACHE}.py").read_text().replace("        key = q.shape[1]\n", "").replace(
        "[key]", "[q.shape[1]]").replace("if key not in", "if q.shape[1] not in")
    assert "key" not in text.split("def __call__")[1].split("return")[0].replace("keys", "")
    _no_code_fix(text, CACHE)


def test_cache_key_of_an_intermediate_name_offers_no_code_fix() -> None:
    text = (GPU / f"{CACHE}.py").read_text().replace("        key = q.shape[1]",
                                                        "        seq = q.shape[1]\n        key = seq")
    _no_code_fix(text, CACHE)
