"""Stage 6 — render: the finished plan (`nixgen.planning.plan.Plan`) as Nix text, in memory.

Rendering only lays the plan out: it computes nothing (the planner did), and every
generated file is data for one entry of the static Nix library. The templates get values
built from the plan's typed fields, in the Jinja2 environment of `nixgen.core.jinja`; every
``{{ value }}`` goes through the Nix literal module (`nixgen.rendering.nixlit`), so a string from
build.toml can only ever become a quoted Nix string, and a path only a checked path literal
(`nixlit.path`). nixgen's own text reaches a template only through the named filters `raw`
(one line of nixgen's words) and `at` (a literal laid out at an indentation); the header
every file starts with is `nixgen.core.marker.header`'s, put before the template's text.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar, cast

import attrs

from nixgen import __version__
from nixgen.core import contract, jinja, marker, paths
from nixgen.core.errors import EXIT_INVALID, NixgenError, Problem
from nixgen.core.paths import DEFAULT_OUT
from nixgen.core.tables import (
    KERNEL_BUILDER_URL,
    NIXPKGS_URL,
    PACKAGE,
    SUBSTITUTER,
    SUBSTITUTER_KEY,
)
from nixgen.planning.kernels import KernelPlan
from nixgen.planning.plan import Plan
from nixgen.rendering import nixlit
from nixgen.rendering.library import COPY, Library, vendored_files

_OUT_DIR = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")


@attrs.frozen(kw_only=True)
class Rendered:
    """The generated files: `tree` under the output directory, `root` at the project root."""

    out_dir: str
    tree: dict[str, bytes]
    root: dict[str, bytes]
    #: The settings files the render was made from (project-relative: nixgen.toml's bytes,
    #: None when it is absent): the writer refuses to write the render once they changed,
    #: so the files on disk never disagree with the settings they were rendered by.
    settings: dict[str, bytes | None] = attrs.field(factory=dict)
    #: Where the tree takes the static library from (what a build must see of a ``path:``
    #: one: `nixgen.building.gitfiles`).
    library: Library = COPY


# ------------------------------------------------------------------------- jinja setup


def _raw(text: str) -> nixlit.Raw:
    # nixgen's own one-line words (a file name in a comment), never build.toml's.
    if "\n" in text or "\r" in text:
        raise ValueError("raw template text must be one line")
    return nixlit.raw(text)


def _at(value: Any, indent: int) -> nixlit.Raw:
    return nixlit.raw(nixlit.value(value, indent))


@cache
def _bytecode_cache() -> Any:
    """Compiled templates, cached on disk per nixgen version: compiling the templates is
    most of a small render's work. A cache directory that cannot be made is not used."""
    from pathlib import Path

    from nixgen.core import writer

    try:
        directory = os.path.join(paths.cache_home(), "nixgen", f"jinja-{__version__}")
        writer.make_user_dirs(Path(directory))
    except (OSError, writer.WriteError):
        return None
    return jinja.optional_cache(directory)


