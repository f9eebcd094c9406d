"""dist.barrier() inside a capture on a one-rank NCCL group."""
import os

import torch
import torch.distributed as dist

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.ones(16, device="cuda")
dist.all_reduce(x)  # warm-up: the communicator exists before the capture
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    y = x * 2
    dist.barrier()
dist.destroy_process_group()
