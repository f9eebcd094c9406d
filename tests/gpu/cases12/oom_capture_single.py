"""Out of memory inside a capture: one allocation larger than the device, requested while capturing."""
import torch

x = torch.randn(1024, device="cuda")
g = torch.cuda.CUDAGraph()
torch.cuda.synchronize()
with torch.cuda.graph(g):
    y = x * 2
    workspace = torch.empty(400 * 2**30, dtype=torch.uint8, device="cuda")  # more than an H200 holds
