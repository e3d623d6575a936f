"""`nixgen variants`: what will be built (the plan stage; no Nix, no templates)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from nixgen.app import config
from nixgen.checking import project as project_mod
from nixgen.cmdline.cli import (
    emit_result,
    handle_errors,
    json_option,
    print_problems,
    project_argument,
)
from nixgen.core import console
from nixgen.core.console import status
from nixgen.core.tables import BACKENDS
from nixgen.planning import plan, variants
from nixgen.planning.variants import SYSTEMS

system_option = click.option(
    "--system", type=click.Choice(SYSTEMS), help="Only variants for this Nix system."
)


def planned(project: Path, system: str | None) -> tuple[Any, list[Any], list[Any]]:
    """Read PROJECT (without looking for its source files) and plan its variants for
    `system`; print its warnings and planning problems, and return them too. Shared by
    `variants`/`matrix`."""

    loaded = project_mod.read(project, check_files=False)
    settings = config.project_settings(loaded.root)
    every = variants.variants(loaded.build, settings=settings)
    found = loaded.document.locate_all(plan.problems(loaded.build, every, settings))
    problems = [*loaded.warnings, *found]
    print_problems(problems)
    return loaded, [v for v in every if system is None or v.system == system], problems


def table(rows: list[list[str]]) -> str:
    """Left-aligned columns separated by two spaces; the first row is the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


@click.command(name="variants")
@project_argument
@json_option
@system_option
@click.option("--backend", type=click.Choice(BACKENDS), help="Only variants of this backend.")
@click.option(
    "--names",
    is_flag=True,
    help="Print only the variants' names, one a line (kernel-builder's list-variants).",
)
@handle_errors
def variants_command(
    project: Path, as_json: bool, system: str | None, backend: str | None, names: bool
) -> None:
    """List the build variants of PROJECT: torch × backend version × system.

    Computed from nixgen's build-configuration table and the project's backends, version
    bounds, stable ABI and kernels, without evaluating Nix. `nixgen render` writes this
    plan into the generated Nix, whose flake output `variants` reads it. Variants marked
    as bundled make up `packages.<system>.kernels`. With -q, the table has no header
    line; --names prints the names alone. -v also names each system's default variant
    (the one `nixgen shell` enters and `nixgen build --quick` builds) and counts the
    build configurations left out; -vv lists those, each with the reason.
    """

    if names and as_json:
        raise click.UsageError("--names and --json exclude each other: pass one")
    loaded, found, problems = planned(project, system)
    if backend is not None:
        found = [v for v in found if v.backend == backend]
    if as_json:
        emit_result([v.to_json() for v in found], problems)
        return
    if names:
        for v in found:
            console.out(v.name)
        return
    if not found:
        status("no variants")
        return
    rows = [["NAME", "SYSTEM", "BACKEND", "TORCH", "VERSION", "KERNELS", "BUNDLE"]]
    for v in found:
        rows.append(
            [
                v.name,
                v.system,
                v.backend,
                f"{v.torch} (stable ABI {v.stable_abi})" if v.stable_abi else v.torch or "-",
                v.backend_version or "-",
                ",".join(v.kernels) or "-",
                "yes" if v.bundle else "no",
            ]
        )
    text = table(rows)
    # The header is a status line's kind of text: -q leaves only the data.
    console.out(text.split("\n", 1)[1] if console.settings.verbosity < 0 else text)
    bundled = sum(v.bundle for v in found)
    status(f"{len(found)} variant(s), {bundled} in the bundle")
    if console.settings.verbosity >= 1:
        from nixgen.app import config

        _explain(loaded.build, found, system, backend, config.project_settings(loaded.root))


def _explain(
    build: Any, found: list[Any], system: str | None, backend: str | None, settings: Any
) -> None:
    """-v: each system's default variant, and how many configurations were left out;
    -vv: each left-out configuration and why (grouped by the systems it has)."""
    for best in variants.default_variants(found):
        status(
            f"default variant for {best.system}: {best.name} (`nixgen shell`, "
            "`nixgen build --quick`)",
            level=1,
        )
    _, left = variants.planned_variants(build, system=system, settings=settings)
    left = [item for item in left if backend is None or item.config.backend == backend]
    more = "" if console.settings.verbosity >= 2 else " (-vv: which, and why)"
    count = len({item.config for item in left})
    status(f"{count} build configuration(s) of the table left out{more}", level=1)
    grouped: dict[tuple[str, str], list[str]] = {}
    for item in left:
        grouped.setdefault((item.label, item.reason), []).append(item.system)
    for (label, reason), systems in grouped.items():
        status(f"  left out: {label} ({', '.join(systems)}): {reason}", level=2)


command = variants_command
