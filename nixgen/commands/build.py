"""`nixgen build`: render when stale, then build the chosen variants with one `nix build`."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import click

from nixgen import nixbuild, tables
from nixgen.cli import emit_json, handle_errors, print_problems, project_argument, use_color
from nixgen.errors import EXIT_INTERNAL, NixgenError, ProblemError, error
from nixgen.nixbuild import host_system
from nixgen.nixlog import Build, NixLog

__all__ = ["build_command", "command", "host_system"]

#: Where each variant is linked, relative to the project (what the `kernels` client and
#: the tests of `nixgen init` look at).
DEFAULT_LINKS = "build"


class BuildFailed(NixgenError):
    """`nix build` failed; the details were already printed."""

    exit_code = EXIT_INTERNAL


def _complete_variant(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Variant names for shell completion, computed in Python (no Nix evaluation)."""
    from click.shell_completion import CompletionItem

    try:
        from nixgen import plan
        from nixgen import project as project_mod

        root = ctx.params.get("project") or Path(".")
        build = project_mod.read(root, check_files=False).build
        system = ctx.params.get("system") or host_system()
        names = [v.name for v in plan.variants(build, system=system)]
    except Exception:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def _label(drv_name: str, project: str, version: str, kernels: list[str]) -> str:
    """What a derivation is, in the project's words: ``kernel relu_cpu``, ``extension``,
    ``extension binding``."""
    suffix = f"-{version}"
    stem = drv_name.removesuffix(suffix)
    if stem.startswith(f"{project}-"):
        part = stem[len(project) + 1 :]
        if part in kernels:
            return f"kernel {part}"
        if part in ("torch-ext", "tvm-ffi-ext"):
            return "extension"
        # The binding's objects (nixgen.extension.bindingObjects), compiled before the link.
        if part in ("torch-binding", "tvm-ffi-binding"):
            return "extension binding"
        owner = next((k for k in kernels if part.startswith(f"{k}-")), None)
        if owner is not None:
            return f"kernel {owner}: object {part[len(owner) + 1 :]}"
        if part.startswith("noarch"):
            return "python package"
    return drv_name


