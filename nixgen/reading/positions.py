"""Where each key and array element of a TOML document starts (line and column).

tomli gives values but no positions. Errors must name a line, so this module scans the
text of a document that tomli already accepted and maps every key path
(``("kernel", "relu", "src", 0)``) to its 1-based ``(line, column)``. Because the input is
known to be valid TOML, the scanner can be small: it only has to find where things start,
not to check them. It runs only when there is a problem to report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import tomli

Position = tuple[int, int]
KeyPath = tuple[str | int, ...]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


class _Scanner:
    def __init__(self, text: str):
        self.text = text
        self.i = 0
        self.line = 1
        self.line_start = 0
        self.positions: dict[KeyPath, Position] = {}
        self.values: dict[KeyPath, Position] = {}
        self.aot_counts: dict[KeyPath, int] = {}
        #: The last statement (key/value or table header) read, and where it starts.
        self.last: tuple[KeyPath, Position] | None = None

    # -- low level ---------------------------------------------------------------------
    def pos(self) -> Position:
        return (self.line, self.i - self.line_start + 1)

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.text[j] if j < len(self.text) else ""

    def advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.i >= len(self.text):
                return
            if self.text[self.i] == "\n":
                self.line += 1
                self.line_start = self.i + 1
            self.i += 1

    def skip_ws(self) -> None:
        while self.peek() in (" ", "\t"):
            self.advance()

    def skip_ws_comments_newlines(self) -> None:
        while True:
            c = self.peek()
            if c in (" ", "\t", "\r", "\n"):
                self.advance()
            elif c == "#":
                while self.peek() not in ("\n", ""):
                    self.advance()
            else:
                return

    def record(self, path: KeyPath, where: Position) -> None:
        self.positions.setdefault(path, where)

    # -- tokens ------------------------------------------------------------------------
    def read_string(self) -> str:
        """Read a basic or literal (possibly multi-line) string; return its value roughly.

        Only a single-line string's value is exact (a quoted key's name, whose escapes
        tomli decodes); positions do not depend on any other string's value.
        """
        quote = self.peek()
        if self.text.startswith(quote * 3, self.i):
            self.advance(3)
            end = quote * 3
            start = self.i
            while self.i < len(self.text) and not self.text.startswith(end, self.i):
                if quote == '"' and self.peek() == "\\":
                    self.advance()
                self.advance()
            value = self.text[start : self.i]
            self.advance(3)
            # A multi-line string may end with up to two extra quotes.
            while self.peek() == quote:
                self.advance()
            return value
        self.advance()
        start = self.i
        while self.i < len(self.text) and self.peek() != quote:
            if quote == '"' and self.peek() == "\\":
                self.advance()  # the escaped character cannot end the string
            self.advance()
        value = self.text[start : self.i]
        self.advance()
        return _basic_string(value) if quote == '"' else value

    def read_key(self) -> list[tuple[str, Position]]:
        parts: list[tuple[str, Position]] = []
        while True:
            self.skip_ws()
            where = self.pos()
            c = self.peek()
            if c in ('"', "'"):
                parts.append((self.read_string(), where))
            else:
                start = self.i
                while self.peek() in _BARE and self.peek():
                    self.advance()
                parts.append((self.text[start : self.i], where))
            self.skip_ws()
            if self.peek() == ".":
                self.advance()
                continue
            return parts

    def read_value(self, path: KeyPath) -> None:
        self.skip_ws()
        c = self.peek()
        if c in ('"', "'"):
            self.read_string()
        elif c in ("[", "{"):  # an array's elements, an inline table's keys
            close = "]" if c == "[" else "}"
            self.advance()
            index = 0
            while True:
                self.skip_ws_comments_newlines()
                if self.peek() in (close, ""):
                    self.advance()
                    return
                start = self.i
                if c == "[":
                    self.record((*path, index), self.pos())
                    self.read_value((*path, index))
                    index += 1
                else:
                    self.key_value(path)
                self.skip_ws_comments_newlines()
                if self.peek() == ",":
                    self.advance()
                elif self.i == start:
                    self.advance()  # not valid TOML; never loop on it
        else:
            while self.peek() not in ("", ",", "]", "}", "\n", "#", "\r"):
                self.advance()

    def key_value(self, prefix: KeyPath) -> None:
        self.skip_ws()
        start = self.pos()
        parts = self.read_key()
        path = prefix
        for name, where in parts:
            path = (*path, name)
            self.record(path, where)
        self.last = (path, start)
        self.skip_ws()
        if self.peek() == "=":
            self.advance()
        self.skip_ws()
        self.values.setdefault(path, self.pos())
        self.read_value(path)

    def header(self) -> KeyPath:
        start = self.pos()
        array = self.text.startswith("[[", self.i)
        self.advance(2 if array else 1)
        parts = self.read_key()
        self.advance(2 if array else 1)
        path: KeyPath = ()
        for name, where in parts:
            path = (*path, name)
            # For [[a.b]], earlier parts refer to the latest element of their own arrays.
            if path in self.aot_counts and len(path) < len(parts):
                path = (*path, self.aot_counts[path] - 1)
            self.record(path, where)
        if array:
            index = self.aot_counts.get(path, 0)
            self.aot_counts[path] = index + 1
            self.record((*path, index), parts[-1][1])
            self.last = (path, start)
            return (*path, index)
        self.last = (path, start)
        return path

    def scan(self) -> dict[KeyPath, Position]:
        prefix: KeyPath = ()
        while True:
            self.skip_ws_comments_newlines()
            c = self.peek()
            if not c:
                return self.positions
            start = self.i
            if c == "[":
                prefix = self.header()
            else:
                self.key_value(prefix)
            if self.i == start:
                self.advance()  # not valid TOML; never loop on it


def _basic_string(body: str) -> str:
    """The value of the basic string ``"body"``, its escapes decoded by tomli (`body` as
    written when it does not parse: the scan of a document's part before a TOML error)."""
    try:
        value: str = tomli.loads(f'k = "{body}"')["k"]
    except tomli.TOMLDecodeError:
        return body
    return value


class Positions:
    """Where keys start and where their values start."""

    def __init__(self, keys: dict[KeyPath, Position], values: dict[KeyPath, Position]):
        self.keys = keys
        self.values = values

    def locate(self, path: Sequence[str | int], *, at_key: bool = False) -> Position | None:
        """Position of `path` (its value, unless `at_key`), or of its nearest recorded
        ancestor when the path itself is absent: a missing key is reported at the table
        that should hold it."""
        path = tuple(path)
        if not at_key and path in self.values:
            return self.values[path]
        while path:
            if path in self.keys:
                return self.keys[path]
            path = path[:-1]
        return None


def scan(text: str) -> Positions:
    """Map every key path of a valid TOML document to the (line, column) where it starts."""
    scanner = _Scanner(text)
    scanner.scan()
    return Positions(scanner.positions, scanner.values)


class Statement(NamedTuple):
    """The last statement of a (partial) document, and what the scan saw before it."""

    path: KeyPath
    where: Position
    keys: dict[KeyPath, Position]
    values: dict[KeyPath, Position]


def last_statement(text: str) -> Statement | None:
    """The key path of the last statement in `text`, where that statement starts, and
    where every key (and value) in `text` was first seen.

    `text` may end in the middle of a statement: it is the part of a document before a
    TOML error, scanned to name the key that was defined twice.
    """
    scanner = _Scanner(text)
    scanner.scan()
    if scanner.last is None:
        return None
    path, where = scanner.last
    return Statement(path, where, scanner.positions, scanner.values)
