"""Issue 21, "Python state frozen by capture": each rule with a failing example, its clean twin, and the legal
near misses (capture guards, config flags fixed for the run) that must stay clean. Analysed in process; lines are
found by a marker comment."""

from __future__ import annotations

import textwrap
from pathlib import Path

from denpex.source import analyse_source
from denpex.source.engine.analyse import analyse_workspace
from denpex.source.model import SourceFinding
from denpex.source.resolve.workspace import Workspace


def _found(text: str, path: str = "case.py") -> list[SourceFinding]:
    found: list[SourceFinding] = analyse_source(textwrap.dedent(text), path)
    return found


def _line(text: str, marker: str) -> int:
    rows = [i for i, ln in enumerate(textwrap.dedent(text).splitlines()) if marker in ln]
    assert len(rows) == 1, (marker, rows)
    return rows[0]


def _rule(text: str, rule: str) -> list[tuple[int, str]]:
    return [(f.start_line, f.severity) for f in _found(text) if f.rule == rule]


def _ws(files: dict[str, str], rule: str) -> list[tuple[str, int, str, str]]:
    ws = Workspace()
    for p, t in files.items():
        ws.add_text(p, textwrap.dedent(t))
    out = analyse_workspace(ws)
    return sorted((Path(p).name, f.start_line, f.severity, f.message) for p, fs in out.items() for f in fs
                  if f.rule == rule)


# ---- replay-frozen-branch ---------------------------------------------------------------------------------------
BRANCH = """
    import torch

    class Head(torch.nn.Module):
        def __init__(self, use_bias):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
            self.freeze = True
            self.use_bias = use_bias

        def forward(self, x):
            h = self.lin(x)
            if self.freeze:  # BRANCH
                h = h.detach()
            if self.use_bias:  # CONFIG
                h = h + 1
            if self.training:  # TRAINING
                h = h * 2
            if torch.cuda.is_current_stream_capturing():  # GUARD
                pass
            return h

    model = Head(True).cuda()
    static_x = torch.randn(4, 8, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(static_x)
    for epoch in range(4):
        model.freeze = epoch < 2  # WRITE
        g.replay()
"""


def test_frozen_branch_on_an_attribute_the_replay_loop_flips() -> None:
    got = _rule(BRANCH, "replay-frozen-branch")
    assert got == [(_line(BRANCH, "# BRANCH"), "error")]
    msg = next(f.message for f in _found(BRANCH) if f.rule == "replay-frozen-branch")
    assert f"case.py:{_line(BRANCH, '# WRITE') + 1}" in msg


def test_frozen_branch_clean_when_the_loop_captures_per_value() -> None:
    twin = BRANCH.replace("""    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = model(static_x)
    for epoch in range(4):
        model.freeze = epoch < 2  # WRITE
        g.replay()""", """    graphs = {}
    for epoch in range(4):
        model.freeze = epoch < 2  # WRITE
        if model.freeze not in graphs:
            graphs[model.freeze] = g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = model(static_x)
        graphs[model.freeze].replay()""")
    assert twin != BRANCH
    assert _rule(twin, "replay-frozen-branch") == []


def test_frozen_branch_clean_when_the_flag_is_set_before_capture_only() -> None:
    twin = BRANCH.replace("""    for epoch in range(4):
        model.freeze = epoch < 2  # WRITE
        g.replay()""", """    for epoch in range(4):
        g.replay()""").replace("model = Head(True).cuda()", "model = Head(True).cuda()\nmodel.freeze = False")
    assert twin != BRANCH
    assert _rule(twin, "replay-frozen-branch") == []


def test_frozen_branch_warns_for_a_setter_method() -> None:
    text = BRANCH.replace("""        def forward(self, x):""", """        def unfreeze(self):
            self.freeze = False  # SETTER

        def forward(self, x):""").replace("        model.freeze = epoch < 2  # WRITE\n", "")
    got = _rule(text, "replay-frozen-branch")
    assert got == [(_line(text, "# BRANCH"), "warning")]


GLOBAL_FLAG = """
    import torch

    USE_MASK = True

    def step(x):
        if USE_MASK:  # BRANCH
            return x * 2
        return x

    def main(xs):
        global USE_MASK
        static_x = torch.zeros(4, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(static_x)
        for i, x in enumerate(xs):
            USE_MASK = i % 2 == 0  # WRITE
            static_x.copy_(x)
            g.replay()
"""


