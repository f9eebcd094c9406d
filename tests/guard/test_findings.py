"""What the guard says at a replay, program by program: each mistake named once, by its rule and code, at
the user's lines (allocation unknown on the CPU: the line of the read, the `del`, the rebinding, the replay).

Each program runs in its own interpreter on a fake capture (tests/guard/fake_graph.py)."""

from __future__ import annotations

import textwrap

import pytest

from tests.guard.fake_graph import Program

pytest.importorskip("torch")

FREED = """
    x = torch.randn(1024)
    g = FakeGraph()
    # @begin
    g.capture_begin()
    # @read
    out = x * 2
    g.capture_end()
    # @del
    del x
    for _ in range(3):
        # @replay
        g.replay()
"""


def test_freed_input_names_the_del_line(program: Program) -> None:
    run = program(FREED)
    f = run.only("replay-freed-input")
    assert f.code == "DPX301"
    assert f.message.startswith("CUDA graph replay detected invalidated memory buffer: float32[1024] "
                                "allocated at an unknown line, ")
    assert (f"captured at {run.at('read')}, freed at {run.at('del')} (graph captured at {run.at('begin')}, "
            f"replayed at {run.at('replay')}); ") in f.message
    assert f.message.endswith("keep the input alive and refresh it with copy_()")
    # warn mode: said once, all three replays ran, the program ends normally
    assert run.rc == 0 and run.printed("RAN") == ["3"], run.explain()


def test_freed_input_inside_a_function(program: Program) -> None:
    # with the collector off, in a plain process (its first capture is its first dispatch mode, which
    # leaves cycles: fake_graph.ForkServer): the input is freed at its `del` all the same, and the guard
    # names that line
    run = program("""
        gc.disable()


        def main():
            x = torch.randn(64)
            alive = weakref.ref(x)
            g = FakeGraph()
            g.capture_begin()
            # @read
            y = x + 1
            g.capture_end()
            # @del
            del x
            print("ALIVE", alive() is not None)
            # @replay
            g.replay()


        main()
    """, fresh=True)
    f = run.only("replay-freed-input")
    assert f"captured at {run.at('read')}, freed at {run.at('del')} " in f.message
    assert f"replayed at {run.at('replay')})" in f.message
    assert run.printed("ALIVE") == ["False"]


def test_refuse_raises_guard_error_before_the_replay_runs(program: Program) -> None:
    run = program("""
        x = torch.randn(1024)
        g = FakeGraph()
        g.capture_begin()
        out = x * 2
        g.capture_end()
        del x
        for attempt in range(2):
            try:
                # @replay
                g.replay()
            except GuardError as exc:
                print("REFUSED", FakeGraph.ran, type(exc).__module__, type(exc).__name__)
                print("TEXT", str(exc))
    """, refuse=True)
    f = run.only("replay-freed-input")
    assert f"replayed at {run.at('replay')})" in f.message
    # the replay never ran, either time; the exception's text is the line the guard printed
    assert run.printed("RAN") == ["0"], run.explain()
    assert run.printed("REFUSED") == ["0", "denpex.guard", "GuardError"]
    assert " ".join(run.printed("TEXT")) == f.line()
    assert run.stdout.count("REFUSED") == 2  # refused each time, said once


def test_refused_replay_uncaught_ends_the_program_with_the_rule_in_the_traceback(program: Program) -> None:
    run = program(FREED, refuse=True)
    f = run.only("replay-freed-input")
    assert run.rc == 1
    assert f"denpex.guard.GuardError: {f.line()}" in run.stderr.splitlines()
    assert "RAN" not in run.stdout


def test_moved_input_is_refused(program: Program) -> None:
    # `.data =` gives the tensor another storage; the old one lives on (a view holds it): moved, not freed
    run = program("""
        x = torch.randn(256)
        view = x[:128]
        g = FakeGraph()
        # @begin
        g.capture_begin()
        y = x * 2
        g.capture_end()
        x.data = torch.randn(256)
        try:
            # @replay
            g.replay()
        except GuardError:
            print("REFUSED")
    """, refuse=True)
    f = run.only("replay-rebound-static-input")
    assert f.code == "DPX300"
    assert "moved (its storage now lives at another address: .data=, set_() or resize_())" in f.message
    assert f"(graph captured at {run.at('begin')}, replayed at {run.at('replay')})" in f.message
    assert "REFUSED" in run.stdout and run.printed("RAN") == ["0"]


REBOUND_MODULE = """
    static_x = torch.randn(8, 4)
    {keep}
    g = FakeGraph()
    g.capture_begin()
    # @read
    static_y = static_x * 2
    g.capture_end()
    for step in range(3):
        # @rebind
        static_x = torch.randn({shape})
        # @replay
        g.replay()
"""


