"""One project through every stage: read → plan → render → write (or check).

This is what `nixgen render` does, shared with `build`, `watch` and `init`. It does not
use click, so the plain ``nixgen render [PROJECT] [--out DIR]`` can run without loading
it (`nixgen.entry`); the click command only parses options and calls `render_project`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nixgen import output


def prepare(project: Path | str, out: str) -> Any:
    """Read, validate and plan `project`, then render it in memory.

    Returns ``(project, rendered, problems)``; raises `ProblemError` with every located
    problem when the project cannot be rendered, `OutDirError` for a bad `out`.
    """
    from nixgen import plan, render
    from nixgen import project as project_mod
    from nixgen.errors import ProblemError

    render.check_out_dir(out)
    loaded = project_mod.read(project)
    planned = loaded.document.locate_all(plan.check(loaded.build))
    problems = [*loaded.warnings, *planned]
    if any(p.severity == "error" for p in planned):
        raise ProblemError(problems)
    return loaded, render.render(loaded.build, out_dir=out), problems


def with_github_workflow(loaded: Any, rendered: Any) -> Any:
    """`rendered` plus the project's GitHub Actions workflow (a project-root file)."""
    import attrs

    from nixgen import __version__, matrix

    workflow = matrix.github_workflow(loaded.build.general.name, nixgen_version=__version__)
    return attrs.evolve(rendered, root={**rendered.root, matrix.GITHUB_WORKFLOW: workflow})


def render_project(
    project: Path | str,
    out: str = "nix",
    *,
    check: bool = False,
    force: bool = False,
    ci: str | None = None,
) -> int:
    """Render (or with `check`, compare) `project`; print what happened; return the exit
    status (0, or 1 when `check` finds stale files). Failures raise."""
    from nixgen import write

    loaded, rendered, problems = prepare(project, out)
    if ci == "github":
        rendered = with_github_workflow(loaded, rendered)
    output.print_problems(problems)
    root = loaded.root
    if check:
        result = write.plan(root, rendered, force=True)
        if result.stale:
            output.out(result.diff, newline=False)
            stale = [*result.added, *result.changed, *result.removed]
            output.err(f"nixgen: {len(stale)} generated file(s) are stale: run `nixgen render`")
            return 1
        output.out(f"{out}/ is up to date")
        return 0
    result = write.write(root, rendered, force=force)
    save_stamp(loaded, rendered, problems)
    if not result.stale:
        output.out(f"{out}/ is up to date ({len(result.unchanged)} files)")
    else:
        output.out(
            f"rendered {out}/: {len(result.added)} added, {len(result.changed)} changed, "
            f"{len(result.removed)} removed, {len(result.unchanged)} unchanged"
        )
    return 0


def save_stamp(loaded: Any, rendered: Any, problems: list[Any]) -> None:
    """Record what this render used and wrote, so an unchanged re-render can stop early
    (`nixgen.entry`)."""
    from nixgen import model, stamp, validate, write
    from nixgen.errors import render_problems
    from nixgen.validate import python_package_dir

    root, out, build = loaded.root, rendered.out_dir, loaded.build
    outputs = {f"{out}/{rel}": data for rel, data in rendered.tree.items()}
    skipped = []
    for name, data in rendered.root.items():
        if write.is_generated(root / name):
            outputs[name] = data
        else:
            skipped.append(name)
    dirs = {d for k in build.kernels.values() for d in getattr(k, "include", [])}
    if isinstance(build.framework, (model.Torch, model.TvmFfi)):
        dirs.update(build.framework.include)
    files = [*build.source_files(), f"{python_package_dir(build)}/__init__.py"]
    try:
        # Taken before the files are checked again below: a change after this moment
        # makes the stamp stale; one before it fails the check, and no stamp is saved.
        parents = stamp.parent_states(root, files)
    except OSError:
        stamp.forget(root, out)
        return
    if any(p.severity == "error" for p in validate.files(build, root)):
        stamp.forget(root, out)
        return
    stamp.save(
        root,
        out,
        stamp.make(
            root=root,
            # What was parsed, not what the file holds now: an edit during the render
            # must leave a stamp that does not match the new content.
            build_toml=loaded.document.text.encode(),
            out_dir=out,
            files=files,
            dirs=sorted(dirs),
            outputs=outputs,
            skipped=skipped,
            messages=render_problems(problems) if problems else "",
            parents=parents,
        ),
    )
