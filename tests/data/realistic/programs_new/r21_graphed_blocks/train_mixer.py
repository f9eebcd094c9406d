#!/usr/bin/env python3
"""Train a small MLP-Mixer on synthetic 32x32 images, with CUDA-graphed blocks.

The first --eager-epochs run eagerly; then every residual block is wrapped with
torch.cuda.make_graphed_callables (patch embedding, head, loss and optimizer
stay eager) and training continues.  At the end the whole run is repeated
eagerly from the same initial weights and the weights are compared.
"""
import argparse
import copy
import logging
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from blocks import build_blocks
from progress import progress

logger = logging.getLogger("mixer.train")


class PatchClassifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.patch = cfg.patch
        self.embed = nn.Linear(3 * cfg.patch * cfg.patch, cfg.dim)
        self.blocks = build_blocks(cfg)
        self.norm = nn.LayerNorm(cfg.dim)
        self.head = nn.Linear(cfg.dim, cfg.num_classes)

    def patchify(self, images):
        b, c, h, w = images.shape
        p = self.patch
        x = images.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(b, (h // p) * (w // p), c * p * p)

    def forward(self, images):
        h = self.embed(self.patchify(images))
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h).mean(dim=1))


def class_prototypes(num_classes, size, seed):
    g = torch.Generator().manual_seed(seed)
    coarse = torch.randn(num_classes, 3, 8, 8, generator=g)
    return F.interpolate(coarse, size=(size, size), mode="bilinear", align_corners=False)


def synthetic_images(n, protos, seed, noise=1.2):
    g = torch.Generator().manual_seed(seed)
    size = protos.shape[-1]
    labels = torch.randint(0, protos.shape[0], (n,), generator=g)
    shift = torch.randint(-3, 4, (n, 2), generator=g)
    images = protos[labels] + noise * torch.randn(n, 3, size, size, generator=g)
    for i in range(n):
        images[i] = images[i].roll((int(shift[i, 0]), int(shift[i, 1])), dims=(1, 2))
    return images, labels


def epoch_order(n, batch, epoch, seed):
    g = torch.Generator().manual_seed(seed * 1000 + epoch)
    perm = torch.randperm(n, generator=g)
    return [perm[i:i + batch] for i in range(0, n - batch + 1, batch)]


def train_step(model, opt, images, labels):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()
    return loss.detach()


@torch.no_grad()
def evaluate(model, images, labels, batch):
    model.eval()
    correct = 0
    for i in range(0, images.shape[0], batch):
        correct += (model(images[i:i + batch]).argmax(-1) == labels[i:i + batch]).sum()
    model.train()
    return float(correct) / images.shape[0]


def graph_blocks(blocks, sample_shape, device):
    for i, block in enumerate(blocks):
        sample = torch.randn(*sample_shape, device=device, requires_grad=True)
        blocks[i] = torch.cuda.make_graphed_callables(block, (sample,))
    return blocks


def make_optimizer(model, cfg, total_steps):
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 * (1 + math.cos(math.pi * s / total_steps)))
    return opt, sched


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--arch", default="mixer", choices=["mixer", "resmlp"])
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--patch", type=int, default=4)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--depth", type=int, default=6)
    ap.add_argument("--token-hidden", type=int, default=64)
    ap.add_argument("--channel-hidden", type=int, default=256)
    ap.add_argument("--num-classes", type=int, default=10)
    ap.add_argument("--train-size", type=int, default=5120)
    ap.add_argument("--val-size", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--eager-epochs", type=int, default=3)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.05)
    ap.add_argument("--log-every", type=int, default=1)
    ap.add_argument("--seed", type=int, default=21)
    cfg = ap.parse_args()
    cfg.tokens = (cfg.image_size // cfg.patch) ** 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")

    torch.manual_seed(cfg.seed)
    dev = torch.device(cfg.device)
    protos = class_prototypes(cfg.num_classes, cfg.image_size, cfg.seed)
    train_x, train_y = synthetic_images(cfg.train_size, protos, cfg.seed + 1)
    val_x, val_y = synthetic_images(cfg.val_size, protos, cfg.seed + 2)
    train_x, train_y, val_x, val_y = (t.to(dev) for t in (train_x, train_y, val_x, val_y))

    model = PatchClassifier(cfg).to(dev)
    reference = copy.deepcopy(model)
    steps_per_epoch = cfg.train_size // cfg.batch_size
    total_steps = cfg.epochs * steps_per_epoch
    opt, sched = make_optimizer(model, cfg, total_steps)
    logger.info("%s: %d blocks, %d tokens x %d, %.2fM parameters, %d steps", cfg.arch, cfg.depth, cfg.tokens,
                cfg.dim, sum(p.numel() for p in model.parameters()) / 1e6, total_steps)
    logger.info("block 0: %s", model.blocks[0].extra_repr())

    step = 0
    t0 = time.perf_counter()
    for epoch in range(cfg.epochs):
        if epoch == cfg.eager_epochs:
            logger.info("epoch %d: graphing %d blocks for batch %d", epoch, len(model.blocks), cfg.batch_size)
            graph_blocks(model.blocks, (cfg.batch_size, cfg.tokens, cfg.dim), dev)
            logger.info("blocks graphed")
        running = torch.zeros((), device=dev)
        batches = epoch_order(cfg.train_size, cfg.batch_size, epoch, cfg.seed)
        for idx in progress(batches, desc=f"epoch {epoch}", unit="step"):
            idx = idx.to(dev)
            loss = train_step(model, opt, train_x[idx], train_y[idx])
            sched.step()
            running += loss
            if step % cfg.log_every == 0:
                logger.info("epoch %d step %4d  loss %.4f  lr %.2e  %.0f img/s", epoch, step, loss.item(),
                            sched.get_last_lr()[0], (step + 1) * cfg.batch_size / (time.perf_counter() - t0))
            step += 1
        acc = evaluate(model, val_x, val_y, 256)
        logger.info("epoch %d done: train loss %.4f  val acc %.3f", epoch, running.item() / len(batches), acc)
    torch.cuda.synchronize()

    logger.info("re-running %d steps eagerly for the reference", total_steps)
    ref_opt, ref_sched = make_optimizer(reference, cfg, total_steps)
    for epoch in range(cfg.epochs):
        for idx in epoch_order(cfg.train_size, cfg.batch_size, epoch, cfg.seed):
            idx = idx.to(dev)
            train_step(reference, ref_opt, train_x[idx], train_y[idx])
            ref_sched.step()
    logger.info("reference val acc %.3f", evaluate(reference, val_x, val_y, 256))
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    if diff <= 1e-3:
        logger.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        logger.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
