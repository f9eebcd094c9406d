import argparse
import logging

import torch
from tinydiff import DiffusionPipeline


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    pipe = DiffusionPipeline.from_config().to("cuda")
    if not args.no_compile:
        pipe.unet = torch.compile(pipe.unet, mode="reduce-overhead", fullgraph=True)
        pipe.vae = torch.compile(pipe.vae, mode="reduce-overhead")
    context = torch.randn(args.batch, 77, 77, device="cuda", dtype=torch.float16)
    uncond = torch.zeros_like(context)
    images = pipe(context, uncond)
    logging.info("generated %s", images.shape)


if __name__ == "__main__":
    main()
