"""One project through every stage: read → plan → render → write (or check).

This is what `nixgen render` does, shared with `build`, `watch` and `init`; the click
command only parses options and calls `render_project`. An unchanged project is rendered
in full like any other: `nixgen.writing.write` then touches nothing.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nixgen.core import console
from nixgen.core.errors import EXIT_FAILURE
from nixgen.core.paths import DEFAULT_OUT

if TYPE_CHECKING:
    from nixgen.checking.project import Project
    from nixgen.core.errors import Problem
    from nixgen.planning.plan import Plan
    from nixgen.rendering.library import Library
    from nixgen.rendering.render import Rendered


def prepare(
    project: Path | str, out: str, *, library: str | None = None
) -> tuple[Project, Rendered, list[Problem], Plan]:
    """Read, validate and plan `project`, then render it in memory, with the library
    `library` (``--library``; `library_for`).

    Returns ``(project, rendered, problems, plan)``: the plan is the one rendered, so a
    verb reads its variants from it instead of planning again. Raises `ProblemError` with
    every located problem when the project cannot be rendered, `OutDirError` for a bad `out`,
    `LibraryError` for a bad `library`.
    """
    from nixgen.checking import project as project_mod
    from nixgen.core.errors import ProblemError
    from nixgen.planning import plan
    from nixgen.rendering import render

    render.check_out_dir(out)
    if library is not None:
        from nixgen.rendering.library import parse

        parse(library)  # a bad --library fails before the project is read
    # The include scan is `nixgen validate`'s: a render does not read every source.
    loaded = project_mod.read(project, includes=False)
    finished = plan.make(loaded.build)
    planned = loaded.document.locate_all(list(finished.problems))
    problems = [*loaded.warnings, *planned]
    if any(p.severity == "error" for p in planned):
        raise ProblemError(problems)
    chosen = library_for(loaded.root, out, library)
    return loaded, render.render(finished, out_dir=out, library=chosen), problems, finished


def library_for(root: Path, out: str, given: str | None = None) -> Library:
    """Where the project at `root` takes the static library from: `given` (``--library``),
    else nixgen.toml's ``library``, else the library directory nixgen ships in place when git
    tracks it in the project's own work tree (what a flake of the project sees:
    `gitfiles.unseen_files`), else a vendored copy."""
    from nixgen.app import config
    from nixgen.building import gitfiles
    from nixgen.rendering import library

    value = given if given is not None else config.read(root).library
    if value is not None:
        return library.parse(value)
    found = library.in_place(root, out)
    if found is None:
        return library.COPY
    top = gitfiles.git_work_tree(root)
    if top is None or Path(top).resolve() != found.top:
        return library.COPY
    if gitfiles.unseen_files(found.top, found.needed) is not None:
        return library.COPY  # a library file git does not track: no flake would see it
    return found.library


def with_github_workflow(loaded: Any, rendered: Any, plan: Plan | None = None) -> Any:
    """`rendered` plus the project's GitHub Actions workflow (a project-root file): its
    runners and release settings from nixgen.toml's ``[ci]``, for the (system, backend)
    pairs of `plan` (the project's, planned again when not given)."""
    import attrs

    from nixgen import __version__
    from nixgen.app import config
    from nixgen.planning import variants
    from nixgen.rendering import workflow

    found = plan.variants if plan is not None else variants.variants(loaded.build)
    text = workflow.github_workflow(
        loaded.build.general.name,
        nixgen_version=__version__,
        pairs=[(v.system, v.backend) for v in found],
        settings=config.read(loaded.root).ci,
    )
    return attrs.evolve(rendered, root={**rendered.root, workflow.GITHUB_WORKFLOW: text})


def render_project(
    project: Path | str,
    out: str = DEFAULT_OUT,
    *,
    check: bool = False,
    force: bool = False,
    ci: str | None = None,
    library: str | None = None,
) -> int:
    """Render (or with `check`, compare) `project` with the library `library` (`prepare`);
    print what happened; return the exit status (0, or 1 when `check` finds stale files).
    Failures raise."""
    from nixgen.writing import write

    loaded, rendered, problems, planned = prepare(project, out, library=library)
    if ci == "github":
        rendered = with_github_workflow(loaded, rendered, planned)
    console.print_problems(problems)
    root = loaded.root
    if check:
        result = write.plan(root, rendered, force=True, replace_root=False)
        if result.stale:
            console.out(result.diff, newline=False)
            stale = [*result.added, *result.changed, *result.removed]
            console.err(f"nixgen: {len(stale)} generated file(s) are stale: run `nixgen render`")
            return EXIT_FAILURE
        console.status(f"{out}/ is up to date")
        return 0
    result = write.write(root, rendered, force=force)
    notes = kept_warnings(result.kept, root)
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
    return 0


def retire_out(project: Path | str, old: str, new: str) -> None:
    """After `render --out NEW` moved the output from `old`: remove the earlier tree when
    nixgen wrote all of it (`write.retire`), else say that it is left, and why. Nothing is
    done when one directory holds the other."""
    from nixgen.app import config
    from nixgen.writing import write

    old_parts, new_parts = Path(old).parts, Path(new).parts
    shorter = min(len(old_parts), len(new_parts))
    if old_parts[:shorter] == new_parts[:shorter]:
        return  # the same directory, or one inside the other
    from nixgen.core.errors import OutputError
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


def summary(result: Any, out: str) -> str:
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


def kept_warnings(kept: list[str], root: Path | None = None) -> list[str]:
    """One warning per hand-written project-root file nixgen left alone: a real project
    often ships its own `flake.nix`, and `nixgen build` would then build with it. Given
    the project's `root`, a kept flake.nix gets the exact command that takes it over:
    `nixgen migrate` for kernel-builder's standard flake (`anchorflake`), else moving it
    aside and rendering."""
    notes = []
    for name in kept:
        note = (
            f"warning: {name} is hand-written (no `@generated by nixgen` marker), so nixgen "
            f"kept it and did not write its own; `nixgen build` uses it as it is. "
        )
        if root is not None and name == "flake.nix":
            from nixgen.app import anchorflake

            found = anchorflake.check(root)
            if found is not None and found[1].standard:
                project = shlex.quote(str(root))
                note += (
                    "It is kernel-builder's standard flake: to replace it with nixgen's "
                    f"(keeping it as {anchorflake.BACKUP}), run: nixgen migrate {project}"
                )
            else:
                note += (
                    "To hand it over to nixgen, pass --force or remove flake.nix, then render "
                    f"again; to keep it aside: {anchorflake.take_over_command(root)}"
                )
        else:
            note += f"To hand it over to nixgen, pass --force or remove {name}, then render again."
        notes.append(note)
    return notes
