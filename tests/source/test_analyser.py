"""Capture regions under every spelling, call following, guards, suppressions, configuration, error
tolerance, workspace and incremental analysis."""

from __future__ import annotations

import textwrap

import pytest

from denpex.source import Document, ScanConfig, TextEdit, Workspace, analyse_source
from denpex.source.engine.analyse import apply_edits


def rules_at(text: str, **kw: object) -> set[tuple[int, str]]:
    return {(f.start_line + 1, f.rule) for f in analyse_source(textwrap.dedent(text), "t.py", **kw)}  # type: ignore[arg-type]


ITEM = "capture-item-sync"


@pytest.mark.parametrize("opener", [
    "import torch as t\nwith t.cuda.graph(g):",
    "from torch.cuda import graph\nwith graph(g):",
    "from torch import cuda\nwith cuda.graph(g):",
    "import torch\nwith torch.cuda.graphs.graph(g):",
    "import torch.cuda.graphs as G\nwith G.graph(g):",
    "import torch\nwith torch.cuda.stream(s), torch.cuda.graph(g, pool=p):",
    "import torch\nwith (\n    torch.cuda.stream(s),\n    torch.inference_mode(),\n    torch.cuda.graph(g),\n):",
    "import torch\nctx = torch.cuda.graph(g)\nwith ctx:",
    "import torch, contextlib\nctx = torch.cuda.graph(g) if capture else contextlib.nullcontext()\nwith ctx:",
])
def test_capture_openers(opener: str) -> None:
    text = opener + "\n    v = x.sum().item()\n"
    line = text.count("\n")
    assert (line, ITEM) in rules_at(text)


def test_not_a_capture() -> None:
    text = """
    import torch
    cuda_graph = 1
    with torch.cuda.stream(s):
        v = x.sum().item()
    with torch.no_grad():
        v = x.sum().item()
    def graph(g): ...
    """
    assert not rules_at(text)


def test_capture_begin_end() -> None:
    text = """
    import torch
    with torch.cuda.stream(s):
        g.capture_begin()
        v = x.sum().item()
        g.capture_end()
        w = x.sum().item()
    """
    assert rules_at(text) == {(5, ITEM)}


def test_contextmanager_wrapper_and_configured_wrapper() -> None:
    text = """
    import contextlib
    import torch

    @contextlib.contextmanager
    def capturing(g):
        with torch.cuda.graph(g):
            yield

    with capturing(g):
        v = x.sum().item()
    with runtime.record_graph(g):
        w = x.sum().item()
    with get_accelerator().capture_to_graph(g):
        u = x.sum().item()
    """
    assert (11, ITEM) in rules_at(text)
    # a wrapper of the project's own counts once configured; DeepSpeed's accelerator opener is built in
    assert (13, ITEM) not in rules_at(text)
    assert (13, ITEM) in rules_at(text, config=ScanConfig(capture_wrappers=frozenset({"record_graph"})))
    assert (15, ITEM) in rules_at(text)


def test_make_graphed_callables_module_forward_and_function() -> None:
    text = """
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            return x / x.max().item()

    def fn(x):
        if x.sum() > 0:
            return x
        return -x

    m = M().cuda()
    gm = torch.cuda.make_graphed_callables(m, (x,))
    gf = torch.cuda.make_graphed_callables(fn, (x,))
    """
    assert {(6, ITEM), (9, "capture-implicit-bool")} <= rules_at(text)


def test_compile_spellings() -> None:
    text = """
    import torch

    def body(x):
        return x * 2

    @torch.compile(mode="reduce-overhead")
    def dec(x):
        return x * 2

    body = torch.compile(body, mode="max-autotune")
    a = body(x)
    b = body(y)
    print(a)
    c = dec(x)
    d = dec(y)
    print(c)
    """
    assert {(12, "compile-output-overwritten"), (15, "compile-output-overwritten")} <= rules_at(text)
    assert not rules_at(text.replace("reduce-overhead", "default").replace("max-autotune", "default"))
    opts = text.replace('mode="max-autotune"', 'options={"triton.cudagraphs": True}')
    assert (12, "compile-output-overwritten") in rules_at(opts)


def test_calls_followed_self_model_closure_param_bound_method() -> None:
    text = """
    import torch

    class Net(torch.nn.Module):
        def forward(self, x):
            return x.max().item()

    class Runner:
        def __init__(self):
            self.model = Net()

        def step(self, x):
            return x.sum().item()

        def capture(self, g, x):
            def run_once():
                return x.cpu()
            with torch.cuda.graph(g):
                self.model(x)
                run_once()
                helper(self.step, x)

    def helper(fn, x):
        return fn(x)
    """
    got = rules_at(text)
    assert {(6, ITEM), (13, ITEM), (17, "capture-host-copy")} <= got


