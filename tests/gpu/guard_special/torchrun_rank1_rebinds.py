# Two ranks on one GPU (no collectives): each captures the same step; rank 1 rebinds its static input
# between replays. Under `denpex run --guard -- torchrun ...` every rank is guarded; only rank 1 is named.
import os

import torch

rank = int(os.environ["RANK"])
torch.manual_seed(rank)
lin = torch.nn.Linear(128, 128).cuda()
static_x = torch.randn(16, 128, device="cuda")
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s), torch.no_grad():
    for _ in range(3):
        lin(static_x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.no_grad(), torch.cuda.graph(g):
    static_y = lin(static_x)
keep = static_x  # the old input stays alive: a rebind, not a free
total = 0.0
for _ in range(5):
    batch = torch.randn(16, 128, device="cuda")
    if rank == 1:
        static_x = batch
    else:
        static_x.copy_(batch)
    g.replay()
    total += static_y.sum().item()
print(f"[rank{rank}] RESULT: {total:.4f}")
