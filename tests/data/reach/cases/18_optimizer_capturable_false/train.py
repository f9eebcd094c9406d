import torch
from optim.factory import build_capturable_optimizer, build_optimizer
from torch import nn


class Regressor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def main() -> None:
    x = torch.randn(64, 16, device="cuda")
    model = Regressor().cuda()
    opt = build_optimizer(model, lr=1e-3)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x).square().mean().backward()
        opt.step()  # ruleid: optim-capturable-false

    model2 = Regressor().cuda()
    opt2 = build_capturable_optimizer(model2, lr=1e-3)
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        model2(x).square().mean().backward()
        opt2.step()  # ok: optim-capturable-false
    g.replay()
    g2.replay()


if __name__ == "__main__":
    main()
