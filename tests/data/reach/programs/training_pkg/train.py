import argparse
import logging

import torch
from tqdm import tqdm
from trainer.loop import Trainer
from trainer.model import GPTConfig

log = logging.getLogger("train")


def batches(cfg: GPTConfig, batch: int, steps: int):
    for _ in range(steps):
        idx = torch.randint(0, cfg.vocab, (batch, cfg.max_len), device="cuda")
        yield idx, torch.roll(idx, -1, dims=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--log-every", type=int, default=20)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    cfg = GPTConfig()
    trainer = Trainer(cfg, args.lr, args.batch, args.log_every)
    log.info("model: %.1fM parameters", trainer.model.num_params() / 1e6)
    trainer.capture()
    torch.cuda.synchronize()  # ok: capture-explicit-sync
    bar = tqdm(batches(cfg, args.batch, args.steps), total=args.steps)
    for idx, tgt in bar:
        loss = trainer.train_on(idx, tgt)
        bar.set_postfix(loss=f"{loss.item():.3f}")  # ok: capture-item-sync


if __name__ == "__main__":
    main()
