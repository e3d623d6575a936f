"""Standard streams and Ctrl-C: the one leaf module nixgen's command line builds on.

Standard output is guarded (`StdoutError` says a write failure is standard output's; a
closed pipe discards the rest, `reader_gone`); the streams are reopened on /dev/null when
nixgen was started with them closed; before a command runs Ctrl-C ends nixgen quietly (an
import interrupted half-way has nothing to clean up), and `command_started` hands it to
the command, which turns it into its own clean exit. Imports nothing of nixgen.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import time
from typing import Any


def interrupted_early(signum: int, frame: object) -> None:
    """Ctrl-C before a command runs: nothing to clean up, so leave at once, quietly."""
    raise KeyboardInterrupt


class StdoutError(OSError):
    """Standard output cannot take what nixgen prints (a full disk, ``/dev/full``)."""


class _GuardedStdout(io.TextIOWrapper):
    """Standard output whose write failures say that they are standard output's (other
    OSErrors come from files nixgen reads or writes); a closed pipe discards the rest of
    the output and the command runs on to its own exit status
    (`reader_gone`)."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except BrokenPipeError:
            reader_gone()
            return len(text)
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None

    def flush(self) -> None:
        try:
            super().flush()
        except BrokenPipeError:
            reader_gone()
            with contextlib.suppress(OSError, ValueError):
                super().flush()
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None


def standard_streams() -> None:
    """Reopen stdin, stdout and stderr on /dev/null when nixgen was started with them
    closed (``nixgen validate >&-``): output goes nowhere, and no file nixgen opens can
    take descriptor 1 or 2 (and receive what a child process prints)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))  # noqa: SIM115
    stdout = sys.stdout
    if type(stdout) is io.TextIOWrapper:
        stdout.flush()
        sys.stdout = _GuardedStdout(
            stdout.detach(),
            encoding=stdout.encoding,
            # A terminal whose encoding cannot carry a character (Latin-1, ASCII) shows it
            # escaped rather than ending nixgen (`nixgen.cmdline.output.out_bytes` for file bytes).
            errors="backslashreplace" if stdout.errors == "strict" else stdout.errors,
            line_buffering=stdout.line_buffering,
        )


def _interrupt(signum: int, frame: object) -> None:
    """Ctrl-C during a command: KeyboardInterrupt, once. Further Ctrl-Cs are ignored while
    the command cleans up and reports it (a second one inside the report or the exit would
    print a traceback)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise KeyboardInterrupt


def command_started() -> None:
    """From here on Ctrl-C raises KeyboardInterrupt, which the command reports."""
    if signal.getsignal(signal.SIGINT) is interrupted_early:
        signal.signal(signal.SIGINT, _interrupt)


def silence_stdout() -> None:
    """Point descriptor 1 at /dev/null, so the interpreter's own flush at exit of what
    could not be written neither fails nor prints."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)


def exit_status(code: object) -> int:
    """The exit status `sys.exit(code)` gives, after flushing the standard streams."""
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # leaving: a late Ctrl-C changes nothing
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{code}\n")
        status = 1
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()
    except StdoutError as exc:
        cannot_write_stdout(exc)
        status = status or 2
    except (OSError, ValueError):
        silence_stdout()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    return status


def unraisable(info: Any) -> None:
    """Python's report of an exception it cannot raise (in a `__del__`, a weakref
    callback): a Ctrl-C that lands there is delivered again, so that it ends the command
    (`interrupted`, 130) instead of printing a traceback and being lost."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        import threading

        with contextlib.suppress(ValueError):  # not the main thread: its handler stays
            signal.signal(signal.SIGINT, _interrupt)

        def again() -> None:
            time.sleep(0.05)  # once the hook has returned: raised inside it, it is lost
            os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=again, daemon=True).start()
    elif os.environ.get("NIXGEN_DEBUG"):
        sys.__unraisablehook__(info)


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


def cannot_write_stdout(exc: OSError) -> None:
    """Say on stderr (descriptor 2, no Python stream) that standard output failed."""
    silence_stdout()
    with contextlib.suppress(OSError):
        os.write(2, f"nixgen: error: cannot write to standard output ({exc.strerror})\n".encode())
