"""Pieces every edition's schema shares: the strict converter and the top-level layout.

Each edition module (``v1`` … ``v6``) declares its own raw attrs classes; this module
structures a whole document against exactly one of them and collects every problem.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Literal, NewType, TypeAlias, Union

import attrs

from nixgen.core import tables
from nixgen.core.errors import Problem, did_you_mean, one_of
from nixgen.reading import model, values
from nixgen.reading.convert import (
    InvalidValue,
    Strict,
    add_foreign_key_hint,
    keys_of,
    problems_from,
    show,
    tagged_union_hook,
)
from nixgen.reading.schema import unknown

#: Project names of editions 1–4, where `_` was common (upgrading turns it into `-`).
LegacyName = NewType("LegacyName", str)

STRICT = Strict(
    {
        **{newtype: rule.check for newtype, rule in values.NEWTYPES.items()},
        LegacyName: values.legacy_project_name,
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

# Built at run time from the data tables (cattrs validates against it), declared once: a static
# type checker cannot evaluate such a Literal and reads it as `Any` (as the allowlists of
# nixgen.reading.model).
LegacyDep: TypeAlias = Literal[  # type: ignore[valid-type]
    (*tables.all_cpp_dependencies(), *tables.legacy_dependency_renames())
]


@attrs.frozen(kw_only=True)
class Layout:
    """How an edition arranges the top level of build.toml."""

    general: type
    kernel: Any
    frameworks: Mapping[str, type]


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
DSL_LANGUAGES = {"rust": "rust-cpu", "cuda-oxide": "rust-cuda"}


def dsl_hint(cls: type, key: str) -> str | None:
    """`dsl` in a kernel table of an edition that has none: name the language to use."""
    if key != "dsl" or "src" not in keys_of(cls):
        return None
    if "language" in keys_of(cls):
        return (
            "`dsl` is not an edition-6 key: edition 6 names the source language in `language`: "
            '`language = "rust-cpu"` for `dsl = "rust"`, `language = "rust-cuda"` for '
            '`dsl = "cuda-oxide"`, `language = "cpp-<backend>"` for `dsl = "cpp"`'
        )
    return (
        "`dsl` exists from edition 5 on (set `edition = 5`), or write the file as edition 6 "
        'with `language = "rust-cpu"` (`dsl = "rust"`) or `language = "rust-cuda"` '
        '(`dsl = "cuda-oxide"`)'
    )


add_foreign_key_hint(dsl_hint)


def kernel_union(tag: str, classes: dict[str, type], *, what: str) -> Any:
    """Register a tagged kernel union on the shared converter and return its type."""
    # a runtime union object to register the hook on
    union = Union[tuple(classes.values())] if classes else Any  # noqa: UP007
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
