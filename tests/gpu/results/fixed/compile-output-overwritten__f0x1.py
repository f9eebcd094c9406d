# compile-output-overwritten: torch.compile(mode="reduce-overhead"), the output of the recording call is read
# after a replay reused its memory.
import os

import torch


def body(x):
    return torch.sin(x) * 2


torch.manual_seed(0)
x = torch.randn(4096, device="cuda")
y = torch.randn(4096, device="cuda")


def eager_reference():
    a, b = body(x), body(y)
    print("RESULT:", a.sum().item(), b.sum().item())


if os.environ.get("DENPEX_EAGER") == "1":
    eager_reference()
    raise SystemExit(0)

f = torch.compile(body, mode="default")
f(x)  # call 1: warmup (eager)
a = f(x)  # call 2: cudagraph recording
b = f(y)  # call 3: replay, reuses a's memory
print("RESULT:", a.sum().item(), b.sum().item())
