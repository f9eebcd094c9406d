"""Issue 19, "Rule knowledge": false errors and missing knowledge of the source rules, each as a failing example
and its fixed twin (or a legal near miss), analysed in process.

Every case names the line and rule it must (or must not) report; the lines are found by a marker comment, so the
texts can be read as programs."""

from __future__ import annotations

import textwrap

from denpex.source import analyse_source
from denpex.source.model import SourceFinding


def _found(text: str, path: str = "case.py") -> list[SourceFinding]:
    return analyse_source(textwrap.dedent(text), path)


def _line(text: str, marker: str) -> int:
    """The 0-based line of the one line holding `marker`."""
    rows = [i for i, ln in enumerate(textwrap.dedent(text).splitlines()) if marker in ln]
    assert len(rows) == 1, (marker, rows)
    return rows[0]


def _at(text: str, marker: str, rule: str) -> list[SourceFinding]:
    ln = _line(text, marker)
    return [f for f in _found(text) if f.rule == rule and f.start_line == ln]


def _rule(text: str, rule: str) -> list[tuple[int, str]]:
    return [(f.start_line, f.severity) for f in _found(text) if f.rule == rule]


# ---- false errors -----------------------------------------------------------------------------------------------
# (a) DPX302: an alias of a static output read again after a later replay, against one consumed before it
ALIAS_KEPT = """
    import torch

    def serve(model, batches):
        g = torch.cuda.CUDAGraph()
        static_in = torch.zeros(8, 4, device="cuda")
        with torch.cuda.graph(g):
            static_out = model(static_in)
        deltas = []
        prev = None
        for x in batches:
            static_in.copy_(x)
            g.replay()
            if prev is not None:
                deltas.append(prev - static_out)
            prev = static_out  # KEPT
        return deltas
"""
ALIAS_CONSUMED = """
    import torch

    def serve(model, batches, graph_after):
        g = None
        static_in = torch.zeros(8, 4, device="cuda")
        total = 0.0
        for i, x in enumerate(batches):
            if i < graph_after:
                dets = model(x)
            else:
                if g is None:
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        static_out = model(static_in)
                static_in.copy_(x)
                g.replay()
                dets = static_out  # CONSUMED
            total += float(dets.sum())
        return total
"""
ALIAS_STORED = """
    import torch

    def serve(model, batches):
        g = torch.cuda.CUDAGraph()
        static_in = torch.zeros(8, 4, device="cuda")
        with torch.cuda.graph(g):
            static_out = model(static_in)
        outs = []
        for x in batches:
            static_in.copy_(x)
            g.replay()
            y = static_out  # STORED
            outs.append(y)
        return outs
"""
ALIAS_STRAIGHT = """
    import torch

    x = torch.randn(16, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_y = x * 2
    g.replay()
    out_a = static_y  # STRAIGHT
    g.replay()
    out_b = static_y.clone()
    print((out_a - out_b).abs().max())
"""


def test_alias_read_after_the_next_replay_is_an_error() -> None:
    yielded = ALIAS_STORED.replace("            outs.append(y)\n", "            yield y\n")
    for text, marker in ((ALIAS_KEPT, "# KEPT"), (ALIAS_STORED, "# STORED"), (ALIAS_STRAIGHT, "# STRAIGHT"),
                         (yielded, "# STORED")):
        got = _at(text, marker, "replay-output-kept-without-clone")
        assert [f.severity for f in got] == ["error"], (marker, _rule(text, "replay-output-kept-without-clone"))


def test_alias_consumed_before_the_next_replay_is_no_finding() -> None:
    assert _rule(ALIAS_CONSUMED, "replay-output-kept-without-clone") == []
    # the same program keeping every batch's detections is flagged
    kept = ALIAS_CONSUMED.replace("            total += float(dets.sum())\n",
                                  "            total += float(dets.sum())\n            history.append(dets)\n")
    kept = kept.replace("        total = 0.0\n", "        total = 0.0\n        history = []\n")
    assert _rule(kept, "replay-output-kept-without-clone") == [(_line(kept, "# CONSUMED"), "error")]


