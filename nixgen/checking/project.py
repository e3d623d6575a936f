"""A kernel project read through load → schema → upgrade → validate.

`read` is what every command calls first. It raises `ProblemError` carrying every
located problem when the build.toml cannot be used, and otherwise returns the model with
the warnings found on the way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from nixgen.checking import validate
from nixgen.core.errors import Problem, ProblemError
from nixgen.reading import load, model, schema, upgrade
from nixgen.reading.schema.common import Raw


@attrs.frozen(kw_only=True)
class Project:
    """A validated kernel project."""

    root: Path
    document: load.Document
    edition: int
    build: model.Build
    warnings: list[Problem]


def _build(raw: Raw) -> model.Build:
    return model.Build(general=raw.general, framework=raw.framework, kernels=dict(raw.kernels))


def structure(document: load.Document) -> tuple[int, model.Build, list[Problem]]:
    """Detect the edition, structure against it and upgrade to the model.

    Raises `ProblemError` with located problems when the document is invalid.
    """
    detected = schema.detect(document.data)
    if isinstance(detected, Problem):
        raise ProblemError(document.locate_all([detected]))
    edition = detected.edition
    raw, problems = schema.structure(document.data, edition)
    if raw is None:
        raise ProblemError(document.locate_all(problems))
    warnings = list(problems)
    if edition != schema.CURRENT:
        try:
            upgraded, upgrade_warnings = upgrade.to_edition6(raw, edition)
        except upgrade.UpgradeConflict as exc:
            raise ProblemError(document.locate_all([exc.problem])) from None
        warnings.extend(upgrade_warnings)
        raw, problems = schema.structure(upgraded, schema.CURRENT)
        if raw is None:
            raise ProblemError(document.locate_all([*warnings, *problems]))
    return edition, _build(raw), warnings


#: Rounds of `_salvage`: each drops the values the previous round's errors name.
_SALVAGE_ROUNDS = 8


def _has(node: Any, part: str | int) -> bool:
    """Whether `node` (a TOML table or array) holds `part`."""
    if isinstance(node, dict):
        return isinstance(part, str) and part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _delete(data: Any, path: tuple[str | int, ...]) -> bool:
    """Remove the value at `path` from nested `data`; False when there is none."""
    if not path:
        return False
    *parents, last = path
    node = data
    for part in parents:
        if not _has(node, part):
            return False
        node = node[part]
    if not _has(node, last):
        return False
    if isinstance(node, dict):
        del node[last]
    else:
        node[last] = _DROPPED
    return True


#: Stands for a dropped list item until the list is compacted (indices stay put while
#: one round drops several items of a list).
_DROPPED = object()


def _compact(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _compact(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_compact(v) for v in data if v is not _DROPPED]
    return data


def _salvage(
    document: load.Document, problems: list[Problem]
) -> tuple[model.Build, list[tuple[str | int, ...]]] | None:
    """The model of `document` without the values its errors name (dropped one round at
    a time), and the paths dropped; None when no such model can be had."""
    import copy

    data = copy.deepcopy(document.data)
    dropped: list[tuple[str | int, ...]] = []
    errors = [p for p in problems if p.severity == "error"]
    for _ in range(_SALVAGE_ROUNDS):
        paths = [p.path for p in errors if p.path and p.path[:2] != ("general", "edition")]
        if not paths or not all(_delete(data, path) for path in paths):
            return None
        dropped.extend(paths)
        data = _compact(data)
        try:
            _, build, _ = structure(attrs.evolve(document, data=data))
        except ProblemError as exc:
            errors = exc.errors
            continue
        return build, dropped
    return None


def _table(path: tuple[str | int, ...]) -> tuple[str | int, ...]:
    """The table a key path belongs to: ``kernel.<name>``, else its first part."""
    return path[:2] if path[:1] == ("kernel",) else path[:1]


def _beyond(document: load.Document, problems: list[Problem], root: Path | None) -> list[Problem]:
    """Problems that the schema errors in `problems` would hide: the file problems of
    every value that is valid, and the other rules' problems in the tables that have no
    schema error (in such a table, the rules see the file as the user meant it) when
    [general] has none."""
    salvaged = _salvage(document, problems)
    if salvaged is None:
        return []
    build, dropped = salvaged

    def under_dropped(path: tuple[str | int, ...]) -> bool:
        return any(path[: len(d)] == d for d in dropped)

    broken = {_table(p.path) for p in problems if p.severity == "error"}
    # Every table's rules read [general] (its backends, versions): with an error there,
    # they would judge the other tables against a guess.
    rules = (
        []
        if ("general",) in broken
        else [
            p
            for p in validate.validate(build, None)
            if p.path and not under_dropped(p.path) and _table(p.path) not in broken
        ]
    )
    files = (
        [p for p in validate.files(build, root, includes=False) if not under_dropped(p.path)]
        if root is not None
        else []
    )
    return document.locate_all([*rules, *files])


def read(
    project: Path | str,
    *,
    check_files: bool = True,
    includes: bool = True,
    before_files: Callable[[Path, model.Build], object] | None = None,
) -> Project:
    """Read and validate the project at `project` (a directory or its build.toml).

    `includes=False` skips the scan of the sources' quoted includes (a warning that only
    `nixgen validate` needs: it reads every source). `before_files(root, build)` is called
    once the build is known, just before the project's files are checked."""
    document = load.load(project)
    root = document.path.parent
    try:
        edition, build, warnings = structure(document)
    except ProblemError as exc:
        raise ProblemError(
            [*exc.problems, *_beyond(document, exc.problems, root if check_files else None)]
        ) from None
    # A Rust crate's unlisted Cargo.lock, found where the anchor reads it (a warning).
    build, found = validate.listed_lock_files(build, root)
    warnings.extend(found)
    if before_files is not None:
        before_files(root, build)
    problems = validate.validate(build, root if check_files else None, includes=includes)
    located = document.locate_all([*warnings, *problems])
    if any(p.severity == "error" for p in located):
        raise ProblemError(located)
    return Project(root=root, document=document, edition=edition, build=build, warnings=located)
