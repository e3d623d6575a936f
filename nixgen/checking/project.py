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
from nixgen.core.errors import PathPart, Problem, ProblemError
from nixgen.reading import load, model, schema, upgrade
from nixgen.reading import options as options_mod


@attrs.frozen(kw_only=True)
class Project:
    """A validated kernel project."""

    root: Path
    document: load.Document
    edition: int
    build: model.Build
    warnings: list[Problem]
    #: Read as a dialect of its edition (`schema.DIALECT_EDITIONS`): not the field's format.
    dialect: bool = False
    #: The project's nixgen.toml, when it has one.
    options: load.Document | None = None


@attrs.frozen(kw_only=True)
class Structured:
    """A document read into the model: the edition it was written in, whether it is that
    edition's dialect (not the format), the model and the warnings."""

    edition: int
    dialect: bool
    build: model.Build
    warnings: list[Problem]


def read_document(document: load.Document, options: load.Document | None = None) -> Structured:
    """Detect the edition, structure against it (or, when the format refuses it, against
    the edition's dialect) and convert into the model, with `options` (the project's
    nixgen.toml) applied.

    Raises `ProblemError` with located problems when the document is invalid.
    """
    detected = schema.detect(document.data)
    if isinstance(detected, Problem):
        raise ProblemError(document.locate_all([detected]))
    edition = detected.edition
    raw, problems = schema.structure(document.data, edition)
    format_problems = problems
    dialect = False
    if raw is None and edition in schema.DIALECT_EDITIONS:
        read, found = schema.structure_dialect(document.data, edition)
        if read is not None:
            differences = [p for p in problems if p.severity == "error"]
            raw, dialect = read, True
            problems = [*found, upgrade.dialect_warning(edition, differences)]
    if raw is None:
        raise ProblemError(document.locate_all(problems))
    warnings = list(problems)
    try:
        build, converted = upgrade.to_model(raw, edition, dialect=dialect)
    except upgrade.UpgradeConflict as exc:
        if dialect and edition == schema.CURRENT:
            # Not nixgen's earlier edition 6 either: the format's word on it.
            raise ProblemError(document.locate_all(format_problems)) from None
        raise ProblemError(document.locate_all([*warnings, *exc.problems])) from None
    warnings.extend(converted)
    build, option_problems = options_mod.apply(build, options)
    if option_problems:
        raise ProblemError([*document.locate_all(warnings), *option_problems])
    return Structured(edition=edition, dialect=dialect, build=build, warnings=warnings)


def structure(
    document: load.Document, options: load.Document | None = None
) -> tuple[int, model.Build, list[Problem]]:
    """`read_document`'s edition, model and warnings."""
    read = read_document(document, options)
    return read.edition, read.build, read.warnings


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
) -> (
    tuple[model.Build, list[Problem], list[tuple[PathPart, ...]], Callable[[Problem], Problem]]
    | None
):
    """The model of `document` without the values its errors name (dropped one round at
    a time), the schema's warnings about what is left, the paths dropped (in the
    document's own indices) and the map that gives a problem of that model the document's
    indices back (a list whose item was dropped has its later items one place earlier);
    None when no such model can be had."""
    import copy

    data = copy.deepcopy(document.data)
    rounds: list[list[tuple[PathPart, ...]]] = []
    errors = [p for p in problems if p.severity == "error"]
    for _ in range(_SALVAGE_ROUNDS):
        paths = [p.path for p in errors if p.path and p.path[:2] != ("general", "edition")]
        # a required key that is missing has nothing to drop (an earlier dialect, which
        # the next round may read, lets some be left out)
        paths = [path for path in paths if _delete(data, path)]
        if not paths:
            return None
        rounds.append(paths)
        data = _compact(data)
        try:
            _, build, warnings = structure(attrs.evolve(document, data=data))
        except ProblemError as exc:
            errors = exc.errors
            continue
        dropped = [_unshift(path, rounds[:i]) for i, paths in enumerate(rounds) for path in paths]

        def back(problem: Problem) -> Problem:
            return attrs.evolve(problem, path=_unshift(problem.path, rounds))

        return build, warnings, dropped, back
    return None


def _unshift(
    path: tuple[PathPart, ...], rounds: list[list[tuple[PathPart, ...]]]
) -> tuple[PathPart, ...]:
    """`path`, a path in the data left after `rounds` of drops, in the indices of the data
    before them: each dropped list item before an index moves that index one place on."""
    parts = list(path)
    for paths in reversed(rounds):
        for depth in range(len(parts)):
            if not isinstance(parts[depth], int):
                continue
            prefix = tuple(parts[:depth])
            for gone in sorted(
                d[depth] for d in paths if len(d) == depth + 1 and d[:depth] == prefix
            ):
                assert isinstance(gone, int)
                if parts[depth] >= gone:  # type: ignore[operator]
                    parts[depth] += 1  # type: ignore[operator]
    return tuple(parts)


