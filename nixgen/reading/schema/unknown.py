"""Capabilities and targets that are well-formed but not in nixgen's tables: warnings.

The anchor keeps a CUDA capability or ROCm target it does not know as a string, and each
toolkit builds the ones it supports; nixgen does the same (such a value drops out of every
toolkit's intersection in `nixgen.planning.plan`, whose result the generated Nix only reads).
So it is a warning, located at the value in the edition the file is written in, saying
what happens and the closest known value. A malformed value stays an error
(`nixgen.reading.values`). A kernel left with nothing to build is an error of a later stage.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, get_args, get_origin

import attrs

from nixgen.core import tables
from nixgen.core.errors import PathPart, Problem
from nixgen.reading import model, values
from nixgen.reading.convert import key_of


def _cuda_skipped() -> str:
    versions = ", ".join(tables.cuda_versions())
    return (
        f"no CUDA toolkit of the build table ({versions}) builds it, so every CUDA variant skips it"
    )


def _rocm_skipped() -> str:
    return (
        "the builder compiles only for the ROCm targets it supports, so every ROCm variant skips it"
    )


#: Values that are well-formed but possibly unknown to nixgen's tables, by NewType: the
#: rule that words the warning (`nixgen.reading.values.NEWTYPES`), and what happens to such a
#: value in a compiled kernel.
_CONSEQUENCE: dict[Any, Callable[[], str]] = {
    model.CudaCapability: _cuda_skipped,
    model.RocmArch: _rocm_skipped,
}
_UNKNOWN: dict[Any, tuple[Callable[[str], str | None], Callable[[], str]]] = {
    newtype: (rule.unknown, _CONSEQUENCE[newtype])
    for newtype, rule in values.NEWTYPES.items()
    if rule.unknown is not None
}


def warnings(
    kernels: Mapping[model.KernelName, Any], framework_table: str | None, framework: Any
) -> list[Problem]:
    """Warnings for CUDA capabilities and ROCm targets that are well-formed but not in
    nixgen's tables. The anchor keeps such values and each toolkit builds the ones it
    supports; nixgen does the same (they drop out of every toolkit's intersection), so
    they are not errors. Paths are the document's own, whatever its edition."""
    owners: list[tuple[tuple[PathPart, ...], Any, bool]] = [
        (("kernel", name), kernel, True) for name, kernel in kernels.items()
    ]
    if framework_table is not None and framework is not None:
        owners.append(((framework_table,), framework, False))
    out: list[Problem] = []
    for path, obj, compiled in owners:
        for field, newtype in _listed_newtypes(type(obj)):
            rule, consequence = _UNKNOWN[newtype]
            for index, item in enumerate(getattr(obj, field.name) or []):
                message = rule(item)
                if message is None:
                    continue
                then = (
                    consequence()
                    if compiled
                    else (
                        "it is written to metadata.json as given (a pure-Python kernel "
                        "compiles nothing)"
                    )
                )
                out.append(
                    Problem(
                        message=f"{message}; {then}",
                        path=(*path, key_of(field), index),
                        severity="warning",
                    )
                )
    return out


_FIELDS: dict[type, list[tuple[attrs.Attribute[Any], Any]]] = {}


def _listed_newtypes(cls: type) -> list[tuple[attrs.Attribute[Any], Any]]:
    """The fields of `cls` that hold a list of one of the `_UNKNOWN` NewTypes (cached)."""
    if cls in _FIELDS:
        return _FIELDS[cls]
    if not attrs.has(cls):
        return []
    # The field types as objects: resolved once per class (structuring `cls` already
    # did it), where `typing.get_type_hints` would evaluate every annotation again.
    attrs.resolve_types(cls)
    found = []
    for field in attrs.fields(cls):
        for arm in (field.type, *get_args(field.type)):
            if get_origin(arm) is list and get_args(arm)[0] in _UNKNOWN:
                found.append((field, get_args(arm)[0]))
                break
    _FIELDS[cls] = found
    return found
