# 2-GPU torchrun scenario: rank 1 calls .item() inside CUDA-graph capture and fails, while rank 0
# has already entered an all_reduce that rank 1 will never join.
#   LINGER=0 (default): rank 1's exception propagates and the process exits -> torchrun tears the job down.
#   LINGER=1: rank 1 prints its traceback and then hangs (sleep) -> rank 0 hits the NCCL watchdog timeout.
#   USE_RECORD=1: main() wrapped in torch.distributed.elastic's @record (traceback in ChildFailedError).
import os
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record


def main():
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    linger = os.environ.get("LINGER", "0") == "1"
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", timeout=timedelta(seconds=30), device_id=dev)
    x = torch.ones(1 << 20, device=dev)
    dist.all_reduce(x)
    torch.cuda.synchronize()
    print(f"[rank{rank}] warmup all_reduce ok: {x[0].item()}", flush=True)

    if rank == 1:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                (x * 2).sum().item()
        torch.cuda.current_stream().wait_stream(s)
        time.sleep(2)  # let rank 0 enter its all_reduce first
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(g):
                y = x * 2
                scale = y.sum().item()  # illegal while capturing
                out = y / scale  # noqa: F841
        except Exception:
            if linger:
                traceback.print_exc()
                print(f"[rank{rank}] capture failed; lingering (not exiting) ...", flush=True)
                time.sleep(120)
            raise
    else:
        print(f"[rank{rank}] entering all_reduce #2 (rank 1 never joins)", flush=True)
        y = x * 2
        dist.all_reduce(y)
        torch.cuda.synchronize()
        print(f"[rank{rank}] all_reduce #2 returned {y[0].item()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if os.environ.get("USE_RECORD", "0") == "1":
        main = record(main)
    main()
