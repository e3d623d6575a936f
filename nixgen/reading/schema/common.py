"""Pieces every edition's schema shares: the strict converter and the top-level layout.

Each edition module (``v1`` … ``v6``) declares its own raw attrs classes; this module
structures a whole document against exactly one of them and collects every problem.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, NewType, TypeAlias, Union

import attrs

from nixgen.core import tables
from nixgen.core.errors import Problem, did_you_mean, one_of
from nixgen.reading import model, values
from nixgen.reading.convert import (
    InvalidValue,
    Strict,
    add_foreign_key_hint,
    add_value_hint,
    keys_of,
    problems_from,
    show,
    tagged_union_hook,
)
from nixgen.reading.convert import (
    key_of as convert_key,
)
from nixgen.reading.schema import unknown

#: Project names of editions 1–4, where `_` was common (upgrading turns it into `-`; the
#: format refuses them, nixgen reads them with a warning).
LegacyName = NewType("LegacyName", str)


def _one_dependency_version(dep: model.KernelDependency) -> None:
    """The format's rule of a kernel dependency: exactly one of `version` and `revision`."""
    if dep.version is not None and dep.revision is not None:
        raise InvalidValue("`version` and `revision` are mutually exclusive: give one")
    if dep.version is None and dep.revision is None:
        raise InvalidValue("either `version` or `revision` must be given")


_NEWTYPES = {
    **values.NEWTYPES,
    LegacyName: values.ValueRule(
        check=values.legacy_project_name, schema=lambda: {"type": "string"}
    ),
}
_CHECKS: dict[type, Callable[[Any], None]] = {model.KernelDependency: _one_dependency_version}

#: The converter of build.toml (every edition): reads no field of nixgen.toml's.
STRICT = Strict(_NEWTYPES, reads=model.in_build_toml, checks=_CHECKS)
#: The converter of nixgen.toml's `[kernel.<name>]` tables: build.toml's fields and nixgen's.
OPTIONS = Strict(_NEWTYPES, reads=lambda f: f.metadata.get("file") != model.DERIVED, checks=_CHECKS)
CONVERTERS = (STRICT, OPTIONS)

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


for _converter in CONVERTERS:
    _converter.register(StableAbi, _stable_abi)
    _converter.register(StableAbi | None, _stable_abi)

if TYPE_CHECKING:
    # Built at run time from the data tables (cattrs validates against it); a static type
    # checker cannot evaluate such a Literal and sees `str` (as for the allowlists of
    # nixgen.reading.model).
    LegacyDep: TypeAlias = str
else:
    LegacyDep = Literal[(*tables.all_cpp_dependencies(), *tables.legacy_dependency_renames())]


@attrs.frozen(kw_only=True)
class Layout:
    """How an edition arranges the top level of build.toml: its classes, whether it needs
    a framework table (editions 4 to 6 do), and the rules over the whole structured
    document that no single class holds (`checks`, each giving its problems)."""

    general: type
    kernel: Any
    frameworks: Mapping[str, type]
    framework_required: bool = False
    checks: tuple[Callable[[Raw], list[Problem]], ...] = ()


@attrs.frozen(kw_only=True)
class Raw:
    """A document structured against one edition's classes."""

    general: Any
    framework_table: str | None
    framework: Any
    kernels: dict[model.KernelName, Any]


def structure(document: dict[str, Any], layout: Layout) -> tuple[Raw | None, list[Problem]]:
    """Structure `document` against `layout`; all problems, or the raw classes."""
    problems: list[Problem] = []

    def table_problem(key: str, message: str) -> None:
        problems.append(Problem(message=message, path=(key,), at_key=True))

    def structured(key: str, t: Any, default: Any = None) -> Any:
        """The table `key` structured as `t`; `default` when it fails (problems noted)."""
        try:
            return STRICT.structure(document.get(key, default), t)
        except Exception as exc:
            problems.extend(problems_from(exc, (key,)))
            return default

    allowed = ["general", "kernel", *layout.frameworks]
    for key in document:
        if key not in allowed:
            table_problem(
                key,
                f"unknown table `{key}`{did_you_mean(key, allowed)}; "
                f"allowed top-level tables: {one_of(allowed)}",
            )
    general: Any = None
    if "general" not in document:
        problems.append(Problem(message="missing the required `[general]` table", path=()))
    else:
        general = structured("general", layout.general)
    present = [name for name in layout.frameworks if name in document]
    for extra in present[1:]:
        table_problem(
            extra,
            f"only one framework table is allowed, but both `[{present[0]}]` and "
            f"`[{extra}]` are present",
        )
    framework: Any = None
    if present:
        framework = structured(present[0], layout.frameworks[present[0]])
    elif layout.framework_required:
        problems.append(
            Problem(
                message="missing a framework table: add one of "
                f"{one_of(f'[{name}]' for name in layout.frameworks)} (a pure-Python "
                "Torch kernel has `[torch-noarch]`)",
                path=(),
            )
        )
    # `dict[KernelName, layout.kernel]`, spelled so a type checker reads it as a value.
    kernel_tables = types.GenericAlias(dict, (model.KernelName, layout.kernel))
    kernels: dict[model.KernelName, Any] = structured("kernel", kernel_tables, {})
    if any(p.severity == "error" for p in problems):
        return None, problems
    problems.extend(unknown.warnings(kernels, present[0] if present else None, framework))
    raw = Raw(
        general=general,
        framework_table=present[0] if present else None,
        framework=framework,
        kernels=kernels,
    )
    for check in layout.checks:
        problems.extend(check(raw))
    if any(p.severity == "error" for p in problems):
        return None, problems
    return raw, problems


