"""Numerical tests for the relu-rust kernel, loaded through the `kernels` client.

The build to test is found at $KERNEL_BUILD (a directory holding
`<variant>/` directories, or one variant directory), else at `<project>/build`.
"""

import os
from pathlib import Path

import pytest
import torch
from kernels import get_local_kernel

PROJECT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("KERNEL_BUILD", PROJECT / "build"))

SHAPES = [(0,), (1,), (7,), (64,), (1000,), (3, 5), (17, 33, 9), (2, 3, 4, 5)]
DTYPES = [torch.float32, torch.float64]


@pytest.fixture(scope="module")
def kernel():
    if not BUILD.exists():
        pytest.skip(f"no build at {BUILD}; build it first or set KERNEL_BUILD")
    return get_local_kernel(BUILD)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_relu_matches_torch(kernel, shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape).to(dtype)
    y = kernel.relu(x)
    assert y.data_ptr() != x.data_ptr() or x.numel() == 0
    torch.testing.assert_close(y, torch.relu(x), rtol=0, atol=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.randn(64, 48)[:, ::3],
        lambda: torch.randn(32, 40).t(),
        lambda: torch.randn(5, 1).expand(5, 9),
        lambda: torch.randn(4, 6, 8).permute(2, 0, 1)[1:, :, 2:],
    ],
    ids=["strided", "transposed", "expanded", "permuted-sliced"],
)
def test_relu_non_contiguous(kernel, make):
    torch.manual_seed(1)
    x = make()
    assert not x.is_contiguous()
    before = x.clone()
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)
    torch.testing.assert_close(x, before, rtol=0, atol=0)


def test_relu_into_non_contiguous_out(kernel):
    x = torch.randn(8, 10)
    out = torch.full((10, 8), 42.0).t()
    kernel.relu(x, out=out)
    torch.testing.assert_close(out, torch.relu(x), rtol=0, atol=0)


def test_relu_special_values(kernel):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0, -1.0, 2.5])
    expected = torch.relu(x)
    y = kernel.relu(x)
    torch.testing.assert_close(y, expected, rtol=0, atol=0, equal_nan=True)
    assert torch.equal(torch.signbit(y[3:5]), torch.signbit(expected[3:5]))


def test_relu_rejects_mismatched_out(kernel):
    with pytest.raises(RuntimeError, match="same shape"):
        kernel.relu(torch.randn(4), out=torch.empty(5))


def test_op_namespace(kernel):
    name = kernel.add_op_namespace_prefix("relu")
    namespace, op = name.split("::")
    assert op == "relu"
    assert getattr(torch.ops, namespace).relu is kernel.ops.relu


def test_relu_in_place(kernel):
    x = torch.randn(1000)
    expected = torch.relu(x)
    y = kernel.relu(x, out=x)
    assert y.data_ptr() == x.data_ptr()
    torch.testing.assert_close(x, expected, rtol=0, atol=0)


def test_relu_rejects_unsupported_dtype(kernel):
    with pytest.raises(RuntimeError, match="unsupported dtype"):
        kernel.relu(torch.randn(4).half())
