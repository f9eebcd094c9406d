import argparse
import time

import torch
from fastgen import decode
from fastgen.decode import decode_one_token, prefill
from fastgen.model import ModelArgs, Transformer


def decode_n_tokens(model: Transformer, cur_token: torch.Tensor, input_pos: torch.Tensor, n: int):
    new_tokens, new_probs = [], []
    for _ in range(n):
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            next_token, next_prob = decode_one_token(model, cur_token, input_pos)  # ruleid: compile-output-overwritten
        input_pos += 1
        new_tokens.append(next_token.clone())
        new_probs.append(next_prob)
        cur_token = next_token.clone()
    return new_tokens, new_probs


@torch.no_grad()
def generate(model: Transformer, prompt: torch.Tensor, max_new: int) -> torch.Tensor:
    t = prompt.size(0)
    model.setup_caches(batch=1)
    input_pos = torch.arange(0, t, device=prompt.device)
    first = prefill(model, prompt.view(1, -1), input_pos)
    input_pos = torch.tensor([t], device=prompt.device, dtype=torch.int)
    tokens, probs = decode_n_tokens(model, first.view(1, -1), input_pos, max_new - 1)
    print("mean top prob", torch.stack([p.max() for p in probs]).mean().item())  # ok: capture-item-sync
    return torch.cat([prompt, first.view(-1), *[tok.view(-1) for tok in tokens]])


def main() -> None:
    global decode_one_token, prefill
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()
    model = Transformer(ModelArgs()).to(device="cuda", dtype=torch.bfloat16).eval()
    if args.compile:
        decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead")
        prefill = torch.compile(prefill, dynamic=True)
        decode.decode_one_token = decode_one_token
    prompt = torch.randint(0, 32000, (16,), device="cuda")
    torch.cuda.synchronize()  # ok: capture-explicit-sync
    t0 = time.perf_counter()
    out = generate(model, prompt, args.max_new_tokens)
    torch.cuda.synchronize()  # ok: capture-explicit-sync
    print(f"{args.max_new_tokens / (time.perf_counter() - t0):.1f} tok/s", out.tolist()[:8])  # ok: capture-host-copy


if __name__ == "__main__":
    main()
