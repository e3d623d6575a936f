"""Edition 5 (``general.edition = 5``): the anchor's current format.

Adds ``kernel-depends`` and ``[general.tpu]``; ``stable-abi`` may be a per-backend table.
"""

from __future__ import annotations

from typing import Literal

import attrs

from nixgen import model
from nixgen.schema import tagged_by_backend
from nixgen.schema.common import Layout, raw_class
from nixgen.schema.sections import Hub, TorchNoarch, TvmFfi


@raw_class
class BackendGeneral:
    python_depends: list[str] | None = None
    kernel_depends: list[model.KernelDependency] | None = None


@raw_class
class CudaGeneral:
    minver: model.Version | None = None
    maxver: model.Version | None = None
    python_depends: list[str] | None = None
    kernel_depends: list[model.KernelDependency] | None = None


@raw_class
class TpuGeneral:
    python_depends: list[str] | None = None


@raw_class
class General:
    name: model.ProjectName
    version: int
    edition: Literal[5]
    license: str
    backends: list[model.Backend]
    upstream: model.GitUrl | None = None
    source: model.GitUrl | None = None
    minver: model.Version | None = None
    hub: Hub | None = None
    python_depends: list[str] | None = None
    kernel_depends: list[model.KernelDependency] | None = None
    cuda: CudaGeneral | None = None
    xpu: BackendGeneral | None = None
    neuron: BackendGeneral | None = None
    tpu: TpuGeneral | None = None


@raw_class
class Torch:
    src: list[model.RelPath] = attrs.field(factory=list)
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None
    minver: model.Version | None = None
    maxver: model.Version | None = None
    stable_abi: model.Version | dict[model.Backend, model.Version] | None = None
    cxx_flags: list[model.Flag] | None = None


LAYOUT = Layout(
    general=General,
    kernel=tagged_by_backend.Kernel,
    frameworks={"torch": Torch, "torch-noarch": TorchNoarch, "tvm-ffi": TvmFfi},
)
