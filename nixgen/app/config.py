"""nixgen.toml: the project's settings of nixgen's own options, beside build.toml.

build.toml says what the kernels are (the ecosystem's file, read by kernel-builder and the
`kernels` client too); nixgen.toml says how nixgen runs on them, as `uv.toml` does for uv
and `.cargo/config.toml` for cargo. Every verb that takes one of these options reads it
once, through `nixgen.app.settings.resolve`, where an option given on the command line
wins; `nixgen show` prints the settings in effect::

    out = "gen"                 # --out: where the generated Nix lives
    library = "input:github:OWNER/nixgen/REV"   # --library (render): vendored, path:DIR
                                                # or input:URL
    offline = true              # --offline (build, shell)
    [override-input]            # --override-input NAME REF (build, shell)
    nixpkgs = "path:/srv/nixpkgs"
    [ci]                        # the workflow of `render --ci github` (`planning.runners`)
    [backend.cpu]               # what a kernel-builder flake said (`planning.settings`):
    systems = ["x86_64-linux"]  #   a backend's systems and torch bounds, a CUDA ptxas pin
    [test]                      # ... and the test environment's extra Python packages
    python-depends = ["einops"]

Its ``[kernel.<name>]`` tables say what nixgen builds beyond build.toml's format (a Rust
crate's Cargo features, Rust kernels linked into ``[torch]``): the reading stage reads them
(`nixgen.reading.options`), as part of the project.

`nixgen render --out DIR` records ``out`` here, so that a plain `render` (or `build`)
writes and builds DIR/ instead of silently going back to nix/; `--library` likewise records
``library``, so that a later render (`build` renders too) keeps the library where it was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.core import paths
from nixgen.core.errors import (
    NixgenError,
    Problem,
    ProblemError,
    error,
    format_path,
    printable,
    unknown_key,
)
from nixgen.core.paths import DEFAULT_OUT
from nixgen.planning import runners
from nixgen.planning.runners import CiSettings
from nixgen.planning.settings import ProjectSettings
from nixgen.reading import load

# Imported where they are used: the renderer's rules (``out``, ``library``), the process
# runner's (``[override-input]``) and the TOML editor (`record`), so that `nixgen validate`
# and `nixgen show` read nixgen.toml without loading them.

FILE = "nixgen.toml"
#: The keys of nixgen.toml. `kernel` is read by the reading stage, typed and located as
#: build.toml is (`nixgen.reading.options`: kernels' options, Rust kernels linked into
#: [torch]); the settings here leave it alone.
KEYS = ("backend", "ci", "kernel", "library", "offline", "out", "override-input", "test")
#: The largest nixgen.toml read (a real one is a few lines).
MAX_BYTES = 1024 * 1024


def checked_overrides(pairs: Sequence[tuple[str, str]], *, option: str) -> list[tuple[str, str]]:
    """`pairs` (input name, flake reference) when every one is fit for
    `--override-input` (`nixcommand.override_problem`); a `ProblemError` naming `option`
    (where they came from) otherwise."""
    from nixgen.building.nixcommand import override_problem

    problems = []
    for name, ref in pairs:
        why = override_problem(name, ref)
        if why is not None:
            problems.append(error(f"{option}: {why}"))
    if problems:
        raise ProblemError(problems)
    return list(pairs)


@attrs.frozen(kw_only=True)
class Settings:
    """What nixgen.toml sets (None or empty: not set)."""

    out: str | None = None
    #: `--library`: ``vendored``, ``path:DIR`` or ``input:URL``
    #: (`nixgen.rendering.library.parse`).
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
    return CiSettings()


def _no_project() -> ProjectSettings:
    from nixgen.planning.settings import NO_SETTINGS

    return NO_SETTINGS


def project_root(project: Path | str) -> Path:
    """The project directory of PROJECT (a directory or its build.toml; a missing path is
    the directory it names, unless it names a `.toml` file)."""
    path = Path(project)
    if path.is_dir() or (not path.exists() and path.suffix != ".toml"):
        return path
    return path.parent


def _located(project: Path | str) -> tuple[Path, str | None, str]:
    """The project root, nixgen.toml's path relative to it with links resolved (None
    when a link leads out of the project) and its name for messages."""
    root = project_root(project)
    return root, paths.resolve_inside(root, FILE), load.display_name(root / FILE)


def _read_bytes(project: Path | str) -> tuple[Path, str, str, bytes | None]:
    """nixgen.toml's bytes (None when absent), by the path rule of every read
    (`nixgen.core.paths`): a link is followed only to a file inside the project; a FIFO,
    device or directory is refused; at most `MAX_BYTES`."""
    root, rel, display = _located(project)

    def fail(message: str) -> ProblemError:
        return ProblemError([Problem(message=message, file=display)])

    if rel is None:
        target = os.path.realpath(root / FILE)
        raise fail(
            f"is a symbolic link to `{printable(target)}`, outside the project; nixgen reads "
            "nothing from outside the project (replace the link by the file)"
        )
    raw = paths.read_under(root, rel, limit=MAX_BYTES)
    if isinstance(raw, paths.Blocked):
        if raw.too_large:
            raise fail(f"is larger than {MAX_BYTES // 1024} KiB; refusing to parse it")
        raise fail(f"`{printable(raw.where)}` {raw.reason}; expected a regular {FILE} file")
    return root, rel, display, raw


def read_with_snapshot(project: Path | str) -> tuple[Settings, dict[str, bytes | None]]:
    """The settings of `project` and the bytes they were read from, by nixgen.toml's
    project-relative path (where its link leads; None when absent): `Rendered.settings`."""
    root, rel, display, raw = _read_bytes(project)
    assert rel is not None  # `_read_bytes` refused a link out of the project
    return parse(root, display, raw), {rel: raw}


def read(project: Path | str) -> Settings:
    """The settings of `project`; `ProblemError` with located problems when nixgen.toml
    is not valid."""
    root, _, display, raw = _read_bytes(project)
    return parse(root, display, raw)


def parse(root: Path, display: str, raw: bytes | None) -> Settings:
    """The settings of the nixgen.toml bytes `raw` (None: absent) of the project `root`."""
    if raw is None:
        return Settings()

    path = root / FILE
    document = load.parse(load.decode(raw, display), path, display)
    data = document.data
    problems: list[Problem] = []
    for key in data:
        if key not in KEYS:
            problems.append(unknown_key(key, KEYS))
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
            problems.append(
                error("expected a string (`vendored`, `path:DIR` or `input:URL`)", ("library",))
            )
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
        from nixgen.building.nixcommand import input_name_problem, override_problem

        if (why := input_name_problem(name)) is not None:
            problems.append(attrs.evolve(error(why, ("override-input", name)), at_key=True))
        elif not isinstance(ref, str) or not ref:
            problems.append(
                error("expected a flake reference (`path:/srv/nixpkgs`)", ("override-input", name))
            )
        elif (why := override_problem(name, ref)) is not None:
            problems.append(error(why, ("override-input", name)))
    ci = _no_ci()
    if "ci" in data:
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


_HEADER = (
    "# nixgen's own options for this project (see nixgen's README, \"nixgen.toml\");\n"
    "# every verb reads them, and an option on the command line wins.\n"
)


@attrs.frozen(kw_only=True)
class Recorded:
    """nixgen.toml with new settings recorded (`record`), for the render's transaction."""

    #: The file's path relative to the project (nixgen.toml, or where its link leads).
    rel: str
    #: Its bytes now (None: absent): the write is refused if it changed meanwhile.
    before: bytes | None
    data: bytes
    #: One status line per setting recorded.
    lines: list[str]


