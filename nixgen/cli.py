"""The ``nixgen`` command line.

Each verb imports the stages it needs when it runs, so ``nixgen validate`` never pays for
Jinja2 and ``nixgen render`` never pays for tomlkit. Every error nixgen knows about is
printed as located one-line problems with exit status 2 (invalid input) or 1 (nixgen's
own failure); a traceback is shown only with ``NIXGEN_DEBUG=1``.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nixgen import __version__
from nixgen.errors import EXIT_INTERNAL, NixgenError, Problem, render_problems

F = TypeVar("F", bound=Callable[..., Any])

project_argument = click.argument(
    "project", type=click.Path(path_type=Path), default=Path("."), required=False
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def use_color(stream: Any = None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    stream = stream or sys.stderr
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


def print_problems(problems: list[Problem]) -> None:
    if not problems:
        return
    text = render_problems(problems)
    if use_color():
        text = "\n".join(_colorize(line) for line in text.splitlines())
    click.echo(text, err=True)


def _colorize(line: str) -> str:
    if ": error: " in line:
        return line.replace(": error: ", ": " + click.style("error", fg="red", bold=True) + ": ", 1)
    if ": warning: " in line:
        return line.replace(": warning: ", ": " + click.style("warning", fg="yellow") + ": ", 1)
    return line


def emit_json(payload: object) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False))


def handle_errors(fn: F) -> F:
    """Turn every failure into a message and an exit status; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = kwargs.get("as_json", False)
        try:
            return fn(*args, **kwargs)
        except NixgenError as exc:
            if as_json:
                emit_json(exc.to_json())
            elif hasattr(exc, "problems"):
                print_problems(exc.problems)
            else:
                click.echo(exc.render(), err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except Exception as exc:
            if os.environ.get("NIXGEN_DEBUG"):
                raise
            message = f"internal error: {type(exc).__name__}: {exc}"
            if as_json:
                emit_json({"ok": False, "problems": [{"severity": "error", "message": message}]})
            else:
                click.echo(
                    f"nixgen: {message}\n(this is a bug in nixgen; rerun with NIXGEN_DEBUG=1 "
                    "for a traceback and report it)",
                    err=True,
                )
            sys.exit(EXIT_INTERNAL)

    return wrapper  # type: ignore[return-value]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nixgen")
def main() -> None:
    """Typed build.toml for compute kernels, rendered to reproducible Nix."""


@main.command()
@project_argument
@json_option
@click.option(
    "--no-file-checks",
    is_flag=True,
    help="Check build.toml alone, without looking for the files it lists.",
)
@handle_errors
def validate(project: Path, as_json: bool, no_file_checks: bool) -> None:
    """Check PROJECT's build.toml (any edition) and the files it lists.

    Prints every problem with file:line:column and key path; exits 2 when there are errors.
    """
    from nixgen import project as project_mod

    loaded = project_mod.read(project, check_files=not no_file_checks)
    if as_json:
        emit_json(
            {
                "ok": True,
                "edition": loaded.edition,
                "problems": [p.to_json() for p in loaded.warnings],
            }
        )
        return
    print_problems(loaded.warnings)
    kernels = len(loaded.build.kernels)
    click.echo(
        f"{loaded.document.display}: ok (edition {loaded.edition}, {kernels} "
        f"kernel{'s' if kernels != 1 else ''}, backends: "
        f"{', '.join(loaded.build.general.backends) or 'none'})"
    )
    if loaded.edition != 6:
        click.echo(
            f"note: edition {loaded.edition} was upgraded in memory; `nixgen migrate` rewrites "
            "the file as edition 6, keeping its comments"
        )


@main.command()
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


def _license_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise click.BadParameter("must be a license identifier such as `Apache-2.0`")
    return value.strip() if value is not None else None


@main.command()
@project_argument
@click.option("--check", is_flag=True, help="Exit 1 when the file needs migrating; write nothing.")
@click.option(
    "--diff", "show_diff", is_flag=True, help="Print the changes as a diff; write nothing."
)
@click.option(
    "--license",
    "license_",
    metavar="SPDX",
    callback=_license_value,
    help="License for a file that has none (instead of `NOASSERTION`).",
)
@handle_errors
def migrate(project: Path, check: bool, show_diff: bool, license_: str | None) -> None:
    """Rewrite PROJECT's build.toml as edition 6, keeping its comments and layout.

    Only what edition 6 changes is edited; an edition-6 file is left as it is. The file is
    replaced atomically. With --check or --diff nothing is written.
    """
    from nixgen import migrate as migrate_mod

    migration = migrate_mod.plan(project, license=license_)
    print_problems(migration.warnings)
    display = migration.document.display
    if not migration.changed:
        click.echo(f"{display}: already edition 6; nothing to do")
        return
    if show_diff:
        click.echo(migration.diff(), nl=False)
    if check or show_diff:
        # with --diff, stdout carries the diff alone (so that it can be piped to `git apply`)
        click.echo(f"would migrate {display} {migration.reason}", err=show_diff)
        if check:
            sys.exit(1)
        return
    migrate_mod.write(migration)
    click.echo(f"migrated {display} {migration.reason}")


def prepare(project: Path, out: str) -> Any:
    """Read, validate and plan PROJECT, then render it in memory (shared by render/build)."""
    from nixgen import plan, render
    from nixgen import project as project_mod
    from nixgen.errors import ProblemError

    loaded = project_mod.read(project)
    planned = loaded.document.locate_all(plan.check(loaded.build))
    problems = [*loaded.warnings, *planned]
    if any(p.severity == "error" for p in planned):
        raise ProblemError(problems)
    try:
        rendered = render.render(loaded.build, out_dir=out)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--out") from None
    return loaded, rendered, problems


@main.command(name="render")
@project_argument
@click.option("--out", default="nix", show_default=True, help="Output directory, relative to PROJECT.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 with a diff when files are stale.")
@click.option("--force", is_flag=True, help="Overwrite hand-written files in the way.")
@handle_errors
def render_command(project: Path, out: str, check: bool, force: bool) -> None:
    """Render PROJECT's Nix: one file per kernel, the extension, the variants, a flake.

    Writes OUT/ (replaced atomically as a whole; unchanged files keep their mtime) and
    PROJECT/flake.nix when it is absent or still generated. Every generated file starts
    with an `@generated by nixgen` header; hand-written files are never overwritten
    without --force.
    """
    from nixgen import write

    loaded, rendered, problems = prepare(project, out)
    print_problems(problems)
    root = loaded.root
    if check:
        result = write.plan(root, rendered, force=True)
        if result.stale:
            click.echo(result.diff, nl=False)
            stale = [*result.added, *result.changed, *result.removed]
            click.echo(
                f"nixgen: {len(stale)} generated file(s) are stale: run `nixgen render`", err=True
            )
            sys.exit(1)
        click.echo(f"{out}/ is up to date")
        return
    result = write.write(root, rendered, force=force)
    if not result.stale:
        click.echo(f"{out}/ is up to date ({len(result.unchanged)} files)")
        return
    click.echo(
        f"rendered {out}/: {len(result.added)} added, {len(result.changed)} changed, "
        f"{len(result.removed)} removed, {len(result.unchanged)} unchanged"
    )


if __name__ == "__main__":  # pragma: no cover
    main()
