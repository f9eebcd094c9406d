"""Capture openers beyond `torch.cuda.graph`: other libraries' graphed-callable APIs, and torch.compile modes
that arrive through `**kwargs` dicts or variables (research: real-code-idioms.md, items 6 and 8)."""

from __future__ import annotations

import pytest

from denpex.source import ScanConfig, analyse_source

_OVERWRITE = """
x = torch.randn(16, device="cuda")
y = torch.randn(16, device="cuda")
a = f(x)
b = f(y)
print(a.sum())
"""


def _compiled(line: str) -> str:
    return "import torch\n\n\ndef body(x):\n    return x * 2\n\n\n" + line + "\n" + _OVERWRITE


def _found(src: str, config: ScanConfig | None = None) -> list[tuple[str, int, str]]:
    return [(f.rule, f.start_line, f.severity) for f in analyse_source(src, "m.py", config=config)]


ROW = 11  # `a = f(x)` in _compiled(...)


@pytest.mark.parametrize("line", [
    'f = torch.compile(body, **{"mode": "reduce-overhead"})',
    'KW = {"mode": "max-autotune", "fullgraph": True}\nf = torch.compile(body, **KW)',
    'f = torch.compile(body, **dict(mode="reduce-overhead"))',
    'f = torch.compile(body, **{"options": {"triton.cudagraphs": True}})',
])
def test_compile_mode_from_a_kwargs_dict(line: str) -> None:
    src = _compiled(line)
    row = ROW + line.count("\n")
    assert _found(src) == [("compile-output-overwritten", row, "error")]


def test_mode_fix_edits_the_dict_value() -> None:
    src = _compiled('f = torch.compile(body, **{"mode": "reduce-overhead"})')
    fix = next(x for f in analyse_source(src, "m.py") for x in f.fixes if "without CUDA graphs" in x.title)
    (edit,) = fix.edits
    assert src.splitlines()[edit.start_line][edit.start_col:edit.end_col] == '"reduce-overhead"'
    assert edit.new_text == '"default"'


@pytest.mark.parametrize("line", [
    "f = torch.compile(body, mode=args.compile_mode)",
    "f = torch.compile(body, **get_compile_kwargs())",
    'f = torch.compile(body, mode="reduce-overhead" if fast else "default")',
])
def test_mode_left_open_is_reported_as_a_warning(line: str) -> None:
    found = analyse_source(_compiled(line), "m.py")
    assert [(f.rule, f.start_line, f.severity) for f in found] == [("compile-output-overwritten", ROW, "warning")]
    assert "its mode is not a constant here" in found[0].message
    assert not any("without CUDA graphs" in x.title for x in found[0].fixes)  # no mode to rewrite


@pytest.mark.parametrize("line", [
    'f = torch.compile(body, **{"mode": "default"})',
    'f = torch.compile(body, mode="max-autotune-no-cudagraphs")',
    'f = torch.compile(body, mode="default" if fast else "max-autotune-no-cudagraphs")',
    "f = torch.compile(body)",
    "f = torch.compile(body, mode=None)",
])
def test_modes_without_cuda_graphs_open_nothing(line: str) -> None:
    assert _found(_compiled(line)) == []


def test_module_compile_with_kwargs_dict() -> None:
    src = ('import torch\n\n\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n\n\n'
           'f = M()\nf.compile(**{"mode": "reduce-overhead"})\n' + _OVERWRITE)
    assert [r for r, _l, _s in _found(src)] == ["compile-output-overwritten"]


_ITEM = "\n\ndef body(x):\n    return x.item()\n\n\n"


@pytest.mark.parametrize("head,call", [
    ("import transformer_engine.pytorch as te", "g = te.make_graphed_callables(body, (sample,))"),
    ("from transformer_engine.pytorch import make_graphed_callables", "g = make_graphed_callables(body, (sample,))"),
    ("from tensordict.nn import CudaGraphModule", "g = CudaGraphModule(body, warmup=2)"),
    ("from moshi.utils.compile import CUDAGraphed", "g = CUDAGraphed(body)"),
])
def test_other_libraries_graphed_callables(head: str, call: str) -> None:
    src = f"import torch\n{head}\n{_ITEM}{call}\n"
    found = analyse_source(src, "m.py")
    assert [(f.rule, f.start_line, f.capture_site.line if f.capture_site else None) for f in found] == [
        ("capture-item-sync", 5, 8)]
    fallback = next(x for x in found[0].fixes if "eager fallback" in x.title)
    assert fallback.edits[0].new_text == "body"


