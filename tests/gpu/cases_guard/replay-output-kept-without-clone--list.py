# The guard's variant of replay-output-kept-without-clone: each step's static output is appended to a list
# without clone(); every entry aliases one buffer, so all of them end up holding the last step's values.
import os

import torch

torch.manual_seed(0)
batches = [torch.randn(4096, device="cuda") for _ in range(4)]
x = torch.zeros(4096, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    print("RESULT:", *[(b * 2).sum().item() for b in batches])
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = x * 2
outs = []
for b in batches:
    x.copy_(b)
    g.replay()
    outs.append(static_y)
torch.cuda.synchronize()
print("RESULT:", *[o.sum().item() for o in outs])
