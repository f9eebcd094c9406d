"""Eager engine with the runtime's public names."""


class Engine:
    def __init__(
        self, model_path: str, disable_cuda_graph: bool = True, cuda_graph_max_bs: int = 0
    ) -> None:
        self.model_path = model_path

    def generate(self, prompt: str, sampling_params: dict[str, float]) -> dict[str, str]:
        return {"text": ""}

    def shutdown(self) -> None:
        pass
