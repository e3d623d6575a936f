"""Edition 6: the model classes themselves (``nixgen.reading.model``), tagged by ``language``."""

from __future__ import annotations

from typing import Any

from nixgen.reading import model
from nixgen.reading.convert import to_table
from nixgen.reading.schema.common import Layout, kernel_union

Kernel = kernel_union("language", model.KERNEL_CLASSES, what="kernel")

LAYOUT = Layout(general=model.General, kernel=Kernel, frameworks=model.FRAMEWORKS)


def to_document(build: model.Build, *, defaults: bool = False) -> dict[str, Any]:
    """The edition-6 TOML document of `build` (inverse of structuring).

    With `defaults`, fields left at their default are included too, which is what
    ``nixgen show`` prints: the effective configuration.
    """
    document: dict[str, Any] = {"general": to_table(build.general, defaults=defaults)}
    if build.framework is not None:
        document[build.framework.table] = to_table(build.framework, defaults=defaults)
    if build.kernels:
        document["kernel"] = {
            name: to_table(kernel, defaults=defaults)
            for name, kernel in sorted(build.kernels.items())
        }
    return document
