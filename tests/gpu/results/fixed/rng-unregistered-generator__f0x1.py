# rng-unregistered-generator: a user torch.Generator("cuda") used inside capture without register_generator_state.
# RESULT: whether two replays drew different numbers (1/0), the mean of the draws (1 decimal), all in [0, 1) (1/0).
import os

import torch

gen = torch.Generator(device="cuda")
gen.manual_seed(123)

if os.environ.get("DENPEX_EAGER") == "1":
    r1 = torch.rand(1 << 16, device="cuda", generator=gen)
    r2 = torch.rand(1 << 16, device="cuda", generator=gen)
    both = torch.cat([r1, r2])
    print(
        "RESULT:",
        int(not torch.equal(r1, r2)),
        round(both.mean().item(), 1),
        int(bool(((both >= 0) & (both < 1)).all())),
    )
    raise SystemExit(0)

g = torch.cuda.CUDAGraph()
r = torch.rand(1 << 16, device="cuda", generator=gen)
r1 = r.clone()
r = torch.rand(1 << 16, device="cuda", generator=gen)
r2 = r.clone()
torch.cuda.synchronize()
both = torch.cat([r1, r2])
print(
    "RESULT:",
    int(not torch.equal(r1, r2)),
    round(both.mean().item(), 1),
    int(bool(((both >= 0) & (both < 1)).all())),
)
