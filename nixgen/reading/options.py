"""nixgen.toml's ``[kernel.<name>]``: what nixgen builds beyond the field's format.

build.toml is the field's file (kernel-builder, the `kernels` client and the Hub read it);
what nixgen builds that the format cannot say lives beside it in nixgen.toml, typed and
located as build.toml is:

- the options of a kernel build.toml defines (a Rust crate's Cargo ``features``; a
  ``rust-cuda-oxide`` kernel's ``device-manifest`` and ``ptx-dir``): the model's fields
  whose metadata names nixgen.toml (`model.NIXGEN_TOML`);
- a whole kernel build.toml cannot hold: a Rust crate linked into a ``[torch]`` extension
  (the format puts Rust kernels under ``[tvm-ffi]`` only), with its ``language``,
  ``cargo-manifest`` and ``src`` as build.toml would have them, and its options.

The other keys of nixgen.toml (``out``, ``library``, …) are `nixgen.app.config`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from nixgen.core.errors import Problem, did_you_mean, one_of
from nixgen.reading import load, model
from nixgen.reading.convert import key_of, keys_of, problems_from, show, to_table
from nixgen.reading.schema import common, v6

FILE = model.NIXGEN_TOML
#: The table of nixgen.toml this module reads.
TABLE = "kernel"


def load_file(root: Path) -> load.Document | None:
    """The nixgen.toml of the project at `root`, parsed, or None when there is none."""
    path = root / FILE
    if not path.is_file():
        return None
    display = load.display_name(path)
    return load.parse(load.read_text(path, display), path, display)


def option_keys(cls: type) -> list[str]:
    """The keys nixgen.toml may set for a kernel of class `cls`."""
    return [key_of(f) for f in attrs.fields(cls) if f.metadata.get("file") == model.NIXGEN_TOML]


def apply(build: model.Build, document: load.Document | None) -> tuple[model.Build, list[Problem]]:
    """`build` with nixgen.toml's `[kernel.<name>]` tables applied, and their problems
    (located in nixgen.toml)."""
    if document is None or TABLE not in document.data:
        return build, []
    tables = document.data[TABLE]
    if not isinstance(tables, dict):
        problem = Problem(
            message=f"expected a table of kernel tables (`[kernel.<name>]`), got {show(tables)}",
            path=(TABLE,),
        )
        return build, document.locate_all([problem])
    kernels = dict(build.kernels)
    defined = set(build.nixgen_kernels)
    problems: list[Problem] = []
    for name, table in tables.items():
        path = (TABLE, name)
        if not isinstance(table, dict):
            problems.append(Problem(message=f"expected a table, got {show(table)}", path=path))
            continue
        if name in build.kernels:
            kernel, found = _options(name, build.kernels[name], table)
        else:
            kernel, found = _definition(build, name, table)
            if kernel is not None:
                defined.add(name)
        problems.extend(found)
        if kernel is not None:
            kernels[model.KernelName(name)] = kernel
    if problems:
        return build, document.locate_all(problems)
    return attrs.evolve(build, kernels=kernels, nixgen_kernels=frozenset(defined)), []


def _options(
    name: str, kernel: model.Kernel, table: dict[str, Any]
) -> tuple[model.Kernel | None, list[Problem]]:
    """build.toml's kernel `name` with the options `table` sets."""
    path = (TABLE, name)
    cls = type(kernel)
    allowed = option_keys(cls)
    problems = []
    for key in table:
        if key in allowed:
            continue
        if not allowed:
            why = f"a `{kernel.language}` kernel has none"
        elif key in keys_of(cls):
            why = f"`{key}` is build.toml's; set it there"
        else:
            why = f"unknown key `{key}`{did_you_mean(key, allowed)}"
        problems.append(
            Problem(
                message=f"{why}: nixgen.toml's `[kernel.{name}]` holds nixgen's options for "
                f"build.toml's kernel `{name}` ({one_of(allowed) or 'none for its language'})",
                path=(*path, key),
                at_key=True,
            )
        )
    if problems:
        return None, problems
    merged = {**to_table(kernel, fields="both"), **table}
    try:
        return common.OPTIONS.structure(merged, cls), []
    except Exception as exc:
        return None, problems_from(exc, path)


def _definition(
    build: model.Build, name: str, table: dict[str, Any]
) -> tuple[model.Kernel | None, list[Problem]]:
    """A kernel nixgen.toml defines: a Rust crate linked into a `[torch]` extension."""
    path = (TABLE, name)
    try:
        common.OPTIONS.structure(name, model.KernelName)
    except Exception as exc:
        return None, [attrs.evolve(p, at_key=True) for p in problems_from(exc, path)]
    if "language" not in table:
        known = one_of(sorted(build.kernels)) or "none"
        return None, [
            Problem(
                message=f"build.toml has no kernel `{name}` (it has {known}): nixgen.toml "
                "sets options of build.toml's kernels by their name, or defines a Rust "
                "kernel linked into [torch] with its `language`, `cargo-manifest` and `src`",
                path=path,
                at_key=True,
            )
        ]
    try:
        kernel: model.Kernel = common.OPTIONS.structure(table, v6.Kernel)
    except Exception as exc:
        return None, problems_from(exc, path)
    if not isinstance(kernel, model.RUST_KERNELS):
        return None, [
            Problem(
                message=f"a `{kernel.language}` kernel belongs in build.toml (the format "
                "holds every C++ kernel); nixgen.toml defines only Rust kernels linked into "
                "a [torch] extension",
                path=(*path, "language"),
            )
        ]
    if not isinstance(build.framework, model.Torch):
        where = (
            "the format holds the Rust kernels of a [tvm-ffi] project: define it in build.toml"
            if isinstance(build.framework, model.TvmFfi)
            else f"this project is `[{build.framework_table}]`, which compiles nothing"
        )
        return None, [
            Problem(
                message=f"nixgen.toml defines Rust kernels linked into a [torch] extension; "
                f"{where}",
                path=(*path, "language"),
            )
        ]
    return kernel, []
