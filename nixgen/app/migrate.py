"""``nixgen migrate``: rewrite a build.toml as the field's edition 6, keeping what does not change.

An old file, or one of nixgen's earlier dialects, has one edition-6 form: the model it is
read as (`nixgen.checking.project.read_document`), written back as the field's edition 6
(`nixgen.reading.schema.v6.to_document`) and, for what nixgen builds beyond that format,
nixgen.toml's `[kernel.<name>]` tables (`options_document`). Migrating edits each file's
text towards that document: keys that stay keep their comments, order and layout; renamed
keys (``backend`` → ``language``) keep their place; new keys go next to their edition-6
neighbours; a value the file wrote that still means the same is kept, even at its default.
The new texts must read back as exactly the project before anything is written, and each is
written atomically. The format-preserving edit itself is `nixgen.core.tomledit`; this module
decides what changes.
"""

from __future__ import annotations

import difflib
import os
import stat
from pathlib import Path
from typing import Any

import attrs

from nixgen.app import edition5
from nixgen.checking import project, validate
from nixgen.core import paths, tomledit, writer
from nixgen.core.errors import NixgenError, OutputError, Problem, ProblemError, warning
from nixgen.reading import load, model, options, schema, upgrade
from nixgen.reading.schema import v6

BOM = b"\xef\xbb\xbf"

#: Keys that edition 6 spells differently; renamed in place when the old one goes away
#: (`cuda-capabilities` and `rocm-archs` of nixgen's earlier `[torch-noarch]`, `_` in the
#: format).
RENAMES = {
    "backend": "language",
    "cuda-capabilities": "cuda_capabilities",
    "rocm-archs": "rocm_archs",
    "torch": "torch-noarch",
}

#: The first lines of a nixgen.toml that migrate creates.
OPTIONS_HEADER = (
    "# What nixgen builds beyond build.toml's format (see nixgen's README, \"nixgen.toml\"):\n"
    "# kernels' options, and Rust kernels linked into a [torch] extension.\n"
)


@attrs.frozen(kw_only=True)
class Migration:
    """What migrating one build.toml does: the text before and after, nixgen.toml's (None
    when it does not change), and the warnings."""

    document: load.Document
    edition: int
    after: str
    warnings: list[Problem]
    #: The lock files added to Rust kernels' `src` (found where `src` did not list them).
    listed: list[str] = attrs.field(factory=list)
    #: The edition written: the current one, or 5 (`nixgen.app.edition5`).
    to_edition: int = schema.CURRENT
    #: Read as its edition's dialect (nixgen's earlier edition 6, the anchor's branch).
    dialect: bool = False
    #: nixgen.toml: its path, its text before (None: no such file) and after.
    options_path: Path | None = None
    options_before: str | None = None
    options_after: str | None = None

    @property
    def before(self) -> str:
        return self.document.text

    @property
    def changed(self) -> bool:
        return self.after != self.before or self.options_changed

    @property
    def options_changed(self) -> bool:
        return self.options_after is not None and self.options_after != self.options_before

    @property
    def reason(self) -> str:
        """Why the file changes, for messages: ``from edition 4 to 6``."""
        if self.dialect:
            what = "nixgen's earlier edition 6" if self.edition == 6 else "the anchor's edition 5"
            return f"from {what} to the field's edition {self.to_edition}"
        if self.edition != self.to_edition:
            return f"from edition {self.edition} to {self.to_edition}"
        if self.listed:
            return f"to list {', '.join(f'`{p}`' for p in self.listed)} in `src`"
        return "to set its license"

    def diff(self) -> str:
        """A unified diff from the files as they are to the migrated files."""
        out = _diff(self.document.path.name, self.before, self.after)
        if self.options_changed:
            assert self.options_after is not None
            out += _diff(options.FILE, self.options_before or "", self.options_after)
        return out


def _diff(name: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"a/{name}",
        tofile=f"b/{name}",
    )
    # the marker `patch` and `git apply` expect for a last line without a newline
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines
    )