def record(
    project: Path | str,
    settings: Mapping[str, str],
    current: Settings,
    snapshot: Mapping[str, bytes | None],
) -> Recorded | None:
    """nixgen.toml with `settings` (``out``, ``library``: what `--out` and `--library`
    gave) recorded where they differ from `current`, the settings read from the bytes
    `snapshot` (`read_with_snapshot`: nixgen.toml is read once per run); None when nothing
    changes. The file is edited by `nixgen.core.tomledit`, which knows a key by its parsed
    name: a setting written ``"out" = …`` or ``'out' = …`` is replaced, never repeated."""
    from nixgen.rendering.library import VENDORED

    [(rel, before)] = snapshot.items()
    defaults = {"out": DEFAULT_OUT, "library": VENDORED}
    changes = {
        key: value
        for key, value in settings.items()
        if getattr(current, key) != value
        and not (value == defaults[key] and getattr(current, key) is None)
    }
    if not changes:
        return None
    text = before.decode("utf-8-sig") if before is not None else _HEADER
    data = _edited(text, changes)
    lines = []
    if "out" in changes:
        out = changes["out"]
        lines.append(f'recorded `out = "{out}"` in {FILE}: later verbs use {out}/')
    if "library" in changes:
        library = changes["library"]
        lines.append(f'recorded `library = "{library}"` in {FILE}: later renders use it')
    return Recorded(rel=rel, before=before, data=data.encode("utf-8"), lines=lines)


def _edited(text: str, changes: Mapping[str, str]) -> str:
    """`text` (a valid nixgen.toml) with the top-level `changes` set, everything else kept."""
    import tomli

    from nixgen.core import tomledit

    data = tomli.loads(text)
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    values = {k: v for k, v in data.items() if not isinstance(v, dict)}
    wanted = {**values, **changes, **tables}  # a new value goes above the first table
    try:
        return tomledit.rewrite(text, wanted)
    except tomledit.ReadBackError:
        raise NixgenError(
            f"internal error: {FILE} edited does not read back as the settings recorded; "
            "nothing was written (this is a bug in nixgen, please report it)"
        ) from None


def describe(settings: Settings) -> list[str]:
    """The settings in effect, as `nixgen show` prints them."""
    where = settings.file or f"none ({FILE} is absent)"
    lines = [f"settings: {where}", f"  out = {json.dumps(settings.out or DEFAULT_OUT)}"]
    lines.append(
        f"  library = {json.dumps(settings.library)}"
        if settings.library
        else "  library = (default: vendored)"
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
