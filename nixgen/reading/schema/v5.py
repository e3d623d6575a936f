"""Edition 5 (``general.edition = 5``): the format before edition 6.

Adds ``kernel-depends`` and ``[general.tpu]``; ``stable-abi`` may be a per-backend table.

`BRANCH_LAYOUT` also reads the anchor's unreleased ``support-rust-kernels`` branch, which
stays at edition 5 and adds ``dsl`` (``cpp``, ``rust``, ``cuda-oxide``), ``features`` and
``lib-name`` to CPU and CUDA kernels, ``device-manifest`` and ``ptx-dir`` to CUDA kernels,
``general.minver``, and a ``[tvm-ffi]`` table without ``src`` (the Rust crate is the
binding). The format refuses those; nixgen reads them with a warning, and upgrading turns
``dsl`` into the edition-6 ``language`` (``rust-cpu``, ``rust-cuda-oxide``).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from nixgen.reading import model
from nixgen.reading.schema import sections, tagged_by_backend
from nixgen.reading.schema.common import Layout, kernel_union
from nixgen.reading.schema.sections import Hub, TorchNoarch

#: How a kernel's sources are written (the branch's `Dsl`; `cpp` is the default).
Dsl = Literal["cpp", "rust", "cuda-oxide"]


@attrs.frozen(kw_only=True)
class CudaGeneral(sections.CudaGeneral):
    kernel_depends: list[model.KernelDependency] | None = None


@attrs.frozen(kw_only=True)
class XpuGeneral(sections.XpuGeneral):
    kernel_depends: list[model.KernelDependency] | None = None


@attrs.frozen(kw_only=True)
class NeuronGeneral(sections.NeuronGeneral):
    kernel_depends: list[model.KernelDependency] | None = None


@attrs.frozen(kw_only=True)
class TpuGeneral:
    python_depends: list[model.TpuPythonDep] | None = None


@attrs.frozen(kw_only=True)
class General:
    name: model.ProjectName
    version: int
    edition: Literal[5]
    license: str
    backends: list[model.Backend]
    upstream: model.GitUrl | None = None
    source: model.GitUrl | None = None
    hub: Hub | None = None
    python_depends: list[model.GeneralPythonDep] | None = None
    kernel_depends: list[model.KernelDependency] | None = None
    cuda: CudaGeneral | None = None
    xpu: XpuGeneral | None = None
    neuron: NeuronGeneral | None = None
    tpu: TpuGeneral | None = None


@attrs.frozen(kw_only=True)
class Torch(sections.Torch):
    stable_abi: model.Version | dict[model.Backend, model.Version] | None = None
    cxx_flags: list[model.Flag] | None = None


LAYOUT = Layout(
    general=General,
    kernel=tagged_by_backend.CurrentKernel,
    frameworks={"torch": Torch, "torch-noarch": TorchNoarch, "tvm-ffi": sections.TvmFfi},
    framework_required=True,
)

# ------------------------------------------------- the anchor's support-rust-kernels branch


def _with_branch_keys(base: Any) -> Any:
    """`base` (a CPU or CUDA kernel table) plus the keys of the support-rust-kernels
    branch, after its own."""

    @attrs.frozen(kw_only=True)
    class Kernel(base):  # type: ignore[misc]
        dsl: Dsl | None = None
        features: list[model.CargoFeature] | None = None
        lib_name: model.RustLibName | None = None
        # CUDA-only in the branch; read on CPU kernels too, so that upgrading explains the
        # language to use
        device_manifest: model.RelPath | None = None
        ptx_dir: model.RelDir | None = None

    Kernel.__name__ = Kernel.__qualname__ = base.__name__
    return Kernel


@attrs.frozen(kw_only=True)
class BranchTvmFfi:
    #: Empty when a Rust crate exports the functions itself.
    src: list[model.RelPath] = attrs.field(factory=list)
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None
    cxx_flags: list[model.Flag] | None = None


@attrs.frozen(kw_only=True)
class BranchGeneral(General):
    minver: model.Version | None = None


BranchKernel = kernel_union(
    "backend",
    {
        **tagged_by_backend.CURRENT,
        "cpu": _with_branch_keys(tagged_by_backend.CURRENT["cpu"]),
        "cuda": _with_branch_keys(tagged_by_backend.CURRENT["cuda"]),
    },
    what="kernel",
)

BRANCH_LAYOUT = Layout(
    general=BranchGeneral,
    kernel=BranchKernel,
    frameworks={"torch": Torch, "torch-noarch": TorchNoarch, "tvm-ffi": BranchTvmFfi},
)
