"""Run configuration and construction of the model, optimizer and lr schedule."""
from dataclasses import dataclass

import torch

from tiny_lm import TinyLM


@dataclass
class TrainConfig:
    device: str = "cuda"
    vocab: int = 512
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 2
    seq_len: int = 64
    batch_size: int = 32
    optim: str = "adamw"
    lr: float = 1e-3
    weight_decay: float = 0.1
    beta2: float = 0.95
    warmup_steps: int = 100
    eager_steps: int = 160
    steps: int = 420
    log_every: int = 1
    eval_every: int = 40
    seed: int = 7


def decay_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.ndim < 2 or name.startswith("pos.") or "ln" in name:
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def linear_warmup(warmup_steps):
    warmup_steps = max(1, warmup_steps)

    def factor(step):
        return min(1.0, (step + 1) / warmup_steps)
    return factor


def build_components(cfg):
    torch.manual_seed(cfg.seed)
    model = TinyLM(cfg.vocab, cfg.d_model, cfg.n_heads, cfg.n_layers, cfg.seq_len).to(cfg.device)
    params = decay_groups(model, cfg.weight_decay)
    if cfg.optim == "adamw":
        optimizer = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, cfg.beta2),
                                      weight_decay=cfg.weight_decay)
    elif cfg.optim == "sgd":
        optimizer = torch.optim.SGD(params, lr=cfg.lr, momentum=0.9, weight_decay=cfg.weight_decay)
    else:
        raise ValueError(f"unknown optimizer {cfg.optim!r}")
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_warmup(cfg.warmup_steps))
    return model, optimizer, scheduler
