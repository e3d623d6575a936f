"""Edition 6: the model classes themselves (``nixgen.model``), tagged by ``language``."""

from __future__ import annotations

from typing import Any

import attrs

from nixgen import model
from nixgen.convert import key_of
from nixgen.schema.common import Layout, kernel_union

Kernel = kernel_union("language", model.KERNEL_CLASSES, what="kernel")

LAYOUT = Layout(general=model.General, kernel=Kernel, frameworks=model.FRAMEWORKS)


def _unstructure(value: Any, *, defaults: bool) -> Any:
    if attrs.has(type(value)):
        out: dict[str, Any] = {}
        for field in attrs.fields(type(value)):
            item = getattr(value, field.name)
            default = field.default
            if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
                default = default.factory()  # type: ignore[union-attr]
            if item is None or (not defaults and item == default and field.name != "language"):
                continue
            out[key_of(field)] = _unstructure(item, defaults=defaults)
        return out
    if isinstance(value, list):
        return [_unstructure(v, defaults=defaults) for v in value]
    if isinstance(value, dict):
        return {k: _unstructure(v, defaults=defaults) for k, v in value.items()}
    return value


def to_document(build: model.Build, *, defaults: bool = False) -> dict[str, Any]:
    """The edition-6 TOML document of `build` (inverse of structuring).

    With `defaults`, fields left at their default are included too, which is what
    ``nixgen show`` prints: the effective configuration.
    """
    document: dict[str, Any] = {"general": _unstructure(build.general, defaults=defaults)}
    if build.framework is not None:
        document[build.framework.table] = _unstructure(build.framework, defaults=defaults)
    if build.kernels:
        document["kernel"] = {
            name: _unstructure(kernel, defaults=defaults)
            for name, kernel in sorted(build.kernels.items())
        }
    return document
