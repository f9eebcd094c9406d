"""The op tables generated from PyTorch (server/denpex/source/ops/aten_tables.json, bench/gen_op_tables.py): the
committed entry against the installed torch, the spellings of known cases, and the loader without torch."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from denpex.source import ops
from denpex.source.ops import CallArgs

REPO = Path(__file__).resolve().parents[2]
GEN = REPO / "bench" / "gen_op_tables.py"
TABLE = REPO / "server" / "denpex" / "source" / "ops" / "aten_tables.json"


def _gen(path: Path = GEN) -> ModuleType:
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_committed_table_is_what_the_installed_torch_gives() -> None:
    torch = pytest.importorskip("torch")
    gen = _gen()
    key = gen.version_key(torch.__version__)
    committed = json.loads(TABLE.read_text(encoding="utf-8"))["versions"]
    assert key in committed, f"no entry for torch {key}: run bench/gen_op_tables.py"
    fresh = gen.generate(torch)
    for cat in ("dynamic_shape", "host_sync", "random"):
        old, new = committed[key]["spellings"][cat], fresh["spellings"][cat]
        assert sorted(set(old) ^ set(new)) == [], cat
        assert old == new, cat
    assert committed[key] == fresh


def test_tags_give_the_tagged_overloads() -> None:
    t = ops.tables("2.13")
    assert t.key == "2.13"
    raw = json.loads(TABLE.read_text(encoding="utf-8"))["versions"]["2.13"]["aten"]
    assert "nonzero.default" in raw["dynamic_shape"] and "masked_select.default" in raw["dynamic_shape"]
    assert "_local_scalar_dense.default" in raw["host_sync"] and "item.default" in raw["host_sync"]
    assert "bernoulli.p" in raw["random"] and "randn.default" in raw["random"]
    assert "add.Tensor" not in raw["dynamic_shape"] + raw["host_sync"] + raw["random"]


@pytest.mark.parametrize(("name", "nargs"), [
    ("torch.nonzero", 1), ("Tensor.nonzero", 0), ("torch.argwhere", 1), ("torch.unique", 1), ("Tensor.unique", 0),
    ("torch.unique_consecutive", 1), ("torch.masked_select", 2), ("Tensor.masked_select", 1), ("torch.where", 1),
    ("torch.bincount", 1), ("torch.nn.functional.one_hot", 1),
])
def test_dynamic_shape_spellings(name: str, nargs: int) -> None:
    assert ops.is_dynamic_shape(name, nargs)
    assert ops.is_host_sync(name, nargs)  # the size is read on the host


def test_where_depends_on_its_arity() -> None:
    assert ops.is_dynamic_shape("torch.where", 1)
    assert not ops.is_dynamic_shape("torch.where", 3)
    assert not ops.is_host_sync("torch.where", 3)
    e = ops.tables().lookup("dynamic_shape", "torch.where")
    assert e is not None and e.via == "probe" and "nonzero.default" in e.aten


def test_size_given_means_no_host_read() -> None:
    assert not ops.is_dynamic_shape("torch.nn.functional.one_hot", 2)
    assert not ops.is_dynamic_shape("torch.nn.functional.one_hot", CallArgs(("y",), {"num_classes": "10"}))
    tensor_repeats = CallArgs(("x", "r"), is_tensor=lambda i: i == 1)
    assert ops.is_dynamic_shape("torch.repeat_interleave", tensor_repeats)
    assert not ops.is_dynamic_shape("torch.repeat_interleave", CallArgs(("x", "2"), is_tensor=lambda i: False))
    assert not ops.is_dynamic_shape("torch.repeat_interleave",
                                    CallArgs(("x", "r"), {"output_size": "n"}, is_tensor=lambda i: i == 1))
    assert ops.is_dynamic_shape("torch.repeat_interleave", 1)  # repeat_interleave(repeats)
    assert ops.is_dynamic_shape("Tensor.repeat_interleave", CallArgs(("r",), is_tensor=lambda i: i == 0))


def test_host_sync_spellings() -> None:
    for name in ("Tensor.item", "torch.equal", "torch.allclose", "Tensor.tolist", "torch.is_nonzero",
                 "torch.linalg.inv", "torch.linalg.cholesky", "torch.linalg.solve"):
        assert ops.is_host_sync(name, 1), name
    assert ops.is_host_sync("int", CallArgs(("t",), is_tensor=lambda i: True))
    assert not ops.is_host_sync("int", CallArgs(("n",), is_tensor=lambda i: False))
    assert not ops.is_host_sync("torch.linalg.inv_ex", 1)
    assert ops.is_host_sync("torch.linalg.inv_ex", CallArgs(("a",), {"check_errors": "True"}))
    assert not ops.is_host_sync("torch.add", 2) and not ops.is_host_sync("Tensor.sum", 0)


def test_svd_backward_note_is_not_a_forward_sync_but_the_gpu_run_is() -> None:
    # linalg.svd's docstring speaks of its complex gradients only; its capture failed on the H200 (a host copy),
    # which bench/results_op_tables_h200.json records
    e = ops.tables().lookup("host_sync", "torch.linalg.svd")
    assert e is not None and e.via == "measured" and "H200" in e.note
    assert ops.is_host_sync("torch.histc", 1) and not ops.is_host_sync("torch.histc", 4)  # the arity measured
    run = json.loads((REPO / "bench" / "results_op_tables_h200.json").read_text(encoding="utf-8"))
    failed = {r["case"] for r in run["rows"] if r["got"] == "fail"}
    passed = {r["case"] for r in run["rows"] if r["got"] == "ok"}
    # every bare spelling the GPU run saw fail is a host sync or dynamic shape in the table; none it saw pass is
    for name in failed:
        if name.replace(".", "").replace("_", "").isalnum() and not ops.is_explicit_sync(name):
            assert ops.is_host_sync(name), name
    for name in passed:
        if name.replace(".", "").replace("_", "").isalnum():
            assert not ops.is_host_sync(name, 1), name


def test_random_spellings() -> None:
    for name in ("torch.randn", "torch.rand", "torch.randint", "torch.randperm", "torch.bernoulli", "Tensor.bernoulli_",
                 "torch.multinomial", "Tensor.normal_", "Tensor.uniform_", "torch.randn_like", "torch.poisson"):
        assert ops.is_random(name, 1), name
    assert ops.is_random("torch.nn.functional.dropout", CallArgs(("x",)))
    assert ops.is_random("torch.nn.functional.dropout", CallArgs(("x",), {"training": "self.training"}))
    assert not ops.is_random("torch.nn.functional.dropout", CallArgs(("x",), {"training": "False"}))
    assert not ops.is_random("torch.nn.functional.dropout", CallArgs(("x", "0.1", "False")))
    assert not ops.is_random("torch.nn.functional.alpha_dropout", CallArgs(("x",)))  # training=False by default
    sdpa = "torch.nn.functional.scaled_dot_product_attention"
    assert not ops.is_random(sdpa, CallArgs(("q", "k", "v")))
    assert ops.is_random(sdpa, CallArgs(("q", "k", "v"), {"dropout_p": "0.1"}))
    assert not ops.is_random("torch.zeros", 1) and not ops.is_random("torch.nn.functional.relu", 1)


def test_names_normalise_and_explicit_sync() -> None:
    assert ops.is_dynamic_shape("torch.Tensor.nonzero", 0)
    assert ops.is_explicit_sync("torch.cuda.synchronize")
    assert ops.is_explicit_sync("torch.cuda.Event.query")
    assert not ops.is_explicit_sync("torch.cuda.current_device")


def test_version_choice() -> None:
    assert ops.tables("2.13.0+cu128").key == "2.13"
    assert ops.tables("9.99").key == ops.available()[-1]
    assert ops.tables("1.0").key == ops.available()[0]


def test_loader_works_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"  # any `import torch` now raises
        "from denpex.source import ops\n"
        "print(ops.is_dynamic_shape('torch.where', 1), ops.is_dynamic_shape('torch.where', 3),"
        " ops.is_random('torch.randn', 1), ops.is_host_sync('Tensor.item', 0))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "True", "True"]


# ---- torch's own Python functions (ops/torch_summaries.json, bench/gen_torch_summaries.py) -----------------------

SUMMARIES = REPO / "server" / "denpex" / "source" / "ops" / "torch_summaries.json"
GEN_SUMMARIES = REPO / "bench" / "gen_torch_summaries.py"


def _judged(name: str, positional: list[str], keywords: dict[str, str] | None = None) -> list[tuple[bool, str]]:
    from denpex.source.ops import summaries

    return [(j.sure, j.hazard.kind) for j in summaries.judge(name, positional, keywords or {})]


def test_committed_summaries_are_what_the_installed_torch_gives() -> None:
    torch = pytest.importorskip("torch")
    gen = _gen(GEN_SUMMARIES)
    key = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    committed = json.loads(SUMMARIES.read_text(encoding="utf-8"))["versions"]
    assert key in committed, f"no summaries for torch {key}: run bench/gen_torch_summaries.py"
    fresh = gen.generate(torch)
    assert sorted(set(committed[key]["functions"]) ^ set(fresh["functions"])) == []
    assert committed[key] == fresh


def test_clip_grad_norm_reads_the_norm_only_with_error_if_nonfinite() -> None:
    name = "torch.nn.utils.clip_grad_norm_"
    assert _judged(name, ["params", "1.0"]) == []
    assert _judged(name, ["params", "1.0"], {"error_if_nonfinite": "True"}) == [(True, "host_sync")]
    assert _judged(name, ["params", "1.0", "2.0", "True"]) == [(True, "host_sync")]  # positionally
    assert _judged(name, ["params", "1.0"], {"error_if_nonfinite": "cfg.strict"}) == [(False, "host_sync")]
    from denpex.source.ops import summaries

    s = summaries.summary(name)
    assert s is not None and s.name == "torch.nn.utils.clip_grad.clip_grad_norm_"
    assert s.hazards[0].via == ("_get_total_norm",)


def test_distributions_validate_by_default() -> None:
    assert _judged("torch.distributions.Normal.__init__", ["mu", "sd"]) == [(True, "host_sync")]
    assert _judged("torch.distributions.Normal.__init__", ["mu", "sd"], {"validate_args": "False"}) == []
    assert _judged("torch.distributions.Normal.__init__", ["mu", "sd", "False"]) == []
    assert (True, "host_sync") in _judged("torch.distributions.Normal.log_prob", ["x"])


def test_grad_scaler_step_and_optimizers() -> None:
    assert _judged("torch.amp.GradScaler.step", ["opt"]) == [(True, "host_sync")]
    assert _judged("torch.amp.GradScaler.unscale_", ["opt"]) == []  # found_inf stays on the device
    adam = _judged("torch.optim.Adam.step", [])
    assert adam and all(not sure for sure, _ in adam)  # only where the group is not capturable


def test_dropout_draws_only_in_training() -> None:
    assert _judged("torch.nn.functional.dropout", ["x"]) == [(True, "random")]
    assert _judged("torch.nn.functional.dropout", ["x"], {"training": "False"}) == []
    assert _judged("torch.nn.functional.dropout", ["x", "0.1", "self.training"]) == [(False, "random")]


def test_conditions_fold() -> None:
    from denpex.source.ops.summaries import decide

    assert decide(["(False if False is not None else self.v)"]) is None
    assert decide(["(None if None is not None else x)"]) == ["x"]
    assert decide(["not torch.jit.is_scripting()", "a"]) == ["a"]  # eager code: no TorchScript
    assert decide(["True and b", "not (False or c)"]) == ["b", "not c"]


def test_methods_python_types_also_have_need_a_known_tensor() -> None:
    e = ops.tables().lookup("dynamic_shape", "Tensor.index")  # `xs.index(v)` on a list is no op
    assert e is not None and e.tensor_receiver
    nz = ops.tables().lookup("dynamic_shape", "Tensor.nonzero")
    assert nz is not None and not nz.tensor_receiver


# ---- the rules read the tables (capture-dynamic-shape-op, capture-item-sync, capture-explicit-sync, rng) -------

RULE_CASE = '''import torch
import torch.nn.functional as F
from torch.distributions import Normal
from torch.nn.utils import clip_grad_norm_

x = torch.randn(16, device="cuda")
A = torch.randn(4, 4, device="cuda")
params = [torch.nn.Parameter(x)]
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    idx = torch.where(x > 0)
    y = torch.where(x > 0, x, 0.0)
    c = torch.bincount(idx[0])
    r = x.repeat_interleave(idx[0])
    r2 = x.repeat_interleave(2)
    inv = torch.linalg.inv(A)
    inv2, info = torch.linalg.inv_ex(A)
    same = x.equal(y)
    clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    clip_grad_norm_(params, 1.0)
    d = Normal(x, x.abs())
    d2 = Normal(x, x.abs(), validate_args=False)
    z = F.dropout(x, training=False)
    k = [1, 2].index(2)
    torch.accelerator.synchronize()
    v = x.normal_()
'''


def test_rules_read_the_tables() -> None:
    from denpex.source.engine.analyse import analyse_source

    found = {(f.start_line + 1, f.rule, f.severity) for f in analyse_source(RULE_CASE, "case.py")}
    want = {
        (11, "capture-dynamic-shape-op", "error"),  # single-argument torch.where
        (13, "capture-dynamic-shape-op", "error"),  # bincount
        (14, "capture-dynamic-shape-op", "error"),  # repeat_interleave with tensor repeats
        (16, "capture-item-sync", "error"),  # linalg.inv checks its result on the host
        (18, "capture-item-sync", "error"),  # Tensor.equal
        (19, "capture-item-sync", "error"),  # clip_grad_norm_(..., error_if_nonfinite=True), from the summaries
        (21, "capture-item-sync", "error"),  # Normal(...) validates its arguments
        (25, "capture-explicit-sync", "error"),  # torch.accelerator.synchronize
        (26, "rng-default-generator", "info"),  # Tensor.normal_ (F.dropout(training=False) draws nothing)
    }
    assert found == want