def test_guards_and_outside_code() -> None:
    text = """
    import torch

    def step(x):
        if not torch.cuda.is_current_stream_capturing():
            print(x.sum().item())
        if is_graph_capturing():
            return x
        return x.sum().item()

    step(x)
    with torch.cuda.graph(g):
        out = step(x)
        # x.item()
        s = "x.item()"
    g.replay()
    v = out.sum().item()
    """
    assert rules_at(text) == set()
    assert (7, ITEM) in rules_at(text.replace("        if is_graph_capturing():\n            return x\n", ""))
    cfg = ScanConfig(guards=frozenset({"my_guard"}))
    t2 = text.replace("is_graph_capturing", "my_guard")
    assert rules_at(t2, config=cfg) == set()


def test_suppressions_and_select_ignore_severity() -> None:
    base = "import torch\nx = torch.ones(4, device='cuda')\nwith torch.cuda.graph(g):\n    v = x.item(){c}\n    print(x * 2)\n"
    assert rules_at(base.format(c="  # denpex: ignore[capture-item-sync]")) == {(5, "capture-print-tensor")}
    assert rules_at(base.format(c="  # denpex: ignore[DPX101]")) == {(5, "capture-print-tensor")}
    assert rules_at(base.format(c="  # denpex: ignore")) == {(5, "capture-print-tensor")}
    assert rules_at(base.format(c="  # denpex: ignore[capture-print-tensor]")) == {(4, ITEM), (5, "capture-print-tensor")}
    text = base.format(c="")
    assert rules_at(text, config=ScanConfig(select=frozenset({ITEM}))) == {(4, ITEM)}
    assert rules_at(text, config=ScanConfig(ignore=frozenset({ITEM}))) == {(5, "capture-print-tensor")}
    (f,) = [f for f in analyse_source(text, "t.py", config=ScanConfig(severity={ITEM: "warning"})) if f.rule == ITEM]
    assert f.severity == "warning"
    assert f.suppression is not None
    suppressed = apply_edits(text, f.suppression.edits)
    assert "# denpex: ignore[capture-item-sync]" in suppressed and rules_at(suppressed) == {(5, "capture-print-tensor")}


def test_syntax_error_elsewhere_keeps_findings() -> None:
    text = """
    import torch

    def broken(:
        return (

    with torch.cuda.graph(g):
        v = x.sum().item()
    """
    assert (8, ITEM) in rules_at(text)


def test_workspace_cross_file() -> None:
    ws = Workspace()
    ws.add_file("pkg/model.py", "class Net:\n    def forward(self, x):\n        return x.max().item()\n")
    ws.add_file("pkg/helpers.py", "def step(x):\n    return x.cpu()\n")
    main = (
        "import torch\nfrom pkg.model import Net\nfrom pkg import helpers\n"
        "net = Net()\nwith torch.cuda.graph(g):\n    net(x)\n    helpers.step(x)\n"
    )
    ws.add_file("main.py", main)
    model = analyse_source(ws.source("pkg/model.py").text, "pkg/model.py", workspace=ws)  # type: ignore[union-attr]
    assert [(f.start_line, f.rule, f.capture_site.path if f.capture_site else None) for f in model] == [
        (2, ITEM, "main.py")]
    helpers = analyse_source(ws.source("pkg/helpers.py").text, "pkg/helpers.py", workspace=ws)  # type: ignore[union-attr]
    assert [f.rule for f in helpers] == ["capture-host-copy"]
    ws.remove_file("pkg/helpers.py")
    assert "pkg/helpers.py" not in ws


def test_incremental_document_matches_full_parse() -> None:
    text = "import torch\n\nwith torch.cuda.graph(g):\n    y = x * 2\n"
    doc = Document("t.py", text)
    assert doc.analyse() == []
    doc.apply_edits([TextEdit(3, 13, 3, 13, "\n    v = y.item()")])
    assert doc.text == "import torch\n\nwith torch.cuda.graph(g):\n    y = x * 2\n    v = y.item()\n"
    assert [(f.start_line, f.rule) for f in doc.analyse()] == [(4, ITEM)]
    assert [(f.start_line, f.rule) for f in analyse_source(doc.text, "t.py")] == [(4, ITEM)]


def test_code_point_columns() -> None:
    text = "import torch\nwith torch.cuda.graph(g):\n    é = 'ü'; v = x.item()\n"
    (f,) = analyse_source(text, "t.py")
    assert (f.start_line, f.start_col) == (2, 17)  # code points: é and ü count once


def test_incremental_reuse_outside_captured_code_matches_full() -> None:
    text = (
        "import torch\n\ndef unrelated(a):\n    b = a + 1\n    return b\n\n"
        "def step(x):\n    return x.sum().item()\n\nwith torch.cuda.graph(g):\n    out = step(x)\n"
    )
    doc = Document("t.py", text)
    first = doc.analyse()
    assert [(f.start_line, f.rule) for f in first] == [(7, ITEM)]
    doc.apply_edits([TextEdit(3, 13, 3, 13, "\n    c = b * 2  # more")])
    again = doc.analyse()
    assert doc.last_was_incremental
    assert again == analyse_source(doc.text, "t.py", config=ScanConfig(max_depth=4))
    assert [(f.start_line, f.rule) for f in again] == [(8, ITEM)]
    doc.apply_edits([TextEdit(8, 25, 8, 25, " + 1")])  # inside the captured callee: full re-analysis
    doc.analyse()
    assert not doc.last_was_incremental
