# clean twin of replay-frozen-python-scalar: one graph per value of the loop counter, kept in a dict.
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
        graphs = {}
        for i in range(4):
            if i not in graphs:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = step(static_x, i)
                graphs[i] = (g, out)
            g, out = graphs[i]
            g.replay()
            sums.append(out.sum().item())
print("RESULT:", *sums)
