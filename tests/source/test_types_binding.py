"""One binding of call arguments to parameters (resolve/args.py `bind`) for values, kinds and the call graph:
keywords wherever spelled, positionals up to the first `*args` (what the splat fills is not known), a method's
`self` taken by the receiver, parameter names read in the callee's own file."""

from __future__ import annotations

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.args import bind
from denpex.source.resolve.workspace import Workspace

NET = """import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x.nonzero()
"""

RUNNER = """import torch


class Runner:
    def __init__(self, model, example_x, example_y):
        self.model = model
        self.x = example_x.clone()

    def capture(self):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.model(self.x)
"""


def _ws(files: dict[str, str]) -> Workspace:
    ws = Workspace()
    for path, text in files.items():
        ws.add_text(path, text)
    return ws


def _flagged(ws: Workspace) -> list[tuple[str, int, str]]:
    out = []
    for path, found in analyse_workspace(ws).items():
        out += [(path, f.start_line + 1, f.code) for f in found]
    return sorted(out)


def test_a_constructor_argument_before_a_splat_is_bound() -> None:
    # Runner(model, *batch): `model` fills the first parameter whatever the splat holds (realistic r06)
    ws = _ws({"model.py": NET, "runner.py": RUNNER,
              "main.py": "from model import Net\nfrom runner import Runner\n\nbatch = (1, 2)\n"
                         "r = Runner(Net(), *batch)\n"})
    assert ("model.py", 6, "DPX113") in _flagged(ws)


def test_a_positional_after_a_splat_binds_nothing() -> None:
    # Runner(*head, Net(), y): the splat may fill `model` and more, so Net() is not taken for `model`
    ws = _ws({"model.py": NET, "runner.py": RUNNER,
              "main.py": "from model import Net\nfrom runner import Runner\n\nhead = ()\n"
                         "r = Runner(*head, Net(), 2)\n"})
    assert [f for f in _flagged(ws) if f[0] == "model.py"] == []


def test_a_keyword_after_a_splat_is_bound() -> None:
    ws = _ws({"model.py": NET, "runner.py": RUNNER,
              "main.py": "from model import Net\nfrom runner import Runner\n\nrest = (1, 2)\n"
                         "r = Runner(*rest, model=Net())\n"})
    assert ("model.py", 6, "DPX113") in _flagged(ws)


def _bound(defn: str, call: str) -> dict[str, str]:
    # the definition and the call in two files laid out differently: names come from the callee's file
    ws = _ws({"lib.py": "# a longer first line, so that byte offsets differ between the two files\n" + defn,
              "use.py": call})
    lib, use = ws.index("lib.py"), ws.index("use.py")
    assert lib is not None and use is not None
    fn = lib.functions[-1]
    node = use.src.root
    stack = [node]
    calls = []
    while stack:
        n = stack.pop()
        if n.type == "call":
            calls.append(n)
        stack.extend(n.named_children)
    assert len(calls) == 1
    return {k: use.text(v) for k, v in bind(use, calls[0], fn).items()}


def test_bind_positionals_keywords_and_stars() -> None:
    assert _bound("def f(a, b, *rest, c, **kw):\n    pass\n", "f(1, 2, 3, c=4, d=5)\n") == {
        "a": "1", "b": "2", "c": "4", "d": "5"}  # 3 goes to *rest, not to `c`
    assert _bound("def f(a, *, b):\n    pass\n", "f(1, 2)\n") == {"a": "1"}  # b is keyword-only
    assert _bound("def f(a, b):\n    pass\n", "f(x, *more)\n") == {"a": "x"}
    assert _bound("def f(a: int, b: str = 'x'):\n    pass\n", "f(1, 'y')\n") == {"a": "1", "b": "'y'"}


def test_bind_drops_self_of_a_method() -> None:
    assert _bound("class C:\n    def m(self, a, b):\n        pass\n", "obj.m(1, 2)\n") == {"a": "1", "b": "2"}
