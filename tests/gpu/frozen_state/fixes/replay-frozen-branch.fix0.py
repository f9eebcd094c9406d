# replay-frozen-branch: `if self.scale_up:` in a captured forward; the loop flips the flag between replays.
import os

import torch

torch.manual_seed(0)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)
        self.scale_up = True
        self.scale_up_t = torch.tensor(True, device="cuda")

    def forward(self, x):
        h = self.lin(x)
        h = torch.where(self.scale_up_t, h * 2, h)
        return h


model = Head().cuda()
static_x = torch.randn(32, 64, device="cuda")
sums = []
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        for epoch in range(4):
            model.scale_up = epoch < 2
            model.scale_up_t.fill_(model.scale_up)
            sums.append(model(static_x).sum().item())
    else:
        model(static_x)  # warm-up
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = model(static_x)
        for epoch in range(4):
            model.scale_up = epoch < 2
            model.scale_up_t.fill_(model.scale_up)
            g.replay()
            sums.append(out.sum().item())
print("RESULT:", *sums)
