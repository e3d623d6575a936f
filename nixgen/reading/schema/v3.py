"""Edition 3: explicit ``general.backends``; ``version`` and ``license`` still optional, no
framework table for a pure-Python kernel. The format no longer reads it (the `kernels` tools
send it to `kernel-builder update-build`); nixgen does, with a warning."""

from __future__ import annotations

import attrs

from nixgen.reading import model
from nixgen.reading.schema import tagged_by_backend
from nixgen.reading.schema.common import Layout, LegacyName
from nixgen.reading.schema.sections import CudaGeneral, Hub, NeuronGeneral, Torch, XpuGeneral

V3Backend = model.Backend


@attrs.frozen(kw_only=True)
class General:
    name: LegacyName
    backends: list[V3Backend]
    version: int | None = None
    license: str | None = None
    upstream: model.GitUrl | None = None
    hub: Hub | None = None
    python_depends: list[model.GeneralPythonDep] | None = None
    cuda: CudaGeneral | None = None
    xpu: XpuGeneral | None = None
    neuron: NeuronGeneral | None = None


@attrs.frozen(kw_only=True)
class TvmFfi:
    src: list[model.RelPath]
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None


LAYOUT = Layout(
    general=General,
    kernel=tagged_by_backend.Kernel,
    frameworks={"torch": Torch, "tvm-ffi": TvmFfi},
)