def test_rebound_static_input_module_level(program: Program) -> None:
    # the old tensor is still held elsewhere: the graph reads a live tensor nobody refreshes any more
    run = program(REBOUND_MODULE.format(keep="keep = [static_x]", shape="8, 4"), refuse=True)
    f = run.only("replay-rebound-static-input")
    assert f.message == (
        f"static input 'static_x' (float32[8, 4], captured at {run.at('read')}) was rebound to another tensor "
        f"and never refreshed before this replay at {run.at('replay')}: the graph still reads the old tensor; "
        "refresh it with static_x.copy_(new)")
    # nothing was freed or moved: even refuse mode lets the replays run
    assert run.rc == 0 and run.printed("RAN") == ["3"], run.explain()


def test_rebound_static_input_that_freed_the_captured_one(program: Program) -> None:
    run = program(REBOUND_MODULE.format(keep="", shape="8, 4"))
    f = run.only("replay-rebound-static-input")
    assert f.message.startswith(
        f"static input 'static_x' (float32[8, 4], captured at {run.at('read')}) was rebound to another tensor "
        f"(float32[8, 4]) at {run.at('rebind')}, which freed the captured one: CUDA graph replay detected "
        "invalidated memory buffer: ")
    assert f"freed at {run.at('rebind')} " in f.message
    assert f.message.endswith("refresh it in place with static_x.copy_(new) instead")


def test_rebound_and_freed_is_refused(program: Program) -> None:
    run = program(REBOUND_MODULE.format(keep="", shape="8, 4"), refuse=True)
    run.only("replay-rebound-static-input")
    assert run.rc == 1 and "denpex.guard.GuardError: replay-rebound-static-input (DPX300): " in run.stderr


def test_shape_change_of_a_rebound_input(program: Program) -> None:
    run = program(REBOUND_MODULE.format(keep="keep = [static_x]", shape="4, 4"))
    f = run.only("replay-shape-change")
    assert f.code == "DPX305"
    assert f.message.startswith(
        f"static input 'static_x' was captured as float32[8, 4] at {run.at('read')} and is now float32[4, 4] "
        f"at this replay ({run.at('replay')}): the graph still reads the float32[8, 4] tensor")


def test_shape_change_that_freed_the_captured_input(program: Program) -> None:
    run = program(REBOUND_MODULE.format(keep="", shape="4, 4"))
    f = run.only("replay-shape-change")
    assert f.message.startswith(
        f"static input 'static_x' (float32[8, 4], captured at {run.at('read')}) was rebound to another tensor "
        f"(float32[4, 4]) at {run.at('rebind')}, which freed the captured one")


def test_rebound_static_input_through_self_attr(program: Program) -> None:
    run = program("""
        class Runner:
            def __init__(self):
                self.static_in = torch.randn(2, 3)
                self.keep = [self.static_in]
                self.g = FakeGraph()
                self.g.capture_begin()
                # @read
                self.out = self.static_in * 2
                self.g.capture_end()

            def __call__(self, x):
                self.static_in = x
                # @replay
                self.g.replay()
                return self.out


        r = Runner()
        for _ in range(3):
            r(torch.randn(2, 3))
    """)
    f = run.only("replay-rebound-static-input")
    assert f.message == (
        f"static input 'self.static_in' (float32[2, 3], captured at {run.at('read')}) was rebound to another "
        f"tensor and never refreshed before this replay at {run.at('replay')}: the graph still reads the old "
        "tensor; refresh it with self.static_in.copy_(new)")


def test_rebound_static_input_through_a_dict_item(program: Program) -> None:
    # one graph per batch size, its static input an item of self.inputs: `self.inputs[bs] = x` rebinds it
    run = program("""
        class Runner:
            def __init__(self, sizes):
                self.inputs = {bs: torch.zeros(bs, 4) for bs in sizes}
                self.outputs = {}
                self.graphs = {}
                for bs in sizes:
                    g = FakeGraph()
                    g.capture_begin()
                    # @read
                    self.outputs[bs] = self.inputs[bs] * 2
                    g.capture_end()
                    self.graphs[bs] = g

            def __call__(self, x):
                bs = x.shape[0]
                # @rebind
                self.inputs[bs] = x
                # @replay
                self.graphs[bs].replay()
                return self.outputs[bs].clone()


        runner = Runner([1, 2, 4])
        for i in range(6):
            runner(torch.randn([1, 2, 4][i % 3], 4))
    """)
    assert run.rules() == ["replay-rebound-static-input"] * 3, run.explain()
    for bs, f in zip([1, 2, 4], run.findings, strict=True):
        assert f.message.startswith(
            f"static input 'self.inputs[{bs}]' (float32[{bs}, 4], captured at {run.at('read')}) was rebound "
            f"to another tensor (float32[{bs}, 4]) at {run.at('rebind')}, which freed the captured one: ")
        assert f"replayed at {run.at('replay')})" in f.message
        assert f.message.endswith(f"refresh it in place with self.inputs[{bs}].copy_(new) instead")


