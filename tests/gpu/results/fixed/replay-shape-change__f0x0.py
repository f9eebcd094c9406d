# replay-shape-change: batch shape changes between capture (8) and replay (16).
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(256, 256).cuda()
static_x = torch.randn(16, 256, device="cuda")
new = torch.randn(16, 256, device="cuda")


def eager_reference():
    with torch.no_grad():
        y = lin(new)
    print("RESULT:", y.sum().item(), y.abs().sum().item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        lin(static_x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = lin(static_x)
static_x.zero_()
static_x[: new.shape[0]].copy_(new)
g.replay()
torch.cuda.synchronize()
y = static_y[: new.shape[0]]
print("RESULT:", y.sum().item(), y.abs().sum().item())
