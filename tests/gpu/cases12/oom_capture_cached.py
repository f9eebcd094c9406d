"""Out of memory inside a capture while the caching allocator holds freed eager blocks it may not release."""
import torch

free, total = torch.cuda.mem_get_info()
eager = torch.empty(free - 20 * 2**30, dtype=torch.uint8, device="cuda")
del eager  # freed to the cache, not to the driver
torch.cuda.synchronize()
print(f"reserved {torch.cuda.memory_reserved() / 2**30:.1f} GiB, allocated {torch.cuda.memory_allocated() / 2**30:.1f} GiB", flush=True)
x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
    workspace = torch.empty(40 * 2**30, dtype=torch.uint8, device="cuda")  # a graph pool cannot use the eager cache