def test_frozen_module_global(program: Program) -> None:
    run = program("""
        static_x = torch.randn(8)
        scale = 2.0
        g = FakeGraph()
        # @begin
        g.capture_begin()
        # @read
        y = static_x * scale
        g.capture_end()
        scale = 3.0
        for _ in range(3):
            static_x.copy_(torch.randn(8))
            # @replay
            g.replay()
    """)
    f = run.only("replay-frozen-python-scalar")
    assert f.code == "DPX303"
    assert f.message == (
        f"'scale' was 2.0 when the graph was captured at {run.at('begin')} (read at {run.at('read')}: "
        f"y = static_x * scale) and is 3.0 at this replay ({run.at('replay')}): the graph keeps using 2.0; "
        "pass it as a device tensor the graph reads (fill_() it before replay), or capture one graph per value")


def test_frozen_self_attr_read_in_a_method(program: Program) -> None:
    run = program("""
        class Model:
            def __init__(self):
                self.w = torch.randn(8)
                self.temperature = 1.0

            def forward(self, x):
                # @read
                return x * self.w / self.temperature


        m = Model()
        static_x = torch.randn(8)
        g = FakeGraph()
        # @begin
        g.capture_begin()
        static_y = m.forward(static_x)
        g.capture_end()
        for t in (1.0, 1.0, 2.0, 2.0):
            m.temperature = t
            # @replay
            g.replay()
    """)
    f = run.only("replay-frozen-python-scalar")
    assert f.message.startswith(
        f"'self.temperature' was 1.0 when the graph was captured at {run.at('begin')} "
        f"(read at {run.at('read')}: return x * self.w / self.temperature) and is 2.0 at this replay "
        f"({run.at('replay')}): the graph keeps using 1.0")


def test_frozen_learning_rate_of_an_optimizer_step_in_the_capture(program: Program) -> None:
    run = program("""
        w = torch.nn.Parameter(torch.randn(4))
        opt = torch.optim.SGD([w], lr=0.1)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        w.grad = torch.randn(4)
        g = FakeGraph()
        # @begin
        g.capture_begin()
        # @step
        opt.step()
        g.capture_end()
        for _ in range(3):
            # @replay
            g.replay()
            sched.step()
    """)
    f = run.only("replay-frozen-python-scalar")
    assert f.message.startswith(
        f"\"SGD.param_groups[0]['lr']\" was 0.1 when the graph was captured at {run.at('begin')} "
        f"(read at {run.at('step')}: SGD.step()) and is 0.05 at this replay ({run.at('replay')}): "
        "the graph keeps using 0.1")


BRANCH = {
    "if-in-function": ("""
        def step(x):
            # @cond
            if use_bias:
                return x * 2 + 1
            return x * 2


        # @begin
        g.capture_begin()
        out = step(static_x)
    """, "if use_bias:"),
    "conditional-expression": ("""
        # @begin
        g.capture_begin()
        # @cond
        out = static_x * 2 + 1 if use_bias else static_x * 2
    """, "out = static_x * 2 + 1 if use_bias else static_x * 2"),
}


@pytest.mark.parametrize("where", sorted(BRANCH))
def test_frozen_branch_condition(program: Program, where: str) -> None:
    captured, source = BRANCH[where]
    run = program("use_bias = True\nstatic_x = torch.randn(8)\ng = FakeGraph()\n"
                      + textwrap.dedent(captured).strip() + """
g.capture_end()
use_bias = False
for _ in range(2):
    # @replay
    g.replay()
""")
    f = run.only("replay-frozen-branch")
    assert f.code == "DPX310"
    assert f.message == (
        f"branch condition 'use_bias' at {run.at('cond')} ({source}) was True when the graph was captured at "
        f"{run.at('begin')} and is False at this replay ({run.at('replay')}): the graph keeps the branch "
        "taken at capture; pass it as a device tensor the graph reads (fill_() it before replay), or capture "
        "one graph per value")


