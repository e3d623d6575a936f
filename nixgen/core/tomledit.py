"""Format-preserving edits of a TOML document: make a text parse to a wanted document while
keeping everything that does not change.

The text's tomlkit document is reconciled towards the wanted data, table by table: keys that
stay keep their comments, order and layout; renamed keys keep their place; new keys go next
to their neighbours in the wanted order, new tables after the table that precedes them. The
result must read back (with tomli) as exactly the wanted data, or nothing is returned.

tomlkit has no public API to rename a key in place, to insert a key at a position or to read
an array's comment groups. Those three operations are the functions `_replace_key`,
`_insert_key` and `_array_comments` below — the only places that touch tomlkit's private
names; `tests/test_tomledit.py` checks that they exist in the tomlkit version installed, and
`pyproject.toml` bounds tomlkit to the versions tested. tomlkit is imported only when an edit
runs.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from typing import Any

import attrs
import tomli


class ReadBackError(Exception):
    """The edited text does not read back as the wanted document (a bug in the editor)."""


def rewrite(text: str, wanted: dict[str, Any], renames: Mapping[str, str] | None = None) -> str:
    """`text` edited so that it parses to `wanted`, keeping everything else as it was.

    `renames` maps old key names to new ones: a key that goes away while its new name
    arrives is renamed in place (keeping its value's layout and comment). Raises
    `ReadBackError` when the result would not parse to `wanted`.
    """
    import tomlkit

    doc = tomlkit.parse(text)
    start = _Around(blank_before=True, followed=False, blank_after=False)
    _Reconciler(renames or {}).table([(doc, start)], tomli.loads(text), wanted)
    out = doc.as_string()
    if "\r\n" in text and "\n" not in text.replace("\r\n", ""):
        out = out.replace("\r\n", "\n").replace("\n", "\r\n")
    if tomli.loads(out) != wanted:
        raise ReadBackError("the edited text does not read back as the wanted document")
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
    def __init__(self, renames: Mapping[str, str]) -> None:
        self.renames = renames
        self.removed: list[_Removed] = []

    def table(self, views: list[View], old: dict[str, Any], new: dict[str, Any]) -> None:
        """Edit the containers in `views`, which hold `old`, so that they hold `new`."""
        present = dict(old)
        for key in old:
            renamed = self.renames.get(key)
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
            _replace_key(found.container, key, key, _value_like(found.item, new))

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
            _insert_key(container, index, new_key, item)
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
    _replace_key(found.container, old_key, SingleKey(renamed, sep=_sep_of(old_key)), item)


def _comments_in(item: Any) -> list[str]:
    from tomlkit.items import AoT, Array, Comment, InlineTable, Table, Whitespace

    if isinstance(item, Comment):
        return [item.trivia.comment.strip()]
    if isinstance(item, Whitespace):
        return []
    found = [item.trivia.comment.strip()] if item.trivia.comment else []
    if isinstance(item, Array):
        found += [group.comment.trivia.comment.strip() for group in _array_comments(item)]
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
    return bool(array.unwrap() == new)


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
    written: str = key.as_string()
    sep: str = key.sep
    return written[len(written.rstrip()) :] + sep


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
        trail: str = item.trivia.trail
        return trail.count("\n") >= 2
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


# ------------------------------------------------------------------ tomlkit's private API
#
# The only three uses of tomlkit names that are not public; see the module docstring.


def _replace_key(container: Any, old: Any, new: Any, item: Any) -> None:
    """Put `new` = `item` where the key `old` stands (a rename when the keys differ)."""
    container._replace(old, new, item)


def _insert_key(container: Any, index: int, key: Any, item: Any) -> None:
    """Insert `key` = `item` at position `index` of `container`'s body."""
    container._insert_at(index, key, item)


def _array_comments(array: Any) -> list[Any]:
    """The comments written inside a multi-line array (one per value group)."""
    return [group for group in array._value if group.comment]
