"""`nixgen matrix`: the CI matrix of a project's variants (no Nix, no templates)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from nixgen.cmdline.cli import emit_result, handle_errors, json_option, project_argument
from nixgen.cmdline.commands.variants import planned, system_option
from nixgen.core import bounded, paths
from nixgen.planning import ci, kernels, variants


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
    type=click.IntRange(1, ci.GITHUB_MAX_JOBS),
    default=ci.GITHUB_MAX_JOBS,
    show_default=True,
    help="Group variants into at most this many jobs (GitHub allows "
    f"{ci.GITHUB_MAX_JOBS} per matrix).",
)
@click.option(
    "--shards",
    type=click.IntRange(min=1),
    default=None,
    metavar="K",
    help="Also split each variant whose kernels build one derivation per object (C++ "
    f"kernels of {kernels.OBJECT_THRESHOLD} compiled sources or more) into K jobs that each "
    "build a disjoint part of its objects (`shards` in the output), balanced by source count.",
)
@click.option(
    "--costs",
    type=click.Path(path_type=Path),
    default=None,
    metavar="FILE",
    help="With --shards: balance by measured cost, a JSON object mapping each source "
    'path (as build.toml lists it) to its compile time in seconds ({"big/a.cu": 41.5}).',
)
@handle_errors
def matrix_command(
    project: Path,
    as_json: bool,
    format_: str,
    pull_request: bool,
    system: str | None,
    max_jobs: int,
    shards: int | None,
    costs: Path | None,
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

    With --shards K the output also has `shards`, the matrix of the shard jobs:
    `{"include": [{"name", "system", "runner", "backend", "variant", "shard", "objects",
    "cost", "attrs"}]}`, K rows per variant that has object derivations, each `attrs`
    naming a disjoint part of the flake output `objects.<system>.<variant>` (together:
    all of it). Built and pushed to a binary cache first, they leave the variant's own
    job only the archives and the link. Save it as `.github/nixgen-shards.json` for the
    workflow of `nixgen render --ci github` (re-run it when sources change).
    """
    del format_  # GitHub Actions is the one CI system today: the choice is checked by click

    loaded, found, problems = planned(project, system)
    if pull_request:
        found = variants.select_ci(found)
    try:
        result = ci.github(found, max_jobs=max_jobs)
    except ci.MatrixError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-jobs") from None
    if costs is not None and shards is None:
        raise click.BadParameter("needs --shards K", param_hint="--costs")
    if shards is not None:
        table = None if costs is None else _read_costs(costs)
        try:
            result["shards"] = ci.github_shards(
                loaded.build, found, shards, costs=table, max_jobs=ci.GITHUB_MAX_JOBS
            )
        except ci.MatrixError as exc:
            raise click.BadParameter(str(exc), param_hint="--shards") from None
    if as_json:
        emit_result(result, problems)
        return
    click.echo(ci.to_json(result))


#: The largest --costs file read (a cost per source: real ones are a few KiB).
MAX_COSTS_BYTES = 4 * 1024 * 1024
#: The largest cost of one source, in seconds (a week): far above any compile.
MAX_COST = 7 * 24 * 3600.0


def _read_costs(path: Path) -> dict[str, float]:
    """The cost table of --costs: a JSON object of positive, finite numbers of seconds (at
    most `MAX_COST` each), read from a regular file of at most `MAX_COSTS_BYTES` (a FIFO or
    a device is refused, never read), parsed within `nixgen.core.bounded`'s limits."""

    def bad(message: str) -> click.BadParameter:
        return click.BadParameter(f"{path}: {message}", param_hint="--costs")

    # The user named this file: a link to it is fine, what it reaches must be a plain file.
    data = paths.read_file(os.path.realpath(path), limit=MAX_COSTS_BYTES)
    if data is None:
        raise bad("no such file")
    if isinstance(data, paths.Blocked):
        raise bad(
            f"{data.reason.removeprefix('is ')}; expected a JSON file"
            if not data.too_large
            else f"larger than {MAX_COSTS_BYTES} bytes; expected a JSON object of a cost per source"
        )
    try:
        table = bounded.json_loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise bad(f"not a JSON file ({exc})") from None
    if not isinstance(table, dict):
        raise bad("expected a JSON object mapping source paths to seconds")
    out = {}
    for key, value in table.items():
        seconds = bounded.number(value, low=0, high=MAX_COST)
        if seconds is None:
            shown = json.dumps(value)
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise bad(
                f"{json.dumps(key)}: expected a positive number of seconds, at most "
                f"{MAX_COST:.0f}, got {shown}"
            )
        out[str(key)] = seconds
    return out


command = matrix_command
