#!/usr/bin/env python3
"""Train a small CNN on synthetic 16x16 glyphs with a whole-step CUDA graph.

SGD with momentum and an epoch-based learning-rate schedule from
schedules.build_scheduler.  After a few warm-up steps every training step is a
replay of one captured step.  At the end the same run is repeated eagerly and
the weights are compared.
"""
import argparse
import copy
import logging

import torch
import torch.nn as nn
import torch.nn.functional as F

from schedules import build_scheduler, describe
from trainer import Trainer

log = logging.getLogger("glyphs")


class GlyphCNN(nn.Module):
    def __init__(self, n_classes=10, width=16):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 16, 128), nn.ReLU(inplace=True),
                                        nn.Linear(128, n_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def make_glyphs(n, n_classes, seed, noise=0.6):
    g = torch.Generator().manual_seed(seed)
    protos = F.interpolate(torch.randn(n_classes, 1, 6, 6, generator=g), size=(16, 16), mode="bilinear",
                           align_corners=False)
    y = torch.randint(0, n_classes, (n,), generator=g)
    shifts = torch.randint(-2, 3, (n, 2), generator=g)
    x = torch.empty(n, 1, 16, 16)
    for i in range(n):
        x[i] = torch.roll(protos[y[i]], shifts=(int(shifts[i, 0]), int(shifts[i, 1])), dims=(1, 2))
    x += noise * torch.randn(x.shape, generator=g)
    return x, y


def epoch_batches(data, epoch, batch_size, seed):
    x, y = data
    g = torch.Generator().manual_seed(seed * 1000 + epoch)
    perm = torch.randperm(x.shape[0], generator=g).to(x.device)
    n = x.shape[0] // batch_size
    return [(x[perm[i * batch_size:(i + 1) * batch_size]], y[perm[i * batch_size:(i + 1) * batch_size]])
            for i in range(n)]


def make_optimizer(model, cfg):
    return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)


@torch.no_grad()
def accuracy(model, data, batch_size=1024):
    x, y = data
    correct = 0
    for i in range(0, x.shape[0], batch_size):
        correct += (model(x[i:i + batch_size]).argmax(-1) == y[i:i + batch_size]).sum().item()
    return correct / x.shape[0]


def eager_reference(model, cfg, data):
    opt = make_optimizer(model, cfg)
    sched = build_scheduler(opt, cfg)
    for epoch in range(cfg.epochs):
        for x, y in epoch_batches(data, epoch, cfg.batch_size, cfg.seed):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
        sched.step()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--schedule", default="step", choices=["step", "multistep", "constant"])
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--step-size", type=int, default=4)
    ap.add_argument("--milestones", default="6,9")
    ap.add_argument("--gamma", type=float, default=0.1)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--train-size", type=int, default=4608)
    ap.add_argument("--val-size", type=int, default=2048)
    ap.add_argument("--warmup-steps", type=int, default=3)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    cfg = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s[%(process)d] %(levelname)s %(message)s")

    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.manual_seed(cfg.seed)
    dev = torch.device(cfg.device)
    xs, ys = make_glyphs(cfg.train_size + cfg.val_size, 10, cfg.seed)
    train = (xs[:cfg.train_size].to(dev), ys[:cfg.train_size].to(dev))
    val = (xs[cfg.train_size:].to(dev), ys[cfg.train_size:].to(dev))
    model = GlyphCNN().to(dev)
    reference = copy.deepcopy(model)
    log.info("glyphs: %d train / %d val, model %.1fk params", cfg.train_size, cfg.val_size,
             sum(p.numel() for p in model.parameters()) / 1e3)
    log.info("SGD lr %g momentum %g wd %g, schedule %s, %d epochs", cfg.lr, cfg.momentum, cfg.weight_decay,
             describe(cfg), cfg.epochs)

    opt = make_optimizer(model, cfg)
    sched = build_scheduler(opt, cfg)
    first = epoch_batches(train, 0, cfg.batch_size, cfg.seed)
    trainer = Trainer(model, opt, sched, first[0], warmup_steps=cfg.warmup_steps, log_every=cfg.log_every)
    trainer.warmup(first)
    trainer.capture()
    for epoch in range(cfg.epochs):
        batches = first if epoch == 0 else epoch_batches(train, epoch, cfg.batch_size, cfg.seed)
        mean_loss = trainer.train_epoch(epoch, batches, start=cfg.warmup_steps if epoch == 0 else 0)
        acc = accuracy(model, val)
        lr = trainer.end_epoch()
        log.info("epoch %d done  mean loss %.4f  val acc %.4f  next lr %.4g", epoch, mean_loss, acc, lr)
    torch.cuda.synchronize()

    log.info("re-running %d epochs eagerly for the reference", cfg.epochs)
    reference = eager_reference(reference, cfg, train)
    log.info("eager reference val acc %.4f", accuracy(reference, val))
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    if diff <= 1e-3:
        log.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        log.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
