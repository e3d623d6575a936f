"""``nixgen migrate --edition 5``: the edition-5 form of a project.

The `kernels` client (0.18.3 and later) and kernel-builder read edition 5 and upgrade it to
edition 6 in memory, saying so; the field's Nix builder requires edition 6. A project whose
build.toml edition 5 can express (every kernel's language is a C++ one; no
`build-layout` or `mlx-noarch`) can be written back as edition 5: the same document with
``general.edition = 5`` and each ``language = "cpp-<backend>"`` as ``backend =
"<backend>"``. Rust kernels of a `[tvm-ffi]` project have no edition-5 form: they are
refused, each named (nixgen.toml, which the format never reads, is left as it is).

The result is checked the way nixgen reads it: structured against the edition-5 schema and
converted into the model, it must give exactly the project it came from.
"""

from __future__ import annotations

from typing import Any

import attrs

from nixgen.core import tables
from nixgen.core.errors import NixgenError, Problem, ProblemError
from nixgen.reading import load, model, schema, upgrade
from nixgen.reading.schema import v6

EDITION = 5

#: Keys that edition 5 spells differently: renamed in place, keeping the line's comment
#: (`language`; `[torch-noarch]`'s keys of nixgen's earlier edition 6, `_` in the format).
RENAMES = {
    "language": "backend",
    "cuda-capabilities": "cuda_capabilities",
    "rocm-archs": "rocm_archs",
}


def downgrade(
    document: load.Document, wanted: dict[str, Any], build: model.Build
) -> dict[str, Any]:
    """The edition-5 document of `wanted`, the edition-6 build.toml of `build` (read from
    `document`).

    Raises `ProblemError` (located in `document`) naming everything edition 5 cannot
    express, and `NixgenError` when the result would not read back as `build`."""
    kernels: dict[str, dict[str, Any]] = wanted.get("kernel", {})
    problems = [
        Problem(
            message=f"`{kernel['language']}` kernel `{name}` has no edition-5 form: edition 5 "
            "holds C++ kernels only (one `backend` each); keep this project at edition 6",
            path=("kernel", name, "language"),
        )
        for name, kernel in sorted(kernels.items())
        if kernel["language"] not in tables.CPP_LANGUAGES
    ]
    if build.general.build_layout != "files":
        problems.append(
            Problem(
                message="`build-layout` has no edition-5 form: edition 5 builds the `files` "
                "layout; keep this project at edition 6",
                path=("general", "build-layout"),
            )
        )
    if isinstance(build.framework, model.MlxNoarch):
        problems.append(
            Problem(
                message="`[mlx-noarch]` has no edition-5 form: edition 5 binds Torch or tvm-ffi "
                "only; keep this project at edition 6",
                path=("mlx-noarch",),
            )
        )
    if problems:
        raise ProblemError(document.locate_all(problems))
    out: dict[str, Any] = {}
    for section, body in wanted.items():
        if section == "general":
            out[section] = {
                k: (EDITION if k == "edition" else v)
                for k, v in body.items()
                if k != "build-layout"
            }
        elif section == "kernel":
            out[section] = {name: _kernel(kernel) for name, kernel in body.items()}
        else:
            out[section] = body
    _check_round_trip(document, out, build)
    return out


def _kernel(kernel: dict[str, Any]) -> dict[str, Any]:
    return {
        ("backend" if key == "language" else key): (
            tables.LANGUAGE_BACKEND[value] if key == "language" else value
        )
        for key, value in kernel.items()
    }


def _check_round_trip(document: load.Document, out: dict[str, Any], build: model.Build) -> None:
    raw5, problems = schema.structure(out, EDITION)
    errors = [p for p in problems if p.severity == "error"]
    if raw5 is None or errors:
        raise ProblemError(
            document.locate_all(
                [
                    Problem(message=f"edition 5 cannot express this: {p.message}", path=p.path)
                    for p in errors
                ]
            )
        )
    back, _ = upgrade.to_model(raw5, EDITION)
    mine = attrs.evolve(
        build,
        kernels={k: v for k, v in build.kernels.items() if k not in build.nixgen_kernels},
        nixgen_kernels=frozenset(),
    )
    if v6.to_document(back) != v6.to_document(mine):
        raise NixgenError(
            "internal error: the edition-5 document does not read back as the project; "
            "nothing was written (this is a bug in nixgen, please report it)"
        )
