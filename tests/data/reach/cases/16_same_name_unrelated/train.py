import torch
from monitors import EMA, Monitor
from torch import nn


def main() -> None:
    model = nn.Linear(32, 32).cuda()
    ema = EMA(list(model.parameters()))
    monitor = Monitor()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    static_x = torch.randn(8, 32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(static_x).sum().backward()
            ema.update(list(model.parameters()))
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_loss = model(static_x).sum()
        static_loss.backward()
        ema.update(list(model.parameters()))
        opt.zero_grad(set_to_none=False)
    for _ in range(10):
        g.replay()
        monitor.update(static_loss)


if __name__ == "__main__":
    main()
