"""``nixgen migrate``: rewrite a build.toml as edition 6, keeping what does not change.

An old file has one edition-6 form: the document `upgrade.to_edition6` makes of it, which is
also what `project.structure` turns into the model. Migrating edits the file's text towards
that document: keys that stay keep their comments, order and layout; renamed keys
(``backend`` → ``language``) keep their place; new keys go next to their edition-6
neighbours. The new text must
parse to exactly the target before anything is written, and it is written atomically.
The format-preserving edit itself is `nixgen.tomledit`; this module decides what changes.
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

from nixgen import load, model, project, schema, tomledit, upgrade, validate
from nixgen.errors import NixgenError, OutputError, Problem, ProblemError, warning

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

    @property
    def before(self) -> str:
        return self.document.text

    @property
    def changed(self) -> bool:
        return self.after != self.before

    @property
    def reason(self) -> str:
        """Why the file changes, for messages: ``from edition 4 to 6``."""
        if self.edition != schema.CURRENT:
            return f"from edition {self.edition} to {schema.CURRENT}"
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


def plan(path: Path | str, *, license: str | None = None) -> Migration:
    """Read the build.toml at `path` and work out its edition-6 text; writes nothing.

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
    listed = [p for _, paths in sorted(locks.items()) for p in paths]
    warnings = [w for w in warnings if not (license and _is_license_placeholder_warning(w))]
    if license and wanted["general"].get("license") != license:
        warnings.append(
            warning(
                f"--license ignored: the file already declares license "
                f"`{wanted['general'].get('license')}`",
                ("general", "license"),
            )
        )
    after = document.text if wanted == document.data else rewrite(document.text, wanted)
    return Migration(
        document=document,
        edition=edition,
        after=after,
        warnings=document.locate_all(warnings),
        listed=listed,
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
    for name, paths in (locks or {}).items():
        if name in wanted.get("kernel", {}):
            wanted["kernel"][name]["src"] = [*wanted["kernel"][name]["src"], *paths]
    if edition != schema.CURRENT:
        for name, kernel in wanted.get("kernel", {}).items():
            if kernel["language"] in RUST_LANGUAGES and "lib-name" not in kernel:
                _add_lib_name(document.path.parent, name, kernel)
    if license and wanted["general"].get("license") == upgrade.UNKNOWN_LICENSE:
        wanted["general"]["license"] = license
    return wanted


RUST_LANGUAGES = ("rust-cpu", "rust-cuda")


def crate_library(manifest: Path) -> str | None:
    """The library name a crate's `Cargo.toml` declares: `[lib] name`, else the package
    name with `-` turned into `_` (Cargo's rule); None when the file cannot tell."""
    try:
        data = tomli.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomli.TOMLDecodeError):
        return None
    lib, package = data.get("lib"), data.get("package")
    if isinstance(lib, dict) and isinstance(lib.get("name"), str):
        return str(lib["name"])
    if isinstance(package, dict) and isinstance(package.get("name"), str):
        return str(package["name"]).replace("-", "_")
    return None


def _add_lib_name(root: Path, name: str, kernel: dict[str, Any]) -> None:
    """Edition 5 inferred a Rust kernel's library name from its crate; edition 6 names it
    after the kernel. Where the two differ, keep the crate's as `lib-name` (the one place
    where migrating reads a Cargo file, once per kernel)."""
    if kernel["language"] == "rust-cuda":
        crate: Any = model.RustCudaKernel(
            language="rust-cuda", src=kernel["src"], device_manifest=kernel["device-manifest"]
        )
    else:
        crate = model.RustCpuKernel(language="rust-cpu", src=kernel["src"])
    library = crate_library(root / crate.manifest())
    if library is not None and library != model.default_library(name):
        keys = list(kernel)
        after = keys.index("features") + 1 if "features" in keys else keys.index("src") + 1
        items = list(kernel.items())
        kernel.clear()
        kernel.update([*items[:after], ("lib-name", library), *items[after:]])


def _is_license_placeholder_warning(problem: Problem) -> bool:
    return problem.path == ("general", "license") and upgrade.UNKNOWN_LICENSE in problem.message


def rewrite(text: str, wanted: dict[str, Any]) -> str:
    """`text` edited so that it parses to the edition-6 document `wanted`, keeping comments,
    key order and layout of everything that does not change (`nixgen.tomledit`)."""
    try:
        return tomledit.rewrite(text, wanted, RENAMES)
    except tomledit.ReadBackError:
        raise NixgenError(
            "internal error: the rewritten build.toml does not read back as the edition-6 "
            "document; nothing was written (this is a bug in nixgen, please report it)"
        ) from None


def write(migration: Migration) -> None:
    """Replace the build.toml with the migrated text atomically, keeping its mode
    (`nixgen.write.atomic_write`: a failure leaves the old file or the new one, never half).
    """
    from nixgen.write import atomic_write

    path = Path(os.path.realpath(migration.document.path))
    display = migration.document.display
    data = migration.after.encode("utf-8")
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if not os.access(path, os.W_OK):
            raise OutputError(f"{display}: the file is read-only; make it writable to migrate it")
        current = path.read_bytes()
        if current.startswith(BOM):
            current, data = current[len(BOM) :], BOM + data
        if current != migration.before.encode("utf-8"):
            raise OutputError(f"{display}: the file changed while it was migrated; run again")
        atomic_write(path, data, mode=mode)
    except PermissionError:
        raise OutputError(
            f"{display}: cannot write next to the file: permission denied "
            f"(is {path.parent} read-only?)"
        ) from None
    except OSError as exc:
        raise OutputError(f"{display}: cannot write the file: {exc.strerror or exc}") from None
