"""nixgen.toml: the project's settings of nixgen's own options, beside build.toml.

build.toml says what the kernels are (the ecosystem's file, read by kernel-builder and the
`kernels` client too); nixgen.toml says how nixgen runs on them, as `uv.toml` does for uv
and `.cargo/config.toml` for cargo. Every verb that takes one of these options reads it;
an option given on the command line wins; `nixgen show` prints the settings in effect::

    out = "gen"                 # --out: where the generated Nix lives
    library = "input:github:OWNER/nixgen/REV"   # --library (render): vendored or input:URL
    offline = true              # --offline (build, shell)
    [override-input]            # --override-input NAME REF (build, shell)
    nixpkgs = "path:/srv/nixpkgs"
    [ci]                        # the workflow of `render --ci github` (`planning.runners`)
    [backend.cpu]               # what a kernel-builder flake said (`planning.settings`):
    systems = ["x86_64-linux"]  #   a backend's systems and torch bounds, a CUDA ptxas pin
    [test]                      # ... and the test environment's extra Python packages
    python-depends = ["einops"]

`nixgen render --out DIR` records ``out`` here, so that a plain `render` (or `build`)
writes and builds DIR/ instead of silently going back to nix/; `--library` likewise records
``library``, so that a later render (`build` renders too) keeps the library where it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nixgen.core.errors import Problem, ProblemError, did_you_mean, error, format_path, one_of
from nixgen.core.paths import DEFAULT_OUT

if TYPE_CHECKING:
    from nixgen.planning.runners import CiSettings
    from nixgen.planning.settings import ProjectSettings

FILE = "nixgen.toml"
KEYS = ("backend", "ci", "library", "offline", "out", "override-input", "test")


@attrs.frozen(kw_only=True)
class Settings:
    """What nixgen.toml sets (None or empty: not set)."""

    out: str | None = None
    #: `--library`: ``vendored`` or ``input:URL`` (`nixgen.rendering.library.parse`).
    library: str | None = None
    offline: bool | None = None
    override_input: dict[str, str] = attrs.field(factory=dict)
    #: ``[ci]``: the generated workflow's runners, timeouts and release settings.
    ci: CiSettings = attrs.field(factory=lambda: _no_ci())
    #: ``[backend.<name>]`` and ``[test]``: what the plan, the shells and the checks apply.
    project: ProjectSettings = attrs.field(factory=lambda: _no_project())
    #: The file they were read from, None when the project has none.
    file: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "out": self.out,
            "library": self.library,
            "offline": self.offline,
            "override-input": dict(self.override_input),
            "ci": self.ci.to_json(),
            **self.project.to_json(),
        }


def _no_ci() -> CiSettings:
    from nixgen.planning.runners import CiSettings  # the planner, only where it is used

    return CiSettings()


def _no_project() -> ProjectSettings:
    from nixgen.planning.settings import NO_SETTINGS

    return NO_SETTINGS


def project_root(project: Path | str) -> Path:
    """The project directory of PROJECT (a directory or its build.toml)."""
    path = Path(project)
    return path if path.is_dir() else path.parent


def read(project: Path | str) -> Settings:
    """The settings of `project`; `ProblemError` with located problems when nixgen.toml
    is not valid."""
    path = project_root(project) / FILE
    if not path.is_file():
        return Settings()  # no TOML reader is loaded for a project without nixgen.toml
    from nixgen.reading import load

    display = load.display_name(path)
    document = load.parse(load.read_text(path, display), path, display)
    data = document.data
    problems: list[Problem] = []
    for key in data:
        if key not in KEYS:
            problems.append(
                attrs.evolve(
                    error(
                        f"unknown key `{key}`{did_you_mean(key, KEYS)}; allowed keys: "
                        f"{one_of(KEYS)}",
                        (key,),
                    ),
                    at_key=True,
                )
            )
    out = data.get("out")
    if out is not None:
        from nixgen.rendering.render import OutDirError, check_out_dir

        if not isinstance(out, str):
            problems.append(
                error("expected a string (a directory relative to the project)", ("out",))
            )
            out = None
        else:
            try:
                check_out_dir(out)
            except OutDirError as exc:
                problems.append(error(str(exc), ("out",)))
                out = None
    library = data.get("library")
    if library is not None:
        from nixgen.rendering.library import LibraryError, parse

        if not isinstance(library, str):
            problems.append(error("expected a string (`vendored` or `input:URL`)", ("library",)))
            library = None
        else:
            try:
                parse(library)
            except LibraryError as exc:
                problems.append(error(str(exc), ("library",)))
                library = None
    offline = data.get("offline")
    if offline is not None and not isinstance(offline, bool):
        problems.append(error("expected `true` or `false`", ("offline",)))
    overrides = data.get("override-input", {})
    if not isinstance(overrides, dict):
        problems.append(
            error("expected a table of input names and flake references", ("override-input",))
        )
        overrides = {}
    for name, ref in overrides.items():
        if not isinstance(ref, str) or not ref:
            problems.append(
                error("expected a flake reference (`path:/srv/nixpkgs`)", ("override-input", name))
            )
    ci = _no_ci()
    if "ci" in data:
        from nixgen.planning import runners

        ci, found = runners.parse(data["ci"], ("ci",))
        problems += found
    chosen = _no_project()
    if "backend" in data or "test" in data:
        from nixgen.planning import settings

        chosen, found = settings.parse(data)
        problems += found
    if problems:
        raise ProblemError(document.locate_all(problems))
    return Settings(
        out=out,
        library=library,
        offline=offline,
        override_input={k: v for k, v in overrides.items() if isinstance(v, str)},
        ci=ci,
        project=chosen,
        file=display,
    )


def project_settings(project: Path | str) -> ProjectSettings:
    """What nixgen.toml's ``[backend.<name>]`` tables and ``[test]`` set for `project`: the
    settings every plan of it applies (`nixgen.planning.variants.variants`)."""
    return read(project).project


def out_dir(project: Path | str, given: str | None) -> str:
    """The output directory: `given` (``--out``) when given, else nixgen.toml's, else
    nix/."""
    if given is not None:
        return given
    return read(project).out or DEFAULT_OUT


def overrides(project: Path | str, given: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The flake inputs to override: nixgen.toml's, each replaced by a `given` one
    (``--override-input``) of the same name."""
    named = dict(read(project).override_input)
    for name, ref in given:
        named.pop(name, None)
        named[name] = ref
    return tuple(named.items())


