"""Out of memory inside a capture after eager tensors (a KV cache, say) took most of the device."""
import torch

free, total = torch.cuda.mem_get_info()
cache = torch.empty(free - 3 * 2**30, dtype=torch.uint8, device="cuda")  # leave about 3 GiB
a = torch.randn(8192, 8192, device="cuda")
torch.cuda.synchronize()
print(f"eager tensors: {cache.numel() / 2**30:.1f} GiB; free now {torch.cuda.mem_get_info()[0] / 2**30:.1f} GiB", flush=True)
g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(2):
        b = a @ a  # warm-up on the side stream
torch.cuda.current_stream().wait_stream(s)
outs = []
with torch.cuda.graph(g):
    for _ in range(32):  # each 256 MiB output stays live in the graph's private pool
        outs.append(a @ a)