def test_frozen_branch_on_a_global_rebound_in_the_replay_loop() -> None:
    assert _rule(GLOBAL_FLAG, "replay-frozen-branch") == [(_line(GLOBAL_FLAG, "# BRANCH"), "error")]
    read_once = GLOBAL_FLAG.replace("            USE_MASK = i % 2 == 0  # WRITE\n", "")
    assert _rule(read_once, "replay-frozen-branch") == []


def test_frozen_branch_across_files_through_a_replaying_method() -> None:
    files = {
        "model.py": """
            import torch
            class Net(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = torch.nn.Linear(4, 4)
                    self.mode_a = True
                def forward(self, x):
                    if self.mode_a:
                        return self.lin(x)
                    return x
        """,
        "runner.py": """
            import torch
            class Runner:
                def __init__(self, model, x):
                    self.model = model
                    self.x = x.clone()
                    self.g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(self.g):
                        self.out = self.model(self.x)
                def run(self, x):
                    self.x.copy_(x)
                    self.g.replay()
                    return self.out
        """,
        "main.py": """
            from model import Net
            from runner import Runner
            import torch
            net = Net()
            r = Runner(net, torch.zeros(2, 4))
            for step in range(10):
                net.mode_a = step < 5
                r.run(torch.zeros(2, 4))
        """,
    }
    got = _ws(files, "replay-frozen-branch")
    assert [(g[0], g[1], g[2]) for g in got] == [("model.py", 8, "error")]
    assert "main.py:8" in got[0][3]


# ---- replay-output-read-before-replay ---------------------------------------------------------------------------
LAZY = """
    import torch

    class Runner:
        def __init__(self, model):
            self.model = model
            self.graph = None

        def _capture(self, x):
            self.static_x = x.clone()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph):
                self.static_out = self.model(self.static_x)

        def __call__(self, x):
            if self.graph is None:
                self._capture(x)
                return self.static_out  # EARLY
            self.static_x.copy_(x)
            self.graph.replay()
            return self.static_out  # LATE
"""


def test_output_returned_right_after_a_lazy_capture() -> None:
    # a warning: whether the caller uses the first result is not shown (a capture-phase dummy run discards it)
    assert _rule(LAZY, "replay-output-read-before-replay") == [(_line(LAZY, "# EARLY"), "warning")]


def test_output_after_the_capture_falls_through_to_the_replay() -> None:
    twin = LAZY.replace("            return self.static_out  # EARLY\n", "")
    assert twin != LAZY
    assert _rule(twin, "replay-output-read-before-replay") == []


def test_output_read_in_the_capture_scope() -> None:
    text = """
        import torch

        def check(model, x):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = model(x)
            print(y.sum().item())  # READ
            return g, y
    """
    assert _rule(text, "replay-output-read-before-replay") == [(_line(text, "# READ"), "error")]
    replayed = text.replace("    print(y.sum().item())  # READ", "    g.replay()\n        print(y.sum().item())")
    assert _rule(replayed, "replay-output-read-before-replay") == []
    # handing the static output back with its graph (the caller replays first) is no read
    setup = text.replace("        print(y.sum().item())  # READ\n", "")
    assert _rule(setup, "replay-output-read-before-replay") == []


def test_output_stored_or_viewed_after_capture_is_no_read() -> None:
    text = """
        import torch

        def build(model, x, store):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = model(x)
            store["out"] = y
            view = y.detach().view(-1)
            return g, view
    """
    assert _rule(text, "replay-output-read-before-replay") == []


SETTER = """
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.monitor = False

        def enable_monitor(self, flag=True):
            self.monitor = flag

        def forward(self, x):
            h = self.lin(x)
            if self.monitor:  # BRANCH
                h = h * 1.5
            return h

    def main(xs, rank):
        net = Net()
        net.enable_monitor(rank == 0)  # ONCE
        static_x = torch.zeros(2, 4, device="cuda")
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = net(static_x)
        for i, x in enumerate(xs):
            static_x.copy_(x)
            g.replay()
"""


def test_frozen_branch_setter_called_once_for_the_run_is_clean() -> None:
    assert _rule(SETTER, "replay-frozen-branch") == []


def test_frozen_branch_setter_called_in_the_replay_loop_is_an_error() -> None:
    text = SETTER.replace("            static_x.copy_(x)\n", "            net.enable_monitor(i % 10 == 0)  # LOOP\n"
                          "            static_x.copy_(x)\n")
    assert text != SETTER
    assert _rule(text, "replay-frozen-branch") == [(_line(text, "# BRANCH"), "error")]
    msg = next(f.message for f in _found(text) if f.rule == "replay-frozen-branch")
    assert f"case.py:{_line(text, '# LOOP') + 1}" in msg


def test_output_that_is_a_python_value_is_no_garbage_read() -> None:
    text = """
        import torch

        x = torch.ones(4, device="cuda")
        ev = torch.cuda.Event()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = x * 2
            done = ev.query()
        print("query returned", done)
        g.replay()
    """
    assert _rule(text, "replay-output-read-before-replay") == []


def test_output_returned_by_a_setup_function_whose_helper_names_end_like_a_replayer() -> None:
    # train_step( ends like step(: a replaying function named step must not make this function "replay"
    text = """
        import torch

        class Runner:
            def step(self):
                self.g.replay()

            def train_step(self):
                return self.model(self.x)

            def capture(self):
                self.train_step()
                with torch.cuda.graph(self.g):
                    loss = self.train_step()
                return loss
    """
    assert _rule(text, "replay-output-read-before-replay") == []


# ---- replay-nested-static-input ---------------------------------------------------------------------------------
NESTED = """
    import torch

    def clone_arg(a):
        if isinstance(a, torch.Tensor):
            return a.clone()
        if isinstance(a, dict):
            return {k: clone_arg(v) for k, v in a.items()}
        return a

    class Graphed:
        def __init__(self, module):
            self.module = module
            self.graph = None

        def _refresh(self, args):
            for dst, src in zip(self.static_args, args):
                if isinstance(dst, torch.Tensor):  # TOP
                    dst.copy_(src)

        def __call__(self, *args):
            if self.graph is None:
                self.static_args = [clone_arg(a) for a in args]
                self.graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(self.graph):
                    self.static_out = self.module(*self.static_args)
            self._refresh(args)
            self.graph.replay()
            return self.static_out
"""


def test_nested_static_input_refreshed_only_at_the_top() -> None:
    assert _rule(NESTED, "replay-nested-static-input") == [(_line(NESTED, "# TOP"), "warning")]


def test_nested_static_input_refreshed_recursively_is_clean() -> None:
    twin = NESTED.replace("""            for dst, src in zip(self.static_args, args):
                if isinstance(dst, torch.Tensor):  # TOP
                    dst.copy_(src)""", """            for dst, src in zip(self.static_args, args):
                copy_into(dst, src)""").replace("class Graphed:", """def copy_into(dst, src):
        if isinstance(dst, torch.Tensor):
            dst.copy_(src)
        elif isinstance(dst, dict):
            for k in dst:
                copy_into(dst[k], src[k])

    class Graphed:""")
    assert twin != NESTED
    assert _rule(twin, "replay-nested-static-input") == []


def test_top_level_refresh_of_flat_static_arguments_is_clean() -> None:
    # the clone does not recurse: nothing shows nested tensors are expected
    flat = NESTED.replace("self.static_args = [clone_arg(a) for a in args]",
                          "self.static_args = [a.clone() for a in args]")
    assert flat != NESTED
    assert _rule(flat, "replay-nested-static-input") == []


# ---- replay-returned-host-value ---------------------------------------------------------------------------------
RETURNED = """
    import torch

    def step(x, n_items):
        return (x * 2).sum(), n_items  # HOST

    def graphed(x0, n0):
        static_x = x0.clone()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(static_x, n0)
        static_x.copy_(x0)
        g.replay()
        return out

    total = graphed(torch.ones(4, device="cuda"), int(4))
"""


def test_returned_host_value_handed_back_after_replay() -> None:
    assert _rule(RETURNED, "replay-returned-host-value") == [(_line(RETURNED, "# HOST"), "error")]


def test_returned_device_count_is_clean() -> None:
    twin = RETURNED.replace("return (x * 2).sum(), n_items  # HOST", "return (x * 2).sum(), (x > 0).sum()")
    assert twin != RETURNED
    assert _rule(twin, "replay-returned-host-value") == []


def test_returned_host_value_of_a_setup_function_that_never_replays_is_clean() -> None:
    # the capture's result goes back to a caller with the graph: nothing is replayed here
    setup = RETURNED.replace("        static_x.copy_(x0)\n        g.replay()\n        return out",
                             "        return g, static_x, out")
    assert setup != RETURNED
    assert _rule(setup, "replay-returned-host-value") == []