def offline(project: Path | str, given: bool) -> bool:
    """Whether to build offline: ``--offline``, or nixgen.toml's ``offline = true``."""
    return given or bool(read(project).offline)


_HEADER = (
    "# nixgen's own options for this project (see nixgen's README, \"nixgen.toml\");\n"
    "# every verb reads them, and an option on the command line wins.\n"
)


def remember_out(project: Path | str, out: str) -> str | None:
    """Record ``out`` in nixgen.toml when it differs from the setting in effect; return
    the file's name when it was written, else None."""
    if read(project).out == out or (out == DEFAULT_OUT and read(project).out is None):
        return None
    return _remember(project, "out", out)


def remember_library(project: Path | str, library: str) -> str | None:
    """Record ``library`` (`--library`) in nixgen.toml when it differs from the setting in
    effect; return the file's name when it was written, else None."""
    from nixgen.rendering.library import VENDORED

    current = read(project).library
    if current == library or (library == VENDORED and current is None):
        return None
    return _remember(project, "library", library)


def _remember(project: Path | str, key: str, value: str) -> str:
    """Set the top-level ``key = "value"`` of nixgen.toml (made when absent), in place of
    the line that sets it or before the first table; the file is replaced atomically."""
    root = project_root(project)
    path = root / FILE
    line = f"{key} = {json.dumps(value)}"
    pattern = re.compile(rf"\s*{re.escape(key)}\s*=")
    lines = (path.read_text(encoding="utf-8") if path.is_file() else _HEADER).splitlines()
    first_table = next((i for i, x in enumerate(lines) if x.lstrip().startswith("[")), len(lines))
    at = next((i for i in range(first_table) if pattern.match(lines[i])), None)
    if at is not None:
        lines[at] = line
    else:
        lines[first_table:first_table] = [line, ""] if first_table < len(lines) else [line]
    new = "\n".join(lines) + "\n"
    tmp = path.with_name(f".{FILE}.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(path)
    return FILE


def describe(settings: Settings) -> list[str]:
    """The settings in effect, as `nixgen show` prints them."""
    where = settings.file or f"none ({FILE} is absent)"
    lines = [f"settings: {where}", f"  out = {json.dumps(settings.out or DEFAULT_OUT)}"]
    lines.append(
        f"  library = {json.dumps(settings.library)}"
        if settings.library
        else "  library = (default: vendored; in place inside nixgen's own repository)"
    )
    lines.append(f"  offline = {'true' if settings.offline else 'false'}")
    for name, ref in settings.override_input.items():
        lines.append(f"  override-input.{name} = {json.dumps(ref)}")
    lines += [
        f"  {format_path(path)} = {json.dumps(value)}"
        for path, value in _flat(settings.ci.to_json(), ("ci",))
    ]
    lines += [
        f"  {format_path(path)} = {json.dumps(value)}"
        for path, value in _flat(settings.project.to_json(), ())
    ]
    return lines


def _flat(table: dict[str, Any], prefix: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """Each value of a nested table by its key path (a `runs-on` table is one value)."""
    out: list[tuple[tuple[str, ...], Any]] = []
    for key, value in table.items():
        if isinstance(value, dict) and key not in ("runs-on", "ptxas"):
            out += _flat(value, (*prefix, key))
        else:
            out.append(((*prefix, key), value))
    return out
