"""Problems as data: every stage reports what is wrong as `Problem` records.

A problem names the file, the line and column (when known), the key path inside the
document (``kernel.relu.src[0]``), what was wrong and, when there is one, the closest
valid choice. Stages collect all problems first and raise `ProblemError` once, so a
user sees every mistake in one run. Rendering (human text or JSON) lives here too, so
that every command prints problems the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Literal

import attrs

from nixgen.core import outside

Severity = Literal["error", "warning"]

#: Exit status for input the user must fix: an invalid build.toml, an unwritable output.
EXIT_INVALID = 2
#: Exit status for every other failure: nixgen's own (a bug, a missing tool), a Nix build
#: that failed, and `--check` finding stale files on disk (like `git diff --exit-code`).
EXIT_FAILURE = 1

PathPart = str | int


def format_path(parts: Sequence[PathPart]) -> str:
    """Render a key path the way users write it: ``kernel.relu.src[0]``.

    Keys that are not bare TOML keys are quoted, so ``kernel."a.b".src`` stays unambiguous.
    """
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        key = part if _is_bare_key(part) else json.dumps(part, ensure_ascii=False)
        out += f".{key}" if out else key
    return out


def _is_bare_key(key: str) -> bool:
    return bool(key) and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)


def printable(text: str) -> str:
    """`text` with every invisible or line-breaking character escaped (``\\n``, ``\\x1b``,
    ``\\u202e``) and every credential redacted, so a value from a hostile build.toml can
    neither forge extra output lines nor send terminal escape sequences or bidi overrides
    to the reader's screen (`nixgen.core.outside.escape`, the one sanitiser)."""
    return outside.escape(text)


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The valid choice closest to `word`, or None when nothing is reasonably close."""
    choices = list(choices)
    normalized = word.replace("_", "-").lower()
    for choice in choices:
        if choice.replace("_", "-").lower() == normalized:
            return choice
    import difflib  # only when a name is wrong

    matches = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A ``; did you mean `x`?`` suffix, or an empty string."""
    match = closest(word, choices)
    return f"; did you mean `{match}`?" if match else ""


def one_of(choices: Iterable[str]) -> str:
    return ", ".join(f"`{c}`" for c in choices)


@attrs.frozen(kw_only=True)
class Problem:
    """One thing wrong with the input (or worth a warning)."""

    message: str
    path: tuple[PathPart, ...] = ()
    file: str | None = None
    line: int | None = None
    column: int | None = None
    severity: Severity = "error"
    hint: str | None = None
    #: Locate at the key itself rather than at its value (unknown or misplaced keys).
    at_key: bool = attrs.field(default=False, eq=False, repr=False)
    #: Where nixgen's reading differs from the field's own parser (the `kernels` client's
    #: `Build.open`), said so on the problem: an error that the format allows (a rule of
    #: nixgen's own, beyond the format: a path that leaves the project), or a warning about
    #: what the format refuses and nixgen still reads (an older nixgen dialect, which
    #: `nixgen migrate` converts). Every other problem is the format's own verdict.
    beyond_format: bool = attrs.field(default=False, eq=False, repr=False)

    @property
    def key(self) -> str:
        return format_path(self.path)

    def located(self, file: str | None, line: int | None, column: int | None) -> Problem:
        return attrs.evolve(self, file=file, line=line, column=column)

    def render(self) -> str:
        """One line for humans: ``build.toml:12:3: error: kernel.relu.src[0]: …``, or
        ``nixgen: error: …`` for a problem of no file (nixgen's one error format)."""
        where = self.file or "nixgen"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.severity}: "
        if self.path:
            text += f"{self.key}: "
        text += self.message
        if self.hint:
            text += f" ({self.hint})"
        return printable(text)

    def to_json(self) -> dict[str, object]:
        return {
            "severity": self.severity,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "key": self.key,
            "message": self.message,
            "hint": self.hint,
        }


def error(message: str, path: Sequence[PathPart] = (), hint: str | None = None) -> Problem:
    return Problem(message=message, path=tuple(path), hint=hint)


def warning(message: str, path: Sequence[PathPart] = (), hint: str | None = None) -> Problem:
    return Problem(message=message, path=tuple(path), hint=hint, severity="warning")


def unknown_key_message(key: str, allowed: Sequence[str]) -> str:
    """What a table that holds only `allowed` says of `key`: the closest valid key and
    the whole list."""
    return f"unknown key `{key}`{did_you_mean(key, allowed)}; allowed keys: {one_of(allowed)}"


def unknown_key(key: str, allowed: Sequence[str], table: Sequence[PathPart] = ()) -> Problem:
    """The error for `key` in the table at `table` (`unknown_key_message`), reported at
    the key itself."""
    return Problem(message=unknown_key_message(key, allowed), path=(*table, key), at_key=True)


class NixgenError(Exception):
    """Base class of every error nixgen reports without a traceback."""

    exit_code = EXIT_FAILURE

    def render(self) -> str:
        return Problem(message=str(self)).render()


class ProblemError(NixgenError):
    """Invalid input: carries every problem found, errors and warnings alike."""

    exit_code = EXIT_INVALID

    def __init__(self, problems: Sequence[Problem]):
        self.problems = sort_problems(problems)
        super().__init__(self.errors[0].render() if self.errors else "invalid input")

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def render(self) -> str:
        return render_problems(self.problems)


class OutputError(NixgenError):
    """The output could not be written (permissions, hand-written files, a full disk)."""

    exit_code = EXIT_INVALID


def sort_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Stable, deterministic order: by file, line, column, then key path and message."""

    def key(p: Problem) -> tuple[object, ...]:
        return (
            p.file or "",
            p.line if p.line is not None else 1 << 30,
            p.column or 0,
            p.key,
            p.message,
        )

    unique = list(dict.fromkeys(problems))
    return sorted(unique, key=key)


def render_problems(problems: Sequence[Problem]) -> str:
    """`problems` as text, one line each in `sort_problems` order (warnings and errors
    alike, whatever stage found them), then their count."""
    problems = sort_problems(problems)
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    lines = [p.render() for p in problems]
    summary = []
    if errors:
        summary.append(f"{errors} error{'s' if errors != 1 else ''}")
    if warnings:
        summary.append(f"{warnings} warning{'s' if warnings != 1 else ''}")
    # A count after a list of located problems; a lone message of nixgen's needs none.
    if summary and errors and any(p.file for p in problems):
        lines.append(", ".join(summary))
    return "\n".join(lines)
