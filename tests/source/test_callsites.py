"""Parameter values from every call site of the workspace (issue 19, "Reach and types"): `Runner(model)` ->
`self.model` -> `self.model.forward(x)`, `Captured(fn)` -> `self.fn(x)`, through any number of hops, through
recursion without looping, with one call-site table per file (resolve/callsites.py) rebuilt only for a file
that changed."""

from __future__ import annotations

import re
from pathlib import Path

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve import callsites
from denpex.source.resolve.index import FileIndex
from denpex.source.resolve.value_types import Func, Inst
from denpex.source.resolve.values import Values
from denpex.source.resolve.workspace import Workspace
from denpex.source.syntax.parse import parse

NET = """import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x.nonzero()
"""

RUNNER = """import torch


class Runner:
    def __init__(self, model):
        self.model = model

    def capture(self, x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.model.forward(x)
"""


def _ws(files: dict[str, str]) -> Workspace:
    ws = Workspace()
    for path, text in files.items():
        ws.add_text(path, text)
    return ws


def _flagged(ws: Workspace) -> list[tuple[str, int, str, str]]:
    out = []
    for path, found in analyse_workspace(ws).items():
        out += [(path, f.start_line + 1, f.code, f.severity) for f in found]
    return sorted(out)


def test_constructor_argument_reaches_a_method_called_on_the_attribute() -> None:
    ws = _ws({"model.py": NET, "runner.py": RUNNER, "main.py": "from model import Net\nfrom runner import Runner\n\n"
                                                               "r = Runner(Net())\n"})
    assert ("model.py", 6, "DPX113", "error") in _flagged(ws)


def test_no_construction_no_finding() -> None:
    # the same classes, but nothing builds a Runner with a Net: no value for `model`, no guess by name
    ws = _ws({"model.py": NET, "runner.py": RUNNER, "main.py": "from runner import Runner\n\nr = Runner(None)\n"})
    assert [f for f in _flagged(ws) if f[0] == "model.py"] == []


def test_callable_through_a_factory_and_a_constructor() -> None:
    # make(step) -> Captured(fn) -> self.fn = fn -> self.fn(x) under capture: two parameter hops in two files
    ws = _ws({
        "cap.py": "import torch\n\n\nclass Captured:\n    def __init__(self, fn):\n        self.fn = fn\n\n"
                  "    def run(self, x):\n        g = torch.cuda.CUDAGraph()\n        with torch.cuda.graph(g):\n"
                  "            self.fn(x)\n\n\ndef make(fn):\n    return Captured(fn)\n",
        "train.py": "from cap import make\n\n\ndef step(x):\n    return x.nonzero()\n\n\nc = make(step)\n",
    })
    assert ("train.py", 5, "DPX113", "error") in _flagged(ws)


def _chain(n: int) -> dict[str, str]:
    """h0(fn) -> h1(fn) -> ... -> h{n-1}(fn), whose capture calls fn: n parameter hops, one file each."""
    files = {}
    for i in range(n - 1):
        files[f"h{i}.py"] = f"from h{i + 1} import h{i + 1}\n\n\ndef h{i}(fn):\n    h{i + 1}(fn)\n"
    files[f"h{n - 1}.py"] = (f"import torch\n\n\ndef h{n - 1}(fn):\n    g = torch.cuda.CUDAGraph()\n"
                             "    with torch.cuda.graph(g):\n        fn(torch.ones(3, device='cuda'))\n")
    files["main.py"] = "from h0 import h0\n\n\ndef step(x):\n    return x.nonzero()\n\n\nh0(step)\n"
    return files


def test_any_number_of_hops() -> None:
    # 30 hops: more than any fixed depth bound of the walk (8) or of the old call-site search (4)
    assert ("main.py", 5, "DPX113", "error") in _flagged(_ws(_chain(30)))


def test_recursion_terminates_and_keeps_the_outside_value() -> None:
    ws = _ws({"r.py": "import torch\n\n\ndef step(x):\n    return x.nonzero()\n\n\n"
                      "def again(fn, n):\n    if n:\n        again(fn, n - 1)\n        other(fn, n)\n"
                      "    g = torch.cuda.CUDAGraph()\n    with torch.cuda.graph(g):\n        fn(torch.ones(3, device='cuda'))\n\n\n"
                      "def other(fn, n):\n    again(fn, n - 1)\n\n\nagain(step, 3)\n"})
    assert ("r.py", 5, "DPX113", "error") in _flagged(ws)


