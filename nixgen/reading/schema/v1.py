"""Edition 1 (kernel-builder, 2025): no ``backend`` tag; ``language`` is cuda,
cuda-hipify or metal."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from nixgen.reading import model
from nixgen.reading.schema.common import Layout, LegacyDep, LegacyName


@attrs.frozen(kw_only=True)
class General:
    name: LegacyName


@attrs.frozen(kw_only=True)
class Torch:
    src: list[model.RelPath] = attrs.field(factory=list)
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None
    universal: bool = False


@attrs.frozen(kw_only=True)
class Kernel:
    depends: list[LegacyDep]
    src: list[model.RelPath]
    language: Literal["cuda", "cuda-hipify", "metal"] = "cuda"
    include: list[model.RelDir] | None = None
    cuda_capabilities: list[model.CudaCapability] | None = None
    rocm_archs: list[model.RocmArch] | None = None


LAYOUT = Layout(general=General, kernel=Kernel, frameworks={"torch": Torch})
Raw = Any
