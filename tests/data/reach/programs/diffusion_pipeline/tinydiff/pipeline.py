import logging

import numpy as np
import torch
from tqdm.auto import tqdm

from .scheduler import DDIMScheduler
from .unet import UNet2DConditionModel
from .vae import Decoder

log = logging.getLogger(__name__)


class DiffusionPipeline:
    def __init__(self, unet: UNet2DConditionModel, vae: Decoder, scheduler: DDIMScheduler) -> None:
        self.unet = unet
        self.vae = vae
        self.scheduler = scheduler

    @classmethod
    def from_config(cls, ch: int = 64) -> "DiffusionPipeline":
        return cls(UNet2DConditionModel(ch), Decoder(ch), DDIMScheduler())

    def to(self, device: str, dtype: torch.dtype = torch.float16) -> "DiffusionPipeline":
        self.unet = self.unet.to(device, dtype)
        self.vae = self.vae.to(device, dtype)
        return self

    @torch.no_grad()
    def __call__(self, context: torch.Tensor, uncond: torch.Tensor, guidance: float = 7.5, height: int = 64,
                 width: int = 64) -> np.ndarray:
        latents = torch.randn(context.size(0), 4, height // 8, width // 8, device="cuda", dtype=torch.float16)
        for t in tqdm(self.scheduler.timesteps):
            t_dev = t.to("cuda")
            # classifier-free guidance: two UNet calls per step
            eps_uncond = self.unet(latents, t_dev, uncond)  # ruleid: compile-output-overwritten
            eps_text = self.unet(latents, t_dev, context)
            eps = eps_uncond + guidance * (eps_text - eps_uncond)
            latents = self.scheduler.step(eps, t, latents)
        return self.vae.to_images(self.vae(latents / 0.18215))