def test_unknown_graphed_callable_needs_configuration() -> None:
    src = f"import torch\nfrom mylib.graphs import graphed\n{_ITEM}g = graphed(body)\n"
    assert _found(src) == []
    for name in ("mylib.graphs.graphed", "graphed"):
        cfg = ScanConfig(graphed_callables=frozenset({name}))
        assert _found(src, cfg) == [("capture-item-sync", 5, "error")]
    # an unrelated function of the same last name in another module is not it
    other = src.replace("from mylib.graphs import graphed", "from otherlib import graphed")
    assert _found(other, ScanConfig(graphed_callables=frozenset({"mylib.graphs.graphed"}))) == []


@pytest.mark.parametrize("head,ret", [
    ("", "return torch.cuda.graph(g, pool)"),
    ("from torch.cuda import graph as G\n", "return G(g, pool)"),
    ("from torch import cuda\n", "return (cuda.graph(g, pool))"),  # parenthesised: not a returned call
])
@pytest.mark.parametrize("method", ["capture_to_graph", "open_graph"])
def test_function_returning_the_capture_context_is_a_wrapper(head: str, ret: str, method: str) -> None:
    """DeepSpeed's accelerator.capture_to_graph(g) returns torch.cuda.graph(...): entering it opens a capture. A
    project's own method of that kind (`open_graph`) is found from its `return`; DeepSpeed's name is a built-in
    capture wrapper (capture/openers.py), found however its body is written."""
    src = (f"import torch\n{head}\n\nclass Accel:\n    def {method}(self, g, pool=None):\n        {ret}\n\n\n"
           "def get_accelerator():\n    return Accel()\n\n\ndef run(x):\n    g = torch.cuda.CUDAGraph()\n"
           f"    with get_accelerator().{method}(g):\n        y = x.item()\n    return y\n")
    found = [(f.rule, src.splitlines()[f.start_line].strip()) for f in analyse_source(src, "m.py")]
    hidden = ret.startswith("return (") and method != "capture_to_graph"
    assert found == ([] if hidden else [("capture-item-sync", "y = x.item()")])


_ITEM_BODY = "\n\ndef body(x):\n    return x.sum().item()\n\n\n"


def test_deepspeed_accelerator_capture_without_its_source() -> None:
    """`get_accelerator().capture_to_graph(g)` from an installed DeepSpeed (no accelerator class in the files)."""
    src = ("import torch\nfrom deepspeed.accelerator import get_accelerator\n\n\ndef run(x):\n"
           "    g = torch.cuda.CUDAGraph()\n    with get_accelerator().capture_to_graph(g):\n"
           "        y = x.sum().item()\n    return y\n")
    assert _found(src) == [("capture-item-sync", 7, "error")]


@pytest.mark.parametrize("tail,found", [
    ("f = thunder.jit(body, use_cudagraphs=True)", True),
    ("f = thunder.jit(body, transforms=[CUDAGraphTransform()])", True),
    ("cg = CUDAGraphTransform()\nf = thunder.jit(body, transforms=(cg,))", True),
    ("f = thunder.jit(body)", False),
    ("f = thunder.jit(body, use_cudagraphs=False)", False),
    ("f = thunder.jit(body, transforms=[MaterializationTransform()])", False),
])
def test_thunder_jit_with_cuda_graphs(tail: str, found: bool) -> None:
    src = ("import torch\nimport thunder\nfrom thunder.transforms.cudagraph import CUDAGraphTransform\n"
           f"{_ITEM_BODY}{tail}\n")
    assert _found(src) == ([("capture-item-sync", 6, "error")] if found else [])


@pytest.mark.parametrize("build", [
    "g = CudaGraphModule(TensorDictModule(Net(), in_keys=['obs'], out_keys=['act']))",
    "policy = TensorDictModule(Net(), in_keys=['obs'], out_keys=['act'])\ng = CudaGraphModule(policy, warmup=2)",
    "policy = TensorDictModule(module=Net(), in_keys=['obs'], out_keys=['act'])\ng = CudaGraphModule(policy)",
])
def test_tensordict_cuda_graph_module_through_tensordict_module(build: str) -> None:
    src = ("import torch\nfrom tensordict.nn import CudaGraphModule, TensorDictModule\n\n\n"
           "class Net(torch.nn.Module):\n    def forward(self, x):\n        return x / x.max().item()\n\n\n"
           f"{build}\n")
    assert _found(src) == [("capture-item-sync", 6, "error")]
