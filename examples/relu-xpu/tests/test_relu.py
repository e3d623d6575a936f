"""Numerical tests for the relu-xpu kernel, loaded through the `kernels` client.

Needs an XPU build of torch and an Intel GPU; skipped otherwise. The build is
found at $KERNEL_BUILD, else at `<project>/build`.
"""

import os
from pathlib import Path

import pytest
import torch
from kernels import get_local_kernel

PROJECT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("KERNEL_BUILD", PROJECT / "build"))

pytestmark = pytest.mark.skipif(
    not (hasattr(torch, "xpu") and torch.xpu.is_available()), reason="needs an XPU device"
)


@pytest.fixture(scope="module")
def kernel():
    if not BUILD.exists():
        pytest.skip(f"no build at {BUILD}; build it first or set KERNEL_BUILD")
    return get_local_kernel(BUILD)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(0,), (7,), (1000,), (17, 33, 9)])
def test_relu_matches_torch(kernel, shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape, device="xpu").to(dtype)
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)


def test_relu_non_contiguous(kernel):
    x = torch.randn(64, 48, device="xpu")[:, ::3].t()
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)