# (b) DPX130: a forwarding capture_begin override, and a stream context entered by hand
FORWARDING = """
    import torch

    class LoggedGraph(torch.cuda.CUDAGraph):
        def capture_begin(self, *args, **kwargs):
            print("capture starts")
            super().capture_begin(*args, **kwargs)  # FORWARD
"""
ENTERED = """
    import torch

    class Runner:
        def __init__(self, model, x):
            self.model = model
            self.x = x
            self.stream = torch.cuda.Stream()
            self.stream_ctx = torch.cuda.stream(self.stream)

        def capture(self):
            g = torch.cuda.CUDAGraph()
            self.stream_ctx.__enter__()
            g.capture_begin()  # ENTERED
            y = self.model(self.x)
            g.capture_end()
            self.stream_ctx.__exit__(None, None, None)
            return g, y
"""
ON_DEFAULT = """
    import torch

    def capture(model, x):
        g = torch.cuda.CUDAGraph()
        g.capture_begin()  # DEFAULT
        y = model(x)
        g.capture_end()
        return g, y
"""


def test_capture_begin_on_the_default_stream_is_an_error() -> None:
    assert [f.severity for f in _at(ON_DEFAULT, "# DEFAULT", "stream-capture-default-stream")] == ["error"]


def test_forwarded_or_hand_entered_stream_is_no_finding() -> None:
    assert _rule(FORWARDING, "stream-capture-default-stream") == []
    assert _rule(ENTERED, "stream-capture-default-stream") == []
    # without the __enter__ the same method captures on the default stream
    bare = ENTERED.replace("            self.stream_ctx.__enter__()\n", "")
    assert [f.severity for f in _at(bare, "# ENTERED", "stream-capture-default-stream")] == ["error"]


# (c) DPX700: the second call's result rebinds the same name
COMPILED_REBOUND = """
    import torch

    def run(model, xs):
        f = torch.compile(model, mode="reduce-overhead")
        out = f(xs[0])
        out = f(xs[1])
        print(out.sum())
"""
COMPILED_KEPT = """
    import torch

    def run(model, xs):
        f = torch.compile(model, mode="reduce-overhead")
        out = f(xs[0])  # KEPT
        out2 = f(xs[1])
        print(out.sum(), out2.sum())
"""


def test_compiled_output_read_after_the_next_call_is_an_error() -> None:
    assert [f.severity for f in _at(COMPILED_KEPT, "# KEPT", "compile-output-overwritten")] == ["error"]


def test_compiled_output_rebound_by_the_next_call_is_no_finding() -> None:
    assert _rule(COMPILED_REBOUND, "compile-output-overwritten") == []


# (d) constant conditions are decided: nothing under `if False:` runs in the capture
DEAD = """
    from typing import TYPE_CHECKING

    import torch

    def step(model, x, verbose):
        y = model(x)
        if False:
            print(y.item())  # FALSE
        if 0:
            y.cpu()  # ZERO
        if TYPE_CHECKING:
            y.tolist()  # TYPING
        if True:
            pass
        else:
            y.numpy()  # ELSE
        if verbose:
            print(y.item())  # OPEN
        z = y.cpu() if False else y  # TERNARY
        if y.sum().item() > 0 and False:  # COND
            pass
        return z

    m = torch.nn.Linear(4, 4).cuda()
    sx = torch.zeros(2, 4, device="cuda")
    m(sx)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step(m, sx, True)
"""


def test_dead_branches_are_not_walked_open_ones_are_warnings() -> None:
    got = {(f.start_line, f.severity) for f in _found(DEAD) if f.rule in ("capture-item-sync", "capture-host-copy")}
    for marker in ("# FALSE", "# ZERO", "# TYPING", "# ELSE", "# TERNARY"):
        assert not any(ln == _line(DEAD, marker) for ln, _s in got), (marker, got)
    assert (_line(DEAD, "# OPEN"), "warning") in got
    assert (_line(DEAD, "# COND"), "error") in got  # a constant condition is still evaluated
    # the same lines on live branches are flagged
    live = DEAD.replace("if False:", "if x.shape[0] > 1:").replace("if TYPE_CHECKING:", "if verbose:")
    lines = {f.start_line for f in _found(live) if f.rule in ("capture-item-sync", "capture-host-copy")}
    assert {_line(live, "# FALSE"), _line(live, "# TYPING")} <= lines


