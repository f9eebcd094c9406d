"""Eager generation with the engine's public names."""

from dataclasses import dataclass, field


@dataclass
class CudaGraphConfig:
    batch_sizes: list[int] = field(default_factory=list)
    enable_padding: bool = False


@dataclass
class SamplingParams:
    max_tokens: int = 16


@dataclass
class _Completion:
    text: str


@dataclass
class _Output:
    outputs: list[_Completion]


class LLM:
    def __init__(
        self, model: str, max_batch_size: int = 1, cuda_graph_config: CudaGraphConfig | None = None
    ) -> None:
        self.model = model

    def generate(self, prompts: list[str], params: SamplingParams) -> list[_Output]:
        return [_Output([_Completion("")]) for _ in prompts]