def test_returned_host_value_through_a_decorator_across_files() -> None:
    files = {
        "graphing.py": """
            import torch
            def cuda_graphed():
                def decorate(fn):
                    state = {}
                    def wrapper(*args):
                        if "graph" not in state:
                            static = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)
                            g = torch.cuda.CUDAGraph()
                            with torch.cuda.graph(g):
                                out = fn(*static)
                            state.update(graph=g, static=static, out=out)
                        state["graph"].replay()
                        return state["out"]
                    return wrapper
                return decorate
        """,
        "lm.py": """
            from graphing import cuda_graphed
            @cuda_graphed()
            def terms(model, tokens, n_tokens):
                return model(tokens).sum(), n_tokens
        """,
        "main.py": """
            from lm import terms
            def main(model, batches):
                for tokens, lengths in batches:
                    n = int(lengths.sum())
                    s, k = terms(model, tokens, n)
        """,
    }
    got = _ws(files, "replay-returned-host-value")
    assert [(g[0], g[1], g[2]) for g in got] == [("lm.py", 4, "error")]
    device = dict(files, **{"main.py": files["main.py"].replace("int(lengths.sum())", "lengths.sum()")})
    assert _ws(device, "replay-returned-host-value") == []


def test_output_returned_by_a_capture_method_when_another_file_replays_in_a_same_named_method() -> None:
    files = {
        "trainer.py": """
            import torch
            class Trainer:
                def train_step(self):
                    return self.model(self.x).mean()
                def capture(self):
                    with torch.cuda.graph(self.graph):
                        loss = self.train_step()
                    return loss
        """,
        "other.py": """
            class Runner:
                def train_step(self):
                    self.g.replay()
        """,
    }
    assert _ws(files, "replay-output-read-before-replay") == []


# ---- replay-graph-cache-key -------------------------------------------------------------------------------------
CACHE = """
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
            g, static_q, static_d, out = self.entries[key]
            static_q[:len(q)].copy_(q)
            static_d[:len(q)].copy_(d)
            g.replay()
            return out[:len(q)]
"""


def test_graph_cache_keyed_by_one_dimension_and_padded_along_another() -> None:
    assert _rule(CACHE, "replay-graph-cache-key") == [(_line(CACHE, "# KEY"), "warning")]


def test_graph_cache_keyed_by_every_dimension_is_clean() -> None:
    twin = CACHE.replace("key = q.size(1)  # KEY", "key = (q.size(0), q.size(1))")
    assert twin != CACHE
    assert _rule(twin, "replay-graph-cache-key") == []


def test_graph_cache_keyed_by_the_padded_dimension_is_clean() -> None:
    # the serving idiom: graphs per padded batch size, inputs copied into the front of the buffer
    padded = CACHE.replace("key = q.size(1)  # KEY", "key = len(q)")
    assert padded != CACHE
    assert _rule(padded, "replay-graph-cache-key") == []


SCOPED = """
    import torch

    _IN_RECOMPUTE = False

    class recompute_region:
        def __enter__(self):
            global _IN_RECOMPUTE
            _IN_RECOMPUTE = True

        def __exit__(self, *exc):
            global _IN_RECOMPUTE
            _IN_RECOMPUTE = False

    def layer(x):
        if _IN_RECOMPUTE:  # BRANCH
            return x * 2
        return x

    def main(x):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = layer(x)
        g.replay()
"""


def test_frozen_branch_on_a_toggle_set_and_restored_by_a_context_manager_is_clean() -> None:
    assert _rule(SCOPED, "replay-frozen-branch") == []


def test_frozen_branch_on_a_global_a_plain_function_sets_warns() -> None:
    text = SCOPED.replace("        def __enter__(self):", "        def enter(self):")
    assert text != SCOPED
    assert _rule(text, "replay-frozen-branch") == [(_line(text, "# BRANCH"), "warning")]


GRAPHED = """
    import torch

    class Block(torch.nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
            self.cfg = cfg

        def forward(self, x):
            h = self.lin(x)
            if self.cfg.residual:  # BRANCH
                h = h + x
            return h

    class Cfg:
        residual = True

    cfg = Cfg()
    block = Block(cfg).cuda()
    x = torch.randn(4, 8, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(block, (x,))
    for step in range(10):
        cfg.residual = step < 5  # WRITE
        y = graphed(x)
        y.sum().backward()
"""