# ---- missing knowledge ------------------------------------------------------------------------------------------
# torch.tensor(host data, device=x.device): a pageable host-to-device copy inside the capture
TENSOR_ON_X_DEVICE = """
    import torch

    def forward(w, x):
        y = x @ w
        stats = torch.tensor([1.0, float(x.shape[0])], device=x.device)  # COPY
        return y, stats

    w = torch.randn(4, 4, device="cuda")
    sx = torch.zeros(2, 4, device="cuda")
    forward(w, sx)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = forward(w, sx)
"""


def test_tensor_from_host_data_on_a_tensors_device_is_flagged() -> None:
    assert [f.severity for f in _at(TENSOR_ON_X_DEVICE, "# COPY", "capture-host-copy")] == ["error"]


def test_tensor_on_a_host_tensors_device_is_no_finding() -> None:
    host = TENSOR_ON_X_DEVICE.replace("device=x.device)  # COPY", "device=h.device)  # COPY").replace(
        "    y = x @ w\n", "    y = x @ w\n    h = torch.zeros(1)\n")
    assert _rule(host, "capture-host-copy") == []


# a Python-float lr that a scheduler changes, for an optimizer with no capturable flag (SGD)
SGD_SCHEDULED = """
    import torch
    import torch.nn.functional as F

    def train(model, data, lr):
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)  # CTOR
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.99 ** s)
        sx, sy = data[0]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                F.cross_entropy(model(sx), sy).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(g):
            F.cross_entropy(model(sx), sy).backward()
            opt.step()  # STEP
        for x, y in data:
            sx.copy_(x)
            sy.copy_(y)
            g.replay()
            sched.step()
"""


def test_float_lr_of_any_optimizer_changed_by_a_scheduler_is_flagged() -> None:
    lines = {f.start_line for f in _found(SGD_SCHEDULED) if f.rule == "optim-capturable-float-lr"}
    assert lines == {_line(SGD_SCHEDULED, "# STEP")}


def test_float_lr_changed_by_a_scheduler_class_of_the_project_is_flagged() -> None:
    own = SGD_SCHEDULED.replace("torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.99 ** s)", "WarmupCosine(opt, 10)")
    own += textwrap.indent(textwrap.dedent("""

        class WarmupCosine:
            def __init__(self, optimizer, warmup):
                self.optimizer, self.warmup, self.n = optimizer, warmup, 0

            def step(self):
                self.n += 1
                for g in self.optimizer.param_groups:
                    g["lr"] = min(1.0, self.n / self.warmup)
    """), "    ")
    assert {f.start_line for f in _found(own) if f.rule == "optim-capturable-float-lr"} == {_line(own, "# STEP")}
    # a class handed the optimizer that is no schedule by its name is not taken for one
    other = own.replace("WarmupCosine", "GradientLogger")
    assert _rule(other, "optim-capturable-float-lr") == []


def test_float_lr_without_a_scheduler_or_in_a_tensor_is_no_finding() -> None:
    unscheduled = SGD_SCHEDULED.replace("        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.99 ** s)\n",
                                        "").replace("            sched.step()\n", "")
    assert _rule(unscheduled, "optim-capturable-float-lr") == []
    as_tensor = SGD_SCHEDULED.replace("lr=lr,", 'lr=torch.tensor(lr, device="cuda"),')
    assert _rule(as_tensor, "optim-capturable-float-lr") == []


