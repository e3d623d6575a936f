"""One project through every stage: read → plan → render → write (or check).

This is what `nixgen render` does, shared with `build`, `watch` and `init`; the click
command only parses options and calls `render_project` (or, for an unchanged project,
`fresh_render`, which answers from the render stamp before cattrs or Jinja2 load).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nixgen.cmdline import output


def prepare(
    project: Path | str,
    out: str,
    *,
    library: str | None = None,
    before_files: Callable[[Path, Any], object] | None = None,
) -> Any:
    """Read, validate and plan `project`, then render it in memory, with the library
    `library` (``--library``; `library_for`).

    Returns ``(project, rendered, problems)``; raises `ProblemError` with every located
    problem when the project cannot be rendered, `OutDirError` for a bad `out`,
    `LibraryError` for a bad `library`. `before_files` is `nixgen.checking.project.read`'s.
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
    loaded = project_mod.read(project, includes=False, before_files=before_files)
    finished = plan.make(loaded.build)
    planned = loaded.document.locate_all(list(finished.problems))
    problems = [*loaded.warnings, *planned]
    if any(p.severity == "error" for p in planned):
        raise ProblemError(problems)
    chosen = library_for(loaded.root, out, library)
    return loaded, render.render(finished, out_dir=out, library=chosen), problems


def library_for(root: Path, out: str, given: str | None = None) -> Any:
    """Where the project at `root` takes the static library from (a
    `nixgen.rendering.library.Library`): `given` (``--library``), else nixgen.toml's
    ``library``, else the library directory nixgen ships in place when git tracks it in the
    project's own work tree (what a flake of the project sees: `nixbuild.unseen_files`),
    else a vendored copy."""
    from nixgen.cmdline import config
    from nixgen.rendering import library

    value = given if given is not None else config.read(root).library
    if value is not None:
        return library.parse(value)
    found = library.in_place(root, out)
    if found is None:
        return library.COPY
    from nixgen.cmdline import nixbuild

    top = nixbuild.git_work_tree(root)
    if top is None or Path(top).resolve() != found.top:
        return library.COPY
    if nixbuild.unseen_files(found.top, found.needed) is not None:
        return library.COPY  # a library file git does not track: no flake would see it
    return found.library


def fresh_render(project: Path | str, out: str) -> bool:
    """Say that `out` is up to date and return True when the render stamp of `project`
    (`nixgen.writing.stamp`) shows that nothing changed since the last render; else False, and
    the render must run. ``NIXGEN_NO_STAMP=1`` always renders."""
    import os

    from nixgen.writing import stamp

    if os.environ.get("NIXGEN_NO_STAMP"):
        return False
    project = str(project)
    is_project_dir = os.path.isdir(project) and not project.endswith(".toml")
    if not is_project_dir and os.path.basename(project) != "build.toml":
        return False  # the stamp records build.toml; another file is always rendered
    root = project if is_project_dir else os.path.dirname(project) or "."
    from nixgen import __file__ as package
    from nixgen.core import paths

    # Whether git tracks the library beside the project (`library_for`) is not in the
    # stamp: in the work tree of nixgen's own library, always render.
    top = paths.work_tree_above(os.path.join(os.path.dirname(package), "nixlib"))
    if top is not None and paths.work_tree_above(root) == top:
        return False
    found = stamp.fresh(root, out)
    if found is None:
        return False
    if found["messages"]:
        output.err(found["messages"])
    output.status(f"{out}/ is up to date ({len(found['outputs'])} files)")
    return True


def with_github_workflow(loaded: Any, rendered: Any) -> Any:
    """`rendered` plus the project's GitHub Actions workflow (a project-root file)."""
    import attrs

    from nixgen import __version__
    from nixgen.planning import matrix

    workflow = matrix.github_workflow(loaded.build.general.name, nixgen_version=__version__)
    return attrs.evolve(rendered, root={**rendered.root, matrix.GITHUB_WORKFLOW: workflow})


