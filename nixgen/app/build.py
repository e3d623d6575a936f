"""`nixgen build` as a use case: decide, then act.

`decide` takes the settings (`nixgen.app.settings`, resolved once) and what the command line
asks (`Request`), renders the project in memory, chooses the variants
(`nixgen.planning.selection.choose`), checks where they are linked and makes the `nix`
commands; nothing is written or run yet. A dry run reports that decision (`dry_run`); `run`
carries it out: the stale render written, then the checks before Nix runs (`make_ready`:
what git shows the flake, an offline run's inputs, the Nix on PATH), then every chosen
variant built with one `nix build` (`nixgen.building.builds.build_variants`). `nixgen shell`
and `compdb` make the same checks through `make_ready`. The command line only parses argv and
prints.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

import attrs

from nixgen.app.pipeline import Prepared, inputs, kept_warnings, prepare, summary
from nixgen.app.settings import Given, Settings, resolve
from nixgen.building import builds, gitfiles, nixcheck, nixcommand
from nixgen.building import offline as offline_mod
from nixgen.building.nixbuild import host_system
from nixgen.core import console, paths
from nixgen.core.errors import OutputError, Problem, ProblemError
from nixgen.planning import selection
from nixgen.writing import write

#: Where each variant is linked, relative to the project (what the `kernels` client and
#: the tests of `nixgen init` look at).
DEFAULT_LINKS = "build"


def nix_settings(
    settings: Settings,
    options: Sequence[tuple[str, str]] = (),
    *,
    accept_flake_config: bool = False,
    offline: bool | None = None,
) -> nixcommand.Settings:
    """The settings of every `nix` command of a run on the project (`build`, `shell`,
    `compdb`, `upload`'s evaluation): the flake inputs `settings` overrides, Nix's offline
    settings (`offline`, else the project's: ``--offline`` or nixgen.toml's) before
    `options` (``--option``), ``--accept-flake-config``."""
    offline = settings.offline if offline is None else offline
    return nixcommand.Settings(
        overrides=settings.overrides,
        options=(*(offline_mod.SETTINGS if offline else ()), *options),
        accept_flake_config=accept_flake_config,
        offline=offline,
    )


@attrs.frozen(kw_only=True)
class Request:
    """What the command line asks of a build, besides the settings nixgen.toml also holds
    (`nixgen.app.settings.Given`)."""

    #: ``--variant``: the variants to build (none: every bundled one of `system`).
    variants: tuple[str, ...] = ()
    #: ``--quick``: only the system's default variant (the one `nixgen shell` enters).
    quick: bool = False
    #: ``--system`` (None: this machine's, `host_system`).
    system: str | None = None
    #: ``--backend``: only the variants of these backends.
    backends: tuple[str, ...] = ()
    #: ``--out-link``, relative to the project; None with ``--no-link``.
    links: str | None = DEFAULT_LINKS
    keep_going: bool = False
    max_jobs: int | None = None
    builders: str | None = None
    cores: int | None = None
    #: Log lines of a failed derivation to show.
    log_lines: int = 40
    accept_flake_config: bool = False
    #: ``--option NAME VALUE``.
    options: tuple[tuple[str, str], ...] = ()
    #: Whether the Nix sandbox is checked (``--no-sandbox-check``: not).
    sandbox_check: bool = True


@attrs.frozen(kw_only=True)
class Build:
    """A build decided (`decide`): what is built, where, and the commands that build it."""

    prepared: Prepared
    request: Request
    #: The project directory, absolute: Nix runs there, and links are made under it.
    root: Path
    system: str
    #: The variants to build, in order.
    variants: list[str]
    #: Where they are linked, checked and project-relative (None: not linked).
    links: str | None
    #: What writing the render would change (`write.plan`).
    stale: write.Plan
    #: The settings of every `nix` command of the build.
    nix: nixcommand.Settings
    #: The one `nix eval` of the variants' derivations.
    evaluate: nixcommand.Command

    def nix_build(self, drvs: list[nixcommand.Derivation]) -> nixcommand.Command:
        """The one `nix build` of the evaluated derivations `drvs`. It reads no flake, so no
        nixConfig: the accepted cache settings are passed on as options."""
        return nixcommand.build(
            drvs,
            self.nix,
            cache=builds.CACHE,
            keep_going=self.request.keep_going,
            max_jobs=self.request.max_jobs,
            cores=self.request.cores,
            builders=self.request.builders,
        )


def decide(project: Path | str, given: Given, request: Request) -> Build:
    """Decide the build of `project`: its settings resolved from `given` and nixgen.toml,
    the project rendered in memory (its warnings printed), the variants chosen, their link
    paths checked (before anything is rendered, run or built; a dry run too), the hand-written
    files a render would keep said, and the `nix` commands made. Raises on bad input."""
    settings = resolve(project, given)
    prepared = prepare(project, settings)
    console.print_problems(prepared.problems)
    root = prepared.project.root.resolve()  # Nix runs in the project: links are absolute
    system = request.system or host_system()
    chosen = selection.choose(
        prepared.plan, system, request.variants, request.backends, quick=request.quick
    )
    links = None
    if request.links is not None:
        links = check_links(root, request.links, chosen, inputs(prepared.project, settings.out))
    stale = write.plan(root, prepared.rendered)
    for note in kept_warnings(stale.kept, root, prepared.project.build.general.backends):
        console.err(note)
    nix = nix_settings(settings, request.options, accept_flake_config=request.accept_flake_config)
    return Build(
        prepared=prepared,
        request=request,
        root=root,
        system=system,
        variants=chosen,
        links=links,
        stale=stale,
        nix=nix,
        evaluate=nixcommand.eval_drv_paths(root, system, chosen, nix),
    )


@attrs.frozen(kw_only=True)
class DryRun:
    """What `run` would do, for `nixgen build --dry-run` to print."""

    #: The generated files a render would add, change or remove.
    render: list[str]
    #: The files the flake would not see (`gitfiles.unseen_problems`), the render's new
    #: files counted.
    unseen: list[Problem]
    #: The `nix build` of the variants (their derivations follow its `--`).
    build: nixcommand.Command


def dry_run(build: Build) -> DryRun:
    """What `run` would render, refuse and run for `build`; nothing is written or run."""
    stale = build.stale
    prepared = build.prepared
    unseen = gitfiles.unseen_problems(
        prepared.project, prepared.rendered, build.root, new=stale.added
    )
    return DryRun(
        render=[*stale.added, *stale.changed, *stale.removed],
        unseen=unseen,
        build=build.nix_build([]),
    )


def make_ready(
    prepared: Prepared,
    root: Path,
    stale: write.Plan,
    *,
    nix: nixcommand.Settings | None = None,
    sandbox_check: bool = True,
    hint: str = "",
) -> None:
    """What every verb that runs Nix on the project does first: the stale render `stale`
    written (and said), the files the flake would not see refused (`gitfiles`); given `nix`,
    the settings of a run that builds, an offline run's flake inputs checked
    (`offline.check_inputs`) and the Nix on PATH checked (`nixcheck.check`; `hint` ends
    its missing-Nix message), its warnings printed."""
    rendered = prepared.rendered
    if stale.stale:
        console.status(summary(write.write(root, rendered), rendered.out_dir))
    unseen = gitfiles.unseen_problems(prepared.project, rendered, root)
    if unseen:
        raise ProblemError(unseen)
    if nix is None:
        return
    if nix.offline:
        overridden = [name for name, _ in nix.overrides]
        offline_mod.check_inputs(root, overridden, prepared.settings.library)
    console.print_problems(
        nixcheck.check(
            overrides=nix.overrides,
            options=nixcommand.options(nix.options),
            sandbox_check=sandbox_check,
            hint=hint,
        )
    )


def run(build: Build) -> list[str]:
    """Carry out `build` (`make_ready`, then `builds.build_variants`, which shows the
    progress and raises `BuildFailed` when a variant fails); the variants built."""
    make_ready(
        build.prepared,
        build.root,
        build.stale,
        nix=build.nix,
        sandbox_check=build.request.sandbox_check,
        hint=", or run `nixgen render` here and build the flake elsewhere",
    )
    builds.build_variants(
        build.root,
        build.prepared.project,
        build.system,
        build.variants,
        evaluate=build.evaluate,
        nix_build=build.nix_build,
        links=build.links,
        log_lines=build.request.log_lines,
        offline=build.nix.offline,
        accept_flake_config=build.nix.accept_flake_config,
        labels=build.prepared.plan.labels,
    )
    return build.variants


def check_links(root: Path, links: str, variants: Sequence[str], inputs: Sequence[str] = ()) -> str:
    """The link directory, project-relative, by the path rule of every output
    (`nixgen.core.paths.output_path`: inside the project, an absolute path too, through no
    link, a real directory or nothing, never an input of the project), refused before
    anything is built; and each variant's link path taken by something other than a link
    (a hand-written file or directory, which Nix would not replace) refused too."""
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
