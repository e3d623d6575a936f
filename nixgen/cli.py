"""The ``nixgen`` command line.

Each verb imports the stages it needs when it runs, so ``nixgen validate`` never pays for
Jinja2 and ``nixgen render`` never pays for tomlkit. Every error nixgen knows about is
printed as located one-line problems with exit status 2 (invalid input) or 1 (nixgen's
own failure); a traceback is shown only with ``NIXGEN_DEBUG=1``.
"""

from __future__ import annotations

import contextlib
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
        except BrokenPipeError:
            # The reader went away (`nixgen schema | head`): stop quietly, like `cat`.
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the closed pipe
            sys.exit(0)
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


#: Verbs and the module that defines each; a module is imported only when its verb runs,
#: so `nixgen validate` never pays for Jinja2 and `nixgen render` never for tomlkit.
COMMANDS = {
    "validate": "validate",
    "show": "show",
    "migrate": "migrate",
    "render": "render",
    "variants": "variants",
    "matrix": "matrix",
    "init": "init",
    "schema": "schema",
    "build": "build",
    "watch": "watch",
    "completion": "completion",
}


class LazyGroup(click.Group):
    """A click group whose commands live in `nixgen.commands.<module>`, loaded on use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._available(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not self._available(cmd_name):
            return None
        from importlib import import_module

        module = import_module(f"nixgen.commands.{COMMANDS[cmd_name]}")
        return module.command

    @staticmethod
    def _available(name: str) -> bool:
        from importlib.util import find_spec

        return find_spec(f"nixgen.commands.{COMMANDS[name]}") is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nixgen")
def main() -> None:
    """Typed build.toml for compute kernels, rendered to reproducible Nix."""


if __name__ == "__main__":  # pragma: no cover
    main()
