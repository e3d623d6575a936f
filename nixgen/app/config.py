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

Its ``[kernel.<name>]`` tables say what nixgen builds beyond build.toml's format (a Rust
crate's Cargo features, Rust kernels linked into ``[torch]``): the reading stage reads them
(`nixgen.reading.options`), as part of the project.

`nixgen render --out DIR` records ``out`` here, so that a plain `render` (or `build`)
writes and builds DIR/ instead of silently going back to nix/; `--library` likewise records
``library``, so that a later render (`build` renders too) keeps the library where it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import attrs

from nixgen.core.errors import Problem, ProblemError, did_you_mean, error, one_of
from nixgen.core.paths import DEFAULT_OUT

FILE = "nixgen.toml"
#: The keys of nixgen.toml. `kernel` is read by the reading stage, typed and located as
#: build.toml is (`nixgen.reading.options`: kernels' options, Rust kernels linked into
#: [torch]); the settings here leave it alone.
KEYS = ("kernel", "library", "offline", "out", "override-input")


@attrs.frozen(kw_only=True)
class Settings:
    """What nixgen.toml sets (None or empty: not set)."""

    out: str | None = None
    #: `--library`: ``vendored`` or ``input:URL`` (`nixgen.rendering.library.parse`).
    library: str | None = None
    offline: bool | None = None
    override_input: dict[str, str] = attrs.field(factory=dict)
    #: The file they were read from, None when the project has none.
    file: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "out": self.out,
            "library": self.library,
            "offline": self.offline,
            "override-input": dict(self.override_input),
        }


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
    if problems:
        raise ProblemError(document.locate_all(problems))
    return Settings(
        out=out,
        library=library,
        offline=offline,
        override_input={k: v for k, v in overrides.items() if isinstance(v, str)},
        file=display,
    )


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
    return lines