@pytest.mark.parametrize("counter", ["global", "global-spelt-out", "self-attr"])
def test_counter_incremented_inside_the_capture(program: Program, counter: str) -> None:
    if counter.startswith("global"):
        source = "steps += 1" if counter == "global" else "steps = steps + 1"
        body = f"""
            steps = 0
            static_x = torch.randn(8)
            g = FakeGraph()
            # @begin
            g.capture_begin()
            y = static_x * 2
            # @count
            {source}
            g.capture_end()
        """
        label = "steps"
    else:
        body = """
            class Trainer:
                def __init__(self):
                    self.steps = 0

                def step(self, x):
                    # @count
                    self.steps += 1
                    return x * 2


            trainer = Trainer()
            static_x = torch.randn(8)
            g = FakeGraph()
            # @begin
            g.capture_begin()
            y = trainer.step(static_x)
            g.capture_end()
        """
        label, source = "self.steps", "self.steps += 1"
    run = program(body + """
            for _ in range(4):
                g.replay()
    """)
    f = run.only("replay-python-side-effects")
    assert f.code == "DPX304"
    assert f.message == (
        f"{label!r} is counted inside the capture at {run.at('count')} ({source}): replays run no Python, so it "
        f"stays at its capture value however often the graph (captured at {run.at('begin')}) is replayed; "
        "count on the host around replay(), or keep the count in a device tensor")


@pytest.mark.parametrize("scope", ["module", "function"])
def test_outputs_appended_to_a_list_across_replays(program: Program, scope: str) -> None:
    body = """
        a = torch.randn(16)
        g = FakeGraph()
        # @begin
        g.capture_begin()
        # @made
        static_y = a + 1
        g.capture_end()
        history = []
        for _ in range(6):
            a.copy_(torch.randn(16))
            g.replay()
            history.append(static_y)
    """
    if scope == "function":
        body = "def main():\n" + textwrap.indent(textwrap.dedent(body), "    ") + "\n\nmain()\n"
    run = program(body)
    f = run.only("replay-output-kept-without-clone")
    assert f.code == "DPX302"
    assert f.message.startswith(
        f"graph output float32[16] (made at {run.at('made')}, graph captured at {run.at('begin')}) is kept "
        "across replays: ")
    assert "(held by list 'history'); every kept entry aliases one buffer" in f.message
    assert f.message.endswith("keep out.clone()")


def test_several_mistakes_each_said_once(program: Program) -> None:
    run = program("""
        steps = 0
        scale = 2.0
        static_x = torch.randn(8, 4)
        g = FakeGraph()
        g.capture_begin()
        y = static_x * scale
        steps += 1
        g.capture_end()
        scale = 3.0
        outs = []
        for _ in range(6):
            static_x = torch.randn(8, 4)
            g.replay()
            outs.append(y)
    """)
    assert sorted(run.rules()) == ["replay-frozen-python-scalar", "replay-output-kept-without-clone",
                                   "replay-python-side-effects", "replay-rebound-static-input"], run.explain()
    assert run.printed("RAN") == ["6"]


def test_notrace_checks_memory_but_not_python_values(program: Program) -> None:
    run = program("""
        scale = 2.0
        steps = 0
        x = torch.randn(8)
        g = FakeGraph()
        g.capture_begin()
        y = x * scale
        steps += 1
        g.capture_end()
        scale = 3.0
        del x
        g.replay()
    """, trace=False)
    run.only("replay-freed-input")


def test_a_trace_function_already_installed_is_left_alone(program: Program) -> None:
    # a debugger or coverage owns sys.settrace: the guard does not trace lines then (so it cannot see the
    # frozen scalar), and the owner's trace function is still the one installed after the capture
    run = program("""
        def tracer(frame, event, arg):
            return None


        sys.settrace(tracer)
        scale = 2.0
        x = torch.randn(8)
        g = FakeGraph()
        g.capture_begin()
        y = x * scale
        g.capture_end()
        print("TRACE", sys.gettrace() is tracer)
        sys.settrace(None)
        scale = 3.0
        g.replay()
    """)
    assert run.printed("TRACE") == ["True"]
    assert run.rules() == []


def test_input_at_the_address_of_a_dead_graphs_output_is_still_checked(program: Program) -> None:
    # In a real program the allocator hands a dead output's memory to a new tensor (on the CPU, malloc
    # does so at once, but not reliably; on CUDA, once the old graph's pool is released). Here the memory
    # is a bytearray's, so the new input lands at the dead output's address every time.
    run = program("""
        buf = bytearray(4096)


        def first():
            src = torch.frombuffer(buf, dtype=torch.float32)
            g1 = FakeGraph()
            g1.capture_begin()
            out = torch.empty(0).set_(src.untyped_storage())
            g1.capture_end()
            return out.untyped_storage().data_ptr()


        address = first()
        gc.collect()  # that graph, its input and its output are all gone
        x = torch.frombuffer(buf, dtype=torch.float32)
        print("SAME", x.untyped_storage().data_ptr() == address)
        g = FakeGraph()
        g.capture_begin()
        y = x * 2
        g.capture_end()
        del x
        g.replay()
    """)
    assert run.printed("SAME") == ["True"]
    run.only("replay-freed-input")
