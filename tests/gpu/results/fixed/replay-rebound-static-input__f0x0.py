# replay-rebound-static-input: rebinding the Python name of the static input (static_x = new) between replays.
# Silent: the graph keeps reading the old storage.
import os

import torch

torch.manual_seed(0)
lin = torch.nn.Linear(256, 256).cuda()
static_x = torch.randn(8, 256, device="cuda")
batches = [torch.randn(8, 256, device="cuda") for _ in range(3)]


def eager_reference():
    with torch.no_grad():
        outs = [lin(b).sum().item() for b in batches]
    print("RESULT:", *outs)


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        lin(static_x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_y = lin(static_x)

outs = []
for new in batches:
    static_x.copy_(new)  # BUG: graph still reads the old storage
    g.replay()
    outs.append(static_y.sum().item())
print("RESULT:", *outs)
