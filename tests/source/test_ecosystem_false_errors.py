"""False errors found by the ecosystem check (bench/ecosystem/verdicts.tsv), each reduced to a minimal program,
with a twin that keeps the hazard and stays flagged:

- flashinfer `attention/prims_ts/block_sparse.py:102`: `with torch.cuda.stream(run_stream):` where the caller
  bound `run_stream = torch.cuda.current_stream(dev)`: the capturing stream itself, not an unforked side stream;
- vLLM `compilation/breakable_cudagraph.py:179`, `:181`: `capture_begin()` in a method that a context manager's
  `__enter__` calls: the stream is whatever the `with` statement's code made current (a side stream there);
- flashinfer `gdn_kernels/experimental/gdn_fused_decode.py:285`: the test warms cuBLAS up by calling the
  function on the capture's call path through a local alias (`real = mod._fallback; real(x)`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.source.engine.analyse import analyse_workspace
from denpex.source.resolve.workspace import Workspace


def _findings(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str, str]]:
    ws = Workspace([str(tmp_path)])
    for name, text in files.items():
        ws.add_file(str(tmp_path / name), text)
    return {(Path(p).name, f.start_line + 1, f.rule, f.severity)
            for p, found in analyse_workspace(ws).items() for f in found}


SIDE_MAIN = """\
import torch
from lib import Wrapper

