"""A kernel project read through load → schema → upgrade → validate.

`read` is what every command calls first. It raises `ProblemError` carrying every
located problem when the build.toml cannot be used, and otherwise returns the model with
the warnings found on the way.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nixgen import load, model, schema, upgrade, validate
from nixgen.errors import Problem, ProblemError
from nixgen.record import record
from nixgen.schema.common import Raw


@record
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
    edition, build, warnings = structure(document)
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
