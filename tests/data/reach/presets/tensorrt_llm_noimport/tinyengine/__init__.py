"""A local eager inference engine with TensorRT-LLM-like names (no CUDA graphs)."""
