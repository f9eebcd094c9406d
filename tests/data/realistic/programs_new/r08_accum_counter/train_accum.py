#!/usr/bin/env python3
"""Multi-label tagging with gradient accumulation and a CUDA-graphed trunk.

The trunk is wrapped with torch.cuda.make_graphed_callables after an eager
phase; the head and the loss stay eager.  The optimizer steps once every
--accum micro-batches.  The run is repeated eagerly and the weights compared.
"""
import argparse
import copy
import logging
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from blocks import Trunk
from progress import progress

logger = logging.getLogger("tagger")


class Tagger(nn.Module):
    def __init__(self, d_in, num_tags, width=256):
        super().__init__()
        self.trunk = Trunk(d_in, width)
        self.head = nn.Linear(width, num_tags)

    def forward(self, x):
        return self.head(self.trunk(x))


def micro_batches(n, batch, d_in, tags, seed, device):
    g = torch.Generator().manual_seed(seed)
    proj = torch.randn(d_in, tags, generator=g)
    out = []
    for _ in range(n):
        x = torch.randn(batch, d_in, generator=g)
        y = ((x @ proj) > 0.5).float()
        out.append((x.to(device), y.to(device)))
    return out


def train(model, opt, data, accum, start, log_every=None, t0=None):
    for i in range(start, len(data)):
        x, y = data[i]
        loss = F.binary_cross_entropy_with_logits(model(x), y) / accum
        loss.backward()
        if model.trunk.micro_step % accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=False)
        if log_every and i % log_every == 0:
            logger.info("micro %4d  loss %.5f  %.0f micro/s", i, loss.item() * accum,
                        (i - start + 1) / (time.perf_counter() - t0))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--tags", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--micro-batches", type=int, default=400)
    ap.add_argument("--eager-micro", type=int, default=120)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=8)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = Tagger(args.features, args.tags).to(dev)
    reference = copy.deepcopy(model)
    data = micro_batches(args.micro_batches, args.batch_size, args.features, args.tags, args.seed, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    logger.info("%d micro-batches of %d, accumulation %d", len(data), args.batch_size, args.accum)

    t0 = time.perf_counter()
    for i in progress(range(args.eager_micro), desc="eager", unit="micro"):
        x, y = data[i]
        loss = F.binary_cross_entropy_with_logits(model(x), y) / args.accum
        loss.backward()
        if model.trunk.micro_step % args.accum == 0:
            opt.step()
            opt.zero_grad(set_to_none=False)
        if i % args.log_every == 0:
            logger.info("micro %4d  loss %.5f (eager)", i, loss.item() * args.accum)
        del loss

    logger.info("graphing the trunk")
    sample = torch.randn(args.batch_size, args.features, device=dev)
    model.trunk = torch.cuda.make_graphed_callables(model.trunk, (sample,))
    train(model, opt, data, args.accum, args.eager_micro, args.log_every, t0)
    torch.cuda.synchronize()

    logger.info("eager reference run")
    ref_opt = torch.optim.AdamW(reference.parameters(), lr=args.lr)
    train(reference, ref_opt, data, args.accum, 0)
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    if diff <= 1e-3:
        logger.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        logger.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
