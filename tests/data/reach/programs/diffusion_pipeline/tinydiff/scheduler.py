import torch


class DDIMScheduler:
    def __init__(self, steps: int = 1000) -> None:
        self.alphas = torch.cumprod(1 - torch.linspace(1e-4, 2e-2, steps), dim=0)
        self.timesteps = torch.arange(steps - 1, -1, -steps // 50)

    def step(self, eps: torch.Tensor, t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        i = int(t.item())  # ok: capture-item-sync
        a = self.alphas[i].to(x.device)
        a_prev = self.alphas[max(i - 20, 0)].to(x.device)  # ok: capture-host-copy
        x0 = (x - (1 - a).sqrt() * eps) / a.sqrt()
        return a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps
