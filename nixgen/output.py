"""What the command line prints: problems, JSON, and failures turned into exit statuses.

Click-free on purpose: `nixgen render` of an unchanged or ordinary project runs without
loading click (`nixgen.entry`), and prints exactly what the click application prints.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import Any

from nixgen.errors import EXIT_INTERNAL, NixgenError, Problem, render_problems

_RED_BOLD = "\033[31m\033[1m"
_YELLOW = "\033[33m"
_RESET = "\033[0m"


def use_color(stream: Any = None) -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    stream = stream or sys.stderr
    return "NO_COLOR" not in os.environ and hasattr(stream, "isatty") and stream.isatty()


def colorize(line: str) -> str:
    if ": error: " in line:
        return line.replace(": error: ", f": {_RED_BOLD}error{_RESET}: ", 1)
    if ": warning: " in line:
        return line.replace(": warning: ", f": {_YELLOW}warning{_RESET}: ", 1)
    return line


def err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def out(text: str, *, newline: bool = True) -> None:
    sys.stdout.write(text + ("\n" if newline else ""))
    sys.stdout.flush()


def print_problems(problems: list[Problem]) -> None:
    """Problems on stderr, one line each, coloured on a terminal."""
    if not problems:
        return
    text = render_problems(problems)
    if use_color():
        text = "\n".join(colorize(line) for line in text.splitlines())
    err(text)


def emit_json(payload: object) -> None:
    out(json.dumps(payload, indent=2, sort_keys=True, ensure_ascii=False))


def report(exc: BaseException, *, as_json: bool) -> int:
    """Print a failure the way nixgen reports failures, and return the exit status.

    Known errors become located problems; a closed pipe ends quietly; anything else is a
    bug in nixgen, reported in one line without a traceback (``NIXGEN_DEBUG=1`` lets the
    caller re-raise instead).
    """
    if isinstance(exc, NixgenError):
        if as_json:
            emit_json(exc.to_json())
        elif hasattr(exc, "problems"):
            print_problems(exc.problems)
        else:
            err(exc.render())
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        err("interrupted")
        return 130
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`nixgen schema | head`): stop quietly, like `cat`.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the closed pipe
        return 0
    message = f"internal error: {type(exc).__name__}: {exc}"
    if as_json:
        emit_json({"ok": False, "problems": [{"severity": "error", "message": message}]})
    else:
        err(
            f"nixgen: {message}\n(this is a bug in nixgen; rerun with NIXGEN_DEBUG=1 for a "
            "traceback and report it)"
        )
    return EXIT_INTERNAL


def expected(exc: BaseException) -> bool:
    """Failures nixgen reports as such even with NIXGEN_DEBUG (not bugs)."""
    return isinstance(exc, (NixgenError, KeyboardInterrupt, BrokenPipeError))
