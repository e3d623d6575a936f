"""The command line's half of printing: the JSON envelope every verb's ``--json`` prints,
bytes on standard output, and failures turned into located messages and exit statuses.

What any stage writes to the terminal (status lines, problems, JSON, colour) is
`nixgen.core.console`; standard output's guard is `nixgen.cmdline.streams`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Sequence

from nixgen.cmdline.streams import StdoutError, reader_gone
from nixgen.core import console, paths
from nixgen.core.errors import (
    EXIT_FAILURE,
    EXIT_INVALID,
    NixgenError,
    OutputError,
    Problem,
    error,
    sort_problems,
)

#: Version of the JSON envelope's layout (`envelope`); raised when a key changes meaning
#: or goes away (new keys may appear without it).
JSON_VERSION = 1


def out_bytes(data: bytes) -> None:
    """Bytes on stdout as they are (a diff of a UTF-8 file stays UTF-8 whatever the
    terminal's encoding, so that `git apply` takes it)."""
    stream = sys.stdout
    if stream is None:
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        console.write(stream, data.decode("utf-8", "replace"))
        return
    stream.flush()
    try:
        buffer.write(data)
        buffer.flush()
    except BrokenPipeError:
        reader_gone()
    except OSError as exc:
        raise StdoutError(exc.errno, exc.strerror) from None


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
        "command": console.settings.command,
        "ok": ok,
        "problems": [p.to_json() for p in sort_problems(problems)],
        "result": result,
    }


def emit_result(result: object, problems: Sequence[Problem] = ()) -> None:
    """A verb's data in the envelope, on stdout."""
    console.emit_json(envelope(ok=True, problems=problems, result=result))


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
        console.err(f"nixgen: error: cannot write to standard output ({broken.strerror or broken})")
        return EXIT_INVALID


def _report(exc: BaseException, *, as_json: bool) -> int:
    """`report` itself; raises OSError when the answer cannot be written."""
    if isinstance(exc, StdoutError):
        raise exc  # `report` says so on stderr
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError) and paths.cwd_gone():
        console.err(
            "nixgen: error: the current directory no longer exists (it was deleted or "
            "moved); cd to an existing directory, or give the project as an absolute path"
        )
        return EXIT_INVALID
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        exc = os_error(exc)
    if isinstance(exc, NixgenError):
        if as_json:
            console.emit_json(envelope(ok=False, problems=_problems_of(exc)))
        elif hasattr(exc, "problems"):
            console.print_problems(exc.problems)
        else:
            console.err(exc.render())
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        console.err("interrupted")
        # Ctrl-C: 130; SIGTERM or SIGHUP while a command ran (`process.Terminated`): 128 + n.
        return 128 + int(getattr(exc, "signum", 2))
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`nixgen schema | head`): stop quietly, like `cat`.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces the closed pipe
        return 0
    message = f"internal error: {type(exc).__name__}: {exc}"
    hint = "this is a bug in nixgen; rerun with NIXGEN_DEBUG=1 for a traceback and report it"
    if as_json:
        console.emit_json(envelope(ok=False, problems=[error(message, hint=hint)]))
    else:
        console.err(error(message, hint=hint).render())
    return EXIT_FAILURE


def _problems_of(exc: NixgenError) -> list[Problem]:
    problems = getattr(exc, "problems", None)
    if problems is not None:
        return list(problems)
    return [error(str(exc))]


def expected(exc: BaseException) -> bool:
    """Failures nixgen reports as such even with NIXGEN_DEBUG (not bugs)."""
    return isinstance(exc, (NixgenError, KeyboardInterrupt, BrokenPipeError, StdoutError))
