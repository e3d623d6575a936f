"""The data nixgen writes for the Nix library, as attrs classes: each field carries the
name the library reads it by (`nix("backendVersion")` in its metadata) and whether it is
left out at its default (`omit=True`: an optional argument of the library's function).
One cattrs converter turns an instance into the plain data the renderer writes
(`unstructure`), so the shape of each file is declared once, by its class, not built by
hand as a dict."""

from __future__ import annotations

from functools import cache
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

_KEY = "nix"
_OMIT = "nix-omit"

_CONVERTER = cattrs.Converter()


def nix(name: str | None = None, *, omit: bool = False) -> dict[str, Any]:
    """A field's metadata: its name in the generated Nix data (default: the field's own),
    and whether it is left out when it holds its default."""
    out: dict[str, Any] = {_OMIT: omit}
    if name is not None:
        out[_KEY] = name
    return out


@cache
def _hook(cls: type) -> Any:
    overrides: dict[str, Any] = {
        field.name: override(
            rename=field.metadata.get(_KEY), omit_if_default=field.metadata.get(_OMIT, False)
        )
        for field in attrs.fields(cls)
    }
    return make_dict_unstructure_fn(cls, _CONVERTER, **overrides)


_CONVERTER.register_unstructure_hook_factory(attrs.has, _hook)


def unstructure(value: Any) -> Any:
    """`value` (an attrs instance, or lists and mappings of them) as plain data, by the
    library's names."""
    return _CONVERTER.unstructure(value)
