"""What a flake in a git work tree cannot see: the files the build needs that git does not
track (untracked, ignored, inside a submodule), as located problems with the `git add` that
fixes them (`nixgen build`, `shell`, `compdb`); and a ``path:`` library
(`nixgen.rendering.library`) that lies outside what the flake reads, or is not tracked."""

from __future__ import annotations

import os
import posixpath
import shlex
import stat
from collections.abc import Sequence
from pathlib import Path

import attrs

from nixgen.building import gitcommand, process
from nixgen.checking import validate
from nixgen.checking.project import Project
from nixgen.core import paths
from nixgen.core.errors import Problem, error
from nixgen.reading import model
from nixgen.rendering import library as library_mod
from nixgen.rendering.render import Rendered

#: Seconds one git command may take.
GIT_TIMEOUT = 120.0


def _git(command: process.Command, *, stdin: str | None = None) -> str | None:
    """The output of a git command (`gitcommand`), or None when git is missing or fails."""
    try:
        done = process.run(
            command,
            cwd=None,
            input=stdin,
            errors="surrogateescape",
            timeout=GIT_TIMEOUT,
        )
    except process.ProgramMissing:
        return None
    if done.stdout_truncated:
        return None
    return done.stdout if done.code in (0, 1) else None


def git_work_tree(root: Path) -> Path | None:
    """The top of the git work tree `root` is in, or None (not in one, or no git)."""
    top = _git(gitcommand.show_toplevel(root))
    return Path(top.strip()) if top and top.strip() else None


@attrs.frozen
class Unseen:
    """Files a flake in a git work tree would not see: Nix copies only what git tracks
    (`git ls-files`, which includes files added with ``--intent-to-add``)."""

    #: Not tracked (and not ignored), relative to the project.
    untracked: list[str]
    #: Ignored by a .gitignore rule (so `git add` alone refuses them).
    ignored: list[str]
    #: Whether the project has no tracked file at all.
    nothing_tracked: bool
    #: Files inside a git submodule (file -> the submodule's path): committed there, but
    #: a flake of the enclosing repository does not copy a submodule's files (Nix fetches
    #: them only with `submodules=1`), and `git add` in the enclosing one refuses them.
    in_submodule: dict[str, str] = attrs.field(factory=dict)


def unseen_files(root: Path, needed: Sequence[str]) -> Unseen | None:
    """Which of `needed` (paths relative to `root`: files, or directories standing for
    every file under them) a flake at `root` would not see; None outside a git work
    tree, or when every file is tracked. Ignored files count only when named in
    `needed` themselves."""
    if git_work_tree(root) is None:
        return None
    files: list[str] = []
    #: Files named in `needed` themselves (not found under a directory of it).
    named: set[str] = set()
    for rel in needed:
        # `nixgen.core.paths` walks the project: no link is followed, and a link (to a
        # file or a directory) is itself a file git tracks or not.
        found = paths.lstat_under(root, rel)
        if isinstance(found, os.stat_result) and stat.S_ISDIR(found.st_mode):
            for directory, _, names in paths.walk(root / rel):
                base = posixpath.join(rel, directory) if directory else rel
                files.extend(posixpath.normpath(posixpath.join(base, n)) for n in names)
        elif found is not None:
            files.append(rel)
            named.add(rel)
    files = list(dict.fromkeys(files))
    listed = _git(gitcommand.ls_files(root))
    if listed is None:
        return None
    tracked: set[str] = set()
    gitlinks: list[str] = []
    for entry in filter(None, listed.split("\0")):
        info, _, name = entry.partition("\t")
        tracked.add(name)
        if info.startswith("160000 "):  # a submodule's commit
            gitlinks.append(name)
    missing = [f for f in files if f not in tracked]
    if not missing:
        return None
    in_submodule = {f: link for f in missing for link in gitlinks if f.startswith(f"{link}/")}
    missing = [f for f in missing if f not in in_submodule]
    ignored_out = (
        _git(gitcommand.check_ignore(root), stdin="\0".join(missing) + "\0") if missing else ""
    )
    if ignored_out is None:
        ignored_out = ""
    ignored = set(filter(None, ignored_out.split("\0")))
    # An ignored file under a listed directory (`__pycache__/`, a crate's `target/`) is
    # meant to stay out: only an ignored file that is named itself is missed.
    unseen = Unseen(
        untracked=[f for f in missing if f not in ignored],
        ignored=[f for f in missing if f in ignored and f in named],
        nothing_tracked=not tracked,
        in_submodule=in_submodule,
    )
    return unseen if unseen.untracked or unseen.ignored or in_submodule else None


def source_keys(build: model.Build) -> dict[str, tuple[str | int, ...]]:
    """The key path where each listed file is named first (``kernel.relu.src[0]``)."""
    keys: dict[str, tuple[str | int, ...]] = {}
    for path, rel in validate.listed_files(build):
        keys.setdefault(rel, path)
    return keys


def unseen_problems(
    loaded: Project, rendered: Rendered, root: Path, *, new: Sequence[str] = ()
) -> list[Problem]:
    """Located problems for the files the build needs that the flake would not see,
    because the project is in a git work tree and git does not track them; `new` are
    files a render would add (untracked by definition); then those of a ``path:`` library
    (`library_problems`). Empty outside a git work tree, but for a library outside the
    project."""
    return [
        *_project_problems(loaded, rendered, root, new=new),
        *library_problems(root, rendered.library),
    ]


