#!/usr/bin/env python3
"""Train a gated residual MLP on a two-target tabular regression task.

The first --eager-steps steps run eagerly (the loss is noisy early and the eager
phase is easy to debug); then the whole training step is captured with
torch.cuda.graph after a short side-stream warm-up and replayed for the rest of
the run.  At the end the same schedule is re-run eagerly and the weights compared.
"""
import argparse
import copy
import logging
import time

import torch
import torch.nn as nn

from model_reg import TabularRegressor, make_batches
from progress import progress
from trainer import Trainer

log = logging.getLogger("regress")


def build_optimizer(model, args):
    return torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=args.weight_decay)


def eager_reference(model, args, loss_fn, batches):
    opt = build_optimizer(model, args)
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--features", type=int, default=48)
    ap.add_argument("--targets", type=int, default=2)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--eager-steps", type=int, default=300)
    ap.add_argument("--graph-warmup", type=int, default=3)
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--huber-delta", type=float, default=0.5)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=26)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, datefmt="%m%d %H:%M:%S",
                        format="%(levelname).1s%(asctime)s.%(msecs)03d %(process)d %(name)s] %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    model = TabularRegressor(args.features, args.width, args.depth, args.targets).to(dev)
    reference = copy.deepcopy(model)
    batches = make_batches(args.steps, args.batch_size, args.features, args.targets, args.seed, dev)
    loss_fn = nn.HuberLoss(delta=args.huber_delta)
    log.info("model %.2fM params, %d steps (%d eager), batch %d", sum(p.numel() for p in model.parameters()) / 1e6,
             args.steps, args.eager_steps, args.batch_size)

    trainer = Trainer(model, build_optimizer(model, args), loss_fn, *batches[0], log_every=args.log_every)
    t0 = time.perf_counter()
    trainer.warmup(batches[: args.eager_steps])
    log.info("eager phase done: %d steps, last loss %.5f, %.1f step/s", trainer.step, trainer.last_loss.item(),
             trainer.step / (time.perf_counter() - t0))

    split = args.eager_steps + args.graph_warmup
    trainer.capture(batches[args.eager_steps: split])
    log.info("graph captured")
    t1 = time.perf_counter()
    for i, (x, y) in enumerate(progress(batches[split:], desc="graph", unit="step")):
        loss = trainer.replay(x, y)
        if (split + i) % args.log_every == 0:
            log.info("step %4d  loss %.5f  %.1f step/s", split + i, loss.item(), (i + 1) / (time.perf_counter() - t1))
    torch.cuda.synchronize()

    log.info("re-running %d steps eagerly for the reference", args.steps)
    reference = eager_reference(reference, args, loss_fn, batches)
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    if diff <= 1e-3:
        log.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        log.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
