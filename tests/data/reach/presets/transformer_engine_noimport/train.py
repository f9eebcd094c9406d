"""Graph the attention and MLP blocks once, then replay them every step."""

import argparse
import logging

import te_pretrain.eager as te
import torch
from te_pretrain.blocks import AttentionBlock, MLPBlock
from te_pretrain.eager import DelayedScaling, Format

logger = logging.getLogger("te_pretrain")


def log_weight_norms(module: torch.nn.Module) -> None:
    # Registered as a hook of the eager fallback.
    total = sum(
        p.detach().float().norm().item() for p in module.parameters()
    )  # ok: capture-item-sync
    logger.debug("weight norm %.3f", total)


def sync_before_warmup() -> None:
    torch.cuda.synchronize()  # ok: capture-explicit-sync


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()

    attn = AttentionBlock(args.hidden, args.heads).cuda()
    mlp = MLPBlock(args.hidden, 4 * args.hidden).cuda()
    sample = torch.randn(args.seq, args.batch, args.hidden, device="cuda", requires_grad=True)
    recipe = DelayedScaling(fp8_format=Format.HYBRID, amax_history_len=16)

    attn_g, mlp_g = te.make_graphed_callables(
        (attn, mlp),
        ((sample,), (sample.detach().clone().requires_grad_(),)),
        num_warmup_iters=3,
        enabled=True,
        recipe=recipe,
        pre_warmup_hook=sync_before_warmup,
        capture_time_hooks=[{"forward_pre_hooks": {"norms": log_weight_norms}}, None],
    )

    params = list(attn.parameters()) + list(mlp.parameters())
    opt = torch.optim.AdamW(params, lr=3e-4)
    for step in range(args.steps):
        x = torch.randn(args.seq, args.batch, args.hidden, device="cuda")
        with te.autocast(enabled=True, recipe=recipe):
            y = mlp_g(attn_g(x))
        loss = y.float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        logger.info("step %d loss %.4f", step, loss.item())  # ok: capture-item-sync


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    main()
