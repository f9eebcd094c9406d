"""Small FP8 pre-training run on TransformerEngine modules."""