w = Wrapper()
x = torch.randn(8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = w.run(x)
"""

SIDE_LIB = """\
import torch


class Wrapper:
    def _launch(self, x, run_stream):
        with torch.cuda.stream(run_stream):
            return x * 2

    def run(self, x):
        run_stream = {stream}
        return self._launch(x, run_stream)
"""


def test_entering_the_current_stream_passed_down_is_no_side_stream(tmp_path: Path) -> None:
    lib = SIDE_LIB.format(stream="torch.cuda.current_stream(x.device)")
    found = _findings(tmp_path, {"main.py": SIDE_MAIN, "lib.py": lib})
    assert not {f for f in found if f[2] == "capture-side-stream-no-fork"}, found


def test_a_new_stream_passed_down_unforked_stays_flagged(tmp_path: Path) -> None:
    lib = SIDE_LIB.format(stream="torch.cuda.Stream()")
    found = _findings(tmp_path, {"main.py": SIDE_MAIN, "lib.py": lib})
    assert ("lib.py", 6, "capture-side-stream-no-fork", "error") in found


SEGMENTS = """\
import torch


class Segmented:
    def __init__(self, pool=None):
        self.pool = pool
        self.graphs = []

    def __enter__(self):
        self._begin()
        return self

    def __exit__(self, *exc):
        self.graphs[-1].capture_end()

    def _begin(self):
        g = torch.cuda.CUDAGraph()
        if self.pool is not None:
            g.capture_begin(pool=self.pool)
        else:
            g.capture_begin()
        self.graphs.append(g)
"""

SEGMENTS_MAIN = """\
import torch
from lib import Segmented

x = torch.randn(8, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    with Segmented():
        y = x * 2
torch.cuda.current_stream().wait_stream(s)
"""


def test_capture_begin_opened_by_a_context_managers_enter_is_the_with_sites_stream(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"main.py": SEGMENTS_MAIN, "lib.py": SEGMENTS})
    assert not {f for f in found if f[2] == "stream-capture-default-stream"}, found


def test_capture_begin_in_a_plain_method_on_the_default_stream_stays_flagged(tmp_path: Path) -> None:
    # the same method, called by hand and not from __enter__: nothing chose a stream for it
    lib = SEGMENTS.replace("        self._begin()\n", "")
    main = """\
import torch
from lib import Segmented

x = torch.randn(8, device="cuda")
seg = Segmented()
seg._begin()
y = x * 2
seg.graphs[-1].capture_end()
"""
    found = _findings(tmp_path, {"main.py": main, "lib.py": lib})
    assert {("lib.py", 18, "stream-capture-default-stream", "error"),
            ("lib.py", 20, "stream-capture-default-stream", "error")} <= found, found


LAZY_LIB = """\
import torch


def _fallback(x):
    return torch.einsum("ij,jk->ik", x, x)


def step(x):
    return _fallback(x)
"""

LAZY_MAIN = """\
import torch
import lib


def test_graph():
    x = torch.randn(8, 8, device="cuda")
{warm}    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = lib.step(x)
"""


def test_warm_up_through_an_alias_of_a_function_on_the_call_path(tmp_path: Path) -> None:
    main = LAZY_MAIN.format(warm="    real = lib._fallback\n    real(x)\n")
    found = _findings(tmp_path, {"main.py": main, "lib.py": LAZY_LIB})
    assert not {f for f in found if f[2] == "lazy-init-cublas"}, found


def test_warm_up_by_calling_the_function_on_the_call_path_directly(tmp_path: Path) -> None:
    main = LAZY_MAIN.format(warm="    lib._fallback(x)\n")
    found = _findings(tmp_path, {"main.py": main, "lib.py": LAZY_LIB})
    assert not {f for f in found if f[2] == "lazy-init-cublas"}, found


def test_no_warm_up_stays_flagged(tmp_path: Path) -> None:
    main = LAZY_MAIN.format(warm="    other = lib.step\n")
    found = _findings(tmp_path, {"main.py": main, "lib.py": LAZY_LIB})
    assert ("lib.py", 5, "lazy-init-cublas", "error") in found, found


# vLLM tests/kernels/moe/test_cutlass_moe.py:182: run_8_bit(...) leaves num_local_experts=None, so
# `with_ep = num_local_experts is not None or ...` is False and `if not with_ep: return ...` returns before the
# expert-map path (a host list made a CUDA tensor) that the capture was said to run
DEFAULT_LIB = """\
import torch


def with_maps(x, n):
    m = torch.tensor([1, 2, 3], device="cuda")
    return x + m.sum()


def run(x, n=None):
    n_all = x.size(0)
    with_ep = n is not None or n == n_all
    if not with_ep:
        return x * 2
    return with_maps(x, n)
"""

DEFAULT_MAIN = """\
import torch
from lib import run


def test_graph():
    x = torch.randn(8, device="cuda")
    run(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
{calls}
"""


def test_a_branch_decided_by_a_default_the_call_leaves_is_walked_only_where_it_runs(tmp_path: Path) -> None:
    main = DEFAULT_MAIN.format(calls="        y = run(x)")
    found = _findings(tmp_path, {"main.py": main, "lib.py": DEFAULT_LIB})
    assert not {f for f in found if f[2] == "capture-host-copy"}, found


def test_a_call_that_passes_the_parameter_still_reaches_the_branch(tmp_path: Path) -> None:
    main = DEFAULT_MAIN.format(calls="        y = run(x)\n        z = run(x, 4)")
    found = _findings(tmp_path, {"main.py": main, "lib.py": DEFAULT_LIB})
    assert ("lib.py", 5, "capture-host-copy", "error") in found, found


def test_a_call_with_splats_decides_nothing(tmp_path: Path) -> None:
    main = DEFAULT_MAIN.format(calls="        y = run(*[x])")
    found = _findings(tmp_path, {"main.py": main, "lib.py": DEFAULT_LIB})
    assert {f for f in found if f[2] == "capture-host-copy"}, found


UNTYPED_LIB = DEFAULT_LIB.replace("def run(x, n=None):\n    n_all = x.size(0)",
                                  "def run(x, mt, n=None):\n    n_all = {size}")
UNTYPED_MAIN = DEFAULT_MAIN.format(calls="        y = run(x, mt)").replace("def test_graph():",
                                                                          "def test_graph(mt):")


@pytest.mark.parametrize("size", ["mt.w1.size(0)", "mt.w1.shape[0]", "len(mt.names)", "mt.w1.numel() + 1"])
def test_a_size_of_an_untyped_object_is_never_none(tmp_path: Path, size: str) -> None:
    # the case as vLLM writes it: `num_experts = moe_tensors.w1.size(0)`, moe_tensors not typed
    lib = UNTYPED_LIB.replace("{size}", size)
    found = _findings(tmp_path, {"main.py": UNTYPED_MAIN, "lib.py": lib})
    assert not {f for f in found if f[2] == "capture-host-copy"}, found


def test_an_untyped_attribute_may_be_none_and_decides_nothing(tmp_path: Path) -> None:
    lib = UNTYPED_LIB.replace("{size}", "mt.count")
    found = _findings(tmp_path, {"main.py": UNTYPED_MAIN, "lib.py": lib})
    assert ("lib.py", 5, "capture-host-copy", "error") in found, found


# flashinfer quantization/kernels/nvfp4_quantize.py:2262: `if isinstance(s, torch.Tensor): ... else:
# torch.tensor([float(s)], device=...)`, with the capture passing a tensor for s
ISINSTANCE_LIB = """\
import torch


def quantize(x, s):
    if isinstance(s, torch.Tensor):
        st = s.float().reshape(1)
    else:
        st = torch.tensor([float(s)], dtype=torch.float32, device=x.device)
    return x * st
"""

ISINSTANCE_MAIN = """\
import torch
from lib import quantize

x = torch.randn(8, device="cuda")
scale = {scale}
quantize(x, scale)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = quantize(x, scale)
"""


def test_the_host_branch_of_isinstance_tensor_is_not_walked_for_a_tensor_argument(tmp_path: Path) -> None:
    main = ISINSTANCE_MAIN.format(scale="x.abs().max()")
    found = _findings(tmp_path, {"main.py": main, "lib.py": ISINSTANCE_LIB})
    assert not {f for f in found if f[0] == "lib.py" and f[1] == 8}, found


def test_the_host_branch_of_isinstance_tensor_stays_flagged_for_a_float_argument(tmp_path: Path) -> None:
    main = ISINSTANCE_MAIN.format(scale="0.5")
    found = _findings(tmp_path, {"main.py": main, "lib.py": ISINSTANCE_LIB})
    assert {f for f in found if f[0] == "lib.py" and f[1] == 8 and f[2] == "capture-host-copy"}, found


# flashinfer tests/comm/test_trtllm_allreduce_fusion.py:328-334: each pass of the parameter loop captures a new
# graph, replays it once, then reshapes the outputs (`out = out.view(...)`); the next pass's replay is of the
# next pass's capture, which reads the names as they are then
LOOP_CAPTURE = """\
import torch


def fill(out, x):
    out.copy_(x * 2)


def test_loop():
    out = torch.empty(8, device="cuda")
    for scale in (1.0, 2.0):
        x = torch.randn(8, device="cuda") * scale
{capture}
        g.replay()
        torch.cuda.synchronize()
        out = out.view(2, 4)
"""


def test_a_rebinding_after_the_replay_of_a_capture_made_anew_each_pass_is_no_hazard(tmp_path: Path) -> None:
    cap = "        g = torch.cuda.CUDAGraph()\n        with torch.cuda.graph(g):\n            fill(out.view(-1), x)"
    found = _findings(tmp_path, {"main.py": LOOP_CAPTURE.format(capture=cap)})
    assert not {f for f in found if f[2] == "replay-rebound-static-input"}, found


def test_a_capture_made_once_in_the_loop_still_replays_the_old_storage(tmp_path: Path) -> None:
    cap = ("        if scale == 1.0:\n            g = torch.cuda.CUDAGraph()\n            with torch.cuda.graph(g):\n"
           "                fill(out.view(-1), x)")
    found = _findings(tmp_path, {"main.py": LOOP_CAPTURE.format(capture=cap)})
    assert ("main.py", 18, "replay-rebound-static-input", "error") in found, found


# flashinfer page.py:675-725: `stream_capturing = _is_stream_capturing_on_device(device)`, a function of the file
# returning torch.cuda.is_current_stream_capturing() (or False off CUDA), then `if stream_capturing: raise ...`
# before the host-scalar path: the host copy after the raise never runs under capture
GUARD_LIB = """\
import torch


def _capturing(device):
    if device.type != "cuda":
        return False
    return torch.cuda.is_current_stream_capturing()


def pack(values, device):
    {bind}
    out = []
    for v in values:
        if not isinstance(v, torch.Tensor):
            if {test}:
                raise ValueError("pass tensors during CUDA graph capture")
            scalar = float(v)
            out.append(torch.tensor([scalar], dtype=torch.float32, device="cuda"))
            continue
        out.append(v)
    return out
"""

GUARD_MAIN = """\
import torch
from lib import pack

x = torch.randn(8, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = pack([x, 0.5], x.device)
"""


def test_a_raise_under_a_local_bound_to_a_guard_wrapper_ends_the_captured_path(tmp_path: Path) -> None:
    lib = GUARD_LIB.format(bind="capturing = _capturing(device)", test="capturing")
    found = _findings(tmp_path, {"main.py": GUARD_MAIN, "lib.py": lib})
    assert not {f for f in found if f[0] == "lib.py" and f[1] == 18}, found


def test_a_raise_under_another_flag_does_not_end_it(tmp_path: Path) -> None:
    lib = GUARD_LIB.format(bind="capturing = device.index == 3", test="capturing")
    found = _findings(tmp_path, {"main.py": GUARD_MAIN, "lib.py": lib})
    assert {f for f in found if f[0] == "lib.py" and f[1] == 18 and f[2] == "capture-host-copy"}, found


# torchao test/prototype/moe_training/nvfp4_training/test_nvfp4_linear.py:217: r1, r2 = compiled_layer(x) twice,
# with x made requires_grad=True and a compiled nn.Module: the outputs' backward is pending, so CUDA graph trees
# keep r1 (H200, torch 2.11: bench/ecosystem/results_gpu_compile_overwrite.txt). Its test_quantize_2d.py:343
# (a plain function of a tensor without grad) is the true error.
COMPILED = """\
import torch

layer = torch.nn.Linear(8, 8).cuda()
w = torch.randn(8, 8, device="cuda")
x = torch.randn(4, 8, device="cuda"{grad})


def run(t):
    return (t * 2).clone()


f = torch.compile({target}, mode="reduce-overhead", fullgraph=True)
{calls}
"""
TWICE = "r1 = f({arg})\nr2 = f({arg})\nprint(r1.sum(), r2.sum())"


@pytest.mark.parametrize(("target", "grad", "arg"), [("layer", "", "x"), ("run", ", requires_grad=True", "x")])
def test_outputs_that_may_need_a_backward_are_a_warning(tmp_path: Path, target: str, grad: str, arg: str) -> None:
    text = COMPILED.format(grad=grad, target=target, calls=TWICE.format(arg=arg))
    found = _findings(tmp_path, {"main.py": text})
    assert ("main.py", 13, "compile-output-overwritten", "warning") in found, found


@pytest.mark.parametrize("calls", [TWICE.format(arg="w"),
                                   "with torch.no_grad():\n    " + TWICE.format(arg="x").replace("\n", "\n    ")])
def test_outputs_without_grad_stay_an_error(tmp_path: Path, calls: str) -> None:
    target = "run" if "(w)" in calls else "layer"
    found = _findings(tmp_path, {"main.py": COMPILED.format(grad="", target=target, calls=calls)})
    assert any(f[2] == "compile-output-overwritten" and f[3] == "error" for f in found), found


# flashinfer fused_moe/layer.py:214-217: `winner = self._winners.get(key); if winner is None: winner =
# self._select_winner(...); self._winners[key] = winner`, whose autotuning (testing/utils.py bench_gpu_time)
# synchronises; the tests run the layer once before capturing it, so the cache is filled and the miss does
# not run under capture (24 warnings, all reviewed false). Without that warm-up call it stays reported.
MEMO_LIB = """\
import torch


class Layer:
    def __init__(self):
        self._winners = {{}}
        self._plan = None

    def _tune(self, x):
        torch.cuda.synchronize()
        return 2

    def forward(self, x):
        {lookup}
        return x * self._winners[x.shape[0]]
"""
MEMO_MAIN = """\
import torch
from lib import Layer

layer = Layer()
x = torch.randn(8, device="cuda")
{warm}
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = layer.forward(x)
"""
LOOKUPS = {
    "get": "w = self._winners.get(x.shape[0])\n        if w is None:\n            self._winners[x.shape[0]] = self._tune(x)",
    "not in": "if x.shape[0] not in self._winners:\n            self._winners[x.shape[0]] = self._tune(x)",
    "attribute": "if self._plan is None:\n            self._plan = self._tune(x)\n            self._winners[8] = 1",
}


@pytest.mark.parametrize("lookup", sorted(LOOKUPS))
def test_a_cache_miss_after_a_warm_up_call_is_not_walked(tmp_path: Path, lookup: str) -> None:
    main = MEMO_MAIN.format(warm="layer.forward(x)")
    found = _findings(tmp_path, {"main.py": main, "lib.py": MEMO_LIB.format(lookup=LOOKUPS[lookup])})
    assert not {f for f in found if f[2] == "capture-explicit-sync"}, found


@pytest.mark.parametrize("lookup", sorted(LOOKUPS))
def test_a_cache_miss_without_a_warm_up_stays_reported(tmp_path: Path, lookup: str) -> None:
    main = MEMO_MAIN.format(warm="")
    found = _findings(tmp_path, {"main.py": main, "lib.py": MEMO_LIB.format(lookup=LOOKUPS[lookup])})
    assert ("lib.py", 10, "capture-explicit-sync", "warning") in found or \
        ("lib.py", 10, "capture-explicit-sync", "error") in found, found


def test_a_branch_that_fills_nothing_stays_reported_after_a_warm_up(tmp_path: Path) -> None:
    lookup = "if self._plan is None:\n            self._tune(x)"
    main = MEMO_MAIN.format(warm="layer.forward(x)")
    found = _findings(tmp_path, {"main.py": main, "lib.py": MEMO_LIB.format(lookup=lookup)})
    assert any(f[2] == "capture-explicit-sync" for f in found), found
