"""One project through every stage: read → plan → render → write (or check).

This is what `nixgen render` does, shared with `build`, `watch` and `init`; the click
command only parses options and calls `render_project`. An unchanged project is rendered
in full like any other: `nixgen.writing.write` then touches nothing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import attrs

from nixgen import __version__
from nixgen.app import config
from nixgen.app.settings import Given, Settings, resolve
from nixgen.checking import validate
from nixgen.checking.project import Project
from nixgen.checking.project import read as read_project
from nixgen.core import console, paths, writer
from nixgen.core.errors import EXIT_FAILURE, OutputError, Problem, ProblemError
from nixgen.core.paths import DEFAULT_OUT
from nixgen.planning import plan
from nixgen.planning.plan import Plan
from nixgen.reading import model
from nixgen.rendering import render
from nixgen.rendering.render import Rendered
from nixgen.writing import write


@attrs.frozen(kw_only=True)
class Prepared:
    """A project read, checked, planned and rendered in memory (`prepare`)."""

    project: Project
    #: The generated files, with the nixgen.toml bytes they were made from.
    rendered: Rendered
    #: The warnings of reading and planning (errors raise instead).
    problems: list[Problem]
    #: The plan rendered: a verb reads its variants from it instead of planning again.
    plan: Plan
    #: The settings it was rendered with.
    settings: Settings


def prepare(project: Path | str, settings: Settings | None = None) -> Prepared:
    """Read, validate and plan `project`, then render it in memory into `settings.out`
    with `settings.library` (the settings `resolve` made of the command line and
    nixgen.toml; None: nixgen.toml's alone).

    Raises `ProblemError` with every located problem when the project cannot be rendered,
    `OutDirError` for an output directory that is, lies in or holds an input of it.
    """
    settings = settings if settings is not None else resolve(project)
    out = settings.out
    # The include scan is `nixgen validate`'s: a render does not read every source.
    loaded = read_project(project, includes=False)
    inside = [settings.library.directory] if settings.library.directory is not None else []
    clash = paths.overlap(out, [*read_inputs(loaded), *inside])
    if clash is not None:
        raise render.OutDirError(
            f"invalid output directory `{out}`: it is, lies in or holds `{clash}`, an input of "
            "the project; nixgen keeps the generated Nix apart from what the build reads "
            "(choose another --out)"
        )
    finished = plan.make(loaded.build, settings=settings.file.project)
    planned = loaded.document.locate_all(list(finished.problems))
    problems = [*loaded.warnings, *planned]
    if any(p.severity == "error" for p in planned):
        raise ProblemError(problems)
    rendered = render.render(finished, out_dir=out, library=settings.library)
    rendered = attrs.evolve(rendered, settings=settings.snapshot)
    return Prepared(
        project=loaded, rendered=rendered, problems=problems, plan=finished, settings=settings
    )


def inputs(loaded: Project, out: str) -> list[str]:
    """What an output the user names (`compdb -o`, `build --out-link`) must never replace,
    relative to the project: nixgen.toml, the flake, its lock and its kept copy, the
    generated tree `out`, git's directory, and what the build reads (`read_inputs`).
    `nixgen.core.paths.output_path` refuses them and what is under them."""
    from nixgen.app import anchorflake  # see kept_warnings

    fixed = [config.FILE, "flake.nix", "flake.lock", anchorflake.BACKUP, ".git", out]
    return [*fixed, *read_inputs(loaded)]


def read_inputs(loaded: Project) -> list[str]:
    """What the build of `loaded` reads, relative to the project: build.toml (and where its
    link leads), every path it lists (sources, include directories, a crate's directory)
    and the Python package. The output directory never is, lies in or holds one."""
    build = loaded.build
    root = os.path.abspath(loaded.root)
    build_toml = os.path.relpath(os.path.abspath(loaded.document.path), root)
    linked = paths.resolve_inside(root, build_toml)
    listed = [rel for _, rel in validate.listed_files(build)]
    listed += [str(p) for k in build.kernels.values() for p in model.kernel_includes(k)]
    listed += [str(p) for p in getattr(build.framework, "include", [])]
    return [
        build_toml,
        *([linked] if linked else []),
        model.python_package_dir(build),
        *listed,
    ]


def with_github_workflow(prepared: Prepared) -> Rendered:
    """The render of `prepared` plus the project's GitHub Actions workflow (a project-root
    file): its runners and release settings from nixgen.toml's ``[ci]``, for the (system,
    backend) pairs of its plan."""
    from nixgen.rendering import workflow  # only for `render --ci github`

    loaded, rendered = prepared.project, prepared.rendered
    text = workflow.github_workflow(
        loaded.build.general.name,
        nixgen_version=__version__,
        pairs=[(v.system, v.backend) for v in prepared.plan.variants],
        settings=prepared.settings.file.ci,
    )
    return attrs.evolve(rendered, root={**rendered.root, workflow.GITHUB_WORKFLOW: text})


def render_project(
    project: Path | str,
    given: Given | None = None,
    *,
    check: bool = False,
    force: bool = False,
    ci: str | None = None,
    record: Mapping[str, str] | None = None,
    replace_root: Collection[str] = (),
    extra: Mapping[str, bytes] | None = None,
    expect: Mapping[str, bytes | None] | None = None,
    settings_change: tuple[bytes | None, bytes] | None = None,
) -> int:
    """Render (or with `check`, compare) `project` with the settings of `given` (``--out``,
    ``--library``) and nixgen.toml (`resolve`); print what happened; return the exit
    status (0, or 1 when `check` finds stale files). Failures raise.

    The whole run holds the project lock (`nixgen.core.writer.project_lock`), from reading
    nixgen.toml to the last write, and writes one transaction: the tree, the project-root
    files, nixgen.toml with `record` (``out``, ``library``: the settings `--out` and
    `--library` gave) and the `extra` files (`flake.nix.orig`), so two renders at once
    never leave nixgen.toml saying one thing and nix/ another. `replace_root` and
    `expect`: see `nixgen.writing.write.write`. `settings_change`: nixgen.toml's bytes now
    (None: absent) and those the render is made with and writes in the same transaction (a
    flake takeover's carried settings). A recorded new ``out`` retires the earlier output
    tree (`retire_out`)."""
    root_dir = config.project_root(project)
    # A project that is not there has nothing to lock: reading it says what is wrong; and
    # `--check` writes nothing, not even the completion of a killed run's write (it
    # reports what is on disk).
    locking = root_dir.is_dir() and not check
    lock = writer.project_lock(root_dir) if locking else contextlib.nullcontext()
    with lock:
        settings = resolve(
            project, given, text=settings_change[1] if settings_change is not None else None
        )
        out = settings.out
        previous = settings.file.out or DEFAULT_OUT
        prepared = prepare(project, settings)
        rendered = with_github_workflow(prepared) if ci == "github" else prepared.rendered
        console.print_problems(prepared.problems)
        root = prepared.project.root
        if check:
            result = write.plan(root, rendered, force=True, replace_root=False)
            if result.stale:
                console.out(result.diff, newline=False)
                stale = [*result.added, *result.changed, *result.removed]
                console.err(
                    f"nixgen: {len(stale)} generated file(s) are stale: run `nixgen render`"
                )
                return EXIT_FAILURE
            console.status(f"{out}/ is up to date")
            return 0
        backends = prepared.project.build.general.backends
        if force:
            from nixgen.app import anchorflake  # see kept_warnings

            refusal = anchorflake.force_refusal(root, backends, settings.file.to_json())
            if refusal is not None:
                raise OutputError(refusal)
        extra = dict(extra or {})
        expect = dict(expect or {})
        if settings_change is not None:
            extra[config.FILE], expect[config.FILE] = settings_change[1], settings_change[0]
        recorded = config.record(root, record, settings.file, settings.snapshot) if record else None
        if recorded is not None:
            extra[recorded.rel] = recorded.data
            expect[recorded.rel] = recorded.before
        result = write.write(
            root, rendered, force=force, replace_root=replace_root, extra=extra, expect=expect
        )
    notes = kept_warnings(result.kept, root, backends)
    for note in notes:
        console.err(note)
    console.status(summary(result, out))
    for kind, names in (
        ("added", result.added),
        ("changed", result.changed),
        ("removed", result.removed),
    ):
        for name in names:
            console.status(f"  {kind} {name}", level=1)
    for line in recorded.lines if recorded is not None else ():
        console.status(line)
    if record and "out" in record and previous != out:
        retire_out(root, previous, out)
    return 0


def retire_out(project: Path | str, old: str, new: str) -> None:
    """After `render --out NEW` moved the output from `old`: remove the earlier tree when
    nixgen wrote all of it (`write.retire`), else say that it is left, and why. Nothing is
    done when one directory holds the other."""
    old_parts, new_parts = Path(old).parts, Path(new).parts
    shorter = min(len(old_parts), len(new_parts))
    if old_parts[:shorter] == new_parts[:shorter]:
        return  # the same directory, or one inside the other
    from nixgen.core.marker import is_generated

    root = config.project_root(project)
    if (root / "flake.nix").exists() and not is_generated(root / "flake.nix"):
        if (root / old).is_dir():
            console.err(
                f"nixgen: warning: {old}/, the earlier output directory, is left in place: "
                f"flake.nix is hand-written and may still use it (point it at {new}/, then "
                f"remove {old}/)"
            )
        return
    try:
        retired = write.retire(root, old)
    except (OutputError, OSError) as exc:
        console.err(f"nixgen: warning: {old}/, the earlier output directory, is left: {exc}")
        return
    if retired.removed:
        console.status(
            f"removed {old}/, the earlier output directory ({len(retired.removed)} files, "
            "all generated by nixgen)"
        )
    elif retired.kept:
        shown = ", ".join(retired.kept[:3]) + (", …" if len(retired.kept) > 3 else "")
        console.err(
            f"nixgen: warning: {old}/, the earlier output directory, is left in place: "
            f"{len(retired.kept)} entr{'y' if len(retired.kept) == 1 else 'ies'} in it "
            f"{'is' if len(retired.kept) == 1 else 'are'} not nixgen's ({shown}); the "
            f"flake now uses {new}/, so remove {old}/ yourself once you no longer need it"
        )


def summary(result: write.Plan, out: str) -> str:
    """What a write did, the files under `out` counted apart from the project-root
    files (``flake.nix``, the CI workflow), which are named."""
    prefix = f"{out}/"

    def inside(names: list[str]) -> list[str]:
        return [n for n in names if n.startswith(prefix)]

    if not result.stale:
        also = "".join(f"; {n} unchanged" for n in result.unchanged if not n.startswith(prefix))
        count = len(inside(result.unchanged))
        return f"{out}/ is up to date ({count} files{also}): nothing written"

    text = (
        f"rendered {out}/: {len(inside(result.added))} added, "
        f"{len(inside(result.changed))} changed, {len(inside(result.removed))} removed, "
        f"{len(inside(result.unchanged))} unchanged"
    )
    outside = [
        f"{name} {kind}"
        for kind, names in (
            ("added", result.added),
            ("changed", result.changed),
            ("removed", result.removed),
        )
        for name in names
        if not name.startswith(prefix)
    ]
    return text + "".join(f"; {item}" for item in outside)


def kept_warnings(
    kept: list[str], root: Path | None = None, backends: Sequence[str] = ()
) -> list[str]:
    """One warning per hand-written project-root file nixgen left alone: a real project
    often ships its own `flake.nix`, and `nixgen build` would then build with it. Given
    the project's `root` (and its build.toml's `backends`), a kept flake.nix gets the
    warning `nixgen migrate` prints for it (`anchorflake.Assessment.note`): what it is,
    what taking it over would lose, and the command that does it."""
    notes = []
    for name in kept:
        if root is not None and name == "flake.nix":
            # The kernel-builder flake reader and its Nix expression parser are imported
            # only where a hand-written flake.nix is kept (CONTRIBUTING, "Performance").
            from nixgen.app import anchorflake

            found = anchorflake.assess(root, backends)
            if found is not None:
                notes.append(found.note())
                continue
        note = (
            f"warning: {name} is hand-written (no `@generated by nixgen` marker), so nixgen "
            f"kept it and did not write its own; `nixgen build` uses it as it is. "
        )
        if name == "flake.nix":
            note += (
                "To hand it over to nixgen: `nixgen render` names what that would lose and the "
                "command."
            )
        else:
            note += f"To hand it over to nixgen, pass --force or remove {name}, then render again."
        notes.append(note)
    return notes
