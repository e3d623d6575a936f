"""Edition 2 (kernel-builder, 2025): kernels tagged by ``backend``, no ``general.backends``."""

from __future__ import annotations

from typing import Literal

import attrs

from nixgen.reading import model
from nixgen.reading.schema import tagged_by_backend
from nixgen.reading.schema.common import Layout, LegacyName
from nixgen.reading.schema.sections import Hub, Torch


@attrs.frozen(kw_only=True)
class General:
    name: LegacyName
    universal: bool = False
    cuda_minver: model.Version | None = None
    cuda_maxver: model.Version | None = None
    hub: Hub | None = None
    python_depends: list[Literal["einops", "nvidia-cutlass-dsl"]] | None = None


LAYOUT = Layout(general=General, kernel=tagged_by_backend.Kernel, frameworks={"torch": Torch})
