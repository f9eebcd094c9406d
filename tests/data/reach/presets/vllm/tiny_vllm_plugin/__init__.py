"""vLLM plugin entry point (declared under `vllm.general_plugins` in the package metadata)."""


def register() -> None:
    from vllm import ModelRegistry

    ModelRegistry.register_model("TinyMixForCausalLM", "tiny_vllm_plugin.model:TinyMixForCausalLM")
