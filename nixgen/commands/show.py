"""`nixgen show`: the normalised edition-6 model as JSON."""

from __future__ import annotations

from pathlib import Path

import click

from nixgen.cli import emit_json, handle_errors, print_problems, project_argument


@click.command()
@project_argument
@click.option("--defaults/--no-defaults", default=True, help="Include fields left at defaults.")
@click.option("--no-file-checks", is_flag=True, help="Do not look for the listed files.")
@handle_errors
def show(project: Path, defaults: bool, no_file_checks: bool) -> None:
    """Print PROJECT's normalised edition-6 model as JSON."""
    from nixgen import project as project_mod
    from nixgen.schema import v6

    loaded = project_mod.read(project, check_files=not no_file_checks)
    print_problems(loaded.warnings)
    emit_json(v6.to_document(loaded.build, defaults=defaults))


command = show
