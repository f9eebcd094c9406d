"""The fork server (tests/guard/fake_graph.py) runs a program as `python job.py` would: same exit code,
same output, same guard lines at the same user lines. And the fake capture is a capture to the guard: with
it, the guard records a program's inputs; without the patch, nothing is said."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.guard.fake_graph import ForkServer, run_program

pytest.importorskip("torch")

PROGRAMS = {
    "freed-refused": ("""
        x = torch.randn(1024)
        g = FakeGraph()
        g.capture_begin()
        out = x * 2
        g.capture_end()
        del x
        g.replay()
    """, True),
    "mixed": ("""
        class Runner:
            def __init__(self):
                self.scale = 2.0
                self.steps = 0
                self.static_in = torch.randn(4)
                self.keep = [self.static_in]
                self.g = FakeGraph()
                self.g.capture_begin()
                self.out = self.static_in * self.scale
                self.steps += 1
                self.g.capture_end()

            def __call__(self, x):
                self.static_in = x
                self.g.replay()
                return self.out


        def main():
            r = Runner()
            history = []
            for i in range(5):
                r.scale = 1.0 + i
                history.append(r(torch.randn(4)))


        main()
    """, False),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fork_server_and_plain_process_agree(tmp_path: Path, fork_server: ForkServer, name: str) -> None:
    body, refuse = PROGRAMS[name]
    forked = run_program(tmp_path, body, refuse=refuse, server=fork_server)
    plain = run_program(tmp_path, body, refuse=refuse)
    assert forked.findings, forked.explain()
    assert (forked.rc, forked.stdout, forked.guard_lines) == (plain.rc, plain.stdout, plain.guard_lines)
    last = [line for line in plain.stderr.splitlines() if line.strip()][-1:]
    assert [line for line in forked.stderr.splitlines() if line.strip()][-1:] == last


def test_without_the_patch_nothing_is_said(tmp_path: Path, fork_server: ForkServer) -> None:
    # the same freed input, on a graph class the guard does not patch: the harness's findings come from
    # the guard, not from the harness
    run = run_program(tmp_path, """
        patch.remove(FakeGraph)
        x = torch.randn(8)
        g = FakeGraph()
        g.capture_begin()
        y = x * 2
        g.capture_end()
        del x
        g.replay()
    """, server=fork_server)
    assert run.rc == 0 and run.guard_lines == [] and run.printed("RAN") == ["1"], run.explain()


def test_the_capture_records_the_cpu_inputs(tmp_path: Path, fork_server: ForkServer) -> None:
    run = run_program(tmp_path, """
        x = torch.randn(3, 5)
        w = torch.nn.Parameter(torch.randn(5))
        g = FakeGraph()
        # @begin
        g.capture_begin()
        y = x * w
        z = y.sum()
        g.capture_end()
        rec = g._denpex_guard
        print("INPUTS", *sorted(f"{i.desc}:{i.is_param}" for i in rec.inputs))
        print("OUTPUTS", *sorted(o.desc for o in rec.outputs))
        print("SITE", rec.site.rsplit(":", 1)[1])
    """, server=fork_server)
    assert run.printed("INPUTS") == ["float32[3,", "5]:False", "float32[5]:True"]
    assert run.printed("OUTPUTS") == ["float32[3,", "5]", "float32[]"]
    assert run.printed("SITE") == [str(run.markers["begin"])]
