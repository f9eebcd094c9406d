"""GPT variants with gated residual branches, built on Megatron Core."""
