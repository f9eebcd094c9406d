"""Euler sampler over a Karras sigma schedule."""
import torch


def karras_sigmas(n, sigma_min=0.002, sigma_max=80.0, rho=7.0):
    lo, hi = sigma_min ** (1 / rho), sigma_max ** (1 / rho)
    sig = [(hi + i / (n - 1) * (lo - hi)) ** rho for i in range(n)]
    return sig + [0.0]


class EulerSampler:
    def __init__(self, denoiser, num_steps, device):
        self.denoiser = denoiser
        self.sigmas = karras_sigmas(num_steps)
        self.table = torch.tensor(self.sigmas, device=device)
        self.current = torch.zeros(2, device=device)

    def set_step(self, i):
        self.current.copy_(self.table[i:i + 2])

    def step(self, x):
        sigma, sigma_next = self.current[0], self.current[1]
        d = (x - self.denoiser(x, sigma)) / sigma
        return x + d * (sigma_next - sigma)
