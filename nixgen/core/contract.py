"""The data nixgen writes for the Nix library, as attrs classes: each field carries the
name the library reads it by (`nix("backendVersion")` in its metadata), whether it is
left out at its default (`omit=True`: an optional argument of the library's function),
never written (`skip=True`: the plan's own, read elsewhere) or written into its parent's
attributes (`flatten=True`: a nested plan whose fields are the library's arguments too).
One cattrs converter turns an instance into the plain data the renderer writes
(`unstructure`), so the shape of each file is declared once, by its class, not built by
hand as a dict."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_unstructure_fn, override

_KEY = "nix"
_OMIT = "nix-omit"
_SKIP = "nix-skip"
_FLATTEN = "nix-flatten"

_CONVERTER = cattrs.Converter()


def nix(
    name: str | None = None, *, omit: bool = False, skip: bool = False, flatten: bool = False
) -> dict[str, Any]:
    """A field's metadata: its name in the generated Nix data (default: the field's own),
    whether it is left out when it holds its default, never written, or (an attrs value,
    or None) written as its own fields beside the others."""
    out: dict[str, Any] = {_OMIT: omit, _SKIP: skip, _FLATTEN: flatten}
    if name is not None:
        out[_KEY] = name
    return out


@cache
def _hook(cls: type) -> Any:
    fields = attrs.fields(cls)
    overrides: dict[str, Any] = {
        field.name: override(
            rename=field.metadata.get(_KEY),
            omit_if_default=field.metadata.get(_OMIT, False),
            omit=field.metadata.get(_SKIP, False) or field.metadata.get(_FLATTEN, False),
        )
        for field in fields
    }
    base: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, _CONVERTER, **overrides)
    flat = [field.name for field in fields if field.metadata.get(_FLATTEN, False)]
    if not flat:
        return base

    def unstructure_flat(value: Any) -> dict[str, Any]:
        out: dict[str, Any] = base(value)
        for name in flat:
            inner = getattr(value, name)
            if inner is not None:
                added = _CONVERTER.unstructure(inner)
                clash = added.keys() & out.keys()
                if clash:
                    raise ValueError(f"{cls.__name__}.{name} repeats {sorted(clash)}")
                out.update(added)
        return out

    return unstructure_flat


_CONVERTER.register_unstructure_hook_factory(attrs.has, _hook)


def unstructure(value: Any) -> Any:
    """`value` (an attrs instance, or lists and mappings of them) as plain data, by the
    library's names."""
    return _CONVERTER.unstructure(value)
