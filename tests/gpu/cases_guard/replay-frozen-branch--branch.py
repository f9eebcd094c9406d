# A branch on a Python flag inside the captured step: the host flips the flag after the capture, the graph
# keeps the branch taken at capture (silently: the frozen layer keeps training).
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(64, 64).cuda()
x = torch.randn(32, 64, device="cuda")
freeze = False


def step():
    if freeze:
        return (lin(x).detach() * 0).sum()
    return lin(x).sum()


if os.environ.get("DENPEX_EAGER") == "1":
    freeze = True
    with torch.no_grad():
        print("RESULT:", step().item())
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s), torch.no_grad():
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(g):
    out = step()
freeze = True
g.replay()
torch.cuda.synchronize()
print("RESULT:", out.item())
