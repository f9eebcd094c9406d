"""Run with `pytest -p denpex.guard`: the rebinding test must fail with the guard's line, the clean one pass."""

import torch


def _graph():
    lin = torch.nn.Linear(32, 32).cuda()
    x = torch.randn(4, 32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        lin(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(g):
        y = lin(x)
    return lin, x, g, y


def test_rebinding_is_caught():
    _lin, x, g, _y = _graph()
    g.replay()  # the static input came back from a helper: the guard learns its name here
    keep = x
    for _ in range(2):
        x = torch.randn(4, 32, device="cuda")
        g.replay()
    assert keep is not x


def test_refreshing_is_clean():
    lin, x, g, y = _graph()
    for _ in range(3):
        x.copy_(torch.randn(4, 32, device="cuda"))
        g.replay()
    torch.cuda.synchronize()
    with torch.no_grad():
        assert torch.allclose(y, lin(x), atol=1e-5)
