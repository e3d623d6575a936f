"""The settings a verb runs a project with, resolved once before any logic (uv's
``settings.rs``: resolve, then act).

Three sources, the first that sets a value wins: the command line (`Given`; click has
applied the environment to it already, ``NIXGEN_OUT`` and ``NIXGEN_OFFLINE``), the project's
nixgen.toml (`nixgen.app.config`, read once), then nixgen's defaults. `resolve` returns one
`Settings`, every value checked (the output directory, the library, the flake inputs to
override); the use cases read it and nothing else, and the settings of the `nix` commands
of a run that builds are made of it (`nixgen.app.build.nix_settings`). It carries the bytes
nixgen.toml was read from (`Settings.snapshot`), so a render made with it is never written
once the file changed (`Rendered.settings`).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from nixgen.app import config
from nixgen.core.paths import DEFAULT_OUT
from nixgen.rendering import library as library_mod
from nixgen.rendering.library import Library
from nixgen.rendering.render import check_out_dir


@attrs.frozen(kw_only=True)
class Given:
    """What the command line gave (None, empty or false: not given), checked when made: a
    bad value is a usage error before anything is read or written."""

    #: ``--out`` (or ``NIXGEN_OUT``).
    out: str | None = None
    #: ``--library`` (render): as written, which is what nixgen.toml records.
    library: str | None = None
    #: ``--offline`` (or ``NIXGEN_OFFLINE``).
    offline: bool = False
    #: ``--override-input NAME REF``, in the order given.
    overrides: tuple[tuple[str, str], ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.out is not None:
            check_out_dir(self.out)
        if self.library is not None:
            library_mod.parse(self.library)
        if self.overrides:
            config.checked_overrides(self.overrides, option="--override-input")


@attrs.frozen(kw_only=True)
class Settings:
    """The settings in effect for one run on one project."""

    #: The project directory (`config.project_root`).
    root: Path
    #: Where the generated Nix lives, relative to the project (checked).
    out: str
    #: Where the generated Nix takes the static library from (a ``path:`` one checked).
    library: Library
    #: Build without a network (`nixgen.building.offline`).
    offline: bool
    #: The flake inputs to override: nixgen.toml's, each replaced by a given one of the
    #: same name (checked: none reaches Nix as an option).
    overrides: tuple[tuple[str, str], ...]
    #: nixgen.toml as read (`[ci]`, and what `nixgen show` prints).
    file: config.Settings
    #: The bytes it was read from, by its project-relative path (None: absent).
    snapshot: dict[str, bytes | None]


def resolve(
    project: Path | str, given: Given | None = None, *, text: bytes | None = None
) -> Settings:
    """The settings of `project` (a directory or its build.toml) for a run given `given`:
    nixgen.toml read once (`ProblemError` with located problems when it is not valid) — or
    `text`, the nixgen.toml a flake takeover is about to write with the render (no snapshot:
    the takeover's transaction expects the file it replaces) — each value taken from
    `given`, else from it, else the default; a ``path:`` library checked to hold a library
    of this nixgen's format (`LibraryError`)."""
    given = given or Given()
    root = config.project_root(project)
    if text is None:
        file, snapshot = config.read_with_snapshot(project)
    else:
        file, snapshot = config.parse(root, config.FILE, text), {}
    chosen = given.library if given.library is not None else file.library
    library = library_mod.parse(chosen) if chosen is not None else library_mod.COPY
    library_mod.check_directory(root, library)
    named = dict(file.override_input)
    for name, ref in given.overrides:
        named.pop(name, None)
        named[name] = ref
    return Settings(
        root=root,
        out=given.out if given.out is not None else file.out or DEFAULT_OUT,
        library=library,
        offline=given.offline or bool(file.offline),
        overrides=tuple(named.items()),
        file=file,
        snapshot=snapshot,
    )
