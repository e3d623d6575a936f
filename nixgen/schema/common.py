"""Pieces every edition's schema shares: the strict converter and the top-level layout.

Each edition module (``v1`` … ``v6``) declares its own raw attrs classes; this module
structures a whole document against exactly one of them and collects every problem.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, NewType, get_args, get_origin

import attrs

from nixgen import model, tables, values
from nixgen.convert import (
    InvalidValue,
    Strict,
    add_foreign_key_hint,
    key_of,
    keys_of,
    problems_from,
    show,
    tagged_union_hook,
)
from nixgen.errors import PathPart, Problem, did_you_mean, one_of

#: Project names of editions 1–4, where `_` was common (upgrading turns it into `-`).
LegacyName = NewType("LegacyName", str)

STRICT = Strict(
    {
        model.ProjectName: values.project_name,
        LegacyName: values.legacy_project_name,
        model.KernelName: values.kernel_name,
        model.Version: values.version,
        model.GitUrl: values.git_url,
        model.RelPath: values.rel_path,
        model.RelDir: values.rel_dir,
        model.Flag: lambda s: None,
        model.CudaCapability: values.cuda_capability,
        model.RocmArch: values.rocm_arch,
        model.RepoId: values.repo_id,
        model.CargoFeature: values.cargo_feature,
        model.Extension: values.extension,
    }
)

StableAbi = model.Version | dict[model.Backend, model.Version]


def _stable_abi(value: object, _: type) -> Any:
    if isinstance(value, str):
        return STRICT.structure(value, model.Version)
    if isinstance(value, dict):
        return STRICT.structure(value, dict[model.Backend, model.Version])
    raise InvalidValue(
        f'expected a Torch version such as `"2.11"` or a table of backend = version, '
        f"got {show(value)}"
    )


STRICT.register(StableAbi, _stable_abi)
STRICT.register(StableAbi | None, _stable_abi)

LegacyDep = Literal[(*tables.all_cpp_dependencies(), *tables.legacy_dependency_renames())]  # type: ignore[valid-type]


#: How the raw classes of older editions are declared: immutable and keyword-only. They
#: live for one structuring pass and are never compared or printed, so attrs generates
#: only `__init__` (creating classes is a visible share of nixgen's start-up).
raw_class = attrs.frozen(kw_only=True, eq=False, repr=False)


@attrs.frozen
class Layout:
    """How an edition arranges the top level of build.toml."""

    general: type
    kernel: Any
    frameworks: Mapping[str, type]


@attrs.frozen
class Raw:
    """A document structured against one edition's classes."""

    general: Any
    framework_table: str | None
    framework: Any
    kernels: dict[str, Any]


def structure(document: dict[str, Any], layout: Layout) -> tuple[Raw | None, list[Problem]]:
    """Structure `document` against `layout`; all problems, or the raw classes."""
    problems: list[Problem] = []
    allowed = ["general", "kernel", *layout.frameworks]
    for key in document:
        if key not in allowed:
            problems.append(
                Problem(
                    message=f"unknown table `{key}`{did_you_mean(key, allowed)}; "
                    f"allowed top-level tables: {one_of(allowed)}",
                    path=(key,),
                    at_key=True,
                )
            )
    general = None
    if "general" not in document:
        problems.append(Problem(message="missing the required `[general]` table", path=()))
    else:
        try:
            general = STRICT.structure(document["general"], layout.general)
        except Exception as exc:
            problems.extend(problems_from(exc, ("general",)))
    present = [name for name in layout.frameworks if name in document]
    for extra in present[1:]:
        problems.append(
            Problem(
                message=f"only one framework table is allowed, but both `[{present[0]}]` and "
                f"`[{extra}]` are present",
                path=(extra,),
                at_key=True,
            )
        )
    framework = None
    if present:
        name = present[0]
        try:
            framework = STRICT.structure(document[name], layout.frameworks[name])
        except Exception as exc:
            problems.extend(problems_from(exc, (name,)))
    kernels: dict[str, Any] = {}
    try:
        kernels = STRICT.structure(
            document.get("kernel", {}), dict[model.KernelName, layout.kernel]
        )
    except Exception as exc:
        problems.extend(problems_from(exc, ("kernel",)))
    if any(p.severity == "error" for p in problems):
        return None, problems
    problems.extend(unknown_values(kernels, present[0] if present else None, framework))
    return Raw(general, present[0] if present else None, framework, kernels), problems


