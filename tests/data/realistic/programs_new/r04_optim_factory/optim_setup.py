"""Optimizer construction from the run config."""
import torch


def param_groups(model, weight_decay):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if p.ndim < 2 or name.endswith(".bias") else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def build_optimizer(model, cfg):
    groups = param_groups(model, cfg.weight_decay)
    kind = cfg.optimizer.lower()
    if kind == "sgd":
        opt = torch.optim.SGD(groups, lr=cfg.lr, momentum=0.9, nesterov=True)
    elif kind == "adamw":
        opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=(0.9, 0.95))
    elif kind == "adam":
        opt = torch.optim.Adam(groups, lr=cfg.lr, capturable=True)
    else:
        raise ValueError(f"unknown optimizer {cfg.optimizer!r}")
    return opt
