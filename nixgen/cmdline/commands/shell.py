"""`nixgen shell`: enter a variant's development (or test) shell, `nix develop` on the
generated flake's `devShells.<system>.<variant>`."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from nixgen.app.build import make_ready, nix_settings
from nixgen.app.pipeline import kept_warnings, prepare
from nixgen.app.settings import Given, resolve
from nixgen.building import builds as building
from nixgen.building import nixbuild, nixcommand, process
from nixgen.cmdline.cli import (
    accept_flake_config_option,
    built_out_option,
    complete_variant,
    handle_errors,
    nix_option_option,
    no_sandbox_check_option,
    offline_option,
    override_input_option,
    print_problems,
    project_argument,
)
from nixgen.core import console
from nixgen.core.console import status
from nixgen.core.errors import ProblemError, error
from nixgen.planning import selection, variants
from nixgen.planning.variants import SYSTEMS
from nixgen.writing import write


@click.command(name="shell")
@project_argument
@click.option(
    "--variant",
    metavar="NAME",
    shell_complete=complete_variant,
    help="The variant whose shell to enter (default: the flake's default, the system's best "
    "variant: bundled, CUDA first, newest torch, oldest toolkit).",
)
@click.option(
    "--system",
    default=None,
    type=click.Choice(SYSTEMS),
    help="Nix system of the shell's variant (default: this machine). Nix must be able to "
    "run that system's programs here (`extra-platforms`, e.g. x86_64-darwin on an Apple "
    "silicon Mac).",
)
@click.option(
    "--test",
    is_flag=True,
    help="The test shell: the variant built first (as `nixgen build` builds it) and on "
    "$KERNEL_BUILD, where the project's tests load it.",
)
@click.option(
    "-c",
    "--command",
    "command_",
    metavar="CMD",
    help="Run CMD (a shell command line) in the shell instead of an interactive shell.",
)
@click.option(
    "--log-lines",
    default=40,
    show_default=True,
    type=click.IntRange(0),
    help="With --test: log lines of a failed derivation to show.",
)
@override_input_option
@accept_flake_config_option
@nix_option_option
@offline_option
@built_out_option
@no_sandbox_check_option
@click.option("--dry-run", is_flag=True, help="Print the `nix develop` command; run nothing.")
@handle_errors
def shell_command(
    project: Path,
    variant: str | None,
    system: str | None,
    test: bool,
    command_: str | None,
    log_lines: int,
    overrides: tuple[tuple[str, str], ...],
    accept_flake_config: bool,
    options: tuple[tuple[str, str], ...],
    offline: bool,
    out: str | None,
    no_sandbox_check: bool,
    dry_run: bool,
) -> None:
    """Enter a development shell of PROJECT: a variant's compilers, torch, the `kernels`
    client, pytest and the project's Python dependencies (`devShells.<system>.<variant>`
    of the generated flake). Nothing is built to enter it; with --test the variant is
    built first, with `nixgen build`'s progress display, and $KERNEL_BUILD points at it,
    so `python -m pytest tests` tests the build (that `nix develop` then prints Nix's
    errors only, not its lock-file messages; -v keeps them).

    \b
      nixgen shell                         # the default variant's shell
      nixgen shell --variant torch213-cxx11-cpu-x86_64-linux
      nixgen shell --test -c 'python -m pytest tests'
      nixgen shell --system x86_64-darwin  # another system's shell, where Nix can run it

    Renders the Nix files first when stale; in a git work tree, files git does not track
    stop it as they stop `nixgen build`, and so does a Nix unfit for the flake (the checks
    `nixgen build` makes; --no-sandbox-check enters without the sandbox). Exit status: the
    shell's (128 + N when signal N ended it, as a shell reports it), or 2 invalid input.
    """
    settings = resolve(project, Given(out=out, offline=offline, overrides=overrides))
    system = system or nixbuild.host_system()
    prepared = prepare(project, settings)
    loaded, rendered, planned = prepared.project, prepared.rendered, prepared.plan
    print_problems(prepared.problems)
    root = loaded.root.resolve()
    names = [v.name for v in planned.for_system(system)]
    if not names:
        raise ProblemError(
            [
                error(
                    f"{loaded.build.general.name} has no variants for {system}, so no shell",
                    hint=selection.other_systems(planned, system, flag=False),
                )
            ]
        )
    if variant is not None and variant not in names:
        raise ProblemError([selection.unknown_variant(planned, variant, system, names, flag=False)])
    nix = nix_settings(settings, options, accept_flake_config=accept_flake_config)
    if test:
        # The variant the test shell puts on $KERNEL_BUILD, built first as `nixgen build`
        # builds it (one evaluation, one `nix build`, the same progress display).
        variant = variant or variants.default_shell_variant(planned.for_system(system))
        evaluate = nixcommand.eval_drv_paths(root, system, [variant], nix)

        def nix_build(drvs: list[nixcommand.Derivation]) -> nixcommand.Command:
            return nixcommand.build(drvs, nix, cache=building.CACHE)

    shell = (f"test-{variant}" if test else variant) if variant else "default"
    command = nixcommand.develop(
        nixcommand.installable(root, "devShells", system, shell),
        nix,
        command=command_,
        print_build_logs=console.settings.build_logs,
        # Evaluated and built already, through nixgen's log reader: Nix's own messages
        # (the lock file's, on every run with --override-input) would only repeat.
        errors_only=test and console.settings.verbosity <= 0 and not console.settings.build_logs,
    )
    stale = write.plan(root, rendered)
    if dry_run:
        changed = [*stale.added, *stale.changed, *stale.removed]
        if changed:
            status(f"would render {rendered.out_dir}/ ({len(changed)} file(s) stale)")
        ref = nixcommand.flake_ref(root)
        cd = f"cd {shlex.quote(str(root))} && " if ref == "." else ""
        if test:
            console.out(cd + evaluate.shown())
            console.out(shlex.join([*nix_build([]).argv, "<drvPath of the variant>"]))
        console.out(cd + command.shown())
        return
    for note in kept_warnings(stale.kept, root, loaded.build.general.backends):
        console.err(note)
    make_ready(prepared, root, stale, nix=nix, sandbox_check=not no_sandbox_check, hint="")
    if test and variant is not None:
        building.build_variants(
            root,
            loaded,
            system,
            [variant],
            evaluate=evaluate,
            nix_build=nix_build,
            links=None,
            log_lines=log_lines,
            offline=nix.offline,
            accept_flake_config=accept_flake_config,
            labels=planned.labels,
        )
    status(f"entering {shell} of {loaded.build.general.name} ({system})", level=1)
    # The shell takes Ctrl-C and the keyboard; nixgen waits for it and passes its exit
    # status on (`process.run_interactive`).
    raise SystemExit(process.run_interactive(command, cwd=root))


command = shell_command
