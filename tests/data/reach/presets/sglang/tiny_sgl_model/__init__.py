"""TinyRoute: a small mixture-of-experts decoder served by SGLang."""
