"""``nixgen migrate``: rewrite a build.toml as edition 6, keeping what does not change.

An old file has one edition-6 form: the document `upgrade.to_edition6` makes of it, which is
also what `project.structure` turns into the model. Migrating edits the file's text towards
that document: keys that stay keep their comments, order and layout; renamed keys
(``backend`` → ``language``) keep their place; new keys go next to their edition-6
neighbours. The new text must
parse to exactly the target before anything is written, and it is written atomically.
The format-preserving edit itself is `nixgen.core.tomledit`; this module decides what changes.
"""

from __future__ import annotations

import copy
import difflib
import os
import stat
from pathlib import Path
from typing import Any

import attrs
import tomli

from nixgen.app import edition5
from nixgen.checking import project, validate
from nixgen.core import paths, tables, tomledit, writer
from nixgen.core.errors import NixgenError, OutputError, Problem, ProblemError, warning
from nixgen.reading import load, model, schema, upgrade, values

BOM = b"\xef\xbb\xbf"

#: Keys that edition 6 spells differently; renamed in place when the old one goes away.
RENAMES = {
    "backend": "language",
    "cuda_capabilities": "cuda-capabilities",
    "rocm_archs": "rocm-archs",
    "torch": "torch-noarch",
}


@attrs.frozen(kw_only=True)
class Migration:
    """What migrating one build.toml does: the text before and after, and the warnings."""

    document: load.Document
    edition: int
    after: str
    warnings: list[Problem]
    #: The lock files added to Rust kernels' `src` (found where `src` did not list them).
    listed: list[str] = attrs.field(factory=list)
    #: The edition written: the current one, or 5 (`nixgen.app.edition5`).
    to_edition: int = schema.CURRENT

    @property
    def before(self) -> str:
        return self.document.text

    @property
    def changed(self) -> bool:
        return self.after != self.before

    @property
    def reason(self) -> str:
        """Why the file changes, for messages: ``from edition 4 to 6``."""
        if self.edition != self.to_edition:
            return f"from edition {self.edition} to {self.to_edition}"
        if self.listed:
            return f"to list {', '.join(f'`{p}`' for p in self.listed)} in `src`"
        return "to set its license"

    def diff(self) -> str:
        """A unified diff from the file as it is to the migrated file."""
        name = self.document.path.name
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
        )
        # the marker `patch` and `git apply` expect for a last line without a newline
        return "".join(
            line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n"
            for line in lines
        )


def plan(
    path: Path | str, *, license: str | None = None, to_edition: int = schema.CURRENT
) -> Migration:
    """Read the build.toml at `path` and work out its text in `to_edition` (the current one,
    or 5 for the ecosystem's parser: `nixgen.app.edition5`); writes nothing.

    Raises `ProblemError` with located problems when the file is invalid.
    """
    document = load.load(path)
    edition, build, warnings = project.structure(document)
    located, _ = validate.listed_lock_files(build, document.path.parent)
    problems = document.locate_all(validate.validate(located, None))
    if any(p.severity == "error" for p in problems):
        raise ProblemError(problems)
    locks: dict[str, list[str]] = {
        name: [str(p) for p in kernel.src if p not in build.kernels[name].src]
        for name, kernel in located.kernels.items()
        if kernel is not build.kernels[name]
    }
    wanted = target(document, edition, license, locks=locks)
    listed = [p for _, files in sorted(locks.items()) for p in files]
    warnings = [w for w in warnings if not (license and _is_license_placeholder_warning(w))]
    if license and wanted["general"].get("license") != license:
        warnings.append(
            warning(
                f"--license ignored: the file already declares license "
                f"`{wanted['general'].get('license')}`",
                ("general", "license"),
            )
        )
    renames = RENAMES
    if to_edition == edition5.EDITION:
        wanted, renames = edition5.downgrade(document, wanted), edition5.RENAMES
    after = document.text if wanted == document.data else rewrite(document.text, wanted, renames)
    return Migration(
        document=document,
        edition=edition,
        after=after,
        warnings=document.locate_all(warnings),
        listed=listed,
        to_edition=to_edition,
    )


