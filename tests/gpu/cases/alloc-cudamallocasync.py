# alloc-cudamallocasync: torch.compile(mode="reduce-overhead") with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync.
import os

os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
import torch


def body(x):
    return torch.sin(x) * 2 + 1


torch.manual_seed(0)
x = torch.randn(4096, device="cuda")

if os.environ.get("DENPEX_EAGER") == "1":
    out = body(x)
    print("RESULT:", out.sum().item(), out[0].item())
    raise SystemExit(0)

f = torch.compile(body, mode="reduce-overhead")
for _ in range(5):
    out = f(x)
torch.cuda.synchronize()
print("RESULT:", out.sum().item(), out[0].item())
