"""Programs the guard must say nothing about: the documented ways of feeding and reading a graph, and
names reused in ways that look like the mistakes but are not. A guard that cries wolf here is turned off.

And the guard must not change the program's memory: a tensor the program deletes is freed at its `del`,
as without the guard (weak references tell). Each program runs in its own interpreter on a fake capture
(tests/guard/fake_graph.py)."""

from __future__ import annotations

import textwrap

import pytest

from tests.guard.fake_graph import Program, clean

pytest.importorskip("torch")


def test_copy_refresh_loop(program: Program) -> None:
    run = program("""
        static_x = torch.zeros(8, 4)
        scale = 2.0
        g = FakeGraph()
        g.capture_begin()
        static_y = static_x * scale
        g.capture_end()
        total = 0.0
        losses = []
        for step in range(10):
            batch = torch.randn(8, 4)
            static_x.copy_(batch)
            g.replay()
            total += float(static_y.sum())
            losses.append(static_y.clone())
        print("STEPS", len(losses))
    """, refuse=True)
    clean(run)
    assert run.printed("RAN") == ["10"]


def test_loop_variable_inside_the_capture_then_a_host_loop_rebinding_it(program: Program) -> None:
    # `i` takes three values during the capture: a loop variable, not a frozen scalar
    run = program("""
        static_x = torch.zeros(8)
        g = FakeGraph()
        g.capture_begin()
        acc = static_x * 1
        for i in range(3):
            acc = acc + static_x * i
        g.capture_end()
        for i in range(5):
            static_x.copy_(torch.randn(8))
            g.replay()
    """, refuse=True)
    clean(run)
    assert run.printed("RAN") == ["5"]


def test_loop_variable_in_a_captured_function(program: Program) -> None:
    run = program("""
        def step(x, n):
            out = x
            for k in range(n):
                out = out * 2 + k
            return out


        static_x = torch.zeros(8)
        n = 3
        g = FakeGraph()
        g.capture_begin()
        static_y = step(static_x, n)
        g.capture_end()
        for k in range(4):
            static_x.copy_(torch.randn(8))
            g.replay()
    """, refuse=True)
    clean(run)


def test_static_output_read_under_another_name_within_the_step(program: Program) -> None:
    run = program("""
        static_x = torch.zeros(16)
        g = FakeGraph()
        g.capture_begin()
        static_out = static_x.relu() * 3
        g.capture_end()
        scores = []
        for step in range(12):
            static_x.copy_(torch.randn(16))
            g.replay()
            y = static_out
            scores.append(float(y.abs().sum()))
        print("SCORES", len(scores))
    """, refuse=True)
    clean(run)
    assert run.printed("SCORES") == ["12"]


def test_kv_cache_written_by_the_captured_ops(program: Program) -> None:
    # the decode loop done right (tests/gpu/cases_guard/clean--decode-loop.py on the CPU): inputs refreshed
    # with copy_() / fill_(), a cache the graph writes in place, the output read and cloned where kept
    run = program("""
        torch.manual_seed(0)
        lin = torch.nn.Linear(32, 32)
        cache = torch.zeros(16, 32)
        static_tok = torch.zeros(1, 32)
        static_pos = torch.zeros((), dtype=torch.long)
        g = FakeGraph()
        with torch.no_grad():
            g.capture_begin()
            h = lin(static_tok)
            cache.index_copy_(0, static_pos.view(1), h)
            static_out = cache.sum(0, keepdim=True)
            g.capture_end()
        kept = []
        for step in range(12):
            static_tok.copy_(torch.randn(1, 32))
            static_pos.fill_(step)
            g.replay()
            dets = static_out
            score = float(dets.abs().sum())
            kept.append(static_out.clone())
    """, refuse=True)
    clean(run)
    assert run.printed("RAN") == ["12"]


def test_runner_class_with_a_graph_per_batch_size_refreshed_in_place(program: Program) -> None:
    run = program("""
        class Runner:
            def __init__(self, model, sizes):
                self.model = model
                self.inputs = {bs: torch.zeros(bs, 8) for bs in sizes}
                self.outputs = {}
                self.graphs = {}
                for bs in sizes:
                    g = FakeGraph()
                    with torch.no_grad():
                        g.capture_begin()
                        self.outputs[bs] = model(self.inputs[bs])
                        g.capture_end()
                    self.graphs[bs] = g

            def __call__(self, x):
                bs = x.shape[0]
                self.inputs[bs].copy_(x)
                self.graphs[bs].replay()
                return self.outputs[bs].clone()


        runner = Runner(torch.nn.Linear(8, 8), [1, 2, 4])
        total = 0.0
        for i in range(9):
            total += float(runner(torch.randn([1, 2, 4][i % 3], 8)).sum())
    """, refuse=True)
    clean(run)
    assert run.printed("RAN") == ["9"]


def test_name_rebound_to_a_view_of_the_static_input(program: Program) -> None:
    # `static = static.view(2, 4)` names the same memory the graph reads: not a rebind, not a shape change
    run = program("""
        static = torch.randn(8)
        g = FakeGraph()
        g.capture_begin()
        y = static * 2
        g.capture_end()
        static = static.view(2, 4)
        for _ in range(3):
            g.replay()
    """, refuse=True)
    clean(run)


