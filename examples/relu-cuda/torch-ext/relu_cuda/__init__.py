"""ReLU kernel for CUDA."""

from typing import Optional

import torch

from ._ops import add_op_namespace_prefix, ops

__all__ = ["add_op_namespace_prefix", "ops", "relu"]


def relu(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Return max(x, 0) as a new tensor (or write it into `out`)."""
    if out is None:
        out = torch.empty_like(x)
    ops.relu(out, x)
    return out
