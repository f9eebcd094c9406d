#!/usr/bin/env python3
"""Train a residual MLP regressor on a synthetic tabular task with CUDA graphs.

The optimizer comes from optim_setup.build_optimizer; every step after the
warm-up is a replay of one captured training step.  At the end the same run is
repeated eagerly and the weights are compared.
"""
import argparse
import copy
import logging
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from optim_setup import build_optimizer
from progress import progress
from trainer import GraphedTrainer

log = logging.getLogger("regress")


class ResMLP(nn.Module):
    def __init__(self, d_in, width=256, depth=4):
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU())
                                    for _ in range(depth))
        self.out = nn.Linear(width, 1)

    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = h + b(h)
        return self.out(h).squeeze(-1)


def make_data(n_batches, batch, d_in, seed, device):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(d_in, generator=g)
    out = []
    for _ in range(n_batches):
        x = torch.randn(batch, d_in, generator=g)
        y = torch.tanh(x @ w / d_in ** 0.5) + 0.05 * torch.randn(batch, generator=g)
        out.append((x.to(device), y.to(device)))
    return out


def eager_reference(model, cfg, batches):
    opt = build_optimizer(model, cfg)
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        F.smooth_l1_loss(model(x), y).backward()
        opt.step()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--optimizer", default="adamw", choices=["sgd", "adamw", "adam"])
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=3)
    cfg = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")

    torch.manual_seed(cfg.seed)
    dev = torch.device(cfg.device)
    model = ResMLP(cfg.features).to(dev)
    reference = copy.deepcopy(model)
    batches = make_data(cfg.steps, cfg.batch_size, cfg.features, cfg.seed, dev)
    log.info("model %.2fM params, optimizer %s lr %.1e, %d steps", sum(p.numel() for p in model.parameters()) / 1e6,
             cfg.optimizer, cfg.lr, cfg.steps)

    opt = build_optimizer(model, cfg)
    trainer = GraphedTrainer(model, opt, *batches[0])
    trainer.warmup(batches)
    trainer.capture()
    t0 = time.perf_counter()
    bar = progress(range(trainer.warmup_steps, cfg.steps), desc="train", unit="step")
    for step in bar:
        loss = trainer.train_step(*batches[step])
        if step % cfg.log_every == 0:
            log.info("step %4d  loss %.5f  %.1f step/s", step, loss.item(), (step + 1) / (time.perf_counter() - t0))
    torch.cuda.synchronize()

    log.info("re-running %d steps eagerly for the reference", cfg.steps)
    reference = eager_reference(reference, cfg, batches)
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    if diff <= 1e-3:
        log.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        log.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
