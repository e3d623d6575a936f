"""`nixgen migrate`: rewrite a build.toml to edition 6, keeping comments."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nixgen.cmdline.cli import handle_errors, print_problems, project_argument
from nixgen.cmdline.commands.init import license_value
from nixgen.cmdline.output import status


@click.command()
@project_argument
@click.option("--check", is_flag=True, help="Exit 1 when the file needs migrating; write nothing.")
@click.option(
    "--diff", "show_diff", is_flag=True, help="Print the changes as a diff; write nothing."
)
@click.option(
    "--license",
    "license_",
    metavar="SPDX",
    callback=license_value,
    help="License for a file that has none (instead of `NOASSERTION`).",
)
@click.option(
    "--edition",
    type=click.Choice(["5", "6"]),
    default="6",
    show_default=True,
    help="The edition to write: 5 is what kernel-builder and the kernels client read.",
)
@handle_errors
def migrate(
    project: Path, check: bool, show_diff: bool, license_: str | None, edition: str
) -> None:
    """Rewrite PROJECT's build.toml as edition 6, keeping its comments and layout.

    Only what edition 6 changes is edited; an edition-6 file is left as it is. The file is
    replaced atomically. With --check or --diff nothing is written. With --edition 5 the
    file is written back as edition 5 (C++ kernels only), which kernel-builder and the
    kernels client read.
    """
    from nixgen.cmdline import migrate as migrate_mod

    migration = migrate_mod.plan(project, license=license_, to_edition=int(edition))
    print_problems(migration.warnings)
    display = migration.document.display
    if not migration.changed:
        status(f"{display}: already edition {edition}; nothing to do")
        return
    if show_diff:
        from nixgen.cmdline import output

        output.out_bytes(migration.diff().encode("utf-8", "surrogateescape"))
    if check or show_diff:
        # stdout carries the diff alone (so that it can be piped to `git apply`)
        status(f"would migrate {display} {migration.reason}")
        if check:
            sys.exit(1)
        return
    migrate_mod.write(migration)
    status(f"migrated {display} {migration.reason}")


command = migrate