def library_problems(root: Path, library: library_mod.Library) -> list[Problem]:
    """What keeps a flake of the project at `root` from reading its ``path:`` library: a
    flake reads only its own source tree (the git work tree it lies in, of which it copies
    the tracked files; outside git, the project directory), so the library must lie there,
    and in git be tracked. Empty for another library."""
    needed = library_mod.needed_files(root, library)
    if not needed:
        return []
    named = f"the library `{library_mod.PATH}{library.directory}`"
    found = git_work_tree(root)
    top = os.path.realpath(found if found is not None else root)
    outside = [p for p in needed if not paths.inside(top, p)]
    if outside:
        where = (
            f"the git work tree {shown_path(top)}"
            if found is not None
            else "the project directory (it is in no git work tree)"
        )
        return [
            error(
                f"{named} ({shown_path(os.path.dirname(outside[0]))}) lies outside "
                f"{where}, and a flake reads only its own source tree, so the build would "
                "not see it",
                hint="put the project and the library in one git repository, or render with "
                "`--library vendored` (a copy in the output tree)",
            )
        ]
    if found is None:
        return []
    unseen = unseen_files(Path(top), [os.path.relpath(p, top) for p in needed])
    if unseen is None:
        return []
    missing = [*unseen.untracked, *unseen.ignored, *unseen.in_submodule]
    names = ", ".join(shown_path(os.path.join(top, r)) for r in missing[:3])
    more = ", …" if len(missing) > 3 else ""
    return [
        error(
            f"{len(missing)} file(s) of {named} are not tracked by git ({names}{more}), or "
            "lie in a submodule; Nix copies only the files git tracks into the store, so the "
            "build would not see them",
            hint="track them (`git add`) in the repository that holds the project, or render "
            "with `--library vendored` (a copy in the output tree)",
        )
    ]


def shown_path(path: str) -> str:
    """`path` as the messages show it: relative to the working directory."""
    return os.path.relpath(path)


def _project_problems(
    loaded: Project, rendered: Rendered, root: Path, *, new: Sequence[str]
) -> list[Problem]:
    """`unseen_problems` of the project's own files."""
    build = loaded.build
    generated = [f"{rendered.out_dir}/{rel}" for rel in sorted(rendered.tree)]
    generated += sorted(rendered.root)
    if (root / "flake.lock").exists():
        generated.append("flake.lock")
    sources = source_keys(build)
    package = model.python_package_dir(build)
    needed = [*generated, *sources, package]
    found = unseen_files(root, needed)
    new = [f for f in new if f not in (found.untracked if found else [])]
    if found is None and (not new or git_work_tree(root) is None):
        return []  # outside a git work tree, a flake sees every file
    untracked = [*(found.untracked if found else []), *new]
    ignored = found.ignored if found else []
    nothing_tracked = found.nothing_tracked if found else False
    in_submodule = found.in_submodule if found else {}

    def shown(rel: str) -> str:
        return os.path.relpath(root / rel)

    out_prefix = f"{rendered.out_dir}/"

    def group(rel: str) -> str:
        """What to `git add` for `rel`: the output directory or the Python package as a
        whole, any other file itself."""
        if rel.startswith(out_prefix):
            return str(rendered.out_dir)
        return package if rel.startswith(f"{package}/") else rel

    problems: list[Problem] = []
    why = "Nix copies only the files git tracks into the store"
    for rel, link in in_submodule.items():
        message = (
            f"is inside the git submodule `{link}`: committed there, but a flake does not "
            "copy a submodule's files into the store (Nix fetches them only with "
            "`submodules=1`), so the build would not see it; make it part of the "
            "project's own repository"
        )
        if rel in sources:
            problems.append(loaded.document.locate(error(f"`{rel}` {message}", sources[rel])))
        else:
            problems.append(error(message).located(shown(rel), None, None))
    if not untracked and not ignored:
        return problems
    for rel in [*untracked, *ignored]:
        what = "is ignored by git (.gitignore)" if rel in ignored else "is not tracked by git"
        if rel in sources:
            problems.append(
                loaded.document.locate(
                    error(f"`{rel}` {what}; {why}, so the build would not see it", sources[rel])
                )
            )
        elif not rel.startswith(out_prefix):
            message = f"{what}; {why}, so the build would not see it"
            problems.append(error(message).located(shown(rel), None, None))
    out_files = [r for r in [*untracked, *ignored] if r.startswith(out_prefix)]
    if out_files:
        names = ", ".join(r.removeprefix(out_prefix) for r in out_files[:3])
        more = ", …" if len(out_files) > 3 else ""
        problems.append(
            error(
                f"{len(out_files)} generated file(s) are not tracked by git ({names}{more}); "
                f"{why}, so the build would not see them"
            ).located(shown(rendered.out_dir) + "/", None, None)
        )
    if nothing_tracked and not ignored:
        add = [shown(".")]
    else:
        add = list(dict.fromkeys(shown(group(r)) for r in untracked))
    fixes = []
    if add:
        paths = shlex.join(["--", *add])
        fixes.append(
            f"run `git add {paths}`, or `git add --intent-to-add {paths}` to keep them out "
            "of your next commit"
        )
    if ignored:
        forced = dict.fromkeys(shown(group(r)) for r in ignored)
        fixes.append(f"{'' if add else 'run '}`git add --force {shlex.join(['--', *forced])}`")
    count = len(untracked) + len(ignored)
    problems.append(
        error(
            f"{count} file(s) the build needs are not tracked by git, and a flake in a git "
            "work tree sees only tracked files: " + "; for the ignored ones, ".join(fixes)
        )
    )
    return problems
