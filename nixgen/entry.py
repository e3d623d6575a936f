"""The `nixgen` executable's entry point.

`nixgen render` is the verb people put in their inner loop and CI, so its plain form —
``nixgen render [PROJECT] [--out DIR]`` — skips what it does not need:

- when the render stamp is fresh (`nixgen.stamp`), it finishes before click, cattrs or
  Jinja2 are imported;
- otherwise it runs the pipeline (`nixgen.pipeline`) without loading click, printing
  exactly what the click command prints.

Every other command line goes to the click application (`nixgen.cli`). The process ends
with `os._exit` once output is flushed: tearing down a few hundred modules costs more
than a no-op render.
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
    try:
        os.write(2, b"interrupted\n")
    finally:
        os._exit(130)


class StdoutError(OSError):
    """Standard output cannot take what nixgen prints (a full disk, ``/dev/full``)."""


class _GuardedStdout(io.TextIOWrapper):
    """Standard output whose write failures say that they are standard output's (other
    OSErrors come from files nixgen reads or writes); a closed pipe discards the rest of
    the output and the command runs on to its own exit status (`nixgen.output.reader_gone`)."""

    def write(self, text: str) -> int:
        try:
            return super().write(text)
        except BrokenPipeError:
            from nixgen.output import reader_gone

            reader_gone()
            return len(text)
        except OSError as exc:
            raise StdoutError(exc.errno, exc.strerror) from None

    def flush(self) -> None:
        try:
            super().flush()
        except BrokenPipeError:
            from nixgen.output import reader_gone

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
            # escaped rather than ending nixgen (`nixgen.output.out_bytes` for file bytes).
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


def _plain_render(argv: list[str]) -> tuple[str, str] | None:
    """`(project, out)` for ``render [PROJECT] [--out DIR]``, else None."""
    if not argv or argv[0] != "render":
        return None
    args = argv[1:]
    out = "nix"
    if len(args) >= 2 and args[-2] == "--out":
        out = args[-1]
        args = args[:-2]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        return None
    return (args[0] if args else ".", out)


def _fast_render(argv: list[str]) -> bool:
    """Finish an unchanged render from the stamp; False when the pipeline must run."""
    plain = _plain_render(argv)
    if plain is None or os.environ.get("NIXGEN_NO_STAMP"):
        return False
    project, out = plain
    is_project_dir = os.path.isdir(project) and not project.endswith(".toml")
    if not is_project_dir and os.path.basename(project) != "build.toml":
        return False  # the stamp records build.toml; another file is always rendered
    root = project if is_project_dir else os.path.dirname(project) or "."
    from nixgen import stamp

    found = stamp.fresh(root, out)
    if found is None:
        return False
    if found["messages"]:
        sys.stderr.write(found["messages"] + "\n")
    sys.stdout.write(f"{out}/ is up to date ({len(found['outputs'])} files)\n")
    return True


def _run_plain_render(project: str, out: str) -> int:
    from nixgen import output, pipeline

    command_started()
    try:
        return pipeline.render_project(project, out)
    except (Exception, KeyboardInterrupt) as exc:
        if os.environ.get("NIXGEN_DEBUG") and not output.expected(exc):
            raise
        return output.report(exc, as_json=False)


def _exit(code: object) -> None:
    """Flush and leave, with the status `sys.exit(code)` would give."""
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # leaving: a late Ctrl-C changes nothing
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    try:
        sys.stdout.flush()
    except StdoutError as exc:
        with contextlib.suppress(OSError):
            os.write(
                2, f"nixgen: error: cannot write to standard output ({exc.strerror})\n".encode()
            )
        status = status or 2
    except (OSError, ValueError):
        pass
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(status)


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
        _main()
    except KeyboardInterrupt:
        _exit(_interrupt_status())


def _interrupt_status() -> int:
    with contextlib.suppress(OSError):
        os.write(2, b"interrupted\n")
    return 130


def _main() -> None:
    _standard_streams()
    argv = sys.argv[1:]
    plain = _plain_render(argv)
    if plain is not None:
        # A one-shot render makes many objects and no garbage worth collecting before it
        # exits; the collector's passes would only add to its start-up.
        import gc

        gc.disable()
    if _fast_render(argv):
        _exit(0)
    if plain is not None:
        _exit(_run_plain_render(*plain))
    from nixgen.cli import main as cli

    try:
        cli()
    except SystemExit as exc:
        _exit(exc.code)
    _exit(0)
