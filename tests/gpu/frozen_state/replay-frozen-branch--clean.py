# clean twin of replay-frozen-branch: one graph per value of the flag.
import os

import torch

torch.manual_seed(0)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)
        self.scale_up = True

    def forward(self, x):
        h = self.lin(x)
        if self.scale_up:
            h = h * 2
        return h


model = Head().cuda()
static_x = torch.randn(32, 64, device="cuda")
sums = []
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        for epoch in range(4):
            model.scale_up = epoch < 2
            sums.append(model(static_x).sum().item())
    else:
        model(static_x)  # warm-up
        torch.cuda.synchronize()
        graphs = {}
        for epoch in range(4):
            model.scale_up = epoch < 2
            if model.scale_up not in graphs:
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    out = model(static_x)
                graphs[model.scale_up] = (g, out)
            g, out = graphs[model.scale_up]
            g.replay()
            sums.append(out.sum().item())
print("RESULT:", *sums)
