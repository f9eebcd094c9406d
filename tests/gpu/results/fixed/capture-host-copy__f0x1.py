# capture-host-copy: .cpu() (device->host copy into pageable memory) inside capture.
import os

import torch

torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
new = torch.randn(4096, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    y = new * 2
    host = y.cpu()
    print("RESULT:", host.sum().item(), host[0].item())
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        (x * 2).cpu()
torch.cuda.current_stream().wait_stream(s)
x.copy_(new)
y = x * 2
host = y.cpu()  # D2H copy into pageable memory + sync
torch.cuda.synchronize()
host = y.cpu()
print("RESULT:", host.sum().item(), host[0].item())