def _other_edition_hint(tag: str) -> Any:
    """Explain a kernel table written for another edition than the file declares."""

    def hint(_: str, value: dict[str, Any]) -> str | None:
        language = value.get("language")
        if (
            tag == "backend"
            and isinstance(language, str)
            and language.startswith(tables.LANGUAGE_PREFIXES)
        ):
            return f'`language = "{language}"` is edition 6: set `edition = 6` in [general]'
        if tag == "language" and isinstance(value.get("backend"), str):
            return (
                "`backend` tags kernels before edition 6; edition 6 writes "
                '`language = "cpp-cuda"` and the like'
            )
        return None

    return hint


#: The edition-6 language of each `dsl` of the anchor's support-rust-kernels branch.
DSL_LANGUAGES = {"rust": "rust-cpu", "cuda-oxide": "rust-cuda-oxide"}


def dsl_hint(cls: type, key: str) -> str | None:
    """`dsl` in a kernel table of an edition that has none: name the language to use."""
    if key != "dsl" or "src" not in keys_of(cls):
        return None
    if "language" in keys_of(cls):
        return (
            "`dsl` is not an edition-6 key: edition 6 names the source language in `language`: "
            '`language = "rust-cpu"` for `dsl = "rust"`, `language = "rust-cuda-oxide"` for '
            '`dsl = "cuda-oxide"`, `language = "cpp-<backend>"` for `dsl = "cpp"`'
        )
    return (
        "`dsl` is a key of the anchor's unreleased support-rust-kernels branch, which nixgen "
        "reads in edition-5 files (with a warning): set `edition = 5` in [general], or write "
        "the file as edition 6 with "
        '`language = "rust-cpu"` (`dsl = "rust"`) or `language = "rust-cuda-oxide"` '
        '(`dsl = "cuda-oxide"`)'
    )


add_foreign_key_hint(dsl_hint)


def nixgen_toml_hint(cls: type, key: str) -> str | None:
    """A key of nixgen.toml's (a Rust crate's `features`) written in build.toml."""
    if not attrs.has(cls):
        return None
    field = next((f for f in attrs.fields(cls) if convert_key(f) == key), None)
    if field is None or field.metadata.get("file") != model.NIXGEN_TOML:
        return None
    return (
        f"`{key}` is nixgen's own, not a key of the format: set it in nixgen.toml's "
        "`[kernel.<name>]` (`nixgen migrate` moves it there)"
    )


add_foreign_key_hint(nixgen_toml_hint)


def general_minver_hint(cls: type, key: str) -> str | None:
    """`general.minver`, which nixgen's earlier edition 6 had and the format has not."""
    if cls is not model.General or key != "minver":
        return None
    return (
        "`minver` is no key of edition 6: the oldest `kernels` client that loads the kernel "
        "(metadata.json's `kernels-minver`) is derived from what the build uses; remove it"
    )


add_foreign_key_hint(general_minver_hint)


def tvm_ffi_dependency_hint(value: str, allowed: tuple[Any, ...]) -> str | None:
    """`tvm-ffi` in a C++ kernel's `depends`, which nixgen's earlier edition 6 allowed."""
    if value != "tvm-ffi" or "torch" not in allowed:
        return None
    return (
        "; `tvm-ffi` is no dependency of the format: the kernels of a [tvm-ffi] project "
        "see its headers without it"
    )


add_value_hint(tvm_ffi_dependency_hint)


def kernel_union(tag: str, classes: dict[str, type], *, what: str) -> Any:
    """Register a tagged kernel union on the converters and return its type."""
    # a runtime union object to register the hook on
    union = Union[tuple(classes.values())] if classes else Any  # noqa: UP007
    for converter in CONVERTERS:
        converter.register(
            union,
            tagged_union_hook(converter, tag, classes, what=what, hint=_other_edition_hint(tag)),
        )

    def foreign(cls: type, key: str) -> str | None:
        if cls not in classes.values():
            return None
        mine = next(name for name, other in classes.items() if other is cls)
        owners = [name for name, other in classes.items() if key in keys_of(other)]
        if owners:
            return (
                f"`{key}` is not possible for {tag} `{mine}`; it belongs to {tag} "
                f"{one_of(owners)} (allowed here: {one_of(keys_of(cls))})"
            )
        options = [
            name
            for name, other in classes.items()
            if attrs.has(other)
            and any(
                convert_key(f) == key and f.metadata.get("file") == model.NIXGEN_TOML
                for f in attrs.fields(other)
            )
        ]
        if options:
            return (
                f"`{key}` is not possible for {tag} `{mine}`: it is nixgen's own option of "
                f"{tag} {one_of(options)}, set in nixgen.toml (allowed here: "
                f"{one_of(keys_of(cls))})"
            )
        return None

    add_foreign_key_hint(foreign)
    return union