@click.command(name="build")
@project_argument
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    shell_complete=_complete_variant,
    help="A variant to build; repeat for several (default: every bundled variant of SYSTEM).",
)
@click.option(
    "--system",
    default=None,
    metavar="SYSTEM",
    help="Nix system of the variants (default: this machine).",
)
@click.option(
    "--override-input",
    "overrides",
    nargs=2,
    multiple=True,
    metavar="INPUT REF",
    help="Passed to Nix's evaluation (e.g. `nixpkgs path:/src/nixpkgs`); repeatable.",
)
@click.option(
    "--out-link",
    "links",
    default=DEFAULT_LINKS,
    show_default=True,
    metavar="DIR",
    help="Link each built variant as DIR/<variant>, relative to PROJECT.",
)
@click.option(
    "--backend",
    "backends",
    multiple=True,
    type=click.Choice(tables.BACKENDS),
    help="Build only the variants of this backend; repeat for several.",
)
@click.option(
    "--out",
    default="nix",
    show_default=True,
    help="Where the project's generated Nix lives, relative to PROJECT (as for render).",
)
@click.option("--no-link", is_flag=True, help="Do not link the results.")
@click.option("--keep-going", is_flag=True, help="Build the other variants after a failure.")
@click.option(
    "--max-jobs",
    type=click.IntRange(0),
    default=None,
    help="Derivations Nix builds at once (passed to nix build; default: Nix's setting).",
)
@click.option(
    "--cores",
    type=click.IntRange(0),
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
@click.option("--dry-run", is_flag=True, help="Print what would be rendered and run; do nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: print the plan as JSON.")
@handle_errors
def build_command(
    project: Path,
    variants: tuple[str, ...],
    system: str | None,
    overrides: tuple[tuple[str, str], ...],
    links: str,
    backends: tuple[str, ...],
    out: str,
    no_link: bool,
    keep_going: bool,
    max_jobs: int | None,
    cores: int | None,
    log_lines: int,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Build PROJECT's variants with Nix, rendering its Nix files first when stale.

    Evaluates the flake once for all chosen variants and builds them with one `nix build`,
    so Nix builds their derivations side by side (--max-jobs, --cores). Shows which
    derivation of which kernel is being built, how many variants are done and the time
    elapsed (a live line on a terminal, plain lines otherwise). Each result is linked as
    build/<variant>, where the `kernels` client finds it
    (`kernels.get_local_kernel(PROJECT, backend=...)`). A failure ends with the failing
    derivation's last log lines. Exit status: 0 built, 1 a build failed, 2 invalid input.
    """
    from nixgen import plan, write
    from nixgen.commands.render import prepare
    from nixgen.pipeline import kept_warnings

    if as_json and not dry_run:
        raise click.UsageError("--json needs --dry-run (a build prints progress, not JSON)")
    system = system or host_system()
    loaded, rendered, problems = prepare(project, out)
    print_problems(problems)
    root = loaded.root.resolve()  # Nix runs in the project: links must not be relative
    available = plan.variants(loaded.build, system=system)
    names = [v.name for v in available]
    if backends:
        available = [v for v in available if v.backend in backends]
    if variants:
        unknown = [v for v in variants if v not in names]
        if unknown:
            raise ProblemError(
                [
                    error(
                        f"unknown variant `{v}` for {system}; valid variants: "
                        f"{', '.join(names) or 'none'}",
                    )
                    for v in unknown
                ]
            )
        chosen = list(dict.fromkeys(variants))
    else:
        chosen = [v.name for v in available if v.bundle]
    if not chosen:
        which = f" of backend {', '.join(backends)}" if backends else ""
        raise ProblemError(
            [error(f"{loaded.build.general.name} has no variants{which} for {system}")]
        )

    stale = write.plan(root, rendered)
    for note in kept_warnings(stale.kept):
        click.echo(note, err=True)
    ref = nixbuild.flake_ref(root)
    evaluate = nixbuild.eval_command(ref, system, chosen, overrides)

    def nix_build(drvs: list[str]) -> list[str]:
        return nixbuild.build_command(drvs, keep_going=keep_going, max_jobs=max_jobs, cores=cores)

    if dry_run:
        changed = [*stale.added, *stale.changed, *stale.removed]
        build = nix_build(["<drvPath of each variant>"])
        if as_json:
            emit_json(
                {
                    "render": changed,
                    "system": system,
                    "cwd": str(root.resolve()),
                    "variants": chosen,
                    "eval": evaluate,
                    "build": build[:-1],
                }
            )
            return
        if changed:
            click.echo(f"would render {rendered.out_dir}/ ({len(changed)} file(s) stale)")
        cd = f"cd {shlex.quote(str(root.resolve()))} && " if ref == "." else ""
        click.echo(cd + shlex.join(evaluate))
        click.echo(shlex.join(build))
        return

    if shutil.which("nix") is None:
        raise NixgenError(
            "`nix` is not on PATH: install Nix (https://nixos.org/download), or run "
            "`nixgen render` here and build the flake elsewhere"
        )
    if stale.stale:
        result = write.write(root, rendered)
        click.echo(
            f"rendered {rendered.out_dir}/: {len(result.added)} added, "
            f"{len(result.changed)} changed, {len(result.removed)} removed",
            err=True,
        )
    err = sys.stderr
    progress = nixbuild.Progress(len(chosen), live=err.isatty(), color=use_color(err), stream=err)
    meta = loaded.build.general
    kernels = sorted(loaded.build.kernels)

    def label(drv_name: str) -> str:
        return _label(drv_name, meta.name, str(meta.version), kernels)

    progress.line(
        f"building {len(chosen)} variant{'s' if len(chosen) != 1 else ''} of {meta.name} "
        f"for {system}"
    )
    progress.show("evaluating")
    evaluated = nixbuild.run(evaluate, cwd=root)
    drvs = _drv_paths(evaluated, len(chosen))
    if drvs is None:
        for line in evaluated.log.failure_report(log_lines):
            progress.line(line)
        raise BuildFailed(f"evaluating {meta.name} for {system} failed")
    variant_of = dict(zip(drvs, chosen, strict=True))
    done: list[str] = []

    def on_change(kind: str, build: Build) -> None:
        variant = variant_of.get(build.drv)
        what = label(build.name)
        if kind == "start":
            progress.event(f"building {what}" + (f" ({variant})" if variant else ""))
        elif build.failed:
            progress.event(f"{what} {progress.style('failed', fg='red')}")
        elif variant is not None:
            done.append(variant)
            progress.line(
                f"[{len(done)}/{len(chosen)}] {variant}: "
                f"{progress.style('done', fg='green')} (total {progress.total_elapsed()})"
            )
        else:
            progress.event(f"built {what} ({build.duration(time.monotonic()):.1f}s)")

    def on_tick(log: NixLog) -> None:
        running = ", ".join(label(b.name) for b in log.running()) or "waiting for Nix"
        progress.show(
            f"[{len(done)}/{len(chosen)} variants] {running} (total {progress.total_elapsed()})"
        )

    built = nixbuild.run(
        nix_build(drvs),
        cwd=root,
        on_change=on_change,
        on_tick=on_tick,
    )
    ok_word = progress.style("done", fg="green")
    broken = _broken_variants(built.log, variant_of) if built.code != 0 else set()
    if built.code != 0 and not broken:
        broken = set(chosen)  # a failure Nix did not tie to a derivation: nothing is known
    if not no_link and len(broken) < len(chosen):
        (root / links).mkdir(parents=True, exist_ok=True)
    for drv, name in variant_of.items():
        if name in broken:
            continue
        if no_link:
            if built.code != 0 and name not in done:
                broken.add(name)  # not known to be built
            elif name not in done:
                done.append(name)
                progress.line(f"[{len(done)}/{len(chosen)}] {name}: {ok_word}")
            continue
        link = root / links / name
        if nixbuild.run(nixbuild.link_command(drv, link), cwd=root).code != 0:
            broken.add(name)  # Nix stopped before building it
            continue
        if name not in done:
            done.append(name)  # built before: Nix had nothing to do
            progress.line(f"[{len(done)}/{len(chosen)}] {name}: {ok_word}")
        progress.line(f"  {name} -> {os.path.relpath(link)}")
    if built.code != 0:
        for line in built.log.failure_report(log_lines):
            progress.line(line)
    failed = [name for name in chosen if name in broken]
    count = f"{len(chosen) - len(failed)} of {len(chosen)}"
    summary = f"built {count} variant(s) in {progress.total_elapsed()}"
    if failed:
        raise BuildFailed(f"{summary}; failed: {', '.join(failed)}")
    click.echo(summary)


def _drv_paths(result: nixbuild.Result, count: int) -> list[str] | None:
    """The derivations `nix eval` printed, one per variant; None when it failed."""
    if result.code != 0:
        return None
    try:
        drvs = json.loads(result.stdout)
    except ValueError:
        return None
    if (
        not isinstance(drvs, list)
        or len(drvs) != count
        or not all(isinstance(d, str) for d in drvs)
    ):
        return None
    return drvs


def _broken_variants(log: NixLog, variant_of: dict[str, str]) -> set[str]:
    """Variants whose derivation failed, or was not built because a dependency failed
    (Nix names it in `N dependencies of derivation '…drv' failed to build`)."""
    broken = {variant_of[d] for d in log.failed_drvs() if d in variant_of}
    for message in log.errors:
        for drv, name in variant_of.items():
            if f"'{drv}'" in message:
                broken.add(name)
    return broken


command = build_command
