"""Out of memory inside make_graphed_callables' capture: a module that takes a large workspace only while capturing."""
import torch


class WorkspaceLinear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(1024, 1024, device="cuda")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.cuda.is_current_stream_capturing():
            # a library that sizes its workspace for the captured graph (more than an H200 holds)
            self.workspace = torch.empty(400 * 2**30, dtype=torch.uint8, device=x.device)
        return self.fc(x)


x = torch.randn(64, 1024, device="cuda", requires_grad=True)
graphed = torch.cuda.make_graphed_callables(WorkspaceLinear(), (x,))
print(graphed(x).sum().item())