# 906: an inline eager forward/backward on the default stream whose results are still alive at the capture
INLINE_EAGER = """
    import torch
    import torch.nn.functional as F

    def train(model, opt, data, eager_steps):
        graph = None
        for step, (x, y) in enumerate(data):
            if step < eager_steps:
                opt.zero_grad(set_to_none=True)
                out = model(x)
                loss = F.mse_loss(out, y)  # EAGER
                loss.backward()
                opt.step()
            else:
                if graph is None:
                    sx, sy = x.clone(), y.clone()
                    side = torch.cuda.Stream()
                    side.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(side):
                        for _ in range(3):
                            opt.zero_grad(set_to_none=True)
                            F.mse_loss(model(sx), sy).backward()
                            opt.step()
                    torch.cuda.current_stream().wait_stream(side)
                    graph = torch.cuda.CUDAGraph()
                    opt.zero_grad(set_to_none=True)
                    with torch.cuda.graph(graph):
                        static_out = model(sx)
                        static_loss = F.mse_loss(static_out, sy)
                        static_loss.backward()
                        opt.step()
                sx.copy_(x)
                sy.copy_(y)
                graph.replay()
                out, loss = static_out, static_loss
            if step % 100 == 0:
                print(loss.item())
"""


def test_inline_eager_backward_alive_at_the_capture_is_flagged() -> None:
    assert [f.severity for f in _at(INLINE_EAGER, "# EAGER", "cuda-906-legacy-stream-dependency")] == ["error"]


def test_inline_eager_backward_released_or_on_the_side_stream_is_no_finding() -> None:
    released = INLINE_EAGER.replace("                opt.step()\n            else:",
                                    "                opt.step()\n                del out, loss\n            else:")
    assert _rule(released, "cuda-906-legacy-stream-dependency") == []
    # rebinding only one of the two names leaves the other holding the graph
    half = INLINE_EAGER.replace("                opt.step()\n            else:",
                                "                opt.step()\n                loss = loss.detach()\n            else:")
    assert _rule(half, "cuda-906-legacy-stream-dependency") != []


# the foreign-thread rule reads code, not text: a comment does not turn it on; a worker thread that queries an
# event during a global-mode capture does
COMMENT_ONLY = """
    import threading
    import torch

    # pin_memory=True would start a pinning thread; this script loads nothing
    def report():
        print("alive")

    threading.Thread(target=report, daemon=True).start()
    x = torch.randn(16, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = x * 2
"""
EVENT_WORKER = """
    import threading
    import time
    import torch

    done = torch.cuda.Event()

    def watch():
        while not done.query():
            time.sleep(0.01)

    x = torch.randn(16, device="cuda")
    y = x * 2
    done.record()
    threading.Thread(target=watch, daemon=True).start()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # GLOBAL
        out = x * 2
"""


def test_comment_does_not_make_a_foreign_thread() -> None:
    assert _rule(COMMENT_ONLY, "capture-foreign-thread") == []


def test_event_queried_by_a_worker_thread_during_a_global_capture_is_flagged() -> None:
    assert [f.severity for f in _at(EVENT_WORKER, "# GLOBAL", "capture-foreign-thread")] == ["error"]
    local = EVENT_WORKER.replace("torch.cuda.graph(g)", 'torch.cuda.graph(g, capture_error_mode="thread_local")')
    assert _rule(local, "capture-foreign-thread") == []


# a capture under torch.cuda.device(N) whose tensors live on device M: their kernels run outside it (empty graph)
OTHER_DEVICE = """
    import torch

    def capture(model, batch):
        static_x = torch.zeros(batch, 8, device="cuda:0")
        net = model.to("cuda:0")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.device(1):
            with torch.cuda.graph(g):  # OTHER
                static_y = net(static_x)
        return g, static_x, static_y
"""


def test_capture_under_another_device_than_its_tensors_is_flagged() -> None:
    got = _at(OTHER_DEVICE, "# OTHER", "capture-graph-empty-warning")
    assert [f.severity for f in got] == ["error"] and "cuda:0" in got[0].message


def test_capture_under_the_tensors_own_device_is_no_finding() -> None:
    assert _rule(OTHER_DEVICE.replace("torch.cuda.device(1)", "torch.cuda.device(0)"), "capture-graph-empty-warning") == []
    unknown = OTHER_DEVICE.replace('device="cuda:0"', "device=dev").replace('"cuda:0"', "dev").replace(
        "(model, batch)", "(model, batch, dev)")
    assert _rule(unknown, "capture-graph-empty-warning") == []