@cache
def environment() -> Any:
    """`nixgen.core.jinja`'s environment over the templates, writing values as Nix literals."""
    import jinja2

    env = jinja.environment(
        jinja2.FileSystemLoader(os.path.join(PACKAGE, "templates")),
        finalize=nixlit.finalize,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(raw=_raw, at=_at)
    return env


# Each template's context, typed: a template sees exactly its class's fields; `what` says
# in the header (`marker.header`) which part of build.toml the file is.


@attrs.frozen(kw_only=True)
class KernelFile:
    template: ClassVar[str] = "kernel.nix.j2"
    what: str
    #: `kernel_data`: the kernel's plan by the library's argument names.
    kernel: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class ExtensionFile:
    template: ClassVar[str] = "extension.nix.j2"
    what: str
    #: The extension's plan by the library's argument names (`ExtensionPlan`).
    extension: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class NoExtensionFile:
    template: ClassVar[str] = "no-extension.nix.j2"
    what: str


@attrs.frozen(kw_only=True)
class NoarchFile:
    template: ClassVar[str] = "noarch.nix.j2"
    what: str
    noarch: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class ProjectFile:
    template: ClassVar[str] = "project.nix.j2"
    what: str
    project: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class DefaultFile:
    """The entry point importing the library's directory (`./lib`, or a ``path:`` one in
    place)."""

    template: ClassVar[str] = "default.nix.j2"
    what: str
    root: nixlit.Path
    library: nixlit.Path
    #: Where its `project.nix` is, for the comment (`lib/project.nix`).
    library_file: str


@attrs.frozen(kw_only=True)
class DefaultInputFile:
    """The entry point taking the library as an argument (the flake input `nixgen`)."""

    template: ClassVar[str] = "default-input.nix.j2"
    what: str
    root: nixlit.Path
    #: Where its `project.nix` is, for the comment.
    library_file: str


@attrs.frozen(kw_only=True)
class FlakeFile:
    template: ClassVar[str] = "flake.nix.j2"
    what: str
    description: str
    nixpkgs_url: str
    kernel_builder_url: str
    substituter: str
    public_key: str
    out_path: nixlit.Path


@attrs.frozen(kw_only=True)
class FlakeInputFile(FlakeFile):
    """The flake of a project taking the library from the flake input `nixgen`."""

    template: ClassVar[str] = "flake-input.nix.j2"
    #: The input's URL (`library.Library.url`).
    nixgen_url: str


#: One of the templates' contexts.
Context = (
    KernelFile
    | ExtensionFile
    | NoExtensionFile
    | NoarchFile
    | ProjectFile
    | DefaultFile
    | DefaultInputFile
    | FlakeFile
    | FlakeInputFile
)


def _template(context: Context) -> bytes:
    """`context`'s template, rendered with its fields."""
    fields = attrs.asdict(context, recurse=False)
    what = fields.pop("what")
    text = environment().get_template(context.template).render(**fields)
    return jinja.canonical(marker.header(__version__, what) + text).encode()


# ----------------------------------------------------------------------------- context


def kernel_data(kernel: KernelPlan) -> dict[str, Any]:
    """The data a kernel file passes to `nixgen.kernel.build`: the kernel's plan as it is,
    by the library's names (`KernelPlan`'s field metadata)."""
    return cast("dict[str, Any]", contract.unstructure(kernel))


def project_data(planned: Plan) -> dict[str, Any]:
    """The data `project.nix` holds: the plan's `ProjectPlan`, by the library's names."""
    return cast("dict[str, Any]", contract.unstructure(planned.project))


# -------------------------------------------------------------------------- the tree


class OutDirError(NixgenError, ValueError):
    """An output directory that is not a plain relative path inside the project."""

    exit_code = EXIT_INVALID

    def render(self) -> str:
        return Problem(message=f"--out: {self}").render()


#: The longest output directory (`--out`, nixgen.toml's `out`), in bytes: with the project's
#: own path and the generated files' names under it, a path the system takes.
MAX_OUT_DIR = 1024


def check_out_dir(out_dir: str) -> None:
    """Refuse an output directory that is not a short relative path inside the project
    (`OutDirError`, before anything is read or written)."""
    if not _OUT_DIR.fullmatch(out_dir) or ".." in out_dir.split("/"):
        raise OutDirError(
            f"invalid output directory `{out_dir}`: use a relative path inside the project "
            "made of letters, digits, `.`, `_`, `-` and `/`"
        )
    longest = max(len(name) for name in out_dir.split("/"))
    if longest > paths.NAME_MAX or len(out_dir) > MAX_OUT_DIR:
        raise OutDirError(
            f"invalid output directory `{out_dir[:60]}…` ({len(out_dir)} bytes): too long; "
            f"file systems take names of at most {paths.NAME_MAX} bytes, nixgen an output "
            f"directory of at most {MAX_OUT_DIR}"
        )


def root_path(out_dir: str) -> str:
    """The project root as a Nix path literal seen from the output directory: `../.` for
    `nix`, `../..` for `gen/nix` (`out_dir` is checked by `check_out_dir`)."""
    depth = len(out_dir.split("/"))
    return "../." if depth == 1 else "/".join([".."] * depth)


def render(planned: Plan, *, out_dir: str = DEFAULT_OUT, library: Library = COPY) -> Rendered:
    """Render every generated file of the finished plan `planned`, in memory, taking the
    static library from where `library` says (`nixgen.rendering.library`)."""
    check_out_dir(out_dir)
    build = planned.build
    g = build.general
    tree: dict[str, bytes] = {}
    for kernel in planned.kernels:
        # Every kernel, whatever its language, is data for nixgen.kernel.build.
        # A kernel nixgen.toml defines (beyond build.toml's format) says where it comes from.
        where = "nixgen.toml's " if kernel.name in build.nixgen_kernels else ""
        tree[kernel.file] = _template(
            KernelFile(
                what=f"{where}kernel.{kernel.name}, {kernel.language}", kernel=kernel_data(kernel)
            )
        )
    extension = planned.extension
    if extension is not None:
        tree["extension.nix"] = _template(
            ExtensionFile(
                what=f"[{extension.framework}]",
                extension=contract.unstructure(extension),
            )
        )
    else:
        tree["extension.nix"] = _template(NoExtensionFile(what="no compiled extension"))
    noarch = contract.unstructure(planned.noarch)
    tree["noarch.nix"] = _template(NoarchFile(what="pure-Python variants", noarch=noarch))
    tree["project.nix"] = _template(ProjectFile(what="project data", project=project_data(planned)))
    root = nixlit.path(root_path(out_dir))
    entry: DefaultFile | DefaultInputFile
    if library.vendored:
        entry = DefaultFile(
            what="entry point",
            root=root,
            library=nixlit.path("./lib"),
            library_file="lib/project.nix",
        )
    elif library.directory is not None:
        path = library.path_from(out_dir)
        entry = DefaultFile(
            what="entry point",
            root=root,
            library=path,
            library_file=f"{path}/project.nix",
        )
    else:
        entry = DefaultInputFile(
            what="entry point", root=root, library_file="project.nix of the flake input `nixgen`"
        )
    tree["default.nix"] = _template(entry)
    if library.vendored:
        tree.update(vendored_files())
    flake = FlakeFile(
        what="flake",
        description=f"{g.name} kernels, built by nixgen",
        nixpkgs_url=NIXPKGS_URL,
        kernel_builder_url=KERNEL_BUILDER_URL,
        substituter=SUBSTITUTER,
        public_key=SUBSTITUTER_KEY,
        out_path=nixlit.path(f"./{out_dir}"),
    )
    if library.url is not None:
        flake = FlakeInputFile(**attrs.asdict(flake, recurse=False), nixgen_url=library.url)
    return Rendered(
        out_dir=out_dir,
        tree=dict(sorted(tree.items())),
        root={"flake.nix": _template(flake)},
        library=library,
    )
