"""Stage 1 — load: read a ``build.toml`` into a TOML document that knows its positions.

Everything that can go wrong before there is a TOML value (no such file, a directory, no
permission, not UTF-8, too big, not TOML) becomes a located `Problem`, never a traceback.
"""

from __future__ import annotations

import ast
import errno
import os
import re
import stat
import sys
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import tomli

from nixgen.core import paths
from nixgen.core.errors import Problem, ProblemError, format_path

if TYPE_CHECKING:
    # Imported where a problem is located: a document without one never scans positions.
    from nixgen.reading import positions

#: A build.toml larger than this is refused before parsing (real files are a few KiB).
MAX_BYTES = 8 * 1024 * 1024

BUILD_TOML = "build.toml"


@attrs.frozen(kw_only=True)
class Document:
    """A parsed TOML document: its data plus lazy key positions for error messages."""

    path: Path
    display: str
    text: str
    data: dict[str, Any]

    @cached_property
    def positions(self) -> positions.Positions:
        from nixgen.reading import positions

        return positions.scan(self.text)

    def locate(self, problem: Problem) -> Problem:
        """Fill in file, line and column of `problem` from its key path."""
        if problem.line is not None:
            return problem if problem.file else attrs.evolve(problem, file=self.display)
        where = self.positions.locate(problem.path, at_key=problem.at_key)
        line, column = where if where else (None, None)
        return problem.located(self.display, line, column)

    def locate_all(self, problems: list[Problem]) -> list[Problem]:
        return [self.locate(p) for p in problems]


def resolve_build_file(project: Path) -> Path:
    """`project` may be a project directory (whatever its name: `kernels.toml/` too) or
    a build.toml path itself."""
    if project.name != BUILD_TOML and project.is_dir():
        return project / BUILD_TOML
    return project


def display_name(path: Path) -> str:
    """A short, stable name for messages: relative to the working directory when inside it."""
    try:
        cwd = Path(os.getcwd())
    except OSError:  # the working directory was deleted: absolute paths still work
        return str(path)
    absolute = Path(os.path.abspath(path))
    if absolute == cwd or cwd in absolute.parents:
        return str(absolute.relative_to(cwd))
    return str(absolute)


def read_text(path: Path, display: str) -> str:
    """Read `path` as UTF-8 text with a located problem for each way it can fail."""

    def fail(message: str, line: int | None = None, column: int | None = None) -> ProblemError:
        return ProblemError([Problem(message=message, file=display, line=line, column=column)])

    def not_found() -> ProblemError:
        found = paths.lstat_under(path.parent, path.name)
        if isinstance(found, os.stat_result) and stat.S_ISLNK(found.st_mode):
            return fail(f"is a symbolic link to `{os.readlink(path)}`, which does not exist")
        if not path.is_absolute() and paths.cwd_gone():
            return fail(
                "the current directory no longer exists (it was deleted or moved); cd "
                "to the project, or give its path as an absolute one"
            )
        return fail("no such file; a kernel project needs a build.toml at its root")

    # The one reader of project files (`nixgen.core.paths`): never blocks on a FIFO or a
    # device, reads at most MAX_BYTES + 1 bytes. build.toml may be a link (followed).
    raw = paths.read_file(path, limit=MAX_BYTES, follow=True)
    if raw is None:
        raise not_found()
    if isinstance(raw, paths.Blocked):
        if raw.too_large:
            raise fail(
                f"file is larger than {MAX_BYTES // (1024 * 1024)} MiB; refusing to parse it"
            )
        if raw.error == errno.ENOENT:
            raise not_found()
        if raw.error in (errno.EACCES, errno.EPERM):
            raise fail("permission denied while reading the file")
        if raw.reason == "is a directory" or raw.error == errno.EISDIR:
            raise fail("is a directory, expected a build.toml file")
        if raw.error is not None:
            raise fail(f"cannot read the file: {os.strerror(raw.error)}")
        raise fail("is not a regular file (a FIFO, socket or device); expected a build.toml file")
    return decode(raw, display)


