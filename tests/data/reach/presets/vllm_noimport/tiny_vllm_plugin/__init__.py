"""Plugin entry point: registers the model with the local engine."""


def register() -> None:
    from tinyfw.engine import ModelRegistry

    ModelRegistry.register_model("TinyMixForCausalLM", "tiny_vllm_plugin.model:TinyMixForCausalLM")