def _table(path: tuple[PathPart, ...]) -> tuple[PathPart, ...]:
    """The table a key path belongs to: ``kernel.<name>``, else its first part."""
    return path[:2] if path[:1] == ("kernel",) else path[:1]


def _beyond(
    document: load.Document,
    problems: list[Problem],
    root: Path | None,
    *,
    includes: bool = False,
    licenses: bool = False,
) -> list[Problem]:
    """Problems that the schema errors in `problems` would hide, from the model without
    the values those errors name: the schema's warnings about the values left, the file
    problems (with `includes`, the include scan's warnings) and, with `licenses`, the
    license check of every value that is valid; and,
    when [general] has no error, the other rules' problems in the tables that have no
    schema error (there, the rules see the file as the user meant it) and, in a table
    that has one, those about the other items of a list that lost an item (each item is
    judged alone: `11.8` beside an invalid `9.O`)."""
    salvaged = _salvage(document, problems)
    if salvaged is None:
        return []
    build, warnings, dropped, back = salvaged

    def suspect(path: tuple[PathPart, ...]) -> bool:
        """About a dropped value, or about a table or list that held one."""
        return any(path[: len(d)] == d or d[: len(path)] == path for d in dropped)

    def beside(path: tuple[PathPart, ...]) -> bool:
        """Inside a list that lost an item."""
        return any(
            isinstance(d[-1], int) and len(path) >= len(d) and path[: len(d) - 1] == d[:-1]
            for d in dropped
        )

    broken = {_table(p.path) for p in problems if p.severity == "error"}
    # Every table's rules read [general] (its backends, versions): with an error there,
    # they would judge the other tables against a guess.
    rules = (
        []
        if ("general",) in broken
        else [
            p
            for p in map(back, validate.validate(build, None))
            if p.path and (_table(p.path) not in broken or beside(p.path))
        ]
    )
    files = validate.files(build, root, includes=includes) if root is not None else []
    # (a notice that the salvaged document reads as a dialect speaks of what was dropped)
    kept = [w for w in warnings if not upgrade.is_migration_notice(w)]
    others = [back(p) for p in [*kept, *files, *(_licenses(build) if licenses else [])]]
    return document.locate_all([p for p in [*rules, *others] if p.path and not suspect(p.path)])


def _licenses(build: model.Build) -> list[Problem]:
    """`nixgen.checking.validate.license_problems`, when general.license is known."""
    return validate.license_problems(build) if build.general.license else []


def locate(
    document: load.Document, options: load.Document | None, problems: list[Problem]
) -> list[Problem]:
    """Each problem located in the file that holds its key: nixgen.toml for a kernel it
    defines and for a kernel's option it sets, build.toml for everything else."""
    return [
        options.locate(p)
        if options is not None and _in_options(options, p.path)
        else document.locate(p)
        for p in problems
    ]


def _in_options(options: load.Document, path: tuple[PathPart, ...]) -> bool:
    if len(path) < 2 or path[0] != options_mod.TABLE:
        return False
    tables = options.data.get(options_mod.TABLE)
    table = tables.get(path[1]) if isinstance(tables, dict) else None
    if not isinstance(table, dict):
        return False
    return "language" in table or (len(path) >= 3 and path[2] in table)


def read(
    project: Path | str,
    *,
    check_files: bool = True,
    includes: bool = True,
    licenses: bool = False,
) -> Project:
    """Read and validate the project at `project` (a directory or its build.toml).

    `includes=False` skips the scan of the sources' quoted includes (a warning that only
    `nixgen validate` needs: it reads every source); `licenses` adds the SPDX check of
    general.license (`nixgen validate`'s too). Every problem of every stage is reported
    at once: a schema error does not hide the other problems (`_beyond`)."""
    document = load.load(project)
    root = document.path.parent
    options = options_mod.load_file(root)
    try:
        read_ = read_document(document, options)
    except ProblemError as exc:
        beyond = _beyond(
            document,
            exc.problems,
            root if check_files else None,
            includes=includes,
            licenses=licenses,
        )
        raise ProblemError([*exc.problems, *beyond]) from None
    edition, build, warnings = read_.edition, read_.build, read_.warnings
    # A Rust crate's unlisted Cargo.lock, found where the anchor reads it (a warning), and
    # its library name, read from its Cargo.toml.
    build, found = validate.listed_lock_files(build, root)
    warnings.extend(found)
    if check_files:
        build, found = validate.crate_libraries(build, root)
        warnings.extend(found)
    problems = validate.validate(build, root if check_files else None, includes=includes)
    if licenses:
        problems.extend(_licenses(build))
    located = locate(document, options, [*warnings, *problems])
    if any(p.severity == "error" for p in located):
        raise ProblemError(located)
    return Project(
        root=root,
        document=document,
        edition=edition,
        build=build,
        warnings=located,
        dialect=read_.dialect,
        options=options,
    )
