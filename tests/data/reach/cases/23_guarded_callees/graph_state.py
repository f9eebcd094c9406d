"""A project-level capture flag, as Megatron (is_graph_capturing) and TE keep one."""

import torch


def is_graph_capturing() -> bool:
    return torch.cuda.is_current_stream_capturing()
