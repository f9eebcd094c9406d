# replay-frozen-branch, a mode flag: `if FLIP:` in a captured step decides whether the features are reversed; the
# loop flips the module-level flag each epoch between replays, and every replay keeps the branch taken at capture.
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(64, 64).cuda()
static_x = torch.randn(32, 64, device="cuda")
ramp = torch.arange(64, device="cuda", dtype=torch.float32)
FLIP = False


def step(x):
    h = lin(x)
    if FLIP:
        h = torch.flip(h, dims=[1])
    return h * ramp


sums = []
with torch.no_grad():
    if os.environ.get("DENPEX_EAGER") == "1":
        for epoch in range(4):
            FLIP = epoch % 2 == 1
            sums.append(step(static_x).sum().item())
    else:
        step(static_x)  # warm-up
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = step(static_x)
        for epoch in range(4):
            FLIP = epoch % 2 == 1
            g.replay()
            sums.append(out.sum().item())
print("RESULT:", *sums)
