"""Capture into the memory pool of a graph that was already freed (pool handle kept, every graph using it deleted)."""
import gc

import torch

x = torch.randn(1024, device="cuda")
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    y = x * 2  # warm-up
torch.cuda.current_stream().wait_stream(s)
g1 = torch.cuda.CUDAGraph()
with torch.cuda.graph(g1):
    y = x * 2
pool = g1.pool()
del g1, y
gc.collect()
g2 = torch.cuda.CUDAGraph()
with torch.cuda.graph(g2, pool=pool):
    z = x * 3
g2.replay()
torch.cuda.synchronize()
print("replayed into a reused pool:", z.sum().item())
