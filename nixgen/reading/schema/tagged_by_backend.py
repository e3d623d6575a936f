"""Kernel tables tagged by ``backend`` — the shape shared by editions 2, 3, 4 and 5."""

from __future__ import annotations

import attrs

from nixgen.reading import model
from nixgen.reading.schema.common import LegacyDep, kernel_union

Paths = list[model.RelPath]
Flags = list[model.Flag]


@attrs.frozen(kw_only=True)
class _Kernel:
    """The keys every backend's kernel table has (a subclass adds its backend's own)."""

    backend: str
    depends: list[LegacyDep]
    src: Paths
    include: list[model.RelDir] | None = None
    cxx_flags: Flags | None = None


@attrs.frozen(kw_only=True)
class CpuKernel(_Kernel):
    """``backend = "cpu"``."""


@attrs.frozen(kw_only=True)
class CudaKernel(_Kernel):
    cuda_flags: Flags | None = None
    cuda_capabilities: list[model.CudaCapability] | None = None
    cuda_minver: model.Version | None = None


@attrs.frozen(kw_only=True)
class MetalKernel(_Kernel):
    """``backend = "metal"``."""


@attrs.frozen(kw_only=True)
class RocmKernel(_Kernel):
    hip_flags: Flags | None = None
    rocm_archs: list[model.RocmArch] | None = None


@attrs.frozen(kw_only=True)
class XpuKernel(_Kernel):
    sycl_flags: Flags | None = None


Kernel = kernel_union(
    "backend",
    {
        "cpu": CpuKernel,
        "cuda": CudaKernel,
        "metal": MetalKernel,
        "rocm": RocmKernel,
        "xpu": XpuKernel,
    },
    what="kernel",
)
