"""`nixgen migrate`: rewrite a build.toml as the field's edition 6, keeping comments."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from nixgen.app import anchorflake as flake_mod
from nixgen.app import config, pipeline
from nixgen.app import migrate as migrate_mod
from nixgen.checking import project as project_mod
from nixgen.cmdline import output
from nixgen.cmdline.cli import handle_errors, print_problems, project_argument
from nixgen.cmdline.commands.init import license_value
from nixgen.core import writer
from nixgen.core.console import status
from nixgen.core.errors import EXIT_FAILURE


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
    help="The edition to write: 6, the field's (kernel-builder and the kernels client read "
    "it); 5, which they read and upgrade in memory.",
)
@click.option(
    "--no-backup",
    is_flag=True,
    help="Replace kernel-builder's standard flake.nix without keeping it as flake.nix.orig.",
)
@handle_errors
def migrate(
    project: Path, check: bool, show_diff: bool, license_: str | None, edition: str, no_backup: bool
) -> None:
    """Rewrite PROJECT's build.toml as the field's edition 6, keeping its comments and layout.

    Only what edition 6 changes is edited; a file in the field's edition 6 is left as it
    is. What nixgen builds beyond that format (a Rust crate's features, Rust kernels linked
    into [torch], a cuda-oxide device crate) moves to nixgen.toml's [kernel.<name>]. Each
    file is replaced atomically. With --check or --diff nothing is written. With --edition
    5 the file is written back as edition 5 (C++ kernels only).

    A flake.nix that is kernel-builder's standard one (outputs that only call
    `genKernelFlakeOutputs { inherit self; path = ./.; }`) is replaced by nixgen's, with
    nix/, and kept as flake.nix.orig unless --no-backup. One whose call also passes
    `torchVersions` (systems or torch versions of a backend, a CUDA ptxas pin),
    `pythonCheckInputs` or `doGetKernelCheck` is replaced too, once what they say is moved
    to nixgen.toml ([backend.<name>], [test]); when nixgen cannot say all of it, the flake
    is kept and what taking it over would lose is named. Any other hand-written flake.nix
    is kept, and the command to take it over is printed (not with --edition 5, which goes
    back to kernel-builder).
    """

    root = config.project_root(project)
    if not root.is_dir() or check or show_diff:  # nothing to lock, or nothing written
        _migrate(project, check, show_diff, license_, edition, no_backup)
        return
    # One run at a time, from the first read to the last write (a takeover killed half
    # way is completed when the lock is taken, before anything is read).
    with writer.project_lock(root):
        _migrate(project, check, show_diff, license_, edition, no_backup)


def _migrate(
    project: Path, check: bool, show_diff: bool, license_: str | None, edition: str, no_backup: bool
) -> None:

    migration = migrate_mod.plan(project, license=license_, to_edition=int(edition))
    print_problems(migration.warnings)
    display = migration.document.display
    # Going back to edition 5 is going back to kernel-builder: its flake stays.
    flake = None
    if edition == "6":
        _, build, _ = project_mod.structure(migration.document)
        flake = flake_mod.takeover(
            migration.document.path.parent,
            backup=not no_backup,
            backends=build.general.backends,
        )
    if not migration.changed and flake is None:
        status(f"{display}: already edition {edition}; nothing to do")
        return
    if show_diff and migration.changed:
        output.out_bytes(migration.diff().encode("utf-8", "surrogateescape"))
    if show_diff and flake is not None and flake.settings is not None:
        from nixgen.app import flakesettings

        output.out_bytes(flakesettings.diff(*flake.settings).encode("utf-8", "surrogateescape"))
    if check or show_diff:
        # stdout carries the diff alone (so that it can be piped to `git apply`)
        if migration.changed:
            status(f"would migrate {display} {migration.reason}")
        if flake is not None:
            status(f"would replace {flake.describe()}")
        if check:
            sys.exit(EXIT_FAILURE)
        return
    if migration.changed:
        migrate_mod.write(migration)
        status(f"migrated {display} {migration.reason}")
        if migration.options_changed:
            status(f"wrote nixgen's own kernel options to {migration.options_path}")
    if flake is not None:
        flake.apply(pipeline.render_project)


command = migrate
