"""Edition 4: ``version`` and ``license`` required, ``[torch-noarch]``, torch ``stable-abi``."""

from __future__ import annotations

import attrs

from nixgen import model
from nixgen.schema import tagged_by_backend
from nixgen.schema.common import Layout
from nixgen.schema.v2 import Hub
from nixgen.schema.v3 import BackendGeneral, CudaGeneral


@attrs.frozen(kw_only=True)
class General:
    name: model.ProjectName
    version: int
    license: str
    backends: list[model.Backend]
    upstream: model.GitUrl | None = None
    source: model.GitUrl | None = None
    hub: Hub | None = None
    python_depends: list[str] | None = None
    cuda: CudaGeneral | None = None
    xpu: BackendGeneral | None = None
    neuron: BackendGeneral | None = None


@attrs.frozen(kw_only=True)
class Torch:
    src: list[model.RelPath] = attrs.field(factory=list)
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None
    minver: model.Version | None = None
    maxver: model.Version | None = None
    stable_abi: model.Version | None = None
    cxx_flags: list[model.Flag] | None = None


@attrs.frozen(kw_only=True)
class TorchNoarch:
    pyext: list[model.Extension] | None = None
    cuda_capabilities: list[model.CudaCapability] | None = attrs.field(
        default=None, metadata={"key": "cuda_capabilities"}
    )
    rocm_archs: list[model.RocmArch] | None = attrs.field(
        default=None, metadata={"key": "rocm_archs"}
    )


@attrs.frozen(kw_only=True)
class TvmFfi:
    src: list[model.RelPath]
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None
    cxx_flags: list[model.Flag] | None = None


LAYOUT = Layout(
    general=General,
    kernel=tagged_by_backend.Kernel,
    frameworks={"torch": Torch, "torch-noarch": TorchNoarch, "tvm-ffi": TvmFfi},
)
