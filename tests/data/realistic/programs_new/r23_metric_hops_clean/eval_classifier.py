#!/usr/bin/env python3
"""Evaluate a feature classifier with a graph-captured eval step.

Loads --checkpoint if given (otherwise fits a small reference classifier on the
synthetic training split), then evaluates top-1 accuracy and top-5 recall on the
held-out split by replaying one captured forward-and-metrics step per batch.
The same evaluation is repeated eagerly at the end and the numbers compared.
"""
import argparse
import logging
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from evaluator import Evaluator
from metrics import Accuracy, TopK, summarize
from progress import progress

log = logging.getLogger("evalh")


class FeatureClassifier(nn.Module):
    def __init__(self, d_in, n_classes, width=256, depth=3, dropout=0.1):
        super().__init__()
        layers = [nn.Linear(d_in, width), nn.GELU()]
        for _ in range(depth - 1):
            layers += [nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(), nn.Dropout(dropout)]
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(width, n_classes)

    def forward(self, x):
        return self.head(self.body(x))


def make_split(n_batches, batch, d_in, n_classes, seed, device, spread=2.2):
    g = torch.Generator().manual_seed(1000)
    centers = torch.randn(n_classes, d_in, generator=g)
    g.manual_seed(seed)
    out = []
    for _ in range(n_batches):
        y = torch.randint(0, n_classes, (batch,), generator=g)
        x = centers[y] + spread * torch.randn(batch, d_in, generator=g)
        out.append((x.to(device), y.to(device)))
    return out


def fit_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y, label_smoothing=0.05)
    loss.backward()
    opt.step()
    return loss.detach()


def fit(model, batches, steps, lr, log_every):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    t0 = time.perf_counter()
    for step in progress(range(steps), desc="fit", unit="step"):
        x, y = batches[step % len(batches)]
        loss = fit_step(model, opt, x, y)
        if step % log_every == 0:
            log.info("fit step %4d  loss %.4f  %.0f step/s", step, loss.item(), (step + 1) / (time.perf_counter() - t0))
    model.eval()
    return model


def eager_reference(model, batches, device):
    metrics = [Accuracy().to(device), TopK(5).to(device)]
    with torch.no_grad():
        for x, y in batches:
            logits = model(x)
            for m in metrics:
                m.update(logits, y)
    return summarize(metrics)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--train-batches", type=int, default=40)
    ap.add_argument("--eval-batches", type=int, default=160)
    ap.add_argument("--fit-steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=17)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)-5s %(asctime)s [%(name)s] %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = FeatureClassifier(args.features, args.classes).to(dev)
    log.info("classifier: %d features -> %d classes, %.2fM params", args.features, args.classes,
             sum(p.numel() for p in model.parameters()) / 1e6)
    if args.checkpoint and os.path.exists(args.checkpoint):
        model.load_state_dict(torch.load(args.checkpoint, map_location=dev))
        model.eval()
        log.info("loaded %s", args.checkpoint)
    else:
        log.info("no checkpoint given, fitting a reference classifier for %d steps", args.fit_steps)
        train = make_split(args.train_batches, args.batch_size, args.features, args.classes, args.seed, dev)
        fit(model, train, args.fit_steps, args.lr, args.log_every)

    held_out = make_split(args.eval_batches, args.batch_size, args.features, args.classes, args.seed + 1, dev)
    log.info("held-out split: %d batches of %d", len(held_out), args.batch_size)
    metrics = [Accuracy(), TopK(5)]
    for m in metrics:
        m.to(dev)
    evaluator = Evaluator(model, metrics, warmup=args.warmup, log_every=args.log_every)
    result = evaluator.run(held_out)
    log.info("graph eval: %s", "  ".join(f"{k} {v:.4f}" for k, v in result.items()))

    log.info("re-running the evaluation eagerly for the reference")
    ref = eager_reference(model, held_out, dev)
    log.info("eager eval: %s", "  ".join(f"{k} {v:.4f}" for k, v in ref.items()))
    diff = max(abs(result[k] - ref[k]) for k in ref)
    if diff <= 1e-6:
        log.info("MATCH graph vs eager eval metrics (max |diff| %.3e)", diff)
    else:
        log.error("MISMATCH graph vs eager eval metrics (max |diff| %.3e)", diff)


if __name__ == "__main__":
    main()
