"""Kernel tables tagged by ``backend`` — the shape shared by editions 2, 3, 4 and 5.

`kernels(deps)` makes one edition family's classes: editions 4 and 5 (which the field's
parser reads) type `depends` by the model's allowlists, editions 2 and 3 by the older names
(`LegacyDep`, renamed on the way to the model).
"""

# Annotations are evaluated as the classes are made: `dep` is local to `kernels`.
from collections.abc import Callable
from typing import Any

import attrs

from nixgen.reading import model
from nixgen.reading.schema.common import LegacyDep, kernel_union

Paths = list[model.RelPath]
Flags = list[model.Flag]


def kernels(dep: Callable[[str], Any]) -> dict[str, type]:
    """The kernel class of each backend, `depends` typed as `dep(language)` gives."""

    @attrs.frozen(kw_only=True)
    class CpuKernel:
        """``backend = "cpu"``."""

        backend: str
        depends: list[dep("cpp-cpu")]  # type: ignore[valid-type]
        src: Paths
        include: list[model.RelDir] | None = None
        cxx_flags: Flags | None = None

    @attrs.frozen(kw_only=True)
    class CudaKernel:
        backend: str
        depends: list[dep("cpp-cuda")]  # type: ignore[valid-type]
        src: Paths
        include: list[model.RelDir] | None = None
        cxx_flags: Flags | None = None
        cuda_flags: Flags | None = None
        cuda_capabilities: list[model.CudaCapability] | None = None
        cuda_minver: model.Version | None = None

    @attrs.frozen(kw_only=True)
    class MetalKernel:
        """``backend = "metal"``."""

        backend: str
        depends: list[dep("cpp-metal")]  # type: ignore[valid-type]
        src: Paths
        include: list[model.RelDir] | None = None
        cxx_flags: Flags | None = None

    @attrs.frozen(kw_only=True)
    class RocmKernel:
        backend: str
        depends: list[dep("cpp-rocm")]  # type: ignore[valid-type]
        src: Paths
        include: list[model.RelDir] | None = None
        cxx_flags: Flags | None = None
        hip_flags: Flags | None = None
        rocm_archs: list[model.RocmArch] | None = None

    @attrs.frozen(kw_only=True)
    class XpuKernel:
        backend: str
        depends: list[dep("cpp-xpu")]  # type: ignore[valid-type]
        src: Paths
        include: list[model.RelDir] | None = None
        cxx_flags: Flags | None = None
        sycl_flags: Flags | None = None

    return {
        "cpu": CpuKernel,
        "cuda": CudaKernel,
        "metal": MetalKernel,
        "rocm": RocmKernel,
        "xpu": XpuKernel,
    }


#: Editions 2 and 3: `depends` holds any C++ dependency name of any edition.
LEGACY = kernels(lambda _: LegacyDep)
Kernel = kernel_union("backend", LEGACY, what="kernel")

#: Editions 4 and 5: `depends` typed by the model's allowlist of the kernel's language.
MODEL_DEPS: dict[str, Any] = {
    "cpp-cpu": model.CpuDep,
    "cpp-cuda": model.CudaDep,
    "cpp-rocm": model.RocmDep,
    "cpp-xpu": model.XpuDep,
    "cpp-metal": model.MetalDep,
}
CURRENT = kernels(MODEL_DEPS.__getitem__)
CurrentKernel = kernel_union("backend", CURRENT, what="kernel")
