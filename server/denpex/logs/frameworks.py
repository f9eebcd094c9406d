"""Frameworks recognised from a log, and their own switches for the eager fallback."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Framework:
    name: str
    markers: tuple[str, ...]  # substrings of paths or banner lines
    eager_flag: str  # configuration that turns CUDA graphs off
    notes: str = ""


FRAMEWORKS: tuple[Framework, ...] = (
    Framework("vLLM", ("/vllm/", "vllm.", "VllmWorker", "vLLM", "(EngineCore"),
              "vllm serve ... --enforce-eager  (or LLM(..., enforce_eager=True))",
              "Keep graphs but shrink them: --max-seq-len-to-capture / compilation_config cudagraph sizes."),
    Framework("SGLang", ("/sglang/", "sglang.", "SGLang"),
              "python -m sglang.launch_server ... --disable-cuda-graph",
              "Or lower --cuda-graph-max-bs to capture fewer batch sizes."),
    Framework("TensorRT-LLM", ("tensorrt_llm", "TensorRT-LLM"),
              "LLM(..., cuda_graph_config=None)  (trtllm-serve: omit cuda_graph_config in the extra options YAML)"),
    Framework("Megatron-LM", ("megatron/", "megatron.core", "Megatron"),
              "drop --enable-cuda-graph / --external-cuda-graph (or --cuda-graph-impl none)"),
    Framework("DeepSpeed", ("deepspeed/", "deepspeed.", "DeepSpeed"),
              'set "enable_cuda_graph": false in the DeepSpeed/inference config'),
    Framework("PyTorch Lightning", ("lightning/", "pytorch_lightning", "lightning.pytorch"),
              "compile the LightningModule with torch.compile(model, mode=\"default\") or leave it uncompiled"),
    Framework("Hugging Face Trainer", ("transformers/trainer", "transformers.trainer", "/transformers/"),
              "TrainingArguments(torch_compile_mode=\"default\")  (or torch_compile=False)"),
    Framework("torch.compile", ("torch/_inductor/", "torch/_dynamo/", "cudagraph_trees"),
              'torch.compile(model, mode="default")  (or TORCHINDUCTOR_CUDAGRAPHS=0 / torch._inductor.config.triton.cudagraphs = False)'),
)


def detect(texts: list[str]) -> list[Framework]:
    found: list[Framework] = []
    for fw in FRAMEWORKS:
        if any(marker in text for text in texts for marker in fw.markers):
            found.append(fw)
    return found
