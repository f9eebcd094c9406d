#!/usr/bin/env python3
"""Train a tiny transformer LM on a synthetic Markov-chain corpus with whole-step CUDA graphs.

The run config is a dataclass (components.TrainConfig); every field is also a
command-line flag.  Steps run eagerly until the lr warm-up is over, then one
training step is recorded and replayed with a constant lr.  At the end the same
run is repeated eagerly from the same initialisation and the weights are compared.
"""
import argparse
import dataclasses
import logging
import math
import time

import torch

from components import TrainConfig, build_components
from progress import progress
from tiny_lm import lm_loss
from trainer import WholeStepTrainer

log = logging.getLogger("tinylm")


def parse_config():
    defaults = TrainConfig()
    ap = argparse.ArgumentParser(description=__doc__)
    for f in dataclasses.fields(TrainConfig):
        value = getattr(defaults, f.name)
        ap.add_argument("--" + f.name.replace("_", "-"), type=type(value), default=value)
    return TrainConfig(**vars(ap.parse_args()))


def markov_corpus(n_batches, batch, seq_len, vocab, seed, device, fanout=4):
    g = torch.Generator().manual_seed(seed)
    succ = torch.randint(0, vocab, (vocab, fanout), generator=g)
    probs = torch.softmax(2.0 * torch.randn(vocab, fanout, generator=g), dim=-1)
    out = []
    for _ in range(n_batches):
        tok = torch.empty(batch, seq_len + 1, dtype=torch.long)
        tok[:, 0] = torch.randint(0, vocab, (batch,), generator=g)
        for t in range(seq_len):
            pick = torch.multinomial(probs[tok[:, t]], 1, generator=g).squeeze(1)
            tok[:, t + 1] = succ[tok[:, t], pick]
        out.append((tok[:, :-1].to(device), tok[:, 1:].to(device)))
    return out


@torch.no_grad()
def perplexity(model, batches):
    model.eval()
    nll = sum(lm_loss(model(x), y).item() for x, y in batches) / len(batches)
    model.train()
    return math.exp(nll)


def main():
    cfg = parse_config()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")

    model, optimizer, scheduler = build_components(cfg)
    data = markov_corpus(cfg.steps + 4, cfg.batch_size, cfg.seq_len, cfg.vocab, cfg.seed + 1, cfg.device)
    batches, held_out = data[: cfg.steps], data[cfg.steps:]
    log.info("TinyLM %.2fM params, %s lr %.1e (warm-up %d steps), %d steps of %dx%d tokens",
             sum(p.numel() for p in model.parameters()) / 1e6, cfg.optim, cfg.lr, cfg.warmup_steps,
             cfg.steps, cfg.batch_size, cfg.seq_len)

    trainer = WholeStepTrainer(model, optimizer, *batches[0])
    graph_from = max(cfg.eager_steps, cfg.warmup_steps)
    tokens = cfg.batch_size * cfg.seq_len
    t0 = time.perf_counter()
    for step in progress(range(graph_from), desc="eager", unit="step"):
        loss = trainer.eager_step(*batches[step])
        scheduler.step()
        if step % cfg.log_every == 0:
            log.info("step %4d  loss %.4f  lr %.2e  %.0f tok/s", step, loss.item(), optimizer.param_groups[0]["lr"],
                     (step + 1) * tokens / (time.perf_counter() - t0))
        if (step + 1) % cfg.eval_every == 0:
            log.info("step %4d  held-out ppl %.2f", step, perplexity(model, held_out))

    log.info("lr warm-up done (lr %.2e); recording the training step at step %d",
             optimizer.param_groups[0]["lr"], graph_from)
    trainer.capture(batches[graph_from:])
    replay_from = graph_from + trainer.warmup_iters
    t0 = time.perf_counter()
    for step in progress(range(replay_from, cfg.steps), desc="graph", unit="step"):
        loss = trainer.train_step(*batches[step])
        if step % cfg.log_every == 0:
            log.info("step %4d  loss %.4f  %.0f tok/s (graph)", step, loss.item(),
                     (step + 1 - replay_from) * tokens / (time.perf_counter() - t0))
        if (step + 1) % cfg.eval_every == 0:
            log.info("step %4d  held-out ppl %.2f", step, perplexity(model, held_out))
    torch.cuda.synchronize()
    log.info("final held-out ppl %.2f", perplexity(model, held_out))

    log.info("repeating the %d steps eagerly for the reference", cfg.steps)
    ref_model, ref_optimizer, ref_scheduler = build_components(cfg)
    ref_trainer = WholeStepTrainer(ref_model, ref_optimizer, *batches[0])
    for step, (x, y) in enumerate(batches):
        ref_trainer.eager_step(x, y)
        if step < graph_from:
            ref_scheduler.step()
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), ref_model.parameters()))
    if diff <= 1e-3:
        log.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        log.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
