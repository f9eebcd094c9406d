"""The forward/backward of a torch.autograd.Function that replays graphs (Megatron-LM's _CudagraphReplayNode) are
run by autograd, not called by name: `loss.backward()` in a loop elsewhere is no replay of a captured graph, so a
config write in that loop is no change "between replays" (replay-frozen-branch)."""

from __future__ import annotations

from tests.source.helpers import workspace_flags

RUNNER = '''import torch


class ReplayNode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, runner, x):
        runner.fwd.replay()
        return runner.out

    @staticmethod
    def backward(ctx, g):
        ctx.runner.bwd.replay()
        return None, g
'''

MAIN = '''import torch


class Cfg:
    def __init__(self):
        self.chunks = 1


class Layer(torch.nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.w = torch.nn.Parameter(torch.ones(4, device="cuda"))

    def forward(self, x):
        if self.cfg.chunks > 1:
            return (x * self.w).sum()
        return (x + self.w).sum()


def test_capture():
    layer = Layer(Cfg())
    x = torch.ones(4, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = layer(x)
    g.replay()


def test_chunks():
    cfg = Cfg()
    layer = Layer(cfg)
    for n in [1, 4]:
        cfg.chunks = n
        loss = layer(torch.ones(4, device="cuda"))
        loss.{call}()
'''


def _frozen(call: str) -> set[tuple[str, int, str]]:
    return {f for f in workspace_flags({"runner.py": RUNNER, "main.py": MAIN.format(call=call)})
            if f[2] == "replay-frozen-branch"}


def test_a_backward_in_another_test_is_no_replay() -> None:
    assert _frozen("backward") == set()


def test_a_replay_in_that_loop_still_is() -> None:
    # a workspace function whose body replays, called in the loop: the write is between replays
    assert ("main.py", 16, "replay-frozen-branch") in {
        f for f in workspace_flags({"runner.py": RUNNER + "\n\ndef step():\n    G.replay()\n",
                                    "main.py": MAIN.format(call="backward").replace(
                                        "        loss.backward()", "        loss.backward()\n        step()")})
        if f[2] == "replay-frozen-branch"}
