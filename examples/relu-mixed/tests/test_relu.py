"""Numerical tests for relu-mixed, loaded through the `kernels` client.

The CPU variant (C++ relu, Rust leaky_relu) is always tested; the CUDA variant
only with a CUDA build of torch and a GPU. The build is found at $KERNEL_BUILD,
else at `<project>/build`.
"""

import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernels import get_local_kernel

PROJECT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("KERNEL_BUILD", PROJECT / "build"))

SHAPES = [(0,), (1,), (7,), (1000,), (3, 5), (17, 33, 9)]


def _load(backend):
    if not BUILD.exists():
        pytest.skip(f"no build at {BUILD}; build it first or set KERNEL_BUILD")
    return get_local_kernel(BUILD, backend=backend)


@pytest.fixture(scope="module")
def cpu_kernel():
    return _load("cpu")


@pytest.fixture(scope="module")
def cuda_kernel():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    return _load("cuda")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_relu_cpu(cpu_kernel, shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=dtype)
    torch.testing.assert_close(cpu_kernel.relu(x), torch.relu(x), rtol=0, atol=0)


def test_relu_cpu_non_contiguous(cpu_kernel):
    x = torch.randn(64, 48)[:, ::3].t()
    assert not x.is_contiguous()
    torch.testing.assert_close(cpu_kernel.relu(x), torch.relu(x), rtol=0, atol=0)


@pytest.mark.parametrize("slope", [0.01, 0.2, 1.5])
@pytest.mark.parametrize("shape", SHAPES)
def test_leaky_relu_cpu(cpu_kernel, shape, slope):
    torch.manual_seed(1)
    x = torch.randn(shape)
    expected = F.leaky_relu(x, negative_slope=slope)
    torch.testing.assert_close(cpu_kernel.leaky_relu(x, slope), expected, rtol=0, atol=0)


def test_leaky_relu_cpu_non_contiguous(cpu_kernel):
    x = torch.randn(40, 30).t()[::2]
    out = torch.empty(40, 30).t()[::2]
    assert not out.is_contiguous()
    cpu_kernel.leaky_relu(x, 0.1, out=out)
    torch.testing.assert_close(out, F.leaky_relu(x, 0.1), rtol=0, atol=0)


def test_layers_module(cpu_kernel):
    x = torch.randn(10, 10)
    torch.testing.assert_close(cpu_kernel.layers.ReLU()(x), torch.relu(x), rtol=0, atol=0)


def test_cpu_variant_metadata(cpu_kernel):
    assert cpu_kernel.add_op_namespace_prefix("relu").startswith("_relu_mixed_cpu_")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [*SHAPES, (513, 1031)])
def test_relu_cuda(cuda_kernel, shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=dtype, device="cuda")
    torch.testing.assert_close(cuda_kernel.relu(x), torch.relu(x), rtol=0, atol=0)


def test_relu_cuda_non_contiguous(cuda_kernel):
    x = torch.randn(64, 48, device="cuda")[:, ::3].t()
    torch.testing.assert_close(cuda_kernel.relu(x), torch.relu(x), rtol=0, atol=0)