def test_parameter_values_are_the_union_of_the_callers_and_remembered() -> None:
    ws = _ws({"m.py": "class A:\n    def forward(self, x):\n        return x\n\n\nclass B(A):\n    pass\n\n\n"
                      "def use(m):\n    return m\n\n\nuse(A())\nuse(B() if 1 else A())\n"})
    ix = ws.index("m.py")
    assert ix is not None
    vals = Values(ws.lookup_module, ws.importers)
    fn = ix.module_funcs["use"]
    first = vals.from_callers(ix, fn, "m")
    assert sorted(v.cls.name for v in first if isinstance(v, Inst)) == ["A", "A", "B"]  # one per construction site
    assert vals.guessed  # callers pass different objects: a may-be value
    vals.guessed = False
    assert vals.from_callers(ix, fn, "m") is first  # remembered
    assert vals.guessed  # and remembered as a guess


def test_a_method_parameter_from_calls_on_instances() -> None:
    ws = _ws({"m.py": "class Box:\n    def put(self, fn):\n        self.fn = fn\n\n\ndef step(x):\n    return x\n\n\n"
                      "b = Box()\nb.put(step)\n\n\nclass Other:\n    def put(self, fn):\n        pass\n\n\n"
                      "Other().put(len)\n"})
    ix = ws.index("m.py")
    assert ix is not None
    vals = Values(ws.lookup_module, ws.importers)
    box = ix.classes["Box"]
    got = vals.from_callers(ix, box.methods["put"], "fn")
    assert [v.func.name for v in got if isinstance(v, Func)] == ["step"]  # Other().put(...) is another method


def test_call_table_built_once_per_file_and_again_after_an_edit() -> None:
    files = _chain(4)
    ws = _ws(files)
    _flagged(ws)
    before, named = callsites.stats["call_tables"], callsites.stats["named_calls"]
    _flagged(ws)  # the same trees: every table is still there
    assert (callsites.stats["call_tables"], callsites.stats["named_calls"]) == (before, named)
    ws.add_file("main.py", files["main.py"].replace("h0(step)", "h0(step)\nh0(step)"))
    _flagged(ws)
    # only the edited file's calls are found again, from the mentions of the few names asked of it
    assert callsites.stats["call_tables"] == before
    assert callsites.stats["named_calls"] > named


_TRICKY = '''
import torch as t
def f(x): return x
class A:
    def f(self, y): return y
a = A()
g = f
v = g(a.f(1)).f(2)            # an outer call whose name comes after an inner call's
w = a.f (3) + a . f(4)        # spaces around the dot and before the parenthesis
s = "f(5) a.f(6)"             # in a string: no call
# f(7) in a comment
u = f
z = ff(8) + f_(9) + xf(10)    # longer names
q = [f(i) for i in range(3)] + [a.f(j)(k) for j, k in ()]
r = f(f(f(11)))
o = f"{f(12)}"
'''


def test_calls_found_from_mentions_equal_the_call_table() -> None:
    # the mentions path must answer exactly what the whole-file table does, in the same order, for every name of
    # this file's tricky spellings and of real code (this package's own modules)
    import denpex.source.resolve.values as some_module

    texts = [_TRICKY, Path(some_module.__file__).read_text(), Path(callsites.__file__).read_text()]
    for text in texts:
        names = set(re.findall(r"\w+", text))
        ix_m = FileIndex("m.py", parse(text))
        table = callsites._call_table(FileIndex("t.py", parse(text)))
        checked = 0
        for name in sorted(names):
            by_mentions = callsites._calls_at_mentions(ix_m, name)
            if by_mentions is None:
                continue  # spelled too often: the table answers
            checked += 1
            expected = table.get(name, [])
            assert [(c.start_byte, c.end_byte) for c in by_mentions] == [(c.start_byte, c.end_byte) for c in expected], name
        assert checked > 20
    # the tricky file's own answers, spelled out: the string, the comment and the longer names are not calls of f
    ix = FileIndex("m.py", parse(_TRICKY))
    found = [ix.text(c) for c in callsites._calls_at_mentions(ix, "f") or []]
    assert found == ["g(a.f(1)).f(2)", "a.f(1)", "a.f (3)", "a . f(4)", "f(i)", "a.f(j)", "f(f(f(11)))", "f(f(11))",
                     "f(11)", "f(12)"]


def test_a_value_known_for_only_some_callers_is_a_may_be_edge() -> None:
    # one construction passes a Net, another what a registry holds (not known): the Net's forward may be what is
    # captured, so its hazard is reported at most as a warning, with the doubt named
    main = ("from model import Net\nfrom runner import Runner\n\nREGISTRY = {}\n\n\ndef load(name):\n"
            "    return REGISTRY[name]\n\n\na = Runner(Net())\nb = Runner(load('x'))\n")
    ws = _ws({"model.py": NET, "runner.py": RUNNER, "main.py": main})
    assert [f for f in _flagged(ws) if f[0] == "model.py"] == [("model.py", 6, "DPX113", "warning")]
