"""Illegal address at replay: a captured Triton kernel writes at an offset read from a static input."""
import torch
import triton
import triton.language as tl


@triton.jit
def scatter_one(off_ptr, out_ptr):
    off = tl.load(off_ptr)
    tl.store(out_ptr + off, 1.0)


out = torch.zeros(1024, device="cuda")
offset = torch.zeros(1, dtype=torch.int64, device="cuda")
scatter_one[(1,)](offset, out)  # compile and warm up outside the capture
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    scatter_one[(1,)](offset, out)
offset.fill_(1 << 40)  # the static input now points far outside any allocation
g.replay()
torch.cuda.synchronize()
print("replayed", out.sum().item())
