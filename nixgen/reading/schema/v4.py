"""Edition 4: ``version`` and ``license`` required, ``[torch-noarch]``, torch ``stable-abi``."""

from __future__ import annotations

import attrs

from nixgen.reading import model
from nixgen.reading.schema import sections, tagged_by_backend
from nixgen.reading.schema.common import Layout, LegacyName
from nixgen.reading.schema.sections import BackendGeneral, CudaGeneral, Hub, TorchNoarch, TvmFfi


@attrs.frozen(kw_only=True)
class General:
    name: LegacyName
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
class Torch(sections.Torch):
    stable_abi: model.Version | None = None
    cxx_flags: list[model.Flag] | None = None


LAYOUT = Layout(
    general=General,
    kernel=tagged_by_backend.Kernel,
    frameworks={"torch": Torch, "torch-noarch": TorchNoarch, "tvm-ffi": TvmFfi},
)