def decode(raw: bytes, display: str) -> str:
    """The bytes of a TOML file (`display` for messages) as text, a UTF-8 byte order mark
    dropped; a located problem when they are not UTF-8."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ProblemError(
            [
                Problem(
                    message=f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); TOML files must "
                    "be UTF-8",
                    file=display,
                    line=line,
                    column=column,
                )
            ]
        ) from None


def parse(text: str, path: Path, display: str) -> Document:
    """Parse TOML text; a syntax error keeps tomli's line and column, and a key defined
    twice is reported at the second definition with its key path."""
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise ProblemError([toml_problem(exc, text, display)]) from None
    except RecursionError as exc:
        # tomli's own limits (nesting depth, parts of a key) and Python's stack: input
        # no build.toml needs, reported where it starts, like any other TOML error.
        raise ProblemError([limit_problem(str(exc), text, display)]) from None
    except ValueError as exc:
        # Python's limit on the digits of an integer read from text (4300 by default).
        raise ProblemError([digits_problem(str(exc), text, display)]) from None
    return Document(path=path, display=display, text=text, data=data)


def digits_problem(message: str, text: str, display: str) -> Problem:
    """A located problem for a number with more digits than Python converts (an integer
    of thousands of digits): at the first run of that many digits."""
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    found = re.search("[0-9_]{" + str(limit + 1) + ",}", text)
    line = column = None
    if found is not None:
        line = text.count("\n", 0, found.start()) + 1
        column = found.start() - (text.rfind("\n", 0, found.start()) + 1) + 1
    what = (
        f"a number has more than {limit} digits; no build.toml needs one this long"
        if found is not None or "digits" in message
        else message
    )
    return Problem(
        message=f"invalid TOML: {what}",
        file=display,
        line=line,
        column=column,
    )


#: Deeper than this, or with more key parts, nixgen refuses a TOML file (tomli's limits
#: are 400 and 1000; no real build.toml comes anywhere near).
MAX_NESTING = 400
MAX_KEY_PARTS = 1000


def limit_problem(message: str, text: str, display: str) -> Problem:
    """A located problem for TOML past the parser's limits: the first place where values
    nest deeper than `MAX_NESTING` or a key has more than `MAX_KEY_PARTS` parts."""
    line = column = None
    depth = 0
    quote = ""
    row, start = 1, 0
    dots = 0
    index = 0
    while index < len(text):
        c = text[index]
        if quote:
            if c == "\\" and quote == '"':
                index += 1
            elif c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            end = text.find("\n", index)
            index = len(text) if end < 0 else end
            continue
        elif c in "[{":
            depth += 1
            if depth > MAX_NESTING and line is None:
                line, column = row, index - start + 1
        elif c in "]}":
            depth = max(0, depth - 1)
        elif c == ".":
            dots += 1
            if dots >= MAX_KEY_PARTS and line is None:
                line, column = row, 1
        if c == "\n":
            row, start, dots = row + 1, index + 1, 0
        index += 1
    if "part" in message:
        what = f"a key has more than {MAX_KEY_PARTS} dotted parts"
    elif "nest" in message:
        what = f"arrays or inline tables are nested more than {MAX_NESTING} levels deep"
    else:
        what = "the file is nested too deeply to parse"
    return Problem(
        message=f"invalid TOML: {what}; no build.toml needs this",
        file=display,
        line=line,
        column=column,
    )


#: tomli's messages for a key or table defined twice (or extended after it was closed).
_REDEFINED = (
    "Cannot overwrite a value",
    "Cannot declare ",
    "Cannot mutate immutable namespace",
    "Cannot redefine namespace",
    "Duplicate inline table key",
)


def toml_problem(exc: tomli.TOMLDecodeError, text: str, display: str) -> Problem:
    """A located, actionable problem for a TOML syntax error."""
    message = getattr(exc, "msg", None) or str(exc).split(" (at ")[0]
    line = getattr(exc, "lineno", None)
    column = getattr(exc, "colno", None)
    offset = getattr(exc, "pos", None)
    if isinstance(offset, int) and message.startswith(_REDEFINED):
        from nixgen.reading import positions

        found = positions.last_statement(text[:offset])
        if found is not None:
            return _redefined(message, found, text, display)
    hint = None
    bad = text[offset] if isinstance(offset, int) and 0 <= offset < len(text) else ""
    if message.startswith(("Illegal character", "Found invalid character")) and (
        bad in ("\n", "\r") or not bad.isprintable()
    ):
        if bad in ("\n", "\r"):
            message = "unterminated string: a string in quotes must end on the same line"
            hint = 'use """triple quotes""" for text over several lines'
        else:
            message = f"control character U+{ord(bad):04X} is not allowed in TOML text"
            hint = f"remove it; inside a string, write it as the escape `\\u{ord(bad):04X}`"
    elif message == "Invalid value" and (bad.isalpha() or bad == "_"):
        hint = 'strings need quotes: write `"..."`'
    elif message.startswith("Unescaped '\\'"):
        hint = "write `\\\\` for a backslash, or use a 'literal string' in single quotes"
    return Problem(
        message=f"invalid TOML: {message}", file=display, line=line, column=column, hint=hint
    )


def _set_prefix(
    path: tuple[str | int, ...], seen: dict[Any, tuple[int, int]], before: tuple[int, int]
) -> tuple[str | int, ...] | None:
    """The longest proper prefix of `path` defined before `before` (``a.b`` for ``a.b.c``)."""
    for end in range(len(path) - 1, 0, -1):
        where = seen.get(path[:end])
        if where is not None and where < before:
            return path[:end]
    return None


def _key_in(message: str) -> tuple[str, ...] | None:
    """The key tuple some tomli messages end with: ``Cannot declare ('a', 'b') twice``."""
    start, end = message.find("("), message.rfind(")")
    if start < 0 or end < start:
        return None
    try:
        key = ast.literal_eval(message[start : end + 1])
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(key, tuple) and key and all(isinstance(k, str) for k in key):
        return key
    return None


def _redefined(message: str, found: positions.Statement, text: str, display: str) -> Problem:
    (line, column), seen = found.where, found.keys
    path = _key_in(message) or found.path
    first = seen.get(path)
    before = f" (first at line {first[0]})" if first is not None and first < (line, column) else ""
    key = format_path(path)
    if message.startswith("Cannot declare "):
        detail = f"table `[{key}]` is declared twice{before}; merge the two tables into one"
    elif message.startswith(("Cannot mutate", "Cannot redefine")):
        detail = (
            f"cannot add keys to `{key}` here: it is already {_what_is(path, found, text)}"
            f"{before}; define each table in one place"
        )
    elif not before and (prefix := _set_prefix(path, seen, (line, column))) is not None:
        detail = (
            f"`{key}` cannot be defined: `{format_path(prefix)}` is already "
            f"{_what_is(prefix, found, text)} (at line {seen[prefix][0]})"
        )
    else:
        detail = f"`{key}` is defined twice{before}; TOML allows each key once per table"
    return Problem(
        message=f"invalid TOML: {detail}",
        path=tuple(path),
        file=display,
        line=line,
        column=column,
    )


def _what_is(path: tuple[str | int, ...], found: positions.Statement, text: str) -> str:
    """What `path` was defined as, judged by the first character of its value."""
    where = found.values.get(path)
    if where is None:
        return "a table made by dotted keys"
    lines = text.split("\n")
    start = lines[where[0] - 1][where[1] - 1 :] if where[0] <= len(lines) else ""
    if start.startswith("{"):
        return "an inline table"
    if start.startswith("["):
        return "an array"
    return "a value"


def load(project: Path | str) -> Document:
    """Load the build.toml of `project` (a directory or a file path)."""
    path = resolve_build_file(Path(project))
    display = display_name(path)
    return parse(read_text(path, display), path, display)