def plan(
    path: Path | str, *, license: str | None = None, to_edition: int = schema.CURRENT
) -> Migration:
    """Read the build.toml at `path` (and its nixgen.toml) and work out their text in
    `to_edition` (the current one, or 5: `nixgen.app.edition5`); writes nothing.

    Raises `ProblemError` with located problems when the file is invalid.
    """
    document = load.load(path)
    root = document.path.parent
    nixgen_toml = options.load_file(root)
    read = project.read_document(document, nixgen_toml)
    build, warnings = read.build, read.warnings
    located, _ = validate.listed_lock_files(build, root)
    problems = document.locate_all(validate.validate(located, None))
    if any(p.severity == "error" for p in problems):
        raise ProblemError(problems)
    listed = [
        str(p)
        for name, kernel in sorted(located.kernels.items())
        for p in kernel.src
        if p not in build.kernels[name].src
    ]
    build = located
    if license and build.general.license == upgrade.UNKNOWN_LICENSE:
        build = attrs.evolve(build, general=attrs.evolve(build.general, license=license))
    warnings = [
        w
        for w in warnings
        if not (license and _is_license_placeholder_warning(w))
        and not upgrade.is_migration_notice(w)
    ]
    general = document.data.get("general")
    if read.dialect and isinstance(general, dict) and "minver" in general:
        warnings.append(
            warning(
                f"`minver` ({general['minver']}) is dropped: edition 6 has no such key, and "
                "metadata.json's `kernels-minver` is derived from what the build uses",
                ("general", "minver"),
            )
        )
    if license and build.general.license != license:
        warnings.append(
            warning(
                f"--license ignored: the file already declares license `{build.general.license}`",
                ("general", "license"),
            )
        )
    unchanged = (
        read.edition == schema.CURRENT and not read.dialect and not listed and build == read.build
    )
    if not unchanged:
        library_problems = _libraries(root, read.build)
        if library_problems:
            raise ProblemError(document.locate_all(library_problems))
    wanted = document.data if unchanged else target(document.data, build)
    renames: dict[str, str] = RENAMES
    if to_edition == edition5.EDITION:
        wanted, renames = edition5.downgrade(document, wanted, build), edition5.RENAMES
    after = document.text if wanted == document.data else rewrite(document.text, wanted, renames)
    options_after = None
    if not unchanged:
        options_after = _options_text(nixgen_toml, v6.options_document(build))
        if to_edition == schema.CURRENT:
            _check_read_back(document, after, options_after, nixgen_toml, build)
    return Migration(
        document=document,
        edition=read.edition,
        after=after,
        warnings=document.locate_all(warnings),
        listed=listed,
        to_edition=to_edition,
        dialect=read.dialect,
        options_path=root / options.FILE,
        options_before=nixgen_toml.text if nixgen_toml is not None else None,
        options_after=options_after,
    )


def _libraries(root: Path, build: model.Build) -> list[Problem]:
    """An earlier file's `lib-name` (now `library`) must be what the crate says: edition 6
    takes a Rust kernel's library name from its crate's `Cargo.toml`."""
    problems = []
    for name, kernel in sorted(build.kernels.items()):
        if not isinstance(kernel, model.RUST_KERNELS) or kernel.library is None:
            continue
        try:
            crate = validate.crate_library(root, kernel.cargo_manifest) or model.default_library(
                name
            )
        except validate.CrateError as exc:
            problems.append(Problem(message=str(exc), path=("kernel", name, "lib-name")))
            continue
        if crate != kernel.library:
            problems.append(
                Problem(
                    message=f"`lib-name` `{kernel.library}` is not the library the crate builds "
                    f"(`{crate}`, from `{kernel.cargo_manifest}`); edition 6 takes the crate's: "
                    f'set `[lib] name = "{kernel.library}"` in it first',
                    path=("kernel", name, "lib-name"),
                )
            )
    return problems


def _unread(build: model.Build) -> model.Build:
    """`build` as a file says it: no library name read from a crate."""
    kernels = {
        name: attrs.evolve(k, library=None) if isinstance(k, model.RUST_KERNELS) else k
        for name, k in build.kernels.items()
    }
    return attrs.evolve(build, kernels=kernels)


def _check_read_back(
    document: load.Document,
    after: str,
    options_after: str | None,
    nixgen_toml: load.Document | None,
    build: model.Build,
) -> None:
    """The migrated texts must read as the field's edition 6, giving `build` again."""
    new = load.parse(after, document.path, document.display)
    new_options = nixgen_toml
    if options_after is not None:
        where = document.path.parent / options.FILE
        new_options = load.parse(options_after, where, load.display_name(where))
    try:
        read = project.read_document(new, new_options)
    except ProblemError:
        read = None
    if read is None or read.dialect or _unread(read.build) != _unread(build):
        raise NixgenError(
            "internal error: the migrated build.toml and nixgen.toml do not read back as the "
            "project; nothing was written (this is a bug in nixgen, please report it)"
        )


