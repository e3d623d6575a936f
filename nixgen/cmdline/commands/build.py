"""`nixgen build`: render when stale, then build the chosen variants with one `nix build`
(the use case: `nixgen.app.build`)."""

from __future__ import annotations

import shlex
from pathlib import Path

import attrs
import click

from nixgen.app import build as use_case
from nixgen.app.build import DEFAULT_LINKS, Request
from nixgen.app.settings import Given
from nixgen.building import nixcommand
from nixgen.cmdline.cli import (
    accept_flake_config_option,
    built_out_option,
    complete_variant,
    emit_result,
    handle_errors,
    nix_option_option,
    no_sandbox_check_option,
    offline_option,
    override_input_option,
    print_problems,
    project_argument,
)
from nixgen.core import console, tables
from nixgen.core.console import status
from nixgen.core.errors import sort_problems
from nixgen.planning.variants import SYSTEMS

__all__ = ["DEFAULT_LINKS", "build_command", "command"]

#: The largest --max-jobs and --cores passed to Nix (which reads them as 32-bit unsigned
#: integers and fails on more, after the evaluation); beyond any machine.
MAX_JOBS = 65536


@click.command(name="build")
@project_argument
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    shell_complete=complete_variant,
    help="A variant to build; repeat for several (default: every bundled variant of SYSTEM).",
)
@click.option(
    "--quick",
    is_flag=True,
    help="Build one variant: SYSTEM's default, the one `nixgen shell` enters (bundled, CUDA "
    "first, newest torch, oldest toolkit; with --backend, that backend's best) — the short "
    "edit, build, test loop.",
)
@click.option(
    "--system",
    default=None,
    type=click.Choice(SYSTEMS),
    help="Nix system of the variants (default: this machine).",
)
@override_input_option
@click.option(
    "--out-link",
    "links",
    default=None,
    metavar="DIR",
    help=f"Link each built variant as DIR/<variant>, relative to PROJECT (default: "
    f"{DEFAULT_LINKS}).",
)
@click.option(
    "--backend",
    "backends",
    multiple=True,
    type=click.Choice(tables.BACKENDS),
    help="Build only the variants of this backend; repeat for several.",
)
@built_out_option
@click.option("--no-link", is_flag=True, help="Do not link the results.")
@click.option("--keep-going", is_flag=True, help="Build the other variants after a failure.")
@click.option(
    "--max-jobs",
    type=click.IntRange(0, MAX_JOBS),
    default=None,
    help="Derivations Nix builds at once on this machine (passed to nix build; default: "
    "Nix's setting; 0: every derivation on the --builders).",
)
@click.option(
    "--builders",
    metavar="SPEC",
    default=None,
    help="Remote builders, Nix's `builders` setting (passed to nix build as written): "
    "machine specs separated by `;`, e.g. 'ssh-ng://user@host x86_64-linux "
    "/path/to/key 8', or @FILE (default: nix.conf's; '' for none). With "
    "--max-jobs 0 every derivation is built remotely. See docs/build-performance.md.",
)
@click.option(
    "--cores",
    type=click.IntRange(0, MAX_JOBS),
    default=None,
    help="Cores of each derivation, $NIX_BUILD_CORES (passed to nix build; 0: all).",
)
@click.option(
    "--log-lines",
    default=40,
    show_default=True,
    type=click.IntRange(0),
    help="Log lines of a failed derivation to show.",
)
@accept_flake_config_option
@nix_option_option
@offline_option
@no_sandbox_check_option
@click.option("--dry-run", is_flag=True, help="Print what would be rendered and run; do nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: print the plan as JSON.")
@handle_errors
def build_command(
    project: Path,
    variants: tuple[str, ...],
    quick: bool,
    system: str | None,
    overrides: tuple[tuple[str, str], ...],
    links: str | None,
    backends: tuple[str, ...],
    out: str | None,
    no_link: bool,
    keep_going: bool,
    max_jobs: int | None,
    builders: str | None,
    cores: int | None,
    log_lines: int,
    accept_flake_config: bool,
    options: tuple[tuple[str, str], ...],
    offline: bool,
    no_sandbox_check: bool,
    dry_run: bool,
    as_json: bool,
) -> list[str] | None:
    """Build PROJECT's variants with Nix, rendering its Nix files first when stale.

    Evaluates the flake once for all chosen variants and builds them with one `nix build`,
    so Nix builds their derivations side by side (--max-jobs, --cores). Shows which
    derivation of which kernel is being built, how many variants are done and the time
    elapsed (a live line on a terminal, plain lines otherwise). --quick builds only the
    system's default variant, for a short edit-build-test loop. Each result is linked as
    build/<variant>, where the `kernels` client finds it
    (`kernels.get_local_kernel(PROJECT, backend=...)`). A failure ends with the failing
    derivation's last log lines; -L prints every build log line as it comes.

    In a git work tree, Nix sees only the files git tracks: files the build needs that
    are untracked (or ignored) stop the build first, with the `git add` that fixes it.
    When Nix ignores the flake's binary cache settings, a note says how to accept them
    (--accept-flake-config, or nix.conf). Before building, checks the Nix it runs: Nix
    2.18 or newer for the pinned nixpkgs, and on Linux the Nix sandbox on
    (--no-sandbox-check builds without it). Exit status: 0 built, 1 a build failed, 2
    invalid input (untracked files and an unfit Nix included).
    """
    if as_json and not dry_run:
        raise click.UsageError("--json needs --dry-run (a build prints progress, not JSON)")
    if no_link and links is not None:
        raise click.UsageError("--no-link and --out-link exclude each other: pass one")
    if quick and variants:
        raise click.UsageError("--quick and --variant exclude each other: pass one")
    given = Given(out=out, offline=offline, overrides=overrides)
    request = Request(
        variants=variants,
        quick=quick,
        system=system,
        backends=backends,
        links=None if no_link else links or DEFAULT_LINKS,
        keep_going=keep_going,
        max_jobs=max_jobs,
        builders=builders,
        cores=cores,
        log_lines=log_lines,
        accept_flake_config=accept_flake_config,
        options=options,
        sandbox_check=not no_sandbox_check,
    )
    build = use_case.decide(project, given, request)
    if not dry_run:
        return use_case.run(build)  # what `nixgen build-and-upload` uploads
    planned = use_case.dry_run(build)
    if as_json:
        emit_result(
            {
                "render": planned.render,
                "system": build.system,
                "cwd": str(build.root),
                "variants": build.variants,
                "eval": list(build.evaluate.argv),
                "build": list(planned.build.argv),
            },
            [*build.prepared.problems, *planned.unseen],
        )
        return None
    print_problems(sort_problems(attrs.evolve(p, severity="warning") for p in planned.unseen))
    if planned.render:
        status(
            f"would render {build.prepared.rendered.out_dir}/ ({len(planned.render)} file(s) stale)"
        )
    cd = f"cd {shlex.quote(str(build.root))} && " if nixcommand.flake_ref(build.root) == "." else ""
    console.out(cd + build.evaluate.shown())
    console.out(shlex.join([*planned.build.argv, "<drvPath of each variant>"]))
    return None


command = build_command
