"""torch.cuda.make_graphed_callables on one module and on a tuple of modules whose result is unpacked."""

import torch
from modules import Body, Embed, Tail


def main() -> None:
    dim = 48
    embed = Embed(dim).cuda()
    body = Body(dim).cuda()
    tail = Tail(dim).cuda()
    x = torch.randn(16, dim, device="cuda", requires_grad=True)
    h = torch.randn(16, dim, device="cuda", requires_grad=True)

    embed = torch.cuda.make_graphed_callables(embed, (x,))
    body, tail = torch.cuda.make_graphed_callables((body, tail), ((h,), (h,)))

    opt = torch.optim.SGD([*embed.parameters(), *body.parameters(), *tail.parameters()], lr=0.1)
    for _ in range(10):
        opt.zero_grad(set_to_none=True)
        loss = tail(body(embed(torch.randn(16, dim, device="cuda")))).sum()
        loss.backward()
        opt.step()
        print(loss.item())  # ok: capture-item-sync


if __name__ == "__main__":
    main()