def test_name_reused_after_the_capture_for_a_non_tensor(program: Program) -> None:
    # `x` held the static input at capture; afterwards it names a string, and the tensor lives on (in
    # `keep`) and is refreshed there: the graph reads what the program means
    run = program("""
        x = torch.randn(8)
        keep = [x]
        g = FakeGraph()
        g.capture_begin()
        y = x * 2
        g.capture_end()
        x = "warm-up done"
        for step in range(3):
            keep[0].copy_(torch.randn(8))
            g.replay()
        print(x)


        def main():
            t = torch.randn(8)
            held = {"buffers": [t]}
            g = FakeGraph()
            g.capture_begin()
            u = t + 1
            g.capture_end()
            t = 0
            for t in range(3):
                g.replay()


        main()
    """, refuse=True)
    clean(run)
    assert run.printed("RAN") == ["6"]


def test_static_input_refreshed_through_another_name_while_its_name_is_rebound(program: Program) -> None:
    # the name `static_x` moves on to each new batch, but the captured tensor is refreshed with copy_() through
    # `buf` before every replay: nothing stale is read
    run = program("""
        static_x = torch.zeros(8)
        buf = static_x
        g = FakeGraph()
        g.capture_begin()
        y = static_x * 2
        g.capture_end()
        for step in range(4):
            static_x = torch.randn(8)
            buf.copy_(static_x)
            g.replay()
    """, refuse=True)
    clean(run)


def test_unchanged_scalar_and_branch_are_not_findings(program: Program) -> None:
    run = program("""
        scale = 2.0
        training = True
        static_x = torch.zeros(8)
        g = FakeGraph()
        g.capture_begin()
        if training:
            y = static_x * scale
        g.capture_end()
        for step in range(3):
            scale = 2.0
            static_x.copy_(torch.randn(8))
            g.replay()
    """, refuse=True)
    clean(run)


@pytest.mark.parametrize("trace", [True, False], ids=["trace", "notrace"])
@pytest.mark.parametrize("collector", ["gc-on", "gc-off"])
def test_tensors_deleted_in_a_function_after_capture_are_freed_at_the_del(program: Program, trace: bool,
                                                                          collector: str) -> None:
    # the guard reads the function's locals (at capture end, in its line tracer, at each replay) and must
    # not keep any of them alive: before Python 3.13 a frame's f_locals snapshot would, and so would the
    # reference cycles torch's dispatch-mode calls leave behind until a collection (large training jobs
    # often turn the collector off)
    # gc-off: a plain process, whose first capture is also its first dispatch mode (fake_graph.ForkServer)
    run = program(("gc.disable()\n" if collector == "gc-off" else "") + textwrap.dedent("""
        def main():
            junk = torch.randn(10)
            x = torch.randn(5)
            g = FakeGraph()
            scale = 2.0
            g.capture_begin()
            y = x * scale
            g.capture_end()
            refs = {"junk": weakref.ref(junk), "y": weakref.ref(y), "graph": weakref.ref(g)}
            del junk
            print("AFTER-JUNK", refs["junk"]() is None)
            for _ in range(3):
                x.copy_(torch.randn(5))
                g.replay()
            del y
            print("AFTER-OUTPUT", refs["y"]() is None)
            xref = weakref.ref(x)
            del x
            print("AFTER-INPUT", xref() is None)
            del g
            print("AFTER-GRAPH", refs["graph"]() is None)


        main()
    """), trace=trace, fresh=collector == "gc-off")
    clean(run)
    for key in ("AFTER-JUNK", "AFTER-OUTPUT", "AFTER-INPUT", "AFTER-GRAPH"):
        assert run.printed(key) == ["True"], (key, run.explain())


# Frames whose f_locals is no snapshot (a class body: the class namespace itself), and a snapshot the program
# holds (`locals()` before 3.13 returns the frame's own): the guard reads them and must not empty them.
def test_capture_in_a_class_body_keeps_the_class_namespace(program: Program) -> None:
    run = program("""
        class Runner:
            static = torch.randn(8)
            g = FakeGraph()
            g.capture_begin()
            out = static * 2
            g.capture_end()
            after = 1


        print("ATTRS", *sorted(k for k in vars(Runner) if not k.startswith("__")))
    """)
    clean(run)
    assert run.printed("ATTRS") == ["after", "g", "out", "static"]


def test_a_locals_dict_the_program_holds_is_not_emptied(program: Program) -> None:
    run = program("""
        def main():
            x = torch.randn(4)
            names = locals()
            g = FakeGraph()
            g.capture_begin()
            y = x * 2
            g.capture_end()
            print("NAMES", *sorted(names))


        main()
    """)
    clean(run)
    assert "x" in run.printed("NAMES")  # (the guard's reads of the frame may add the later names to it)


# `[x * i for i in ...]`: the comprehension binds its own `i`; an `i` left by an earlier loop is no scalar
# the capture read.
@pytest.mark.parametrize("where", ["module", "function"])
def test_comprehension_variable_is_not_a_frozen_scalar(program: Program, where: str) -> None:
    captured = ("ys = torch.stack([x * i for i in range(4)])" if where == "module"
                else "ys = step(x)")
    run = program(f"""
        def step(x):
            return sum(x * i for i in range(4))


        x = torch.randn(4)
        for i in range(3):  # a warm-up loop before the capture
            y = x * 2
        g = FakeGraph()
        g.capture_begin()
        {captured}
        g.capture_end()
        for i in range(3):
            x.copy_(torch.randn(4))
            g.replay()
    """)
    clean(run)
