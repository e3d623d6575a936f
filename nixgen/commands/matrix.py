"""`nixgen matrix`: the CI matrix of a project's variants (no Nix, no templates)."""

from __future__ import annotations

from pathlib import Path

import click

from nixgen.cli import emit_result, handle_errors, json_option, project_argument
from nixgen.commands.variants import planned, system_option


@click.command(name="matrix")
@project_argument
@json_option
@click.option(
    "--format",
    "format_",
    type=click.Choice(["github"]),
    default="github",
    show_default=True,
    help="The CI system whose matrix to print.",
)
@click.option(
    "--pull-request",
    is_flag=True,
    help="One variant per system and backend (bundled, newest torch, oldest toolkit).",
)
@system_option
@click.option(
    "--max-jobs",
    type=click.IntRange(1, 256),
    default=256,
    show_default=True,
    help="Group variants into at most this many jobs (GitHub allows 256 per matrix).",
)
@handle_errors
def matrix_command(
    project: Path,
    as_json: bool,
    format_: str,
    pull_request: bool,
    system: str | None,
    max_jobs: int,
) -> None:
    """Print PROJECT's GitHub Actions matrix as one line of JSON.

    `{"include": [{"name", "system", "runner", "backend", "attrs", "variants", "attr",
    "variant"}]}`, one job per variant, each building the flake attributes `attrs`
    (`packages.<system>.<variant>`). Beyond --max-jobs variants, jobs build several
    attributes each (`name` names the group); every row has the same keys, `attr` and
    `variant` being `attrs` and `variants` space-separated. A workflow reads it
    with `fromJSON` and builds `matrix.attrs`; the flake's `githubActions.matrix` and
    `githubActions.pullRequestMatrix` hold the same. With --json, the matrix is the
    `result` of nixgen's JSON envelope.
    """
    from nixgen import matrix, plan

    _, found, problems = planned(project, system)
    if pull_request:
        found = plan.select_ci(found)
    try:
        result = matrix.github(found, max_jobs=max_jobs)
    except matrix.MatrixError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-jobs") from None
    if as_json:
        emit_result(result, problems)
        return
    click.echo(matrix.to_json(result))


command = matrix_command
