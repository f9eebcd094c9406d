# Probe: which pinned-memory allocations inside a CUDA-graph capture fail on this stack.
import sys

import torch

variant = sys.argv[1]
x = torch.randn(4096, device="cuda")
host = torch.randn(4096)
if variant.startswith("warm_"):
    tmp = torch.empty(4096, pin_memory=True)  # a pinned block, freed before the capture
    del tmp
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        y = x * 2
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(g):
        if variant.endswith("empty"):
            p = torch.empty(4096, pin_memory=True)
        elif variant.endswith("method"):
            p = host.pin_memory()
        elif variant.endswith("copy"):
            p = host.pin_memory()
            y = p.to("cuda", non_blocking=True)
        out = x * 2
    g.replay()
    torch.cuda.synchronize()
    print(variant, "OK")
except Exception as e:  # report the first line of the failure
    print(variant, "FAIL", type(e).__name__, str(e).splitlines()[0][:200])
