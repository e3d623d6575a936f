"""What the command line prints: problems, JSON, and failures turned into exit statuses.

Click-free on purpose: `nixgen render` of an unchanged or ordinary project runs without
loading click (`nixgen.cmdline.entry`), and prints exactly what the click application prints.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from nixgen.core import paths
from nixgen.core.errors import (
    EXIT_FAILURE,
    EXIT_INVALID,
    NixgenError,
    Problem,
    error,
    render_problems,
    sort_problems,
)

_RED_BOLD = "\033[31m\033[1m"
_YELLOW = "\033[33m"
_RESET = "\033[0m"


#: What a terminal would act on in text another program wrote (a build log): ECMA-48
#: escape sequences (CSI `ESC [`, the string ones OSC `ESC ]`, DCS `ESC P`, SOS, PM and APC
#: up to their terminator, two-character ones), their 8-bit C1 forms, and every other
#: control character but tab and newline. Compiled on first use (`re`'s own cache): most
#: commands never print text nixgen did not write.
_TERMINAL_CONTROL = (
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[P\]X^_].*?(?:\x07|\x1b\\|\x9c|\Z)"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x90\x98\x9d\x9e\x9f].*?(?:\x07|\x1b\\|\x9c|\Z)"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def terminal_safe(text: str) -> str:
    """`text` (from a build log, Nix's messages) with every escape sequence and control
    character removed, so printing it can neither restyle, retitle nor rewrite the terminal
    (the one sanitiser of text nixgen did not write)."""
    return re.sub(_TERMINAL_CONTROL, "", text, flags=re.DOTALL)


COLOR_MODES = ("auto", "always", "never")
#: Version of the JSON envelope's layout (`envelope`); raised when a key changes meaning
#: or goes away (new keys may appear without it).
JSON_VERSION = 1


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


def colorize(line: str) -> str:
    if ": error: " in line:
        return line.replace(": error: ", f": {_RED_BOLD}error{_RESET}: ", 1)
    if ": warning: " in line:
        return line.replace(": warning: ", f": {_YELLOW}warning{_RESET}: ", 1)
    return line


def _write(stream: Any, text: str) -> None:
    """Write `text` to a text stream, escaping what its encoding cannot carry (a value
    with non-ASCII characters under ``LC_ALL=C``) instead of failing."""
    if stream is None:
        return  # the descriptor was closed when nixgen started
    try:
        stream.write(text)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "ascii"
        stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
    stream.flush()


def err(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # nowhere left to say anything
        _write(sys.stderr, text + "\n")


def out(text: str, *, newline: bool = True) -> None:
    _write(sys.stdout, text + ("\n" if newline else ""))


def out_bytes(data: bytes) -> None:
    """Bytes on stdout as they are (a diff of a UTF-8 file stays UTF-8 whatever the
    terminal's encoding, so that `git apply` takes it)."""
    stream = sys.stdout
    if stream is None:
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        _write(stream, data.decode("utf-8", "replace"))
        return
    stream.flush()
    try:
        buffer.write(data)
        buffer.flush()
    except BrokenPipeError:
        reader_gone()
    except OSError as exc:
        from nixgen.cmdline.entry import StdoutError

        raise StdoutError(exc.errno, exc.strerror) from None


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
    out(text)


def reader_gone() -> None:
    """Standard output's reader went away (``nixgen render --check | head -n 0``): what
    nixgen still prints goes to /dev/null, and the command runs on to its own exit status.
    A closed pipe discards output; it never turns a failure (stale files, invalid input)
    into success, nor success into failure."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        if null != 1:
            os.dup2(null, 1)
            os.close(null)


#: What an OS error means for the user, by errno, where the system's words are not enough.
_OS_HINTS = {
    errno.ENAMETOOLONG: "a file name is over 255 bytes, or the whole path over PATH_MAX "
    "(4096 bytes); use shorter names",
    errno.ENOSPC: "the disk is full; free some space and run again (nothing half-written "
    "was left in place)",
    errno.EDQUOT: "the disk quota is exceeded; free some space and run again",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "check the permissions of the file and the directories above it",
    errno.EMFILE: "too many open files; raise the limit (`ulimit -n`)",
}


def os_error(exc: OSError) -> NixgenError:
    """The one translation of an operating-system error nixgen did not expect at its
    place (a name too long, a full disk, a permission) into a located message with exit
    status 2: the file it is about, the system's words, and what to do."""
    from nixgen.core.errors import OutputError

    where = exc.filename if exc.filename is not None else None
    what = exc.strerror or str(exc)
    hint = _OS_HINTS.get(exc.errno or 0)
    text = f"{os.fsdecode(where)}: {what}" if where is not None else what
    return OutputError(f"{text} ({hint})" if hint else text)


def envelope(
    *, ok: bool, problems: Sequence[Problem] = (), result: object = None
) -> dict[str, object]:
    """nixgen's one JSON shape, for every verb's ``--json``:
    ``{"version": 1, "command": VERB, "ok": BOOL, "problems": [...], "result": ...}``.
    `result` is the verb's data (null when it failed); each problem has `severity`,
    `file`, `line`, `column`, `key`, `message` and `hint`."""
    return {
        "version": JSON_VERSION,
        "command": settings.command,
        "ok": ok,
        "problems": [p.to_json() for p in sort_problems(problems)],
        "result": result,
    }


def emit_result(result: object, problems: Sequence[Problem] = ()) -> None:
    """A verb's data in the envelope, on stdout."""
    emit_json(envelope(ok=True, problems=problems, result=result))


def _is_stdout_error(exc: BaseException) -> bool:
    """Whether `exc` is standard output failing (see `nixgen.cmdline.entry.StdoutError`)."""
    return type(exc).__name__ == "StdoutError" and isinstance(exc, OSError)


def report(exc: BaseException, *, as_json: bool) -> int:
    """Print a failure the way nixgen reports failures, and return the exit status.

    Known errors become located problems; a closed pipe ends quietly; anything else is a
    bug in nixgen, reported in one line without a traceback (``NIXGEN_DEBUG=1`` lets the
    caller re-raise instead). Standard output that cannot be written (a full disk) is
    said on stderr.
    """
    try:
        return _report(exc, as_json=as_json)
    except OSError as broken:  # the JSON answer itself could not be written
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the stream
        if isinstance(broken, BrokenPipeError):
            return 0
        err(f"nixgen: error: cannot write to standard output ({broken.strerror or broken})")
        return EXIT_INVALID


def _report(exc: BaseException, *, as_json: bool) -> int:
    """`report` itself; raises OSError when the answer cannot be written."""
    if _is_stdout_error(exc):
        raise exc  # `report` says so on stderr
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError) and paths.cwd_gone():
        err(
            "nixgen: error: the current directory no longer exists (it was deleted or "
            "moved); cd to an existing directory, or give the project as an absolute path"
        )
        return EXIT_INVALID
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        exc = os_error(exc)
    if isinstance(exc, NixgenError):
        if as_json:
            emit_json(envelope(ok=False, problems=_problems_of(exc)))
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
    hint = "this is a bug in nixgen; rerun with NIXGEN_DEBUG=1 for a traceback and report it"
    if as_json:
        emit_json(envelope(ok=False, problems=[error(message, hint=hint)]))
    else:
        err(error(message, hint=hint).render())
    return EXIT_FAILURE


def _problems_of(exc: NixgenError) -> list[Problem]:
    problems = getattr(exc, "problems", None)
    if problems is not None:
        return list(problems)
    return [error(str(exc))]


def expected(exc: BaseException) -> bool:
    """Failures nixgen reports as such even with NIXGEN_DEBUG (not bugs)."""
    return isinstance(exc, (NixgenError, KeyboardInterrupt, BrokenPipeError)) or (
        _is_stdout_error(exc)
    )
