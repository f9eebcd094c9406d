from .backend import AttentionMetadata, PagedAttention

__all__ = ["AttentionMetadata", "PagedAttention"]
