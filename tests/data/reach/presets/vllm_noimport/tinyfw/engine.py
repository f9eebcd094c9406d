"""Eager generation loop with the engine's public names."""

from dataclasses import dataclass, field
from typing import ClassVar


class ModelRegistry:
    models: ClassVar[dict[str, str]] = {}

    @classmethod
    def register_model(cls, name: str, target: str) -> None:
        cls.models[name] = target


@dataclass
class SamplingParams:
    temperature: float = 1.0
    max_tokens: int = 16


@dataclass
class _Completion:
    text: str


@dataclass
class _Output:
    prompt: str
    outputs: list[_Completion] = field(default_factory=list)


class LLM:
    def __init__(self, model: str, enforce_eager: bool = True, attention_backend: str = "") -> None:
        self.model = model

    def generate(self, prompts: list[str], params: SamplingParams) -> list[_Output]:
        return [_Output(p, [_Completion("")]) for p in prompts]
