"""Building chosen variants with Nix, with the progress display: one `nix eval` of their
derivations, one `nix build` of them all driven by Nix's internal-json log (`nixlog`), each
result linked. `nixgen build` runs it, and so does `nixgen shell --test` before it enters
the test shell, so that shell has its variant built with the same display."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from nixgen.building import drvgraph, nixbuild, nixcommand
from nixgen.building import offline as offline_mod
from nixgen.building.nixlog import Build, NixLog
from nixgen.checking.project import Project
from nixgen.core import bounded, console, tables, writer
from nixgen.core.console import status
from nixgen.core.errors import EXIT_FAILURE, NixgenError


class BuildFailed(NixgenError):
    """`nix build` failed; the details were already printed."""

    exit_code = EXIT_FAILURE


def build_variants(
    root: Path,
    loaded: Project,
    system: str,
    chosen: Sequence[str],
    *,
    labels: Mapping[str, str],
    evaluate: nixcommand.Command,
    nix_build: Callable[[list[nixcommand.Derivation]], nixcommand.Command],
    links: str | None,
    log_lines: int,
    offline: bool,
    accept_flake_config: bool,
) -> None:
    """Evaluate (`evaluate`, a `nixcommand.eval_drv_paths` of `chosen`) and build
    (`nix_build` of the derivations, each checked by `nixcommand.derivation`) the variants
    `chosen` of the project `loaded` at `root`, showing progress on stderr; link each as
    `links`/<variant> (None: no links). Raises `BuildFailed` (the details printed) when
    one fails; ends with the summary line.
    `labels`: what each derivation is, by its name (the plan's `Plan.labels`); another one
    (a toolchain's, a source) is shown by its own name."""
    err = sys.stderr
    live = err.isatty() and console.settings.progress
    progress = nixbuild.Progress(len(chosen), live=live, color=console.use_color(err), stream=err)
    meta = loaded.build.general

    def label_of(drv_name: str) -> str:
        return labels.get(drv_name, drv_name)

    progress.line(
        f"building {len(chosen)} variant{'s' if len(chosen) != 1 else ''} of {meta.name} "
        f"for {system}"
    )
    progress.show("evaluating")
    if console.settings.verbosity > 0:
        progress.line(f"running: {evaluate.shown()}")
    evaluated = nixbuild.run(evaluate, cwd=root)
    hinted = hint_cache(evaluated.log, progress, accepted=accept_flake_config)
    drvs = drv_paths(evaluated, chosen)
    if drvs is None:
        report = evaluated.log.failure_report(log_lines)
        for line in [*report, *offline_mod.notes(report, offline=offline)]:
            progress.line(line)
        raise BuildFailed(f"evaluating {meta.name} for {system} failed")
    # Variants whose derivation is the same one are built once and linked as each.
    variants_of: dict[str, list[str]] = {}
    derivations: dict[str, nixcommand.Derivation] = {}
    for drv, name in zip(drvs, chosen, strict=True):
        variants_of.setdefault(drv.path, []).append(name)
        derivations[drv.path] = drv
    for names in variants_of.values():
        if len(names) > 1:
            progress.line(
                f"nixgen: note: variants {', '.join(names)} are the same derivation; it is "
                "built once and linked as each"
            )
    # The project's derivations each variant needs, from the store's `.drv` files: the
    # plain lines name the variants of a kernel's build, not only the kernel.
    owned = drvgraph.owners(variants_of, follow=lambda name: name in labels)
    done: list[str] = []
    #: Variants whose derivation stopped with no failure said: done once Nix exits
    #: without naming it (it stops a top-level build at the end, and reports the failure
    #: after that stop).
    stopped: list[str] = []

    def on_change(kind: str, build: Build) -> None:
        names = variants_of.get(build.drv, [])
        what = label_of(build.name)
        owners = owned.variants.get(build.drv, ())
        variant = f" ({', '.join(owners)})" if owners else ""
        if kind == "start":
            if build.drv in owned.wrappers:
                return  # it copies the extension built just before, adding its provenance
            where = f" on {build.machine}" if build.machine else ""
            progress.event(f"building {what}{where}{variant}")
        elif build.failed:
            progress.event(f"{what}{variant} {progress.style('failed', fg='red')}")
        elif names:
            stopped.extend(n for n in names if n not in stopped)
        else:
            progress.event(f"built {what}{variant} ({build.duration(time.monotonic()):.1f}s)")

    def on_tick(log: NixLog) -> None:
        running = ", ".join(label_of(b.name) for b in log.running()) or "waiting for Nix"
        progress.show(
            f"[{len(done)}/{len(chosen)} variants] {running} (total {progress.total_elapsed()})"
        )

    def on_line(build: Build, text: str) -> None:
        progress.line(f"{label_of(build.name)}> {text}")

    unique = list(derivations.values())
    if console.settings.verbosity > 0:
        progress.line(f"running: {nix_build(unique).shown()}")
    built = nixbuild.run(
        nix_build(unique),
        cwd=root,
        on_change=on_change,
        on_tick=on_tick,
        on_line=on_line if console.settings.build_logs else None,
    )
    if not hinted:
        hint_cache(built.log, progress, accepted=accept_flake_config)
    ok_word = progress.style("done", fg="green")
    broken = broken_variants(built.log, variants_of) if built.code != 0 else set()
    if built.code != 0 and not broken:
        broken = set(chosen)  # a failure Nix did not tie to a derivation: nothing is known
    if links is not None and len(broken) < len(chosen):
        writer.make_dirs(root, links)
    for drv, name in zip(drvs, chosen, strict=True):
        if name in broken:
            continue
        if links is None:
            if built.code != 0 and name not in stopped:
                broken.add(name)  # not known to be built
            elif name not in done:
                done.append(name)
                progress.line(f"[{len(done)}/{len(chosen)}] {name}: {ok_word}")
            continue
        link = root / links / name
        if nixbuild.run(nixcommand.link(drv, link), cwd=root).code != 0:
            broken.add(name)  # Nix stopped before building it
            continue
        if name not in done:
            done.append(name)  # built before: Nix had nothing to do
            progress.line(f"[{len(done)}/{len(chosen)}] {name}: {ok_word}")
        if console.settings.verbosity >= 0:
            progress.line(f"  {name} -> {os.path.relpath(link)}")
    if built.code != 0:
        report = built.log.failure_report(log_lines)
        for line in [*report, *offline_mod.notes(report, offline=offline)]:
            progress.line(line)
    failed = [name for name in chosen if name in broken]
    count = f"{len(chosen) - len(failed)} of {len(chosen)}"
    summary = f"built {count} variant(s) in {progress.total_elapsed()}"
    if failed:
        raise BuildFailed(f"{summary}; failed: {', '.join(failed)}")
    status(summary)


#: The kernels binary cache, as settings of a `nix build` that reads no flake (those of
#: the generated flake's nixConfig; `nixcommand.Settings.for_store` passes them when they
#: were accepted).
CACHE = (
    ("extra-substituters", tables.SUBSTITUTER),
    ("extra-trusted-public-keys", tables.SUBSTITUTER_KEY),
)


def hint_cache(log: NixLog, progress: nixbuild.Progress, *, accepted: bool) -> bool:
    """Say once how to use the binary cache when Nix ignored its settings."""
    ignored = nixbuild.ignored_cache_settings(log.warnings)
    if not ignored:
        return False
    hint = nixbuild.cache_hint(
        tables.SUBSTITUTER, tables.SUBSTITUTER_KEY, ignored, accepted=accepted
    )
    for line in hint.splitlines():
        progress.line(line)
    return True


def drv_paths(
    result: nixbuild.Result, variants: Sequence[str]
) -> list[nixcommand.Derivation] | None:
    """The derivations `nix eval` printed, one per variant; None when it failed. Each is a
    `nixcommand.Derivation` (`nixcommand.derivation`, the one check of a store path): a
    value a flake evaluates to is data, never an argument Nix could read as an option."""
    if result.code != 0:
        return None
    if result.truncated:
        raise BuildFailed(
            f"`nix eval` printed more than {bounded.MAX_JSON} characters, no list of "
            f"{len(variants)} derivation(s): is flake.nix hand-written? (`nixgen render` "
            "writes it)"
        )
    try:
        drvs = bounded.json_loads(result.stdout)
    except ValueError as exc:
        raise BuildFailed(f"`nix eval` printed no list of derivations ({exc})") from None
    if not isinstance(drvs, list) or len(drvs) != len(variants):
        raise BuildFailed(
            f"`nix eval` printed no list of {len(variants)} derivation(s): is flake.nix "
            "hand-written? (`nixgen render` writes it)"
        )
    checked = []
    for name, drv in zip(variants, drvs, strict=True):
        try:
            checked.append(nixcommand.derivation(drv))
        except nixcommand.NotAStorePath as exc:
            shown = json.dumps(drv)[:200]
            raise BuildFailed(
                f"the flake's packages.<system>.{name}.drvPath is {shown}, {exc}: nothing "
                "was built; is flake.nix hand-written? (`nixgen render` writes it)"
            ) from None
    return checked


def broken_variants(log: NixLog, variants_of: dict[str, list[str]]) -> set[str]:
    """Variants whose derivation failed, or was not built because a dependency failed
    (Nix names it in `N dependencies of derivation '…drv' failed to build`)."""
    broken = {n for d in log.failed_drvs() for n in variants_of.get(d, [])}
    for message in log.errors:
        for drv, names in variants_of.items():
            if f"'{drv}'" in message:
                broken.update(names)
    return broken
