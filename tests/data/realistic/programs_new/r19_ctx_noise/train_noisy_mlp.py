#!/usr/bin/env python3
"""Train a residual classifier with Gaussian noise injection, replaying a recorded step.

The first --eager-steps steps run eagerly.  After a short side-stream warm-up the
training step is recorded once and replayed for the rest of the run.  The noise
layers draw from their own generator, seeded with --noise-seed, so that a run can
be repeated exactly; at the end the whole run is repeated eagerly and the
weights are compared.
"""
import argparse
import logging
import time

import torch
import torch.nn.functional as F

from graph_utils import StepGraph, capture_step, side_stream_warmup
from layers import NoisyClassifier
from progress import progress

log = logging.getLogger("noisy.train")


def gaussian_clusters(n_batches, batch, d_in, n_classes, seed, device):
    g = torch.Generator().manual_seed(seed)
    centers = 0.3 * torch.randn(n_classes, d_in, generator=g)
    mix = torch.randn(d_in, d_in, generator=g) / d_in ** 0.5
    out = []
    for _ in range(n_batches):
        y = torch.randint(0, n_classes, (batch,), generator=g)
        x = centers[y] + torch.randn(batch, d_in, generator=g) @ mix
        out.append((x.to(device), y.to(device)))
    return out


def build_model(args, generator, device):
    return NoisyClassifier(args.features, args.classes, width=args.width, depth=args.depth,
                           input_noise=args.input_noise, hidden_noise=args.hidden_noise,
                           generator=generator).to(device)


def build_optimizer(model, args):
    return torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, nesterov=True,
                           weight_decay=args.weight_decay)


def make_train_step(model, optimizer, x, y, label_smoothing):
    def train_step():
        logits = model(x)
        loss = F.cross_entropy(logits, y, label_smoothing=label_smoothing)
        loss.backward()
        optimizer.step()
        return loss.detach()
    return train_step


@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    correct = total = 0
    for x, y in batches:
        correct += (model(x).argmax(dim=-1) == y).sum().item()
        total += y.numel()
    model.train()
    return correct / total


def eager_reference(args, init_state, batches, device):
    gen = torch.Generator(device=torch.device(args.device))
    gen.manual_seed(args.noise_seed)
    model = build_model(args, gen, device)
    model.load_state_dict(init_state)
    optimizer = build_optimizer(model, args)
    x, y = batches[0][0].clone(), batches[0][1].clone()
    step_fn = make_train_step(model, optimizer, x, y, args.label_smoothing)
    for bx, by in batches:
        x.copy_(bx)
        y.copy_(by)
        optimizer.zero_grad(set_to_none=True)
        step_fn()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--input-noise", type=float, default=0.1)
    ap.add_argument("--hidden-noise", type=float, default=0.05)
    ap.add_argument("--noise-seed", type=int, default=1234)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--label-smoothing", type=float, default=0.05)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--eager-steps", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--eval-batches", type=int, default=4)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--log-every", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, datefmt="%m%d %H:%M:%S",
                        format="%(levelname).1s%(asctime)s.%(msecs)03d %(process)d %(name)s] %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    data = gaussian_clusters(args.steps + args.eval_batches, args.batch_size, args.features, args.classes,
                             args.seed, dev)
    batches, held_out = data[: args.steps], data[args.steps:]

    noise_gen = torch.Generator(device=torch.device(args.device))
    noise_gen.manual_seed(args.noise_seed)
    model = build_model(args, noise_gen, dev)
    init_state = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = build_optimizer(model, args)
    log.info("classifier %.2fM params, noise std in/hidden %.2f/%.2f, %d steps (%d eager)",
             sum(p.numel() for p in model.parameters()) / 1e6, args.input_noise, args.hidden_noise,
             args.steps, args.eager_steps)

    static_x = batches[0][0].clone()
    static_y = batches[0][1].clone()
    train_step = make_train_step(model, optimizer, static_x, static_y, args.label_smoothing)

    def load(step):
        x, y = batches[step]
        static_x.copy_(x)
        static_y.copy_(y)

    def eager_step(step):
        load(step)
        optimizer.zero_grad(set_to_none=True)
        return train_step()

    t0 = time.perf_counter()
    for step in progress(range(args.eager_steps), desc="eager", unit="step"):
        loss = eager_step(step)
        if step % args.log_every == 0:
            log.info("step %4d  loss %.4f  %.0f samples/s", step, loss.item(),
                     (step + 1) * args.batch_size / (time.perf_counter() - t0))
        if (step + 1) % args.eval_every == 0:
            log.info("step %4d  held-out acc %.4f", step, evaluate(model, held_out))

    graph_from = args.eager_steps + args.warmup
    log.info("warming up steps %d-%d on a side stream", args.eager_steps, graph_from - 1)
    side_stream_warmup(eager_step, range(args.eager_steps, graph_from))
    optimizer.zero_grad(set_to_none=True)
    runner = StepGraph()
    static_loss = capture_step(runner, train_step)

    t0 = time.perf_counter()
    for step in progress(range(graph_from, args.steps), desc="graph", unit="step"):
        load(step)
        runner.replay()
        if step % args.log_every == 0:
            log.info("step %4d  loss %.4f  %.0f samples/s (graph)", step, static_loss.item(),
                     (step + 1 - graph_from) * args.batch_size / (time.perf_counter() - t0))
        if (step + 1) % args.eval_every == 0:
            log.info("step %4d  held-out acc %.4f", step, evaluate(model, held_out))
    torch.cuda.synchronize()
    log.info("final held-out acc %.4f", evaluate(model, held_out))

    log.info("repeating the %d steps eagerly with noise seed %d", args.steps, args.noise_seed)
    reference = eager_reference(args, init_state, batches, dev)
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    if diff <= 1e-3:
        log.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        log.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
