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
@handle_errors
def migrate(project: Path, check: bool, show_diff: bool, license_: str | None) -> None:
    """Rewrite PROJECT's build.toml as edition 6, keeping its comments and layout.

    Only what edition 6 changes is edited; an edition-6 file is left as it is. The file is
    replaced atomically. With --check or --diff nothing is written.
    """
    from nixgen.cmdline import migrate as migrate_mod

    migration = migrate_mod.plan(project, license=license_)
    print_problems(migration.warnings)
    display = migration.document.display
    if not migration.changed:
        status(f"{display}: already edition 6; nothing to do")
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
