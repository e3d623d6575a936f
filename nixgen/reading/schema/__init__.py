"""Stage 2 — schema: decide a document's edition from its shape, then structure it.

Detection comes first and picks exactly one edition; the document is then validated
against that edition's classes only, so errors always speak the language of the edition
the author wrote (never "did not match any variant").
"""

from __future__ import annotations

from typing import Any

import attrs

from nixgen.core import tables
from nixgen.core.errors import Problem
from nixgen.reading.convert import show
from nixgen.reading.schema import common

CURRENT = 6


@attrs.frozen(kw_only=True)
class Detected:
    edition: int
    reason: str


def detect(document: dict[str, Any]) -> Detected | Problem:
    """The edition of `document`, or a problem when it cannot be told."""
    general = document.get("general")
    if not isinstance(general, dict):
        return Detected(edition=CURRENT, reason="no [general] table")
    if "edition" in general:
        edition = general["edition"]
        if isinstance(edition, bool) or not isinstance(edition, int):
            return Problem(
                message=f"`edition` must be an integer (6 is current), got {show(edition)}",
                path=("general", "edition"),
            )
        if edition not in (5, 6):
            return Problem(
                message=f"unsupported edition {edition}; nixgen reads edition 5 and 6 files "
                "with `general.edition`, and the edition-less formats before them "
                f"(edition {CURRENT} is current)",
                path=("general", "edition"),
            )
        return Detected(edition=edition, reason=f"general.edition = {edition}")
    kernels = document.get("kernel")
    kernels = (
        [k for k in kernels.values() if isinstance(k, dict)] if isinstance(kernels, dict) else []
    )
    languages = {k.get("language") for k in kernels if isinstance(k.get("language"), str)}
    if any(lang.startswith(tables.LANGUAGE_PREFIXES) for lang in languages):
        return Problem(
            message="kernels use edition-6 `language` values but `general.edition` is missing; "
            "add `edition = 6` to [general]",
            path=("general",),
        )
    if "backends" in general:
        if "version" in general and "license" in general:
            if any(table in document for table in ("torch", "torch-noarch", "tvm-ffi")):
                return Detected(
                    edition=4,
                    reason="general.backends with version and license, a framework, no edition",
                )
            return Detected(
                edition=3, reason="general.backends with version and license, no framework"
            )
        return Detected(edition=3, reason="general.backends without version or license")
    if any("backend" in k for k in kernels):
        return Detected(edition=2, reason="kernels tagged by `backend`, no general.backends")
    v2_general = {"universal", "cuda-minver", "cuda-maxver", "hub", "python-depends"}
    if v2_general & set(general):
        return Detected(edition=2, reason="edition-2 keys in [general]")
    return Detected(edition=1, reason="kernels without a `backend` tag and no general.backends")


def layout(edition: int) -> common.Layout:
    """The schema (raw classes) of one edition."""
    from importlib import import_module

    layout: common.Layout = import_module(f"nixgen.reading.schema.v{edition}").LAYOUT
    return layout


def structure(document: dict[str, Any], edition: int) -> tuple[common.Raw | None, list[Problem]]:
    """`document` structured against `edition`'s schema: the raw classes, or None and the
    problems (warnings come with either)."""
    return common.structure(document, layout(edition))


#: The editions that have a dialect: what nixgen read under that edition number besides
#: the format (edition 5: the anchor's support-rust-kernels branch; edition 6: nixgen's
#: earlier edition 6). The format refuses a dialect; nixgen reads it with one warning.
DIALECT_EDITIONS = (5, 6)


def dialect_layout(edition: int) -> common.Layout:
    """The schema of `edition`'s dialect (`DIALECT_EDITIONS`)."""
    if edition == 5:
        from nixgen.reading.schema import v5

        return v5.BRANCH_LAYOUT
    from nixgen.reading.schema import nixgen6

    return nixgen6.LAYOUT


def structure_dialect(
    document: dict[str, Any], edition: int
) -> tuple[common.Raw | None, list[Problem]]:
    """`document` structured against the dialect of `edition` (`DIALECT_EDITIONS`)."""
    return common.structure(document, dialect_layout(edition))
