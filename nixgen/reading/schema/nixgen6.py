"""nixgen's earlier edition 6: the dialect nixgen read and wrote before it took the field's.

The same ``general.edition = 6`` and ``language`` tags, but: Rust kernels list their
``Cargo.toml`` in ``src`` (no ``cargo-manifest``), have ``depends`` (always empty),
``features`` and ``lib-name``, may sit under ``[torch]``, and CUDA ones are
``rust-cuda`` with ``device-manifest`` and ``ptx-dir``; C++ kernels may leave ``depends``
out and list ``tvm-ffi``; ``general.minver`` is written by hand; ``[torch-noarch]`` spells
``cuda-capabilities`` and ``rocm-archs`` with `-`; a project may have no framework table.
The field's parser refuses such a file; nixgen reads it with one warning, and ``nixgen
migrate`` converts it (`nixgen.reading.upgrade.from_nixgen6`).
"""

# Annotations are evaluated as the classes are made: `_cpp` makes one class per language.
from typing import Literal

import attrs

from nixgen.core import tables
from nixgen.reading import model
from nixgen.reading.schema.common import Layout, kernel_union


@attrs.frozen(kw_only=True)
class General:
    name: model.ProjectName
    version: int
    edition: Literal[6]
    license: str
    backends: list[model.Backend]
    upstream: model.GitUrl | None = None
    source: model.GitUrl | None = None
    minver: model.Version | None = None
    python_depends: list[model.GeneralPythonDep] = attrs.field(factory=list)
    kernel_depends: list[model.KernelDependency] = attrs.field(factory=list)
    hub: model.Hub | None = None
    cuda: model.CudaGeneral | None = None
    xpu: model.XpuGeneral | None = None
    neuron: model.NeuronGeneral | None = None
    tpu: model.TpuGeneral | None = None


@attrs.frozen(kw_only=True)
class TorchNoarch:
    pyext: list[model.Extension] | None = None
    cuda_capabilities: list[model.CudaCapability] | None = None
    rocm_archs: list[model.RocmArch] | None = None


def _deps(language: str) -> object:
    values = (*tables.cpp_dependencies(language), *tables.dialect_cpp_dependencies())
    return Literal[values]


def _cpp(tag: str) -> type:
    @attrs.frozen(kw_only=True)
    class Kernel:
        language: str
        src: list[model.RelPath]
        depends: list[_deps(tag)] = attrs.field(factory=list)  # type: ignore[valid-type]
        include: list[model.RelDir] | None = None
        cxx_flags: list[model.Flag] | None = None

    return Kernel


@attrs.frozen(kw_only=True)
class CppCudaKernel(_cpp("cpp-cuda")):  # type: ignore[misc]
    cuda_flags: list[model.Flag] | None = None
    cuda_capabilities: list[model.CudaCapability] | None = None
    cuda_minver: model.Version | None = None


@attrs.frozen(kw_only=True)
class CppRocmKernel(_cpp("cpp-rocm")):  # type: ignore[misc]
    hip_flags: list[model.Flag] | None = None
    rocm_archs: list[model.RocmArch] | None = None


@attrs.frozen(kw_only=True)
class CppXpuKernel(_cpp("cpp-xpu")):  # type: ignore[misc]
    sycl_flags: list[model.Flag] | None = None


@attrs.frozen(kw_only=True)
class RustCpuKernel:
    language: str
    src: list[model.RelPath]
    depends: list[Literal[()]] = attrs.field(factory=list)  # type: ignore[valid-type]
    features: list[model.CargoFeature] | None = None
    lib_name: model.RustLibName | None = None


@attrs.frozen(kw_only=True)
class RustCudaKernel:
    language: str
    src: list[model.RelPath]
    device_manifest: model.RelPath
    depends: list[Literal[()]] = attrs.field(factory=list)  # type: ignore[valid-type]
    features: list[model.CargoFeature] | None = None
    lib_name: model.RustLibName | None = None
    ptx_dir: model.RelDir | None = None
    cuda_capabilities: list[model.CudaCapability] | None = None


KERNELS: dict[str, type] = {
    "cpp-cpu": _cpp("cpp-cpu"),
    "cpp-cuda": CppCudaKernel,
    "cpp-rocm": CppRocmKernel,
    "cpp-xpu": CppXpuKernel,
    "cpp-metal": _cpp("cpp-metal"),
    "rust-cpu": RustCpuKernel,
    "rust-cuda": RustCudaKernel,
}

Kernel = kernel_union("language", KERNELS, what="kernel")

LAYOUT = Layout(
    general=General,
    kernel=Kernel,
    frameworks={
        "torch": model.Torch,
        "torch-noarch": TorchNoarch,
        "tvm-ffi": model.TvmFfi,
    },
)
