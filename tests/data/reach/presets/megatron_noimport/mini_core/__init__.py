"""A small eager training library with Megatron-like names (no CUDA graphs)."""
