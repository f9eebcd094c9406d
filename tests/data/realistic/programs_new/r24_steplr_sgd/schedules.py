"""Epoch-based learning-rate schedules selected by the run config."""
import torch


def parse_milestones(spec):
    return sorted(int(m) for m in str(spec).split(",") if m.strip())


def build_scheduler(optimizer, cfg):
    kind = cfg.schedule.lower()
    if kind == "step":
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=cfg.step_size, gamma=cfg.gamma)
    if kind == "multistep":
        milestones = parse_milestones(cfg.milestones)
        return torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=milestones, gamma=cfg.gamma)
    if kind == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1.0)
    raise ValueError(f"unknown schedule {cfg.schedule!r}")


def describe(cfg):
    if cfg.schedule == "step":
        return f"StepLR(step_size={cfg.step_size}, gamma={cfg.gamma})"
    if cfg.schedule == "multistep":
        return f"MultiStepLR(milestones={parse_milestones(cfg.milestones)}, gamma={cfg.gamma})"
    return cfg.schedule
