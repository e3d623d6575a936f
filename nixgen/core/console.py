"""What nixgen writes to the terminal: stderr and stdout writes that survive a closed
descriptor or a narrow encoding, status lines by verbosity, colour, problems, JSON, and the
settings the options every verb takes set (`nixgen.cmdline.cli.common_options`).

Every stage above writing reports through it (a render's summary, a build's progress); the
command line's own half (the JSON envelope, failures turned into exit statuses, standard
output's guard) is `nixgen.cmdline.output` and `nixgen.cmdline.streams`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from typing import Any

from nixgen.core import outside
from nixgen.core.errors import Problem, render_problems

_RED_BOLD = "\033[31m\033[1m"
_YELLOW = "\033[33m"
_RESET = "\033[0m"
#: The foreground colours `style` writes (ANSI SGR codes, as click.style writes them).
_FOREGROUND = {"red": 31, "green": 32, "yellow": 33}


def terminal_safe(text: str) -> str:
    """`text` (from a build log, Nix's messages) with every escape sequence and control
    character removed, so printing it can neither restyle, retitle nor rewrite the terminal
    (`nixgen.core.outside.strip_controls`, of the one sanitiser)."""
    return outside.strip_controls(text)


#: Characters `json.dumps` leaves as they are that the console's sink would escape.
_JSON_RAW = "[\x7f-\x9f\u202a-\u202e\u2066-\u2069]"

COLOR_MODES = ("auto", "always", "never")


class Settings:
    """What the options every verb takes (`nixgen.cmdline.cli.common_options`) asked for."""

    def __init__(self) -> None:
        #: -1 per -q, +1 per -v.
        self.verbosity = 0
        #: -L: show Nix's build logs as they come.
        self.build_logs = False
        #: --color; "auto" follows the environment and the stream.
        self.color = "auto"
        #: --no-progress: plain progress lines, never a live one.
        self.progress = True
        #: The verb running, for the JSON envelope.
        self.command: str | None = None

    def forced_color(self) -> bool | None:
        """True or False when colour does not depend on the stream, else None."""
        if self.color != "auto":
            return self.color == "always"
        if os.environ.get("NO_COLOR"):
            return False
        if os.environ.get("FORCE_COLOR") or os.environ.get("CLICOLOR_FORCE"):
            return True
        if os.environ.get("TERM") == "dumb":
            return False
        return None


settings = Settings()


def reset() -> None:
    """Back to the defaults (each run of the command line starts from them)."""
    global settings
    settings = Settings()


def use_color(stream: Any = None) -> bool:
    """Whether to colour what goes to `stream` (default stderr): ``--color`` when given;
    else never with a non-empty NO_COLOR (https://no-color.org), always with a non-empty
    FORCE_COLOR or CLICOLOR_FORCE, never on ``TERM=dumb``; else only on a terminal."""
    forced = settings.forced_color()
    if forced is not None:
        return forced
    stream = stream or sys.stderr
    return hasattr(stream, "isatty") and stream.isatty()


def style(text: str, *, fg: str) -> str:
    """`text` in the foreground colour `fg` (``red``, ``green``, ``yellow``)."""
    return f"\033[{_FOREGROUND[fg]}m{text}{_RESET}"


def colorize(line: str) -> str:
    if ": error: " in line:
        return line.replace(": error: ", f": {_RED_BOLD}error{_RESET}: ", 1)
    if ": warning: " in line:
        return line.replace(": warning: ", f": {_YELLOW}warning{_RESET}: ", 1)
    return line


def write(stream: Any, text: str) -> None:
    """Write `text` to a text stream, escaping what its encoding cannot carry (a value
    with non-ASCII characters under ``LC_ALL=C``) instead of failing. Everything written
    passes `outside.at_sink` first: no credential, and no escape sequence or control
    character but the console's own colours, tab and newline, reaches the terminal."""
    if stream is None:
        return  # the descriptor was closed when nixgen started
    text = outside.at_sink(text)
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def err(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # nowhere left to say anything
        write(sys.stderr, text + "\n")


def out(text: str, *, newline: bool = True) -> None:
    write(sys.stdout, text + ("\n" if newline else ""))


def status(text: str, *, level: int = 0) -> None:
    """A status line on stderr: shown unless ``-q`` (``level`` 1: only with ``-v``)."""
    if settings.verbosity >= level:
        err(text)


def stdout_encodes(text: str) -> bool:
    """Whether standard output's encoding can carry `text` as it is."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def print_problems(problems: list[Problem]) -> None:
    """Problems on stderr, one line each, coloured on a terminal; ``-qq`` leaves out
    warnings (errors are always printed)."""
    if settings.verbosity < -1:
        problems = [p for p in problems if p.severity == "error"]
    if not problems:
        return
    text = render_problems(problems)
    if use_color():
        text = "\n".join(colorize(line) for line in text.splitlines())
    err(text)


def emit_json(payload: object) -> None:
    """`payload` as JSON on stdout; non-ASCII text is written as ``\\u`` escapes when
    the locale's encoding cannot carry it, so the JSON stays valid in any locale."""
    text = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False)
    if not stdout_encodes(text):
        text = json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=True)
    # What JSON leaves raw that a terminal acts on (DEL, C1, bidi overrides) can only sit
    # in a string here: as `\u` escapes it stays the same JSON and passes the sink as is.
    out(re.sub(_JSON_RAW, lambda m: f"\\u{ord(m.group()):04x}", text))
