"""The resolution oracle's pure parts (bench/ecosystem/oracle.py): where a definition lies, when two sides name
the same one, which bucket a call falls in, and a miss's reason; then one small tree end to end."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("jedi")

ORACLE = Path(__file__).resolve().parents[2] / "bench" / "ecosystem" / "oracle.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("denpex_bench_oracle", ORACLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


ORC = _load()
ROOT = "/r/proj"


def fn(line: int, name: str = "f", col: int = 4, cls: tuple[str, int, int] | None = None, path: str = "/r/proj/a.py") -> Any:
    return ORC.Def(path, line, col, "function", name, cls)


def klass(line: int, name: str = "M", col: int = 6, path: str = "/r/proj/a.py") -> Any:
    return ORC.Def(path, line, col, "class", name)


def test_in_tree_and_outside_kinds() -> None:
    assert ORC.in_tree("/r/proj/pkg/m.py", ROOT)
    assert not ORC.in_tree("/r/project2/m.py", ROOT)  # a sibling with the same prefix is outside
    assert not ORC.in_tree("/r/proj/.venv/lib/python3.11/site-packages/x.py", ROOT)
    assert not ORC.in_tree(None, ROOT)
    assert ORC.outside_kind("/v/site-packages/torch/cuda/__init__.py", "torch.cuda.synchronize") == "torch"
    assert ORC.outside_kind("/v/jedi/third_party/typeshed/stdlib/builtins.pyi", "builtins.print") == "builtins"
    assert ORC.outside_kind(None, "len") == "builtins"
    assert ORC.outside_kind("/v/site-packages/einops/einops.py", "einops.rearrange") == "third_party"


def test_function_matches_by_name_position_only() -> None:
    assert ORC.matches([fn(10)], [fn(10)], {})
    assert not ORC.matches([fn(10)], [fn(11)], {})
    assert not ORC.matches([fn(10, col=8)], [fn(10)], {})  # another def on the same line (a nested one)
    assert not ORC.matches([fn(10, path="/r/proj/b.py")], [fn(10)], {})


def test_class_matches_its_method_or_the_inherited_one() -> None:
    m = klass(3)
    own = fn(7, "forward", cls=m.key)
    assert ORC.matches([m], [own], {})
    base = klass(1, "Base", path="/r/proj/base.py")
    inherited = fn(5, "forward", cls=base.key, path="/r/proj/base.py")
    assert not ORC.matches([m], [inherited], {})
    assert ORC.matches([m], [inherited], {(m.key, "forward"): inherited.key})
    # the class's lookup found another forward (an override between): not the same definition
    assert not ORC.matches([m], [inherited], {(m.key, "forward"): own.key})


def test_buckets() -> None:
    j, d = [fn(10)], [fn(10)]
    assert ORC.bucket(j, None, d, False, {}) == "same"
    assert ORC.bucket(j, None, [fn(20)], False, {}) == "different"
    assert ORC.bucket(j, None, [], False, {}) == "jedi_only"
    assert ORC.bucket([], None, d, False, {}) == "denpex_only"
    assert ORC.bucket([], "torch", [], False, {}) == "out_of_tree"
    assert ORC.bucket([], None, [], True, {}) == "out_of_tree"  # Denpex knows it as library code
    assert ORC.bucket([], None, [], False, {}) == "neither"


def test_reasons() -> None:
    assert ORC.reason("import", "pkg.M", [klass(3)]) == "constructor"
    assert ORC.reason("relative_import", "utils.M", [klass(3)]) == "constructor"
    assert ORC.reason("self_attr", "", [klass(3)]) == "self_attr"  # an instance stored on self, called
    assert ORC.reason("relative_import", "utils.f", [fn(3)]) == "relative_import"
    assert ORC.reason("chained", "callee subscript", [fn(3)]) == "kernel_launch"  # kernel[grid](...)
    assert ORC.reason("chained", "subscript", [fn(3)]) == "chained"  # xs[0].m(...)
    assert ORC.reason("chained", "call", [fn(3)]) == "chained"
    assert ORC.reason("local", "lambda", [fn(3, "<lambda>")]) == "lambda"
    assert ORC.reason("nonsense", "", [fn(3)]) == "other"


def test_jedi_enclosing_class_answer_is_dropped_for_subscript_and_call_callees() -> None:
    m = klass(49, "LMModel")
    emb = ORC.Call("/r/proj/a.py", 391, 20, "self.emb[i]", "chained", "callee subscript", encl_cls=m.key)
    assert ORC.jedi_artifact(emb, [m]) == [m]
    assert ORC.jedi_artifact(emb, [klass(10, "Other")]) == []  # another class: kept
    named = ORC.Call("/r/proj/a.py", 391, 20, "LMModel", "name", "def in file", encl_cls=m.key)
    assert ORC.jedi_artifact(named, [m]) == []  # the class called by name in its own body: a real answer


def test_relative_names() -> None:
    text = ("from ..utils import (\n    cast,  # why\n    clamp as cl,\n)\nfrom . import base\n"
            "from torch import nn\nimport os\n    from .inner import late\n")
    assert ORC.relative_names(text) == {"cast", "cl", "base", "late"}


def test_small_tree_end_to_end(tmp_path: Path) -> None:
    """A capture that calls a self-stored module, a helper and a parameter's method: each call's bucket."""
    (tmp_path / "helpers.py").write_text("def helper(x):\n    return x + 1\n", encoding="utf-8")
    (tmp_path / "run.py").write_text(
        "import torch\n"
        "from helpers import helper\n"
        "\n"
        "class Net(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return helper(x)\n"
        "\n"
        "class Opt:\n"
        "    def step(self):\n"
        "        pass\n"
        "\n"
        "class Runner:\n"
        "    def __init__(self):\n"
        "        self.net = Net()\n"
        "\n"
        "    def capture(self, opt, x):\n"
        "        g = torch.cuda.CUDAGraph()\n"
        "        with torch.cuda.graph(g):\n"
        "            y = self.net(x)\n"
        "            opt.step()\n"
        "            torch.relu(y)\n"
        "        return y\n"
        "\n"
        "Runner().capture(Opt(), torch.zeros(2))\n",
        encoding="utf-8",
    )
    e = ORC.run_project("tiny", tmp_path, max_calls=100, budget_s=120, seed=0)
    assert e["calls_seen"] == e["calls_checked"] == 4
    # self.net(x) -> Net.forward, helper(x) -> helpers.helper and opt.step() -> Opt.step (jedi and Denpex both
    # follow the parameter to Runner().capture(Opt(), ...)): both sides agree
    assert e["buckets"].get("same") == 3, e
    assert e["same_share"] == 1.0
    # torch.relu: torch code, not in the tree
    assert e["out_of_tree"].get("torch") == 1, e
    assert set(e["buckets"]) == {"same", "out_of_tree"}, e
