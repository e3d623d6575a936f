"""Where a rendered project takes nixgen's static Nix library from.

Three ways, one rule each, chosen by `nixgen render --library` (or nixgen.toml's
``library``); nothing else decides it, so a project renders the same wherever it lies:

* ``vendored`` (the default while nixgen has no published address): a copy of the library in
  the output tree (``<out>/lib/``), so the project builds with exactly the library of the
  nixgen that rendered it, offline, with nothing but its own files.
* ``path:DIR``: the library directory DIR (relative to the project: a checkout of nixgen's
  ``nix/``) used in place; the generated ``default.nix`` imports it by a relative path and
  nothing is copied. A flake of the project reads only its own source tree (the git work tree
  it lies in, else the project directory), so DIR must lie there and, in git, be tracked:
  `nixgen build` checks that as it checks the project's own files
  (`nixgen.building.gitfiles`). The examples in nixgen's repository name the repository's
  ``nix/`` this way (their nixgen.toml). A link in the output tree stays refused
  (`nixgen.writing.write`): the reference is a path in the Nix text.
* ``input:URL``: the generated ``flake.nix`` pins the flake input ``nixgen`` to URL and the
  generated ``default.nix`` takes the library from it (``nixgen.lib`` of nixgen's flake);
  nothing is copied.

The format version the library checks first (`project.checkFormat`, ``data/format.json``)
makes a library of another nixgen fail with a clear message rather than misread the generated
data; for ``path:DIR`` nixgen compares it before it renders (`check_directory`).
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path

import attrs

from nixgen import __version__
from nixgen.core import marker
from nixgen.core.errors import EXIT_INVALID, NixgenError, Problem, closest, one_of, printable
from nixgen.core.tables import FORMAT, PACKAGE, library_files, read_text
from nixgen.rendering import nixlit

#: The library's files, copied into a vendored tree (`<out>/lib/`): the library directory
#: itself is the list (`tables.library_files`).
LIB_FILES = library_files()
#: Data tables the static library reads at evaluation time (`./data/<name>` in its files).
#: nixgen plans in Python and writes the results into the generated files; the ABI policies
#: are the toolchain's; the backends and languages, the pins and the source kinds are one table
#: for both languages.
LIB_DATA: tuple[str, ...] = (
    "abi-policies.json",
    "format.json",
    "languages.json",
    "pins.json",
    "source-kinds.json",
)

VENDORED = "vendored"
#: The prefix of a library directory used in place.
PATH = "path:"
#: The prefix of a library taken as a flake input.
INPUT = "input:"
#: What `--library` accepts, as its help and errors spell it.
CHOICES = (VENDORED, f"{PATH}DIR", f"{INPUT}URL")
#: The schemes of a flake URL Nix reads (the Nix manual, "Flake references"; `path:`,
#: `git+file:` and `file:` name local sources, the rest remote ones).
URL_SCHEMES = (
    "file",
    "file+file",
    "file+http",
    "file+https",
    "flake",
    "git",
    "git+file",
    "git+http",
    "git+https",
    "git+ssh",
    "github",
    "gitlab",
    "hg+file",
    "hg+http",
    "hg+https",
    "hg+ssh",
    "http",
    "https",
    "path",
    "sourcehut",
    "tarball+file",
    "tarball+http",
    "tarball+https",
)


#: The schemes of a flake URL read from this machine's disk (no download).
LOCAL_SCHEMES = ("file", "file+file", "git+file", "hg+file", "path", "tarball+file")


def is_local(url: str) -> bool:
    """Whether the flake URL `url` names a source on this machine (`LOCAL_SCHEMES`)."""
    return url.partition(":")[0] in LOCAL_SCHEMES


@attrs.frozen(kw_only=True)
class Library:
    """Where the generated Nix takes the library from: a copy in ``<out>/lib`` (`vendored`),
    the library directory `directory` in place, or the flake input ``nixgen`` pinned to
    `url`."""

    #: ``path:DIR``: the library's directory, relative to the project, normalised.
    directory: str | None = None
    #: A flake input: its URL, written into the generated flake.
    url: str | None = None

    @property
    def vendored(self) -> bool:
        return self.directory is None and self.url is None

    def path_from(self, out_dir: str) -> nixlit.Path:
        """`directory` as a Nix path literal seen from the output tree `out_dir` (a checked
        project-relative directory; Nix resolves a path literal lexically, and so is it
        made)."""
        assert self.directory is not None
        return _literal(posixpath.relpath(self.directory, out_dir))


#: The default when nothing says otherwise.
COPY = Library()


class LibraryError(NixgenError, ValueError):
    """A `--library` value (or nixgen.toml's ``library``) nixgen does not know."""

    exit_code = EXIT_INVALID

    def render(self) -> str:
        return Problem(message=f"--library: {self}").render()


def parse(value: str) -> Library:
    """`value` of `--library` (``vendored``, ``path:DIR`` or ``input:URL``); `LibraryError`
    naming the closest valid choice otherwise. Reads nothing: `check_directory` looks at a
    ``path:`` directory."""
    if value == VENDORED:
        return COPY
    if value.startswith(PATH):
        return _directory(value)
    if not value.startswith(INPUT):
        guess = closest(value.partition(":")[0], (VENDORED, PATH.rstrip(":"), INPUT.rstrip(":")))
        hint = f"; did you mean `{guess}`?" if guess and ":" not in value else ""
        if guess in ("input", "path") and ":" in value:
            hint = f"; did you mean `{guess}:{value.partition(':')[2]}`?"
        raise LibraryError(f"unknown library `{value}` (expected {one_of(CHOICES)}){hint}")
    url = value[len(INPUT) :]
    scheme, colon, rest = url.partition(":")
    if not url or any(c.isspace() or not c.isprintable() for c in url):
        raise LibraryError(
            f"`{value}`: expected a flake URL after `{INPUT}` without spaces or control "
            "characters (`input:github:OWNER/nixgen/REV`, `input:git+file:///srv/nixgen`)"
        )
    if not colon or not rest or scheme not in URL_SCHEMES:
        guess = closest(scheme, URL_SCHEMES) if colon else None
        hint = f"; did you mean `{INPUT}{guess}:{rest}`?" if guess else ""
        raise LibraryError(
            f"`{value}`: `{url}` is not a flake URL Nix reads (one starts with a scheme "
            f"and a colon: `github:`, `git+https:`, `git+file:`, `path:`, …){hint}"
        )
    return Library(url=url)


def _literal(relative: str) -> nixlit.Path:
    """The relative POSIX path `relative` as a Nix path literal (`./x`, `../x`, `../..`)."""
    return nixlit.path(relative if relative.split("/")[0] == ".." else f"./{relative}")


def _directory(value: str) -> Library:
    """``path:DIR``: DIR relative to the project, in names a Nix path literal can spell."""
    given = value[len(PATH) :]
    if not given or any(c.isspace() or not c.isprintable() for c in given):
        raise LibraryError(
            f"`{value}`: expected a directory after `{PATH}`, relative to the project, "
            "without spaces or control characters (`path:../nixgen/nix`)"
        )
    if given.startswith(("/", "~")):
        raise LibraryError(
            f"`{value}`: the directory must be relative to the project: a flake reads only "
            "its own source tree (the git work tree it lies in), never an absolute path; "
            "for a library elsewhere use `input:path:DIR` (a flake input) or `vendored`"
        )
    directory = posixpath.normpath(given)
    try:
        _literal(directory)
    except ValueError:
        raise LibraryError(
            f"`{value}`: a Nix path literal cannot spell `{given}` (each name is letters, "
            "digits, `.`, `_`, `+` and `-`, not starting with `.`)"
        ) from None
    return Library(directory=directory)


def check_directory(root: Path, library: Library) -> None:
    """Refuse (`LibraryError`) a ``path:`` library whose directory, relative to the project
    `root`, holds no nixgen library (its ``default.nix`` and ``data/format.json``), or one
    that reads another format of the generated files than this nixgen writes: the render
    would succeed and every evaluation fail. Nothing for another library."""
    if library.directory is None:
        return
    shown = f"`{PATH}{library.directory}`"
    where = os.path.normpath(os.path.join(root, library.directory))
    table = os.path.join(where, "data", "format.json")
    if not os.path.isfile(os.path.join(where, "default.nix")) or not os.path.isfile(table):
        raise LibraryError(
            f"{shown}: `{printable(where)}` holds no nixgen library (its default.nix and "
            "data/format.json, as nixgen's `nix/` directory); name the library's directory "
            "relative to the project, or use `vendored` for a copy in the output tree"
        )
    ours = FORMAT
    try:
        with open(table, encoding="utf-8") as handle:
            theirs = json.load(handle).get("format")
    except (OSError, ValueError, AttributeError):
        theirs = None
    if theirs != ours:
        raise LibraryError(
            f"{shown}: the library in `{printable(where)}` reads format {theirs} of the "
            f"generated files; this nixgen {__version__} writes format {ours} (use that "
            "nixgen's library, or `vendored` for a copy of this one)"
        )


def needed_files(root: Path, library: Library) -> list[str]:
    """What a flake of the project at `root` must see of a ``path:`` library (empty for
    another): the library's files and the data tables they read, as absolute paths with
    every link resolved (a table may be a link to where it lives: nixgen's ``nix/data``)."""
    if library.directory is None:
        return []
    where = Path(os.path.normpath(os.path.join(root, library.directory)))
    found = [where / name for name in LIB_FILES]
    found += [where / "data" / name for name in LIB_DATA]
    return sorted(os.path.realpath(p) for p in found)


def vendored_files() -> dict[str, bytes]:
    """The vendored copy (`<out>/lib/`): each library file under a one-line header with the
    ``@generated by nixgen`` marker (so a render may replace it), each data table under one
    ``_generated`` key."""
    lib = os.path.join(PACKAGE, "nixlib")
    out: dict[str, bytes] = {}
    for name in LIB_FILES:
        with open(os.path.join(lib, name), encoding="utf-8") as handle:
            text = handle.read()
        comment = "//" if name.endswith(".h") else "#"
        out[f"lib/{name}"] = (marker.copy_header(__version__, comment=comment) + text).encode()
    for name in LIB_DATA:
        data = json.loads(read_text(name))
        stamped = {**marker.json_stamp(__version__), **data}
        out[f"lib/data/{name}"] = (json.dumps(stamped, indent=2) + "\n").encode()
    return out
