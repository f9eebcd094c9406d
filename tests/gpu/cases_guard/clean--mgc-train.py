# guard-mode: warn,compare:3
# make_graphed_callables training, the documented way: new data each step through the graphed callable,
# losses kept as Python floats, the optimizer outside the graph.
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 64)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
sample = torch.randn(32, 64, device="cuda", requires_grad=True)
model = torch.cuda.make_graphed_callables(model, (sample,))
losses = []
for _ in range(10):
    x = torch.randn(32, 64, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    losses.append(loss.item())
print("RESULT:", losses[-1])
