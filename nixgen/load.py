"""Stage 1 — load: read a ``build.toml`` into a TOML document that knows its positions.

Everything that can go wrong before there is a TOML value (no such file, a directory, no
permission, not UTF-8, too big, not TOML) becomes a located `Problem`, never a traceback.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any

import attrs
import tomli

from nixgen import positions
from nixgen.errors import Problem, ProblemError

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
    """`project` may be a project directory or a build.toml path itself."""
    if project.is_dir() and not project.name.endswith(".toml"):
        return project / BUILD_TOML
    return project


def display_name(path: Path) -> str:
    """A short, stable name for messages: relative to the working directory when inside it."""
    absolute = Path(os.path.abspath(path))
    cwd = Path(os.getcwd())
    if absolute == cwd or cwd in absolute.parents:
        return str(absolute.relative_to(cwd))
    return str(absolute)


def read_text(path: Path, display: str) -> str:
    """Read `path` as UTF-8 text with a located problem for each way it can fail."""

    def fail(message: str, line: int | None = None, column: int | None = None) -> ProblemError:
        return ProblemError([Problem(message=message, file=display, line=line, column=column)])

    try:
        if path.is_dir():
            raise fail("is a directory, expected a build.toml file")
        with path.open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise fail("no such file; a kernel project needs a build.toml at its root") from None
    except PermissionError:
        raise fail("permission denied while reading the file") from None
    except IsADirectoryError:
        raise fail("is a directory, expected a build.toml file") from None
    except OSError as exc:
        raise fail(f"cannot read the file: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise fail(f"file is larger than {MAX_BYTES // (1024 * 1024)} MiB; refusing to parse it")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise fail(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); TOML files must be UTF-8",
            line,
            column,
        ) from None


def parse(text: str, path: Path, display: str) -> Document:
    """Parse TOML text; a syntax error keeps tomli's line and column."""
    try:
        data = tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        message = getattr(exc, "msg", None) or str(exc).split(" (at ")[0]
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
        raise ProblemError(
            [Problem(message=f"invalid TOML: {message}", file=display, line=line, column=column)]
        ) from None
    return Document(path=path, display=display, text=text, data=data)


def load(project: Path | str) -> Document:
    """Load the build.toml of `project` (a directory or a file path)."""
    path = resolve_build_file(Path(project))
    display = display_name(path)
    return parse(read_text(path, display), path, display)