def render_project(
    project: Path | str,
    out: str = "nix",
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

    # The state of the listed files' directories just before the files are validated
    # (see `save_stamp`).
    states: list[dict[str, str] | None] = []

    def take_states(root: Path, build: Any) -> None:
        if not check:
            states.append(_file_states(root, build))

    loaded, rendered, problems = prepare(project, out, library=library, before_files=take_states)
    if ci == "github":
        rendered = with_github_workflow(loaded, rendered)
    output.print_problems(problems)
    root = loaded.root
    if check:
        result = write.plan(root, rendered, force=True, replace_root=False)
        if result.stale:
            output.out(result.diff, newline=False)
            stale = [*result.added, *result.changed, *result.removed]
            output.err(f"nixgen: {len(stale)} generated file(s) are stale: run `nixgen render`")
            return 1
        output.status(f"{out}/ is up to date")
        return 0
    result = write.write(root, rendered, force=force)
    notes = kept_warnings(result.kept, root)
    for note in notes:
        output.err(note)
    save_stamp(loaded, rendered, problems, notes, validated=states[0] if states else None)
    output.status(summary(result, out))
    for kind, names in (
        ("added", result.added),
        ("changed", result.changed),
        ("removed", result.removed),
    ):
        for name in names:
            output.status(f"  {kind} {name}", level=1)
    return 0


def summary(result: Any, out: str) -> str:
    """What a write did, the files under `out` counted apart from the project-root
    files (``flake.nix``, the CI workflow), which are named."""
    if not result.stale:
        return f"{out}/ is up to date ({len(result.unchanged)} files)"
    prefix = f"{out}/"

    def inside(names: list[str]) -> list[str]:
        return [n for n in names if n.startswith(prefix)]

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
            from nixgen.cmdline import anchorflake

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


def _stamp_files(build: Any) -> list[str]:
    """The files a render's validity depends on (`nixgen.checking.validate.inputs`)."""
    from nixgen.checking import validate

    return validate.inputs(build).files


def _file_states(root: Path, build: Any) -> dict[str, str] | None:
    """`nixgen.writing.stamp.parent_states` of the files of `build`; None when they cannot be
    taken."""
    from nixgen.writing import stamp

    try:
        return stamp.parent_states(root, _stamp_files(build))
    except OSError:
        return None


def save_stamp(
    loaded: Any,
    rendered: Any,
    problems: list[Any],
    notes: Sequence[str] = (),
    *,
    validated: dict[str, str] | None = None,
) -> None:
    """Record what this render used and wrote, so an unchanged re-render can stop early
    (`nixgen.cmdline.entry`). `validated` is `_file_states` as taken just before the files of
    `loaded` were validated, when known."""
    from nixgen.checking import validate
    from nixgen.core.errors import render_problems
    from nixgen.core.marker import is_generated
    from nixgen.writing import stamp

    root, out, build = loaded.root, rendered.out_dir, loaded.build
    # Taken now, recorded in the stamp: a change after this moment makes the stamp stale.
    parents = _file_states(root, build)
    if parents is None:
        stamp.forget(root, out)
        return
    # The files were valid when checked; when any directory of theirs has changed since
    # the states taken before that check (or those are unknown), check them again: a
    # change before `parents` was taken must not hide behind the stamp.
    if parents != validated and any(
        p.severity == "error" for p in validate.files(build, root, includes=False)
    ):
        stamp.forget(root, out)
        return
    outputs = {f"{out}/{rel}": data for rel, data in rendered.tree.items()}
    skipped = []
    for name, data in rendered.root.items():
        if is_generated(root / name):
            outputs[name] = data
        else:
            skipped.append(name)
    stamp.save(
        root,
        out,
        stamp.make(
            root=root,
            # What was parsed, not what the file holds now: an edit during the render
            # must leave a stamp that does not match the new content.
            build_toml=loaded.document.text.encode(),
            out_dir=out,
            files=_stamp_files(build),
            dirs=validate.inputs(build).dirs,
            outputs=outputs,
            skipped=skipped,
            messages="\n".join([*([render_problems(problems)] if problems else []), *notes]),
            parents=parents,
        ),
    )
