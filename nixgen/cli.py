"""The ``nixgen`` command line.

Each verb imports the stages it needs when it runs, so ``nixgen validate`` never pays for
Jinja2 and ``nixgen render`` never pays for tomlkit. Every error nixgen knows about is
printed as located one-line problems with exit status 2 (invalid input) or 1 (nixgen's
own failure); a traceback is shown only with ``NIXGEN_DEBUG=1``.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from nixgen import __version__
from nixgen.output import emit_json, expected, print_problems, report, use_color

__all__ = [
    "emit_json",
    "handle_errors",
    "json_option",
    "main",
    "print_problems",
    "project_argument",
    "use_color",
]

F = TypeVar("F", bound=Callable[..., Any])

project_argument = click.argument(
    "project", type=click.Path(path_type=Path), default=Path("."), required=False
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def handle_errors(fn: F) -> F:
    """Turn every failure into a message and an exit status; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from nixgen.entry import command_started

        command_started()
        try:
            return fn(*args, **kwargs)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            if os.environ.get("NIXGEN_DEBUG") and not expected(exc):
                raise
            sys.exit(report(exc, as_json=kwargs.get("as_json", False)))

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
    """A click group whose commands live in `nixgen.commands.<module>`, loaded on use.

    With ``--json`` anywhere on the command line, a usage error (an unknown option, a bad
    value) is answered in JSON too, like every other failure."""

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        if "--json" not in argv or kwargs.get("standalone_mode", True) is False:
            return super().main(args, *rest, **kwargs)
        try:
            code = super().main(argv, *rest, **{**kwargs, "standalone_mode": False})
        except click.ClickException as exc:
            emit_json(
                {
                    "ok": False,
                    "problems": [
                        {
                            "severity": "error",
                            "message": exc.format_message(),
                            "hint": "see `nixgen --help`",
                        }
                    ],
                }
            )
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            sys.exit(report(KeyboardInterrupt(), as_json=True))
        sys.exit(code if isinstance(code, int) else 0)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._available(name))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS or not self._available(cmd_name):
            return None
        from importlib import import_module

        command: click.Command = import_module(f"nixgen.commands.{COMMANDS[cmd_name]}").command
        return command

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
