"""The ``nixgen`` command line: one click application, the only parser of nixgen's argv.

Each verb imports the stages it needs when it runs, so ``nixgen validate`` never pays for
Jinja2 and ``nixgen render`` never pays for tomlkit. The conventions are those of cargo
and uv:

- data (JSON, tables, diffs, scripts) on stdout; status lines, warnings and errors on
  stderr (``-q`` silences status lines, ``-v`` adds detail);
- one error format: ``FILE:LINE:COL: error: KEY: MESSAGE`` for a located problem,
  ``nixgen: error: MESSAGE`` otherwise, usage errors included; with ``--json`` the same
  problems in nixgen's JSON envelope (`nixgen.cmdline.output.envelope`);
- exit status 2 for invalid input or usage, 1 for a failure (a build, stale files, a bug),
  130 for Ctrl-C; a traceback is shown only with ``NIXGEN_DEBUG=1``;
- ``--color=auto|always|never``, ``NO_COLOR``, ``FORCE_COLOR``, ``TERM=dumb``;
- ``-V``/``--version``; "did you mean" for verbs as for options; PROJECT defaults to the
  nearest directory upwards that holds a build.toml.
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from nixgen import __version__
from nixgen.cmdline import output
from nixgen.cmdline.output import emit_result, expected, report
from nixgen.core import console
from nixgen.core.console import emit_json, print_problems, use_color
from nixgen.core.paths import DEFAULT_OUT

__all__ = [
    "emit_json",
    "emit_result",
    "handle_errors",
    "json_option",
    "main",
    "print_problems",
    "project_argument",
    "use_color",
]

F = TypeVar("F", bound=Callable[..., Any])


def _find_project(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    """PROJECT when given; else the nearest of the working directory and its parents
    that holds a build.toml (as cargo finds Cargo.toml), else the working directory.

    The search stops, as git's does, at a file system boundary (a parent on another
    device) and at an ownership boundary: a parent directory, or a build.toml above the
    working directory, owned by someone other than the user running nixgen and the owner
    of the working directory (another user's project above a shared directory, a
    build.toml dropped into `/tmp`, is never picked up). A project found above the working
    directory is said on stderr."""
    if ctx.get_parameter_source(param.name or "") is not ParameterSource.DEFAULT:
        return value
    try:
        here = Path.cwd()
        start = os.stat(here)
    except OSError:  # the working directory is gone: `load` says so
        return value
    owners = {os.geteuid(), start.st_uid}
    for directory in (here, *here.parents):
        if directory == here:
            if (directory / "build.toml").is_file():
                return value
            continue
        try:
            info = os.stat(directory)
        except OSError:
            break
        if info.st_dev != start.st_dev or info.st_uid not in owners:
            break
        try:
            found = os.stat(directory / "build.toml")
        except OSError:
            continue
        if not stat.S_ISREG(found.st_mode):
            continue
        if found.st_uid not in owners:
            break  # a build.toml that is not the user's: no project is found
        shown = Path(os.path.relpath(directory))
        console.status(f"using the project at {shown} (the nearest build.toml above {here})")
        return shown
    return value


project_argument = click.argument(
    "project",
    type=click.Path(path_type=Path),
    default=Path("."),
    required=False,
    callback=_find_project,
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print nixgen's JSON envelope (see README)."
)

# The options of the verbs that run Nix on a rendered project (`build`, `shell`); their
# values become Nix's flags in `nixcommand.options`.
built_out_option = click.option(
    "--out",
    default=None,
    envvar="NIXGEN_OUT",
    help="Where the project's generated Nix lives, relative to PROJECT (as for render; "
    f"default: env NIXGEN_OUT, else nixgen.toml's `out`, else {DEFAULT_OUT}).",
)
offline_option = click.option(
    "--offline",
    is_flag=True,
    envvar="NIXGEN_OFFLINE",
    help="Download nothing (Nix's --offline, no substituters); fail at once, naming them, "
    "when flake inputs are neither overridden nor in the store (default: env "
    "NIXGEN_OFFLINE, else nixgen.toml's `offline`).",
)
override_input_option = click.option(
    "--override-input",
    "overrides",
    nargs=2,
    multiple=True,
    metavar="INPUT REF",
    help="Passed to Nix (e.g. `nixpkgs path:/src/nixpkgs`); repeatable; added to "
    "nixgen.toml's [override-input].",
)
accept_flake_config_option = click.option(
    "--accept-flake-config",
    is_flag=True,
    help="Use the flake's nixConfig (the kernels binary cache: torch and the toolkits are "
    "downloaded, not built); passed to Nix.",
)
nix_option_option = click.option(
    "--option",
    "options",
    nargs=2,
    multiple=True,
    metavar="NAME VALUE",
    help="A Nix setting (`--option sandbox false`); repeatable.",
)


#: `--no-sandbox-check`: build on Linux even with the Nix sandbox off.
no_sandbox_check_option = click.option(
    "--no-sandbox-check",
    is_flag=True,
    help="Run Nix on Linux even with its sandbox off (sandbox = false): builds may then "
    "read undeclared host files and are not proven reproducible.",
)


def complete_variant(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Variant names for shell completion, computed in Python (no Nix evaluation)."""
    from click.shell_completion import CompletionItem

    try:
        from nixgen.app import config
        from nixgen.building import nixbuild
        from nixgen.checking import project as project_mod
        from nixgen.planning import variants

        root = ctx.params.get("project") or Path(".")
        loaded = project_mod.read(root, check_files=False)
        system = ctx.params.get("system") or nixbuild.host_system()
        settings = config.project_settings(loaded.root)
        names = [v.name for v in variants.variants(loaded.build, system=system, settings=settings)]
    except Exception:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def handle_errors(fn: F) -> F:
    """Turn every failure into a message and an exit status; never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from nixgen.cmdline.streams import command_started

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


# ---------------------------------------------------------------- options of every verb


def _set_quiet(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        console.settings.verbosity = -value


def _set_verbose(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        console.settings.verbosity = value
    if value >= 2:
        console.settings.build_logs = True  # -vv: every build log line too, as with -L


def _set_progress(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        console.settings.progress = False


def _set_logs(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        console.settings.build_logs = True


def _set_color(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None:
        console.settings.color = value
        ctx.color = {"always": True, "never": False}.get(value)


def common_options() -> list[click.Option]:
    """`-q`, `-v`, `-L` and `--color`: accepted before the verb and by every verb."""
    return [
        click.Option(
            ["-q", "--quiet"],
            count=True,
            expose_value=False,
            callback=_set_quiet,
            help="Print no status lines (data, warnings and errors still); -qq: no warnings.",
        ),
        click.Option(
            ["-v", "--verbose"],
            count=True,
            expose_value=False,
            callback=_set_verbose,
            help="Say more: the commands nixgen runs, each file written; -vv: also every "
            "build log line (as -L), and for `variants` each configuration left out and why.",
        ),
        click.Option(
            ["--no-progress"],
            is_flag=True,
            expose_value=False,
            envvar="NIXGEN_NO_PROGRESS",
            callback=_set_progress,
            help="No live progress line, even on a terminal: plain lines (env NIXGEN_NO_PROGRESS).",
        ),
        click.Option(
            ["-L", "--print-build-logs"],
            is_flag=True,
            expose_value=False,
            callback=_set_logs,
            help="Print the build logs of Nix derivations as they run (verbs that run Nix).",
        ),
        click.Option(
            ["--color"],
            type=click.Choice(console.COLOR_MODES),
            default=None,
            envvar="NIXGEN_COLOR",
            expose_value=False,
            callback=_set_color,
            help="Colour: auto (a terminal, unless NO_COLOR or TERM=dumb; FORCE_COLOR forces "
            "it), always or never (env NIXGEN_COLOR).",
        ),
    ]


#: Verbs and the module that defines each; a module is imported only when its verb runs,
#: so `nixgen validate` never pays for Jinja2 and `nixgen render` never for tomlkit.
COMMANDS = {
    "init": "init",
    "validate": "validate",
    "show": "show",
    "migrate": "migrate",
    "render": "render",
    "variants": "variants",
    "matrix": "matrix",
    "build": "build",
    "shell": "shell",
    "compdb": "compdb",
    "check-abi": "check_abi",
    "upload": "upload",
    "build-and-upload": "build_and_upload",
    "verify": "verify",
    "watch": "watch",
    "schema": "schema",
    "completion": "completion",
}
#: Other spellings accepted (not listed in the help): `completions` is the toolchain's.
ALIASES = {"completions": "completion"}


def _usage_problem(exc: click.ClickException) -> Any:
    """A usage error as nixgen's one problem format."""
    from nixgen.core.errors import error

    ctx = getattr(exc, "ctx", None)
    where = ctx.command_path if ctx is not None else "nixgen"
    return error(exc.format_message(), hint=f"see `{where} --help`")


