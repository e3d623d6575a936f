"""``nixgen migrate``: rewrite a build.toml as edition 6, keeping what does not change.

An old file has one edition-6 form: the document `upgrade.to_edition6` makes of it, which is
also what `project.structure` turns into the model. Migrating reconciles the file's tomlkit
document towards that document, table by table: keys that stay keep their comments, order
and layout; renamed keys (``backend`` → ``language``) keep their place; new keys go next to
their edition-6 neighbours, new tables after the table that precedes them. The new text must
parse to exactly the target before anything is written, and it is written atomically.

tomlkit is imported here only, when a migration runs.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import attrs
import tomli

from nixgen import load, model, project, schema, upgrade, validate
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
    problems = document.locate_all(validate.validate(build, None))
    if any(p.severity == "error" for p in problems):
        raise ProblemError(problems)
    wanted = target(document, edition, license)
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
    )


def target(document: load.Document, edition: int, license: str | None = None) -> dict[str, Any]:
    """The edition-6 document of a valid `document`, with `license` for the placeholder."""
    if edition == schema.CURRENT:
        wanted = copy.deepcopy(document.data)
    else:
        raw, _ = schema.structure(document.data, edition)
        wanted, _ = upgrade.to_edition6(raw, edition)
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
        return lib["name"]
    if isinstance(package, dict) and isinstance(package.get("name"), str):
        return package["name"].replace("-", "_")
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
    """`text` edited so that it parses to `wanted`, keeping everything else as it was."""
    import tomlkit

    doc = tomlkit.parse(text)
    start = _Around(blank_before=True, followed=False, blank_after=False)
    _Reconciler().table([(doc, start)], tomli.loads(text), wanted)
    out = doc.as_string()
    if "\r\n" in text and "\n" not in text.replace("\r\n", ""):
        out = out.replace("\r\n", "\n").replace("\n", "\r\n")
    if tomli.loads(out) != wanted:
        raise NixgenError(
            "internal error: the rewritten build.toml does not read back as the edition-6 "
            "document; nothing was written (this is a bug in nixgen, please report it)"
        )
    return out


# ------------------------------------------------------------------ reconciliation
#
# tomlkit keeps a table's lines in a container: the document, or a table's body. A table
# written in two places ("out of order") is two containers, so each step works on a list of
# views: a container and what renders around it, for the blank lines around new tables.


@attrs.frozen
class _Around:
    """What renders around a container's lines: does the text before end with a blank line
    (or is it the start of the file); is anything after it; does that start with a blank line."""

    blank_before: bool
    followed: bool
    blank_after: bool


View = tuple[Any, _Around]


@attrs.frozen
class _Found:
    view: int
    container: Any
    around: _Around
    indices: list[int]

    @property
    def item(self) -> Any:
        return self.container.body[self.indices[0]][1]


@attrs.define
class _Removed:
    """A removed key. Its item may move into a new table (``cuda-minver`` becomes
    ``[general.cuda] minver``), taking along its comment and the comment lines just above
    it (`leading`); until then the comments it carried stay behind as `left`."""

    key: str
    item: Any
    container: Any
    leading: list[Any]
    left: Any


class _Reconciler:
    def __init__(self) -> None:
        self.removed: list[_Removed] = []

    def table(self, views: list[View], old: dict[str, Any], new: dict[str, Any]) -> None:
        """Edit the containers in `views`, which hold `old`, so that they hold `new`."""
        present = dict(old)
        for key in old:
            renamed = RENAMES.get(key)
            if key not in new and renamed in new and renamed not in old:
                _rename(_find(views, key), renamed)
                present = {(renamed if k == key else k): v for k, v in present.items()}
        for key in [k for k in present if k not in new]:
            self.remove(_find(views, key), key)
            del present[key]
        for key, value in new.items():
            if key in present and present[key] != value:
                self.change(_find(views, key), key, present[key], value)
        for key, value in new.items():
            if key not in present:
                self.add(views, key, value, list(new), present)
                present[key] = value

    def remove(self, found: _Found, key: str) -> None:
        """Remove `key`; the comments it carried stay behind as comment lines."""
        from tomlkit.items import Comment, Trivia

        body = found.container.body
        item = found.item
        leading: list[Any] = []
        lefts = [r.left for r in self.removed]
        for _, above in reversed(body[: found.indices[0]]):
            if not isinstance(above, Comment) or any(above is left for left in lefts):
                break
            leading.insert(0, above)
        comments = [c for i in found.indices for c in _comments_in(body[i][1])]
        found.container.remove(key)
        left = None
        if comments:
            indent = item.trivia.indent.lstrip("\n")
            text = f"\n{indent}".join(comments)
            left = Comment(Trivia(indent=indent, comment=text, trail="\n"))
            body[found.indices[0]] = (None, left)
        self.removed.append(_Removed(key, item, found.container, leading, left))

    def change(self, found: _Found, key: str, old: Any, new: Any) -> None:
        """Give `key` a new value: tables are reconciled, arrays edited element by element."""
        from tomlkit.items import Array, Table

        if isinstance(old, dict) and isinstance(new, dict) and isinstance(found.item, Table):
            views = [(found.container.body[i][1].value, _around(found, i)) for i in found.indices]
            self.table(views, old, new)
        elif not (isinstance(found.item, Array) and _edit_array(found.item, old, new)):
            found.container._replace(key, key, _value_like(found.item, new))

    def add(
        self, views: list[View], key: str, value: Any, order: list[str], present: dict[str, Any]
    ) -> None:
        """Insert `key` after the nearest earlier key of `order` (the edition-6 order), or
        else above the first later key the file has. A new table copied from a sibling (the
        ROCm twin of a ``cuda-hipify`` kernel) goes right after that sibling."""
        from tomlkit.items import AoT, Table

        position = order.index(key)
        before = [k for k in order[:position] if k in present]
        later = [k for k in order[position + 1 :] if k in present]
        twin = _twin(views, value)
        if twin or before:
            found = _find(views, twin or before[-1])
            container, around, index = found.container, found.around, found.indices[-1] + 1
        elif later:
            found = min((_find(views, k) for k in later), key=lambda f: (f.view, f.indices[0]))
            container, around, index = found.container, found.around, found.indices[0]
        else:
            container, around = views[-1] if isinstance(value, dict) else views[0]
            index = len(container.body)
        item = self.new_item(key, value, _tables_in(container) if isinstance(value, dict) else [])
        # a plain value below a [sub.table] header would belong to that table, and a new
        # table above a plain value would capture it
        body = container.body
        tables = [i for i, (k, v) in enumerate(body) if _is_header_table(k, v)]
        values = [i for i, (k, _) in enumerate(body) if k is not None and i not in tables]
        if isinstance(item, (Table, AoT)):
            index = max([index, *(i + 1 for i in values)])
        else:
            index = min([index, *tables])
            _copy_indent(container, item)
        if isinstance(item, Table):
            _space_table(container, index, item, around)
        new_key = _new_key(container, key)
        if index < len(body):
            container._insert_at(index, new_key, item)
        else:
            container.append(new_key, item)

    def take(self, key: str, value: Any, *, leading: bool) -> tuple[Any, list[Any]] | None:
        """Move here the removed item that `key` replaces (same name or its last part, same
        value), out of its old place with its comments; and, with `leading`, the comment
        lines above it. None when no removed item fits."""
        from tomlkit.items import Null

        for removed in self.removed:
            same = removed.key == key or removed.key.endswith(f"-{key}")
            if not same or removed.item is None or removed.item.unwrap() != value:
                continue
            item, removed.item = removed.item, None
            comments = removed.leading if leading else []
            gone = [c for c in (removed.left, *comments) if c is not None]
            body = removed.container.body
            for i, (_, old) in enumerate(body):
                if any(old is c for c in gone):
                    body[i] = (None, Null())
            item.trivia.indent = ""
            return item, comments
        return None

    def new_item(self, key: str, value: Any, like: list[Any]) -> Any:
        """An item for a new key: a removed item with that value moves here (with its
        comments), else an equal item of `like` is copied (with its layout). For a new table,
        `like` are the tables next to it, whose values its own values may copy."""
        import tomlkit

        if isinstance(value, dict):
            table = tomlkit.table()
            for child_key, child in value.items():
                taken = (
                    None if isinstance(child, dict) else self.take(child_key, child, leading=True)
                )
                if taken:
                    item, comments = taken
                    for comment in comments:
                        table.append(None, comment)
                else:
                    same = [t.value.item(child_key) for t in like if child_key in t.value]
                    item = self.new_item(child_key, child, [] if isinstance(child, dict) else same)
                table.append(child_key, item)
            return table
        taken = self.take(key, value, leading=False)
        if taken:
            return taken[0]
        for candidate in like:
            if candidate.unwrap() == value:
                item = copy.deepcopy(candidate)
                item.trivia.comment = item.trivia.comment_ws = ""
                return item
        item = tomlkit.item(value)
        if isinstance(value, list) and len(item.as_string()) > 80:
            item.multiline(True)
        return item


def _find(views: list[View], key: str) -> _Found:
    for number, (container, around) in enumerate(views):
        indices = [i for i, (k, _) in enumerate(container.body) if k is not None and k.key == key]
        if indices:
            return _Found(number, container, around, indices)
    raise KeyError(key)  # pragma: no cover - only keys known to be present are looked up


def _rename(found: _Found, renamed: str) -> None:
    """Give a key its edition-6 name at the same place, keeping its value and comment."""
    from tomlkit.items import SingleKey, Table

    old_key, item = found.container.body[found.indices[0]]
    if isinstance(item, Table):
        item.invalidate_display_name()
    found.container._replace(old_key, SingleKey(renamed, sep=_sep_of(old_key)), item)


def _comments_in(item: Any) -> list[str]:
    from tomlkit.items import AoT, Array, Comment, InlineTable, Table, Whitespace

    if isinstance(item, Comment):
        return [item.trivia.comment.strip()]
    if isinstance(item, Whitespace):
        return []
    found = [item.trivia.comment.strip()] if item.trivia.comment else []
    if isinstance(item, Array):
        found += [group.comment.trivia.comment.strip() for group in item._value if group.comment]
        found += [c for value in item for c in _comments_in(value)]
    elif isinstance(item, (Table, InlineTable)):
        found += [c for _, child in item.value.body for c in _comments_in(child)]
    elif isinstance(item, AoT):
        found += [c for table in item.body for c in _comments_in(table)]
    return found


def _around(found: _Found, index: int) -> _Around:
    """What renders around the lines of the table at `index` of `found.container`."""
    from tomlkit.items import Null

    body = found.container.body
    table = body[index][1]
    earlier = [v for _, v in body[:index] if not isinstance(v, Null)]
    later = [v for _, v in body[index + 1 :] if not isinstance(v, Null)]
    if not table.is_super_table():  # its own [header] line comes first
        blank_before = False
    else:
        blank_before = _ends_blank(earlier[-1]) if earlier else found.around.blank_before
    if later:
        return _Around(blank_before, followed=True, blank_after=_starts_blank(later[0]))
    return _Around(blank_before, found.around.followed, found.around.blank_after)


def _edit_array(array: Any, old: Any, new: Any) -> bool:
    """Edit `array` in place (keeping its layout and comments); False when it cannot."""
    if not isinstance(new, list) or any(isinstance(v, (dict, list)) for v in [*old, *new]):
        return False
    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    try:
        for tag, i1, i2, j1, j2 in reversed(ops):
            if tag == "replace" and i2 - i1 == j2 - j1:
                for offset, value in enumerate(new[j1:j2]):
                    array[i1 + offset] = value
                continue
            if tag in ("replace", "delete"):
                del array[i1:i2]
            if tag in ("replace", "insert"):
                for offset, value in enumerate(new[j1:j2]):
                    array.insert(i1 + offset, value)
    except (IndexError, KeyError, ValueError):  # the caller then replaces the whole array
        return False
    return array.unwrap() == new


def _value_like(item: Any, value: Any) -> Any:
    """A new item for `value`, written the way `item` was (literal strings stay literal,
    inline tables and arrays stay inline)."""
    import tomlkit
    from tomlkit.items import Array, InlineTable, String, StringType

    if isinstance(item, String) and isinstance(value, str):
        literal = item.type == StringType.SLL and not any(c in value for c in "'\n\r")
        return tomlkit.string(value, literal=literal)
    if isinstance(item, (Array, InlineTable)):
        return _inline(value)
    return tomlkit.item(value)


def _inline(value: Any) -> Any:
    import tomlkit

    if isinstance(value, dict):
        table = tomlkit.inline_table()
        for key, child in value.items():
            table.append(key, _inline(child))
        return table
    if isinstance(value, list):
        array = tomlkit.array()
        array.extend(_inline(v) for v in value)
        return array
    return tomlkit.item(value)


def _tables_in(container: Any) -> list[Any]:
    from tomlkit.items import Table

    return [v for k, v in container.body if k is not None and isinstance(v, Table)]


def _is_header_table(key: Any, item: Any) -> bool:
    from tomlkit.items import AoT, Table

    return isinstance(item, (Table, AoT)) and key is not None and not key.is_dotted()


def _twin(views: list[View], value: Any) -> str | None:
    """The sibling table a new table shares most of its values with (two at least)."""
    if not isinstance(value, dict):
        return None
    best, most = None, 1
    for container, _ in views:
        for key, item in container.body:
            if key is None or not item.is_table():
                continue
            old = item.unwrap()
            shared = sum(k in old and old[k] == v for k, v in value.items())
            if shared > most:
                best, most = key.key, shared
    return best


def _new_key(container: Any, key: str) -> Any:
    """A key spelled like its neighbours (``key = value`` or ``key=value``)."""
    from tomlkit.items import SingleKey

    seps = [_sep_of(k) for k, v in container.body if k is not None and not v.is_table()]
    return SingleKey(key, sep=seps[0] if seps else None)


def _sep_of(key: Any) -> str:
    """The text between a key and its value; tomlkit keeps the part before ``=`` with the key."""
    written = key.as_string()
    return written[len(written.rstrip()) :] + key.sep


def _copy_indent(container: Any, item: Any) -> None:
    """Indent a new value like the other values of its table."""
    indents = [v.trivia.indent for k, v in container.body if k is not None and not v.is_table()]
    if indents:
        item.trivia.indent = indents[-1].lstrip("\n")


def _space_table(container: Any, index: int, table: Any, around: _Around) -> None:
    """One blank line before and after a new table. Comment lines just above the next header
    move along below the new table, so that they stay above the header they describe."""
    import tomlkit
    from tomlkit.items import Null

    before = [v for _, v in container.body[:index] if not isinstance(v, Null)]
    rest = [v for _, v in container.body[index:] if not isinstance(v, Null)]
    followed = bool(rest) or around.followed
    moved = _take_trailing_comments(before[-1]) if followed and before else []
    blank_before = _ends_blank(before[-1]) if before else around.blank_before
    table.trivia.indent = "" if blank_before else "\n"
    blank_after = _starts_blank(rest[0]) if rest else around.blank_after
    if followed and (moved or not blank_after):
        table.append(None, tomlkit.nl())
    for comment in moved:
        table.append(None, comment)


def _take_trailing_comments(item: Any) -> list[Any]:
    """Detach the comment lines at the very end of a table (those above the next header)."""
    from tomlkit.items import Comment, Null, Table

    if not isinstance(item, Table):
        return []
    body = item.value.body
    last = [i for i, (_, v) in enumerate(body) if not isinstance(v, Null)]
    if last and isinstance(body[last[-1]][1], Table):
        return _take_trailing_comments(body[last[-1]][1])
    taken: list[Any] = []
    for i in reversed(last):
        if not isinstance(body[i][1], Comment):
            break
        taken.insert(0, body[i][1])
        body[i] = (None, Null())
    return taken


def _ends_blank(item: Any) -> bool:
    from tomlkit.items import Comment, Null, Table, Whitespace

    if isinstance(item, Whitespace):
        return "\n" in item.s
    if isinstance(item, Table):
        children = [v for _, v in item.value.body if not isinstance(v, Null)]
        return bool(children) and _ends_blank(children[-1])
    if isinstance(item, Comment) or not item.is_table():
        return item.trivia.trail.count("\n") >= 2
    return False


def _starts_blank(item: Any) -> bool:
    from tomlkit.items import Null, Table, Whitespace

    if isinstance(item, Whitespace):
        return "\n" in item.s
    if isinstance(item, Table):
        if "\n" in item.trivia.indent:
            return True
        if item.is_super_table():
            children = [v for _, v in item.value.body if not isinstance(v, Null)]
            return bool(children) and _starts_blank(children[0])
    return False


def write(migration: Migration) -> None:
    """Replace the build.toml with the migrated text atomically, keeping its mode.

    A temporary file in the same directory is written, flushed to disk and renamed over the
    original, so a failure leaves either the old file or the new one, never half of either.
    """
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
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except PermissionError:
        raise OutputError(
            f"{display}: cannot write next to the file: permission denied "
            f"(is {path.parent} read-only?)"
        ) from None
    except OSError as exc:
        raise OutputError(f"{display}: cannot write the file: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise OutputError(f"{display}: cannot write the file: {exc.strerror or exc}") from None
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_dir(path.parent)


def _unlink_quietly(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable; not every platform or file system allows it."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)
