# replay-frozen-python-scalar: a sampler-style loop captures its step once (`if graph is None:`) and replays it on
# every pass; the loop counter `i` is torch.roll's shift, a Python int no device tensor can stand in for, so every
# replay rolls by the first pass's 0. Denpex's fix keeps one graph per value of `i` in a dict.
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(64, 64).cuda()
static_x = torch.randn(32, 64, device="cuda")
ramp = torch.arange(64, device="cuda", dtype=torch.float32)


def step(x, i):
    return torch.roll(lin(x), shifts=i, dims=1) * ramp


sums = []
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        for i in range(4):
            sums.append(step(static_x, i).sum().item())
    else:
        step(static_x, 0)  # warm-up
        torch.cuda.synchronize()
        graph = None
        for i in range(4):
            if graph is None:
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = step(static_x, i)
            graph.replay()
            sums.append(out.sum().item())
print("RESULT:", *sums)
