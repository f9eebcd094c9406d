from collections.abc import Callable
from typing import ClassVar, TypeVar

import torch
from torch import nn

T = TypeVar("T")


class CustomOp(nn.Module):
    registry: ClassVar[dict[str, type]] = {}

    @classmethod
    def register(cls, name: str) -> Callable[[T], T]:
        def wrap(op: T) -> T:
            cls.registry[name] = op  # type: ignore[assignment]
            return op

        return wrap

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_native(x)

    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError
