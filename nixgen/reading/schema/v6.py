"""Edition 6, the field's own format: the model classes themselves (``nixgen.reading.model``),
tagged by ``language``, read as the `kernels` client's parser reads them (`config/v6.rs`):
a framework table is required; its rules over the whole document are `checks`."""

from __future__ import annotations

from typing import Any

from nixgen.core import tables
from nixgen.core.errors import Problem
from nixgen.reading import model
from nixgen.reading.convert import to_table
from nixgen.reading.schema.common import Layout, Raw, kernel_union

Kernel = kernel_union("language", model.KERNEL_CLASSES, what="kernel")


def rust_needs_tvm_ffi(raw: Raw) -> list[Problem]:
    """The format's rule: a Rust kernel belongs to a `[tvm-ffi]` project."""
    if raw.framework_table == "tvm-ffi":
        return []
    return [
        Problem(
            message=f"Rust kernels require a `[tvm-ffi]` framework (this project is "
            f"`[{raw.framework_table}]`); a Rust crate linked into a `[torch]` extension "
            "is nixgen's own: define the kernel in nixgen.toml instead",
            path=("kernel", name, "language"),
        )
        for name, kernel in sorted(raw.kernels.items())
        if tables.is_rust(kernel.language)
    ]


def mlx_noarch_is_metal(raw: Raw) -> list[Problem]:
    """The format's rule: `[mlx-noarch]` builds for the `metal` backend only."""
    if raw.framework_table != "mlx-noarch":
        return []
    return [
        Problem(
            message=f"`[mlx-noarch]` only supports the `metal` backend, got `{backend}`",
            path=("general", "backends", index),
        )
        for index, backend in enumerate(raw.general.backends)
        if backend != "metal"
    ]


def tileiras_minver(raw: Raw) -> list[Problem]:
    """The format's rule: `tileiras-minver` is at least the first CUDA with cuTile."""
    least = tables.version_key(model.MIN_TILEIRAS_VERSION)
    return [
        Problem(
            message=f"`tileiras-minver` must be at least {model.MIN_TILEIRAS_VERSION}, the "
            f"first CUDA version with cuTile (got {kernel.tileiras_minver})",
            path=("kernel", name, "tileiras-minver"),
        )
        for name, kernel in sorted(raw.kernels.items())
        if isinstance(kernel, model.RustCutileKernel)
        and tables.version_key(kernel.tileiras_minver) < least
    ]


LAYOUT = Layout(
    general=model.General,
    kernel=Kernel,
    frameworks=model.FRAMEWORKS,
    framework_required=True,
    checks=(rust_needs_tvm_ffi, mlx_noarch_is_metal, tileiras_minver),
)


def to_document(build: model.Build, *, defaults: bool = False) -> dict[str, Any]:
    """The edition-6 build.toml document of `build` (inverse of structuring): the kernels
    nixgen.toml defines are left out (`options_document` has them).

    With `defaults`, fields left at their default are included too, which is what
    ``nixgen show`` prints: the effective configuration.
    """
    document: dict[str, Any] = {"general": to_table(build.general, defaults=defaults)}
    if build.framework is not None:
        document[build.framework.table] = to_table(build.framework, defaults=defaults)
    kernels = {
        name: to_table(kernel, defaults=defaults)
        for name, kernel in sorted(build.kernels.items())
        if name not in build.nixgen_kernels
    }
    if kernels:
        document["kernel"] = kernels
    return document


def options_document(build: model.Build, *, defaults: bool = False) -> dict[str, Any]:
    """The `[kernel.<name>]` tables nixgen.toml holds for `build`: each kernel's options
    (a Rust crate's features, a device crate), and the whole of a kernel nixgen.toml
    defines; `{}` when there is nothing to say."""
    kernels: dict[str, Any] = {}
    for name, kernel in sorted(build.kernels.items()):
        if name in build.nixgen_kernels:
            table = to_table(kernel, defaults=defaults, fields="both")
        else:
            table = to_table(kernel, defaults=defaults, fields="nixgen.toml")
            table.pop("language", None)
        if table:
            kernels[name] = table
    return {"kernel": kernels} if kernels else {}
