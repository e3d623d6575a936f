"""Where a rendered project takes nixgen's static Nix library from.

Three ways, one rule each, chosen by `nixgen render --library` (or nixgen.toml's
``library``):

* ``vendored`` (the default while nixgen has no published address): a copy of the library in
  the output tree (``<out>/lib/``), so the project builds with exactly the library of the
  nixgen that rendered it, offline, with nothing but its own files.
* in place, chosen by the default itself when it can be (`in_place`): the library directory
  nixgen ships is tracked by git in the same work tree as the project, so a flake of the
  project (whose source is that whole work tree) reads it where it is; the generated
  ``default.nix`` imports it by a relative path and nothing is copied. This is how the
  examples in nixgen's repository use the repository's own ``nix/``; an example copied out
  of the repository and rendered gets its own copy again. A link in the output tree stays
  refused (`nixgen.writing.write`): the reference is a path in the Nix text.
* ``input:URL``: the generated ``flake.nix`` pins the flake input ``nixgen`` to URL and the
  generated ``default.nix`` takes the library from it (``nixgen.lib`` of nixgen's flake);
  nothing is copied. The format version the library checks first (`project.checkFormat`,
  ``data/format.json``) makes an input of another nixgen fail with a clear message rather
  than misread the generated data.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs

from nixgen import __version__
from nixgen.core import marker, paths
from nixgen.core.errors import EXIT_INVALID, NixgenError, closest, one_of
from nixgen.core.tables import PACKAGE, library_files, read_text
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
#: The prefix of a library taken as a flake input.
INPUT = "input:"
#: What `--library` accepts, as its help and errors spell it.
CHOICES = (VENDORED, f"{INPUT}URL")
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
    the library directory nixgen ships by a relative path (`path`), or the flake input
    ``nixgen`` pinned to `url`."""

    #: In place: the library's directory as a Nix path literal seen from the output tree.
    path: nixlit.Path | None = None
    #: A flake input: its URL, written into the generated flake.
    url: str | None = None

    @property
    def vendored(self) -> bool:
        return self.path is None and self.url is None


#: The default when nothing says otherwise and the library cannot be used in place.
COPY = Library()


class LibraryError(NixgenError, ValueError):
    """A `--library` value (or nixgen.toml's ``library``) nixgen does not know."""

    exit_code = EXIT_INVALID

    def render(self) -> str:
        from nixgen.core.errors import Problem

        return Problem(message=f"--library: {self}").render()


def parse(value: str) -> Library:
    """`value` of `--library` (``vendored`` or ``input:URL``); `LibraryError` naming the
    closest valid choice otherwise."""
    if value == VENDORED:
        return COPY
    if not value.startswith(INPUT):
        guess = closest(value.partition(":")[0], (VENDORED, INPUT.rstrip(":")))
        hint = f"; did you mean `{guess}`?" if guess and ":" not in value else ""
        if guess == "input" and ":" in value:
            hint = f"; did you mean `{INPUT}{value.partition(':')[2]}`?"
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


def shipped() -> Path:
    """The library directory nixgen ships (`nixgen/nixlib`, in a checkout a link to the
    repository's ``nix/``), resolved."""
    return Path(os.path.realpath(os.path.join(PACKAGE, "nixlib")))


@attrs.frozen(kw_only=True)
class Candidate:
    """The library referenced in place, once git confirms that the work tree `top` tracks
    `needed` (paths relative to `top`: the library's files and data, resolved)."""

    library: Library
    top: Path
    needed: list[str]


def in_place(root: Path, out_dir: str) -> Candidate | None:
    """The in-place reference for the project at `root` rendering into `out_dir`, when the
    shipped library directory and the project lie in one git work tree and the library is
    a path literal from there; else None (vendored). Looks at the file system only: the
    caller asks git whether `Candidate.needed` is tracked (what a flake can see)."""
    library = shipped()
    found = paths.work_tree_above(library)
    if found is None:
        return None  # an installed nixgen: no git is asked
    top = Path(found)
    project = Path(os.path.realpath(root))
    if paths.work_tree_above(project) != found:
        return None  # another repository, or a nested one (a submodule)
    relative = os.path.relpath(library, project / out_dir)
    try:
        path = nixlit.path(relative if relative.startswith("../") else f"./{relative}")
    except ValueError:
        return None  # a directory name no path literal can spell
    needed = [library / name for name in LIB_FILES]
    needed += [Path(os.path.realpath(library / "data" / name)) for name in LIB_DATA]
    if not all(p.is_relative_to(top) for p in needed):
        return None
    return Candidate(
        library=Library(path=path),
        top=top,
        needed=sorted(str(p.relative_to(top)) for p in needed),
    )


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
