"""`nixgen build`: render when stale, then build the chosen variants with one `nix build`."""

from __future__ import annotations

import os
import shlex
import stat
from collections.abc import Sequence
from pathlib import Path

import attrs
import click

from nixgen.building import builds as building
from nixgen.building import gitfiles, nixcheck, nixcommand, selection
from nixgen.building.nixbuild import host_system
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
from nixgen.core.errors import (
    ProblemError,
    error,
    sort_problems,
)
from nixgen.planning.variants import SYSTEMS, best_variant

__all__ = ["build_command", "command", "host_system"]

#: The largest --max-jobs and --cores passed to Nix (which reads them as 32-bit unsigned
#: integers and fails on more, after the evaluation); beyond any machine.
MAX_JOBS = 65536

#: Where each variant is linked, relative to the project (what the `kernels` client and
#: the tests of `nixgen init` look at).
DEFAULT_LINKS = "build"


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
    from nixgen.app import config
    from nixgen.app.pipeline import inputs as pipeline_inputs
    from nixgen.app.pipeline import kept_warnings, prepare
    from nixgen.app.pipeline import summary as render_summary
    from nixgen.building import offline as offline_mod
    from nixgen.writing import write

    if as_json and not dry_run:
        raise click.UsageError("--json needs --dry-run (a build prints progress, not JSON)")
    if no_link and links is not None:
        raise click.UsageError("--no-link and --out-link exclude each other: pass one")
    if quick and variants:
        raise click.UsageError("--quick and --variant exclude each other: pass one")
    links = links or DEFAULT_LINKS
    system = system or host_system()
    out = config.out_dir(project, out)
    overrides = config.overrides(project, overrides)
    offline = config.offline(project, offline)
    if offline:
        options = (*offline_mod.SETTINGS, *options)
    loaded, rendered, problems, planned = prepare(project, out)
    print_problems(problems)
    root = loaded.root.resolve()  # Nix runs in the project: links must not be relative
    available = planned.for_system(system)
    names = [v.name for v in available]
    if backends:
        available = [v for v in available if v.backend in backends]
    if variants:
        unknown = [v for v in variants if v not in names]
        if unknown:
            raise ProblemError(
                [selection.unknown_variant(planned, v, system, names) for v in unknown]
            )
        chosen = list(dict.fromkeys(variants))
    elif quick and available:
        chosen = [best_variant(available).name]
    else:
        chosen = [v.name for v in available if v.bundle]
    if not chosen:
        which = f" of backend {', '.join(backends)}" if backends else ""
        raise ProblemError(
            [
                error(
                    f"{loaded.build.general.name} has no variants{which} for {system}",
                    hint=selection.other_systems(planned, system, backends),
                )
            ]
        )

    if not no_link:  # refused before anything is rendered, run or built (a dry run too)
        links = _check_links(root, links, chosen, pipeline_inputs(loaded, out))
    stale = write.plan(root, rendered)
    for note in kept_warnings(stale.kept, root, loaded.build.general.backends):
        console.err(note)
    settings = nixcommand.Settings(
        overrides=overrides,
        options=tuple(options),
        accept_flake_config=accept_flake_config,
        offline=offline,
    )
    evaluate = nixcommand.eval_drv_paths(root, system, chosen, settings)

    def nix_build(drvs: list[nixcommand.Derivation]) -> nixcommand.Command:
        # `nix build` of evaluated derivations reads no flake, so no nixConfig: the
        # accepted cache settings are passed on as options.
        return nixcommand.build(
            drvs,
            settings,
            cache=building.CACHE,
            keep_going=keep_going,
            max_jobs=max_jobs,
            cores=cores,
            builders=builders,
        )

    if dry_run:
        changed = [*stale.added, *stale.changed, *stale.removed]
        build = nix_build([])  # the derivations follow its `--`
        unseen = gitfiles.unseen_problems(loaded, rendered, root, new=stale.added)
        if as_json:
            emit_result(
                {
                    "render": changed,
                    "system": system,
                    "cwd": str(root.resolve()),
                    "variants": chosen,
                    "eval": list(evaluate.argv),
                    "build": list(build.argv),
                },
                [*problems, *unseen],
            )
            return None
        print_problems(sort_problems(attrs.evolve(p, severity="warning") for p in unseen))
        if changed:
            status(f"would render {rendered.out_dir}/ ({len(changed)} file(s) stale)")
        ref = nixcommand.flake_ref(root)
        cd = f"cd {shlex.quote(str(root.resolve()))} && " if ref == "." else ""
        console.out(cd + evaluate.shown())
        console.out(shlex.join([*build.argv, "<drvPath of each variant>"]))
        return None

    if stale.stale:
        result = write.write(root, rendered)
        status(render_summary(result, rendered.out_dir))
    unseen = gitfiles.unseen_problems(loaded, rendered, root)
    if unseen:
        raise ProblemError(unseen)
    if offline:
        offline_mod.check_inputs(root, [name for name, _ in overrides], config.read(root).library)
    print_problems(
        nixcheck.check(
            overrides=overrides,
            options=nixcommand.options(options),
            sandbox_check=not no_sandbox_check,
            hint=", or run `nixgen render` here and build the flake elsewhere",
        )
    )
    building.build_variants(
        root,
        loaded,
        system,
        chosen,
        evaluate=evaluate,
        nix_build=nix_build,
        links=None if no_link else links,
        log_lines=log_lines,
        offline=offline,
        accept_flake_config=accept_flake_config,
        labels=planned.labels,
    )
    return chosen  # what `nixgen build-and-upload` uploads


def _check_links(
    root: Path, links: str, variants: Sequence[str], inputs: Sequence[str] = ()
) -> str:
    """The link directory, project-relative, by the path rule of every output
    (`nixgen.core.paths.output_path`: inside the project, an absolute path too, through no
    link, a real directory or nothing, never an input of the project), refused before
    anything is built; and each variant's link path taken by something other than a link
    (a hand-written file or directory, which Nix would not replace) refused too."""
    from nixgen.core import paths
    from nixgen.core.errors import OutputError

    rel = paths.output_path(root, links, option="--out-link", inputs=inputs, directory=True)
    for name in variants:
        found = paths.lstat_under(root, f"{rel}/{name}")
        if isinstance(found, os.stat_result) and not stat.S_ISLNK(found.st_mode):
            what = "a directory" if stat.S_ISDIR(found.st_mode) else "a file"
            raise OutputError(
                f"{root / rel / name}: is {what}, not a link to a build: nixgen links variant "
                f"{name} there (move it away, or choose another --out-link)"
            )
    return rel


command = build_command
