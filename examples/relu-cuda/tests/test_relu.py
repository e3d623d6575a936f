"""Numerical tests for the relu-cuda kernel, loaded through the `kernels` client.

Needs a CUDA build of torch and a GPU (capability 8.x or 9.x); skipped otherwise.
The build is found at $KERNEL_BUILD, else at `<project>/build`.
"""

import os
from pathlib import Path

import pytest
import torch
from kernels import get_local_kernel

PROJECT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("KERNEL_BUILD", PROJECT / "build"))

SHAPES = [(0,), (1,), (7,), (1000,), (3, 5), (17, 33, 9), (513, 1031)]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def kernel():
    if not BUILD.exists():
        pytest.skip(f"no build at {BUILD}; build it first or set KERNEL_BUILD")
    return get_local_kernel(BUILD)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_relu_matches_torch(kernel, shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda").to(dtype)
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)


def test_relu_non_contiguous(kernel):
    x = torch.randn(64, 48, device="cuda")[:, ::3].t()
    assert not x.is_contiguous()
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)


def test_relu_on_side_stream(kernel):
    x = torch.randn(1 << 20, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        y = kernel.relu(x)
    stream.synchronize()
    torch.testing.assert_close(y, torch.relu(x), rtol=0, atol=0)


def test_relu_special_values(kernel):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, -1.0], device="cuda")
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0, equal_nan=True)