def test_frozen_branch_on_a_config_attribute_changed_after_make_graphed_callables() -> None:
    assert _rule(GRAPHED, "replay-frozen-branch") == [(_line(GRAPHED, "# BRANCH"), "error")]


def test_frozen_branch_not_for_torch_compile_which_guards_python_values() -> None:
    compiled = GRAPHED.replace("graphed = torch.cuda.make_graphed_callables(block, (x,))",
                               'graphed = torch.compile(block, mode="reduce-overhead")')
    assert compiled != GRAPHED
    assert _rule(compiled, "replay-frozen-branch") == []


PARAM = """
    import torch

    def step(x, double):
        if double:  # BRANCH
            return x * 2
        return x

    def main(xs):
        static_x = torch.zeros(4, device="cuda")
        double = True
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(static_x, double)
        for i, x in enumerate(xs):
            double = i < 3  # WRITE
            static_x.copy_(x)
            g.replay()
"""


def test_frozen_branch_on_a_parameter_bound_to_a_name_the_replay_loop_rebinds() -> None:
    assert _rule(PARAM, "replay-frozen-branch") == [(_line(PARAM, "# BRANCH"), "error")]
    fixed_for_run = PARAM.replace("            double = i < 3  # WRITE\n", "")
    assert _rule(fixed_for_run, "replay-frozen-branch") == []


AFTER = """
    import torch

    lin = torch.nn.Linear(64, 64).cuda()
    x = torch.randn(32, 64, device="cuda")
    freeze = False

    def step():
        if freeze:  # BRANCH
            return (lin(x).detach() * 0).sum()
        return lin(x).sum()

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = step()
    freeze = True  # WRITE
    g.replay()
"""


def test_frozen_branch_on_a_global_rebound_after_the_capture_before_its_replay() -> None:
    assert _rule(AFTER, "replay-frozen-branch") == [(_line(AFTER, "# BRANCH"), "error")]
    msg = next(f.message for f in _found(AFTER) if f.rule == "replay-frozen-branch")
    assert f"case.py:{_line(AFTER, '# WRITE') + 1} changes it after the capture, before a replay" in msg


def test_frozen_branch_rebound_after_the_last_replay_is_clean() -> None:
    late = AFTER.replace("    freeze = True  # WRITE\n    g.replay()\n", "    g.replay()\n    freeze = True\n")
    assert late != AFTER
    assert _rule(late, "replay-frozen-branch") == []


def test_frozen_branch_that_only_raises_is_clean() -> None:
    # `if not self.freeze: raise`: a validation with no device work on either side
    text = BRANCH.replace("""            if self.freeze:  # BRANCH
                h = h.detach()""", """            if not self.freeze:  # BRANCH
                raise RuntimeError("plan() first")""")
    assert text != BRANCH
    assert _rule(text, "replay-frozen-branch") == []
    kept = BRANCH.replace("            if self.freeze:  # BRANCH", "            if not self.freeze:  # BRANCH")
    assert _rule(kept, "replay-frozen-branch") == [(_line(kept, "# BRANCH"), "error")]


def test_frozen_branch_setter_of_another_class_with_the_same_name_is_not_its_call() -> None:
    text = SETTER.replace("""    def main(xs, rank):""", """    class Other:
        def enable_monitor(self, flag=True):
            self.on = flag

    def main(xs, rank):""")
    files = {"model.py": text.replace("""            static_x.copy_(x)\n""", "            static_x.copy_(x)\n"),
             "loop.py": """
                import torch
                from other import Other
                def run(g, xs):
                    o = Other()
                    for i, x in enumerate(xs):
                        o.enable_monitor(i % 10 == 0)
                        g.replay()
             """}
    # loop.py calls an enable_monitor() of a class it spells (Other), not Net's: Net's setter is called once
    assert _ws(files, "replay-frozen-branch") == []
    named = dict(files, **{"loop.py": files["loop.py"].replace("from other import Other", "from model import Net")
                           .replace("o = Other()", "o = Net()")})
    assert [(g[0], g[2]) for g in _ws(named, "replay-frozen-branch")] == [("model.py", "error")]


def test_output_identity_check_after_capture_is_no_read() -> None:
    text = """
        import torch

        def check(run, out_buf):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                captured = torch.relu(out_buf)
            assert captured is not out_buf
            g.replay()
    """
    assert _rule(text, "replay-output-read-before-replay") == []
    compared = text.replace("assert captured is not out_buf", "assert captured != out_buf")
    assert _rule(compared, "replay-output-read-before-replay") != []
