"""Training package."""