class LazyGroup(click.Group):
    """A click group whose commands live in `nixgen.cmdline.commands.<module>`, loaded on use.

    Usage errors (an unknown verb or option, a bad value) are reported like every other
    failure: ``nixgen: error: …``, or in JSON when ``--json`` is on the command line."""

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        console.reset()
        kwargs.setdefault("prog_name", "nixgen")
        kwargs.setdefault("color", console.settings.forced_color())
        if os.environ.get("_NIXGEN_COMPLETE"):
            # A completion request: click answers it before parsing anything; the shells
            # click lacks (PowerShell, elvish) are nixgen's, known only from here on.
            from nixgen.cmdline import completion_shells

            completion_shells.register()
        if kwargs.get("standalone_mode", True) is False:
            return super().main(argv, *rest, **kwargs)
        as_json = "--json" in argv
        console.settings.command = next(
            (a for a in argv if not a.startswith("-") and a in {*COMMANDS, *ALIASES}), None
        )
        try:
            code = super().main(argv, *rest, **{**kwargs, "standalone_mode": False})
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help(), color=console.settings.forced_color())
            sys.exit(0)
        except click.ClickException as exc:
            problem = _usage_problem(exc)
            if as_json:
                emit_json(output.envelope(ok=False, problems=[problem]))
            else:
                print_problems([problem])
            sys.exit(exc.exit_code)
        except click.exceptions.Abort:
            sys.exit(report(KeyboardInterrupt(), as_json=as_json))
        sys.exit(code if isinstance(code, int) else 0)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._available(name)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd_name = ALIASES.get(cmd_name, cmd_name)
        if cmd_name not in COMMANDS or not self._available(cmd_name):
            return None
        from importlib import import_module

        command: click.Command = import_module(
            f"nixgen.cmdline.commands.{COMMANDS[cmd_name]}"
        ).command
        if not getattr(command, "_nixgen_common", False):
            command.params.extend(common_options())
            command._nixgen_common = True  # type: ignore[attr-defined]  # noqa: SLF001
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0]
        if self.get_command(ctx, name) is None and not name.startswith("-"):
            from nixgen.core.errors import did_you_mean

            hint = did_you_mean(name, [*self.list_commands(ctx), *ALIASES])
            ctx.fail(f"no such command `{name}`{hint}")
        return super().resolve_command(ctx, args)

    @staticmethod
    def _available(name: str) -> bool:
        from importlib.util import find_spec

        return find_spec(f"nixgen.cmdline.commands.{COMMANDS[name]}") is not None


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    params=common_options(),
)
@click.version_option(__version__, "-V", "--version", prog_name="nixgen")
def main() -> None:
    """Typed build.toml for compute kernels, rendered to reproducible Nix."""


if __name__ == "__main__":  # pragma: no cover
    main()