def target(original: dict[str, Any], build: model.Build) -> dict[str, Any]:
    """The field's edition-6 build.toml of `build`: every value that is not at its
    default, and every value the `original` document wrote (under its edition-6 name) that
    is, so that an explicit default stays where the author put it."""
    full = v6.to_document(build, defaults=True)
    minimal = v6.to_document(build)
    return _written(full, minimal, original)


def _renamed(table: Any) -> dict[str, Any]:
    if not isinstance(table, dict):
        return {}
    return {str(RENAMES.get(k, k)): v for k, v in table.items()}


def _written(full: dict[str, Any], minimal: dict[str, Any], original: Any) -> dict[str, Any]:
    """`full` (a table with every default) less the defaults `original` did not write."""
    original = _renamed(original)
    out: dict[str, Any] = {}
    for key, value in full.items():
        if key not in minimal and key not in original:
            continue
        if isinstance(value, dict):
            out[key] = _written(value, minimal.get(key, {}), original.get(key, {}))
        else:
            out[key] = value
    return out


def _options_text(current: load.Document | None, wanted: dict[str, Any]) -> str | None:
    """nixgen.toml's text with its `[kernel.<name>]` tables set to `wanted`'s (its other
    keys kept); None when the file need not change (none, and nothing to say)."""
    if current is None:
        if not wanted:
            return None
        return rewrite(OPTIONS_HEADER, wanted)
    data = {k: v for k, v in current.data.items() if k != options.TABLE}
    data.update(wanted)
    if data == current.data:
        return current.text
    return rewrite(current.text, data)


def _is_license_placeholder_warning(problem: Problem) -> bool:
    return problem.path == ("general", "license") and upgrade.UNKNOWN_LICENSE in problem.message


def rewrite(text: str, wanted: dict[str, Any], renames: dict[str, str] = RENAMES) -> str:
    """`text` edited so that it parses to the document `wanted`, keeping comments, key
    order and layout of everything that does not change (`nixgen.core.tomledit`);
    `renames` maps a key that goes to the one that takes its place."""
    try:
        out = tomledit.rewrite(text, wanted, renames)
    except tomledit.ReadBackError:
        raise NixgenError(
            "internal error: the rewritten build.toml does not read back as the migrated "
            "document; nothing was written (this is a bug in nixgen, please report it)"
        ) from None
    # A table removed at the end of the file leaves the blank line that preceded it.
    while out.endswith("\n\n") and not text.endswith("\n\n"):
        out = out[:-1]
    return out


def write(migration: Migration) -> None:
    """Write the migrated build.toml and nixgen.toml in one transaction of the one writer
    (`nixgen.core.writer`): both or neither, each kept at its mode, an edit saved meanwhile
    kept and reported (nothing written), a run killed while committing completed by the next.

    A build.toml that is a symbolic link to a file inside the project is migrated there
    (the link stays); one that leads outside the project is refused: nixgen never writes
    outside the project (the target may be shared by other projects).
    """
    build_changed = migration.after != migration.before
    options_changed = migration.options_changed and migration.options_path is not None
    if not build_changed and not options_changed:
        return
    link = migration.document.path
    display = migration.document.display
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
        with writer.project_lock(root), writer.transaction(root) as tx:
            if build_changed:
                mode = stat.S_IMODE(os.lstat(path).st_mode)
                if not os.access(path, os.W_OK):
                    raise OutputError(
                        f"{display}: the file is read-only; make it writable to migrate it"
                    )
                current = paths.read_under(root, rel, limit=load.MAX_BYTES + len(BOM))
                if not isinstance(current, bytes):
                    raise OutputError(f"{display}: {current or 'is gone'}; nothing was written")
                expected, data = current, migration.after.encode("utf-8")
                if current.startswith(BOM):
                    current, data = current[len(BOM) :], BOM + data
                if current != migration.before.encode("utf-8"):
                    raise OutputError(
                        f"{display}: the file changed while it was migrated; run again"
                    )
                tx.file(rel, data, mode=mode, expect=expected)
            if options_changed:
                assert migration.options_after is not None
                before = migration.options_before
                tx.file(
                    options.FILE,
                    migration.options_after.encode("utf-8"),
                    expect=None if before is None else before.encode("utf-8"),
                )
            tx.commit()
    except writer.WriteError as exc:
        if "changed while nixgen ran" not in str(exc):
            raise
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
