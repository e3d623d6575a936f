"""Edition 4: ``version`` and ``license`` required, a framework table (``[torch-noarch]``
among them), torch ``stable-abi``. The format names kernels as edition 5 does; nixgen also
reads a name with `_` (older files), which the format refuses (a warning says so)."""

from __future__ import annotations

import attrs

from nixgen.reading import model
from nixgen.reading.schema import sections, tagged_by_backend
from nixgen.reading.schema.common import Layout, LegacyName
from nixgen.reading.schema.sections import (
    CudaGeneral,
    Hub,
    NeuronGeneral,
    TorchNoarch,
    TvmFfi,
    XpuGeneral,
)


@attrs.frozen(kw_only=True)
class General:
    name: LegacyName
    version: int
    license: str
    backends: list[model.Backend]
    upstream: model.GitUrl | None = None
    source: model.GitUrl | None = None
    hub: Hub | None = None
    python_depends: list[model.GeneralPythonDep] | None = None
    cuda: CudaGeneral | None = None
    xpu: XpuGeneral | None = None
    neuron: NeuronGeneral | None = None


@attrs.frozen(kw_only=True)
class Torch(sections.Torch):
    stable_abi: model.Version | None = None
    cxx_flags: list[model.Flag] | None = None


LAYOUT = Layout(
    general=General,
    kernel=tagged_by_backend.CurrentKernel,
    frameworks={"torch": Torch, "torch-noarch": TorchNoarch, "tvm-ffi": TvmFfi},
    framework_required=True,
)
