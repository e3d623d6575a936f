"""``nixgen migrate --edition 5``: the edition-5 form of a project, for the ecosystem's parser.

kernels-data (the parser inside ``kernel-builder`` and the ``kernels`` client) reads
editions up to 5 and refuses edition 6. A project whose kernels edition 5 can express
(every kernel's language is a C++ backend) can be written back as edition 5: the same
document with ``general.edition = 5``, each ``language = "cpp-<backend>"`` as
``backend = "<backend>"``, an explicit ``depends`` (edition 5 requires it) and
``[torch-noarch]``'s snake-case keys. Rust kernels have no edition-5 form outside the
anchor's unreleased ``support-rust-kernels`` branch, which kernels-data does not read:
they are refused, each named.

The result is checked the way nixgen reads it: structured against the edition-5 schema and
upgraded again, it must give exactly the edition-6 project it came from.
"""

from __future__ import annotations

from typing import Any

from nixgen.core import tables
from nixgen.core.errors import NixgenError, Problem, ProblemError
from nixgen.reading import load, schema, upgrade

EDITION = 5

#: Edition-6 keys that edition 5 spells differently (the reverse of `migrate.RENAMES`'s
#: entries that apply here): renamed in place, keeping the line's comment.
RENAMES = {
    "language": "backend",
    "cuda-capabilities": "cuda_capabilities",
    "rocm-archs": "rocm_archs",
}


def downgrade(document: load.Document, wanted: dict[str, Any]) -> dict[str, Any]:
    """The edition-5 document of `wanted`, the edition-6 document of `document`.

    Raises `ProblemError` (located in `document`) naming every kernel edition 5 cannot
    express, and `NixgenError` when the result would not read back as `wanted`."""
    kernels: dict[str, dict[str, Any]] = wanted.get("kernel", {})
    rust = [
        Problem(
            message=f"`{kernel['language']}` kernel `{name}` has no edition-5 form: "
            "kernels-data and kernel-builder read C++ kernels only (one `backend` each); "
            "keep this project at edition 6, or port the kernel to C++ first",
            path=("kernel", name, "language"),
        )
        for name, kernel in sorted(kernels.items())
        if kernel["language"] not in tables.CPP_LANGUAGES
    ]
    if rust:
        raise ProblemError(document.locate_all(rust))
    out: dict[str, Any] = {}
    for section, body in wanted.items():
        if section == "general":
            out[section] = {k: (EDITION if k == "edition" else v) for k, v in body.items()}
        elif section == "kernel":
            out[section] = {name: _kernel(kernel) for name, kernel in body.items()}
        elif section == "torch-noarch":
            out[section] = {RENAMES.get(k, k): v for k, v in body.items()}
        else:
            out[section] = body
    _check_round_trip(document, out, wanted)
    return out


def _kernel(kernel: dict[str, Any]) -> dict[str, Any]:
    body = {
        ("backend" if key == "language" else key): (
            tables.LANGUAGE_BACKEND[value] if key == "language" else value
        )
        for key, value in kernel.items()
    }
    body.setdefault("depends", [])
    return body


def _check_round_trip(document: load.Document, out: dict[str, Any], wanted: dict[str, Any]) -> None:
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
    back, _ = upgrade.to_edition6(raw5, EDITION)
    again, _ = schema.structure(back, schema.CURRENT)
    original, _ = schema.structure(wanted, schema.CURRENT)
    if again is None or again != original:
        raise NixgenError(
            "internal error: the edition-5 document does not read back as the project; "
            "nothing was written (this is a bug in nixgen, please report it)"
        )
