"""`nixgen validate`: check a build.toml of any edition and the files it lists."""

from __future__ import annotations

from pathlib import Path

import attrs
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
from nixgen.core.console import status
from nixgen.core.errors import Problem, ProblemError
from nixgen.planning import plan
from nixgen.planning.settings import NO_SETTINGS
from nixgen.reading.schema.common import DSL_LANGUAGES


@click.command()
@project_argument
@json_option
@click.option(
    "--no-file-checks",
    is_flag=True,
    help="Check build.toml alone, without looking for the files it lists.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Treat warnings as errors (exit 2), e.g. in CI.",
)
@handle_errors
def validate(project: Path, as_json: bool, no_file_checks: bool, strict: bool) -> None:
    """Check PROJECT's build.toml (any edition) and the files it lists.

    Prints every problem with file:line:column and key path, from every stage at once;
    exits 2 when there are errors (with --strict, also when there are warnings). Also
    checks general.license against the SPDX license list, and nixgen.toml (nixgen's own
    settings) when there is one.
    """

    # nixgen.toml's problems are reported with build.toml's, in the same run.
    try:
        chosen = config.read(project).project
        settings: list[Problem] = []
    except ProblemError as exc:
        settings = list(exc.problems)
        chosen = NO_SETTINGS
    try:
        loaded = project_mod.read(project, check_files=not no_file_checks, licenses=True)
    except ProblemError as exc:
        raise ProblemError([*exc.problems, *settings]) from None
    # What planning finds too (a kernel no variant builds, nothing to build at all), as
    # `nixgen render` reports it.
    problems = [
        *settings,
        *loaded.warnings,
        *loaded.document.locate_all(plan.check(loaded.build, settings=chosen)),
    ]
    if strict:
        problems = [_strict(p) for p in problems]
    if any(p.severity == "error" for p in problems):
        raise ProblemError(problems)
    if as_json:
        emit_result(
            {
                "edition": loaded.edition,
                "kernels": sorted(loaded.build.kernels),
                "backends": list(loaded.build.general.backends),
            },
            problems,
        )
        return
    print_problems(problems)
    kernels = len(loaded.build.kernels)
    status(
        f"{loaded.document.display}: ok (edition {loaded.edition}, {kernels} "
        f"kernel{'s' if kernels != 1 else ''}, backends: "
        f"{', '.join(loaded.build.general.backends) or 'none'})"
    )
    if loaded.edition != 6:
        status(
            f"note: edition {loaded.edition} was upgraded in memory; `nixgen migrate` rewrites "
            "the file as edition 6, keeping its comments"
        )

        dsl = {language: name for name, language in DSL_LANGUAGES.items()}
        for name, kernel in sorted(loaded.build.kernels.items()):
            if kernel.language in dsl:
                status(
                    f'note: kernel.{name}: `dsl = "{dsl[kernel.language]}"` is '
                    f'`language = "{kernel.language}"` in edition 6'
                )


def _strict(problem: Problem) -> Problem:
    """A warning turned into an error by ``--strict``, saying so."""
    if problem.severity == "error":
        return problem
    note = "a warning; --strict makes it an error"
    hint = f"{problem.hint}; {note}" if problem.hint else note
    return attrs.evolve(problem, severity="error", hint=hint)


command = validate
