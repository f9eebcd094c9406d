# The seed's scenario: the graph's input is deleted, the cache emptied, the graph replayed. Unguarded, the
# replay reads unmapped memory: "CUDA error: an illegal memory access was encountered" at the next sync.
# Guarded (refuse), the replay is stopped before it runs, naming the allocation and free lines.
import torch

x = torch.randn(1 << 24, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    out = x * 2
del x
torch.cuda.empty_cache()
g.replay()
torch.cuda.synchronize()
print("RESULT:", out.sum().item())
