"""Two NCCL ranks on one GPU: NCCL refuses the communicator (ncclInvalidUsage, 'Duplicate GPU detected')."""
import torch
import torch.distributed as dist

dist.init_process_group("nccl", device_id=torch.device("cuda:0"))
x = torch.ones(16, device="cuda")
dist.all_reduce(x)
torch.cuda.synchronize()
print(x)
dist.destroy_process_group()
