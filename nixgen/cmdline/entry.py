"""The `nixgen` executable's entry point: standard streams and Ctrl-C, then the click
application (`nixgen.cmdline.cli`), the one parser of nixgen's command line.

Before a command runs, Ctrl-C ends nixgen quietly (an import interrupted half-way has
nothing to clean up); each command then turns Ctrl-C into its own clean exit. Standard
output is flushed before the process ends, so a full disk is said on stderr with a
non-zero status instead of Python's "Exception ignored" at shutdown.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import time
from typing import Any


def _interrupted(signum: int, frame: object) -> None:
    """Ctrl-C before a command runs: nothing to clean up, so leave at once, quietly."""
    raise KeyboardInterrupt


class StdoutError(OSError):
    """Standard output cannot take what nixgen prints (a full disk, ``/dev/full``)."""


class _GuardedStdout(io.TextIOWrapper):
    """Standard output whose write failures say that they are standard output's (other
    OSErrors come from files nixgen reads or writes); a closed pipe discards the rest of
    the output and the command runs on to its own exit status
    (`nixgen.cmdline.output.reader_gone`)."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except BrokenPipeError:
            from nixgen.cmdline.output import reader_gone

            reader_gone()
            return len(text)
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None

    def flush(self) -> None:
        try:
            super().flush()
        except BrokenPipeError:
            from nixgen.cmdline.output import reader_gone

            reader_gone()
            with contextlib.suppress(OSError, ValueError):
                super().flush()
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None


def _standard_streams() -> None:
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
    if signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, _interrupt)


def _silence_stdout() -> None:
    """Point descriptor 1 at /dev/null, so the interpreter's own flush at exit of what
    could not be written neither fails nor prints."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)


def _status(code: object) -> int:
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
        _silence_stdout()
    except StdoutError as exc:
        _silence_stdout()
        with contextlib.suppress(OSError):
            os.write(
                2, f"nixgen: error: cannot write to standard output ({exc.strerror})\n".encode()
            )
        status = status or 2
    except (OSError, ValueError):
        _silence_stdout()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    return status


def _unraisable(info: Any) -> None:
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


def main() -> None:
    # Until a command takes over (its own handler turns Ctrl-C into a clean exit after
    # cleaning up), Ctrl-C during start-up ends nixgen without a traceback from an import.
    signal.signal(signal.SIGINT, _interrupted)
    sys.unraisablehook = _unraisable
    try:
        _standard_streams()
        from nixgen.cmdline.cli import main as cli

        cli(prog_name="nixgen")
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    except StdoutError as exc:  # --help, -V, completion: printed before any command runs
        _silence_stdout()
        with contextlib.suppress(OSError):
            os.write(
                2, f"nixgen: error: cannot write to standard output ({exc.strerror})\n".encode()
            )
        code = 2
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):
            os.write(2, b"interrupted\n")
        code = 130
    sys.exit(_status(code))
