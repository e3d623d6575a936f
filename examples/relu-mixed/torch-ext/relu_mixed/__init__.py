"""ReLU (C++ on CPU, CUDA on GPU) and leaky ReLU (Rust, CPU only)."""

from typing import Optional

import torch

from . import layers
from ._ops import add_op_namespace_prefix, ops

__all__ = ["add_op_namespace_prefix", "layers", "leaky_relu", "ops", "relu"]


def relu(x: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Return max(x, 0) as a new tensor (or write it into `out`)."""
    if out is None:
        out = torch.empty_like(x)
    ops.relu(out, x)
    return out


def leaky_relu(
    x: torch.Tensor, negative_slope: float = 0.01, out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """Return x where x > 0, else x * negative_slope (float32, CPU)."""
    if out is None:
        out = torch.empty_like(x)
    ops.leaky_relu(out, x, negative_slope)
    return out
