#!/usr/bin/env python3
"""Train a fixed-window language model on a synthetic Markov corpus.

Warm-up plus cosine decay, AdamW (capturable) and a captured whole step.
After training, the run is repeated eagerly and the weights compared.
"""
import argparse
import copy
import logging
import time

import torch

from lm import WindowLM, lm_loss
from progress import progress
from schedule import WarmupCosine

logger = logging.getLogger("wlm")


def markov_corpus(n_tokens, vocab, seed):
    g = torch.Generator().manual_seed(seed)
    trans = torch.softmax(torch.randn(vocab, vocab, generator=g) * 3.0, dim=-1)
    toks = torch.empty(n_tokens, dtype=torch.long)
    toks[0] = 0
    for i in range(1, n_tokens):
        toks[i] = torch.multinomial(trans[toks[i - 1]], 1, generator=g)
    return toks


def batches_from(corpus, steps, batch, context, seed, device):
    g = torch.Generator().manual_seed(seed + 1)
    out = []
    for _ in range(steps):
        starts = torch.randint(0, corpus.numel() - context - 1, (batch,), generator=g)
        idx = starts[:, None] + torch.arange(context + 1)
        win = corpus[idx]
        out.append((win[:, :-1].to(device), win[:, -1].to(device)))
    return out


def make_optimizer(model, lr, device):
    return torch.optim.AdamW(model.parameters(), lr=torch.tensor(lr, device=device), weight_decay=0.0,
                             capturable=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--context", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--log-every", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s | %(message)s")

    torch.manual_seed(args.seed)
    dev = torch.device(args.device)
    corpus = markov_corpus(20000, args.vocab, args.seed)
    data = batches_from(corpus, args.steps, args.batch_size, args.context, args.seed, dev)
    model = WindowLM(args.vocab, args.context).to(dev)
    reference = copy.deepcopy(model)
    logger.info("corpus %d tokens, %d steps of %d windows", corpus.numel(), args.steps, args.batch_size)

    opt = make_optimizer(model, args.lr, dev)
    sched = WarmupCosine(opt, args.warmup, args.steps)
    static_ctx, static_tgt = data[0][0].clone(), data[0][1].clone()

    def step_body():
        loss = lm_loss(model, static_ctx, static_tgt)
        loss.backward()
        opt.step()
        return loss.detach()

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            static_ctx.copy_(data[i][0])
            static_tgt.copy_(data[i][1])
            opt.zero_grad(set_to_none=True)
            step_body()
            sched.step()
    torch.cuda.current_stream().wait_stream(s)
    logger.info("warm-up done, lr at capture %.5f", sched.current())

    opt.zero_grad(set_to_none=True)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step_body()

    t0 = time.perf_counter()
    for step in progress(range(3, args.steps), desc="train", unit="step"):
        static_ctx.copy_(data[step][0])
        static_tgt.copy_(data[step][1])
        graph.replay()
        sched.step()
        if step % args.log_every == 0:
            logger.info("step %4d  loss %.4f  lr %.5f  %.0f step/s", step, static_loss.item(), sched.current(),
                        (step - 2) / (time.perf_counter() - t0))
    torch.cuda.synchronize()

    logger.info("eager reference run")
    ref_opt = make_optimizer(reference, args.lr, dev)
    ref_sched = WarmupCosine(ref_opt, args.warmup, args.steps)
    for ctx, tgt in data:
        ref_opt.zero_grad(set_to_none=True)
        lm_loss(reference, ctx, tgt).backward()
        ref_opt.step()
        ref_sched.step()
    diff = max((a - b).abs().max().item() for a, b in zip(model.parameters(), reference.parameters()))
    if diff <= 1e-3:
        logger.info("MATCH graph-trained weights vs eager (max |dW| %.3e)", diff)
    else:
        logger.error("MISMATCH graph-trained weights vs eager (max |dW| %.3e)", diff)


if __name__ == "__main__":
    main()
