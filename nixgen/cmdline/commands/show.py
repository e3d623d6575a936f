"""`nixgen show`: the normalised edition-6 model as JSON."""

from __future__ import annotations

from pathlib import Path

import click

from nixgen.app import config
from nixgen.checking import project as project_mod
from nixgen.cmdline.cli import (
    emit_json,
    emit_result,
    handle_errors,
    json_option,
    print_problems,
    project_argument,
)
from nixgen.core.console import status
from nixgen.reading.schema import v6


@click.command()
@project_argument
@json_option
@click.option("--defaults/--no-defaults", default=True, help="Include fields left at defaults.")
@click.option("--no-file-checks", is_flag=True, help="Do not look for the listed files.")
@handle_errors
def show(project: Path, as_json: bool, defaults: bool, no_file_checks: bool) -> None:
    """Print PROJECT's normalised edition-6 model as JSON.

    With --json, the model is the `result` of nixgen's JSON envelope, with the warnings
    in its `problems`. Without it, the settings of nixgen's own options in effect
    (nixgen.toml's) follow on stderr."""

    settings = config.read(project)
    loaded = project_mod.read(project, check_files=not no_file_checks)
    document = v6.to_document(loaded.build, defaults=defaults)
    if as_json:
        emit_result(document, loaded.warnings)
        return
    print_problems(loaded.warnings)
    emit_json(document)
    for line in config.describe(settings):
        status(line)


command = show