def target(
    document: load.Document,
    edition: int,
    license: str | None = None,
    *,
    locks: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """The edition-6 document of a valid `document`, with `license` for the placeholder
    and, in each kernel's `src`, the lock files `locks` names for it (the ones
    `validate.listed_lock_files` found: edition 6 reads a Rust crate's lock from `src`)."""
    if edition == schema.CURRENT:
        wanted = copy.deepcopy(document.data)
    else:
        raw, _ = schema.structure(document.data, edition)
        assert raw is not None  # `document` is valid
        wanted, _ = upgrade.to_edition6(raw, edition)
    for name, files in (locks or {}).items():
        if name in wanted.get("kernel", {}):
            wanted["kernel"][name]["src"] = [*wanted["kernel"][name]["src"], *files]
    if edition != schema.CURRENT:
        problems: list[Problem] = []
        for name, kernel in wanted.get("kernel", {}).items():
            if tables.is_rust(kernel["language"]) and "lib-name" not in kernel:
                problems += _add_lib_name(document.path.parent, name, kernel)
        if problems:
            raise ProblemError(document.locate_all(problems))
    if license and wanted["general"].get("license") == upgrade.UNKNOWN_LICENSE:
        wanted["general"]["license"] = license
    return wanted


#: The largest `Cargo.toml` migrate reads (real ones are a few KiB).
MAX_MANIFEST = 1024 * 1024


def crate_library(root: Path, manifest: str) -> str | None:
    """The library name the crate's `Cargo.toml` (`manifest`, relative to the project
    `root`) declares: `[lib] name`, else the package name with `-` turned into `_`
    (Cargo's rule); None when the file declares neither.

    The manifest is read by the path rule of every input (`nixgen.core.paths`): no link
    followed, no FIFO or device opened, at most `MAX_MANIFEST` bytes, TOML parser limits.
    A manifest that cannot be read so, or that declares a name that is no Rust
    identifier, raises `CrateError` (migrating would write a file nixgen refuses)."""
    data = paths.read_under(root, manifest, limit=MAX_MANIFEST)
    if data is None:
        return None
    if isinstance(data, paths.Blocked):
        raise CrateError(
            f"`{manifest}` cannot be read: {data}; migrate reads the crate's Cargo.toml to "
            "keep its library name (replace it by a regular file inside the project)"
        )
    try:
        parsed = tomli.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CrateError(f"`{manifest}` is not valid UTF-8") from None
    except tomli.TOMLDecodeError as exc:
        raise CrateError(f"`{manifest}` is not valid TOML: {exc}") from None
    except (RecursionError, ValueError):
        raise CrateError(
            f"`{manifest}` is past the TOML parser's limits (nesting, key parts, digits)"
        ) from None
    lib, package = parsed.get("lib"), parsed.get("package")
    if isinstance(lib, dict) and isinstance(lib.get("name"), str):
        name = str(lib["name"])
    elif isinstance(package, dict) and isinstance(package.get("name"), str):
        name = str(package["name"]).replace("-", "_")
    else:
        return None
    problem = values.rust_lib_name(name)
    if problem is not None:
        raise CrateError(f"`{manifest}` declares the {problem}; fix the crate first")
    return name


class CrateError(Exception):
    """A crate manifest migrate cannot take its library name from."""


def _add_lib_name(root: Path, name: str, kernel: dict[str, Any]) -> list[Problem]:
    """Edition 5 inferred a Rust kernel's library name from its crate; edition 6 names it
    after the kernel. Where the two differ, keep the crate's as `lib-name` (the one place
    where migrating reads a Cargo file, once per kernel). Returns the problems found."""
    if kernel["language"] == "rust-cuda":
        crate: Any = model.RustCudaKernel(
            language="rust-cuda", src=kernel["src"], device_manifest=kernel["device-manifest"]
        )
    else:
        crate = model.RustCpuKernel(language="rust-cpu", src=kernel["src"])
    try:
        library = crate_library(root, crate.manifest())
    except CrateError as exc:
        return [Problem(message=str(exc), path=("kernel", name, "src"))]
    if library is not None and library != model.default_library(name):
        keys = list(kernel)
        after = keys.index("features") + 1 if "features" in keys else keys.index("src") + 1
        items = list(kernel.items())
        kernel.clear()
        kernel.update([*items[:after], ("lib-name", library), *items[after:]])
    return []


def _is_license_placeholder_warning(problem: Problem) -> bool:
    return problem.path == ("general", "license") and upgrade.UNKNOWN_LICENSE in problem.message


def rewrite(text: str, wanted: dict[str, Any], renames: dict[str, str] = RENAMES) -> str:
    """`text` edited so that it parses to the document `wanted`, keeping comments, key
    order and layout of everything that does not change (`nixgen.core.tomledit`);
    `renames` maps a key that goes to the one that takes its place."""
    try:
        return tomledit.rewrite(text, wanted, renames)
    except tomledit.ReadBackError:
        raise NixgenError(
            "internal error: the rewritten build.toml does not read back as the migrated "
            "document; nothing was written (this is a bug in nixgen, please report it)"
        ) from None


def write(migration: Migration) -> None:
    """Replace the build.toml with the migrated text atomically, keeping its mode
    (`nixgen.core.writer.replace_unchanged`: a failure leaves the old file or the new one,
    never half, and an edit saved meanwhile is kept and reported).

    A build.toml that is a symbolic link to a file inside the project is migrated there
    (the link stays); one that leads outside the project is refused: nixgen never writes
    outside the project (the target may be shared by other projects).
    """
    link = migration.document.path
    display = migration.document.display
    data = migration.after.encode("utf-8")
    root = link.parent
    rel = paths.resolve_inside(root, link.name)
    if rel is None:
        raise OutputError(
            f"{display}: is a symbolic link to `{os.path.realpath(link)}`, outside the project; "
            "nixgen never writes outside the project: migrate that file itself, or replace "
            "the link by a copy"
        )
    path = Path(os.path.realpath(root)).joinpath(*paths.parts(rel))
    try:
        with writer.project_lock(root):
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if not os.access(path, os.W_OK):
                raise OutputError(
                    f"{display}: the file is read-only; make it writable to migrate it"
                )
            current = paths.read_under(root, rel, limit=load.MAX_BYTES + len(BOM))
            if not isinstance(current, bytes):
                raise OutputError(f"{display}: {current or 'is gone'}; nothing was written")
            expected = current
            if current.startswith(BOM):
                current, data = current[len(BOM) :], BOM + data
            if current != migration.before.encode("utf-8"):
                raise OutputError(f"{display}: the file changed while it was migrated; run again")
            writer.replace_unchanged(root, rel, data, expected=expected, mode=mode)
    except writer.Changed:
        raise OutputError(
            f"{display}: the file changed while it was migrated (an edit was saved); the edit "
            "is kept and nothing was migrated: run again"
        ) from None
    except PermissionError:
        raise OutputError(
            f"{display}: cannot write next to the file: permission denied "
            f"(is {path.parent} read-only?)"
        ) from None
    except OSError as exc:
        raise OutputError(f"{display}: cannot write the file: {exc.strerror or exc}") from None