# ------------------------------------------------------------ well-formed, but unknown

def _cuda_skipped() -> str:
    versions = ", ".join(tables.cuda_versions())
    return f"no CUDA toolkit of the build table ({versions}) builds it, so every CUDA variant skips it"


def _rocm_skipped() -> str:
    return "the builder compiles only for the ROCm targets it supports, so every ROCm variant skips it"


#: Values that are well-formed but possibly unknown to nixgen's tables, by NewType: the
#: rule that words the warning, and what happens to such a value in a compiled kernel.
_UNKNOWN: dict[Any, tuple[Callable[[str], str | None], Callable[[], str]]] = {
    model.CudaCapability: (values.unknown_cuda_capability, _cuda_skipped),
    model.RocmArch: (values.unknown_rocm_arch, _rocm_skipped),
}


def unknown_values(
    kernels: dict[str, Any], framework_table: str | None, framework: Any
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
                then = consequence() if compiled else "nothing is compiled here, so it has no effect"
                out.append(
                    Problem(
                        message=f"{message}; {then}",
                        path=(*path, key_of(field), index),
                        severity="warning",
                    )
                )
    return out


@functools.cache
def _listed_newtypes(cls: type) -> list[tuple[attrs.Attribute, Any]]:
    """The fields of `cls` that hold a list of one of the `_UNKNOWN` NewTypes."""
    if not attrs.has(cls):
        return []
    hints = typing.get_type_hints(cls)
    found = []
    for field in attrs.fields(cls):
        for arm in (hints[field.name], *get_args(hints[field.name])):
            if get_origin(arm) is list and get_args(arm)[0] in _UNKNOWN:
                found.append((field, get_args(arm)[0]))
                break
    return found


def _other_edition_hint(tag: str) -> Any:
    """Explain a kernel table written for another edition than the file declares."""

    def hint(_: str, value: dict[str, Any]) -> str | None:
        language = value.get("language")
        if (
            tag == "backend"
            and isinstance(language, str)
            and language.startswith(("cpp-", "rust-"))
        ):
            return f'`language = "{language}"` is edition 6: set `edition = 6` in [general]'
        if tag == "language" and isinstance(value.get("backend"), str):
            return (
                "`backend` tags kernels before edition 6; edition 6 writes "
                '`language = "cpp-cuda"` and the like'
            )
        return None

    return hint


def kernel_union(tag: str, classes: dict[str, type], *, what: str) -> Any:
    """Register a tagged kernel union on the shared converter and return its type."""
    union = Any if not classes else _union(tuple(classes.values()))
    STRICT.register(
        union, tagged_union_hook(STRICT, tag, classes, what=what, hint=_other_edition_hint(tag))
    )

    def foreign(cls: type, key: str) -> str | None:
        if cls not in classes.values():
            return None
        owners = [name for name, other in classes.items() if key in keys_of(other)]
        if not owners:
            return None
        mine = next(name for name, other in classes.items() if other is cls)
        return (
            f"`{key}` is not possible for {tag} `{mine}`; it belongs to {tag} "
            f"{one_of(owners)} (allowed here: {one_of(keys_of(cls))})"
        )

    add_foreign_key_hint(foreign)
    return union


def _union(classes: tuple[type, ...]) -> Any:
    from typing import Union

    return Union[classes]  # noqa: UP007 - a runtime union object to register hooks on
