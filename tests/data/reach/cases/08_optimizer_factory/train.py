import torch
from optim_factory import build_optimizer
from torch import nn


def main() -> None:
    model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1)).cuda()
    opt = build_optimizer(model)
    static_x = torch.randn(32, 64, device="cuda")
    static_t = torch.randn(32, 1, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            nn.functional.mse_loss(model(static_x), static_t).backward()
            opt.step()  # ok: optim-capturable-false
    torch.cuda.current_stream().wait_stream(s)

    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        static_loss = nn.functional.mse_loss(model(static_x), static_t)
        static_loss.backward()
        opt.step()  # ruleid: optim-capturable-false
    for _ in range(100):
        g.replay()


if __name__ == "__main__":
    main()
