"""The one module that starts processes: Nix, git, anything nixgen runs goes through here.

No other module of nixgen imports `subprocess` or calls `os.system`, `os.exec*`,
`os.spawn*`, `os.popen`, `pty.spawn` or `asyncio.create_subprocess_*` (ruff's banned-api
rule TID251 and the import-linter contract ``processes`` in pyproject.toml fail CI
otherwise; tests/test_process_rule.py proves both see a violation). What runs is a
`Command`, made only by the typed builders `nixgen.building.nixcommand` (every ``nix``
argv) and `nixgen.building.gitcommand` (every ``git`` argv), so a value from a flake's
evaluation, a Nix log, a file or the environment reaches a command line only as the
validated value those builders take, after ``--``.

Every process here:

- runs with `clean_env` (no `GIT_DIR` or other git location variable, git's
  ``core.fsmonitor`` forced off: a repository's config never names a command to run);
- is a missing program said as `ProgramMissing` (exit 2, with what to install), never an
  ``OSError`` traceback;
- has its output bounded (`Finished`: the first `STDOUT_LIMIT` characters of stdout, the
  last `STDERR_LIMIT` of stderr; a longer line is read in pieces), and, with ``timeout``,
  a deadline (`ProcessTimeout`);
- leaves nothing running when `run` returns or raises. A non-interactive command runs in
  a session of its own (its own process group, no terminal), so a terminal's Ctrl-C
  reaches nixgen alone and nixgen stops the group: SIGTERM, then SIGKILL after
  `STOP_GRACE` seconds or at a second Ctrl-C. The same happens on a timeout, on any
  exception while it runs (a callback's included) and when nixgen gets SIGTERM or SIGHUP
  (`Terminated`); what is left of the group when the command exits is killed too. On
  Linux the child also gets SIGTERM when nixgen dies without a chance to clean up
  (SIGKILL): ``PR_SET_PDEATHSIG``.
- An interactive command (`run_interactive`: ``nix develop``'s shell) shares nixgen's
  terminal and process group, so Ctrl-C and the keyboard are the shell's; nixgen ignores
  SIGINT and SIGQUIT while it waits (as ``system(3)`` does) and passes SIGTERM and SIGHUP
  on.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.core.errors import EXIT_INVALID, NixgenError

#: The most characters of a command's stdout kept (`nix eval`'s JSON is far smaller; a
#: longer output is cut and `Finished.stdout_truncated` says so).
STDOUT_LIMIT = 16 * 1024 * 1024
#: The most characters of the end of a command's stderr kept (the tail of an error).
STDERR_LIMIT = 1024 * 1024
#: The longest piece of one line of output taken at once (a longer line arrives in
#: pieces, so no line of a hostile log is held whole).
READ_PIECE = 1 << 20
#: Seconds a stopped command gets to end after SIGTERM before its group is killed; a
#: second Ctrl-C kills it at once.
STOP_GRACE = 10.0
#: Seconds the output of a command that has exited may still take to close (a process it
#: left behind in another group could hold the pipe open for ever).
DRAIN_GRACE = 2.0
#: How often `run` wakes up without output: `on_tick`, the deadline, the exit.
TICK = 0.25


def _argv(args: Iterable[str]) -> tuple[str, ...]:
    return tuple(args)


@attrs.frozen
class Command:
    """A command line to run: made only by `nixgen.building.nixcommand` (Nix),
    `nixgen.building.gitcommand` (git) and `nixgen.building.abicommand` (nixgen's ABI
    checker), each argument placed by a typed builder."""

    argv: tuple[str, ...] = attrs.field(converter=_argv)
    #: What the user does when the program is not installed (ends `ProgramMissing`).
    install: str = ""

    def __attrs_post_init__(self) -> None:
        if not self.argv or not self.argv[0] or any("\0" in a for a in self.argv):
            raise ValueError(f"not a command line: {self.argv!r}")

    @property
    def program(self) -> str:
        return self.argv[0]

    def shown(self) -> str:
        """The command line as a shell would take it (for `--dry-run` and `-v`)."""
        return shlex.join(self.argv)


class ProgramMissing(NixgenError):
    """The program of a command is not on PATH (or cannot be executed)."""

    exit_code = EXIT_INVALID


class ProcessTimeout(NixgenError):
    """A command did not finish within its deadline; it was stopped."""


class Terminated(KeyboardInterrupt):
    """nixgen got SIGTERM or SIGHUP while a command ran: the command was stopped, and
    nixgen ends as for Ctrl-C (``interrupted``), with status 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@attrs.frozen
class Finished:
    """How a command ended: its exit status as a shell reports it (128 + n when signal n
    ended it) and its bounded output."""

    code: int
    stdout: str
    stderr: str
    stdout_truncated: bool = False
    stderr_truncated: bool = False


#: Environment variables that point git at another repository, index or work tree than
#: the one a directory is in (git's `rev-parse --local-env-vars`, less the `-c` settings,
#: plus the discovery limits). Nix finds a flake's repository by looking for `.git` above
#: it and runs git in it; nixgen's git check and every Nix it starts run without these,
#: so the check sees the files Nix copies (`clean_env`).
GIT_LOCATION_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CEILING_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_DIR",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NAMESPACE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_WORK_TREE",
)

#: git settings forced on every git that nixgen, or a Nix it starts, runs in the project:
#: a repository's own config must not name a command that git then runs (`ls-files`, which
#: nixgen's check and Nix both run, starts `core.fsmonitor`).
GIT_SAFE_CONFIG = (("core.fsmonitor", "false"),)


def clean_env() -> dict[str, str]:
    """The environment of every process nixgen runs: its own, less `GIT_LOCATION_ENV`,
    plus `GIT_SAFE_CONFIG` (as ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n``, after any the
    user set), and git's search for a repository crossing file systems as Nix's does."""
    env = {k: v for k, v in os.environ.items() if k not in GIT_LOCATION_ENV}
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
    except ValueError:
        count = 0
    if not 0 <= count <= 1000:
        count = 0
    for name, value in GIT_SAFE_CONFIG:
        env[f"GIT_CONFIG_KEY_{count}"] = name
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)
    # Nix looks for `.git` in every directory above the flake, across file systems.
    env["GIT_DISCOVERY_ACROSS_FILESYSTEM"] = "1"
    return env


def find(program: str) -> str | None:
    """Where `program` is on PATH (what `run` would start), or None."""
    return shutil.which(program)


def exit_status(returncode: int) -> int:
    """A child's exit status as a shell reports it: its own code, or 128 + n when signal n
    ended it (143 for SIGTERM, 137 for SIGKILL, 129 for SIGHUP; Python says -n)."""
    return 128 - returncode if returncode < 0 else returncode


def _resolve(command: Command) -> str:
    found = find(command.program)
    if found is None:
        install = f": {command.install}" if command.install else ""
        raise ProgramMissing(f"`{command.program}` is not on PATH{install}")
    return found


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """Linux's ``prctl``, or None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return function


def _die_with_parent() -> Callable[[], None] | None:
    """A `preexec_fn` that asks Linux to send the child SIGTERM when nixgen dies
    (``prctl(PR_SET_PDEATHSIG)``), so a SIGKILLed nixgen leaves no Nix running; None
    elsewhere."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def preexec() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # nixgen died before the request took effect
            os._exit(128 + int(signal.SIGTERM))

    return preexec


def _exited(process: subprocess.Popen[Any]) -> bool:
    """Whether `process` has exited, without reaping it where the system allows
    (``waitid(WNOWAIT)``): until it is reaped its process group id cannot be reused, so
    its group can still be signalled safely. (Without `os.waitid`, as on macOS, it is
    reaped, and `_signal_group` then leaves its group alone.)"""
    if process.returncode is not None:
        return True
    if not hasattr(os, "waitid"):
        return process.poll() is not None
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_group(process: subprocess.Popen[Any], signum: int) -> None:
    """Send `signum` to the process group `process` leads (its pid), unless it was
    reaped (then the id may belong to another group by now)."""
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if os.getpgid(process.pid) == process.pid:
            os.killpg(process.pid, signum)
        else:  # not a group of its own (`run_interactive`'s, a caller's): itself alone
            os.kill(process.pid, signum)


def _wait_unreaped(process: subprocess.Popen[Any], timeout: float) -> bool:
    """Wait up to `timeout` seconds for `process` to exit (not reaping it); whether it did."""
    deadline = time.monotonic() + timeout
    while not _exited(process):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def stop(process: subprocess.Popen[Any]) -> None:
    """End `process` and every process of its group: SIGTERM, then SIGKILL after
    `STOP_GRACE` seconds or at a second Ctrl-C, whichever is first (a Nix that ignores
    SIGTERM cannot keep nixgen waiting). `process` must lead its own process group (every
    non-interactive command `run` starts does)."""
    kill_now = threading.Event()

    def on_second_interrupt(signum: int, frame: object) -> None:
        kill_now.set()
        _signal_group(process, signal.SIGKILL)

    # A second Ctrl-C, or SIGTERM or SIGHUP meanwhile, kills at once (nixgen is leaving).
    previous: list[tuple[signal.Signals, Any]] = []
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            previous.append((signum, signal.signal(signum, on_second_interrupt)))
        except ValueError:  # not the main thread
            break
    try:
        if not _exited(process):
            _signal_group(process, signal.SIGTERM)
            if not kill_now.is_set() and not _wait_unreaped(process, STOP_GRACE):
                _signal_group(process, signal.SIGKILL)
        # What the command left behind in its group (its own children) goes too.
        _signal_group(process, signal.SIGKILL)
        process.wait()
    finally:
        for signum, handler in previous:
            signal.signal(signum, handler)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """While a command runs, SIGTERM and SIGHUP raise `Terminated` (main thread only;
    a signal nixgen was started ignoring stays ignored), so the command is stopped
    instead of left running when nixgen is told to end."""
    installed: list[tuple[signal.Signals, Any]] = []

    def handler(signum: int, frame: object) -> None:
        raise Terminated(signum)

    try:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            try:
                if signal.getsignal(signum) is signal.SIG_IGN:
                    continue
                installed.append((signum, signal.signal(signum, handler)))
            except ValueError:  # not the main thread
                break
        yield
    finally:
        for signum, previous in installed:
            signal.signal(signum, previous)


def _close(process: subprocess.Popen[Any]) -> None:
    """Close the pipes of `process` once their readers saw the end (closing one a thread
    still reads would wait for that read)."""
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.close()


def _pump(stream: Any, sink: queue.Queue[tuple[str, str | None]], tag: str) -> None:
    try:
        for line in iter(lambda: stream.readline(READ_PIECE), ""):
            sink.put((tag, line))
    except (OSError, ValueError):
        pass
    sink.put((tag, None))


def _feed(stream: Any, data: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
    with contextlib.suppress(OSError, ValueError):
        stream.close()


class _Tail:
    """The last `limit` characters of a stream, kept line by line."""

    def __init__(self, limit: int):
        self.limit = limit
        self.lines: collections.deque[str] = collections.deque()
        self.size = 0
        self.truncated = False

    def add(self, line: str) -> None:
        self.lines.append(line)
        self.size += len(line)
        while self.size > self.limit and self.lines:
            self.size -= len(self.lines.popleft())
            self.truncated = True

    def text(self) -> str:
        return "".join(self.lines)


def run(
    command: Command,
    *,
    cwd: Path | str | None,
    timeout: float | None = None,
    input: str | None = None,
    errors: str = "replace",
    on_stdout: Callable[[str], None] | None = None,
    on_stderr: Callable[[str], None] | None = None,
    on_tick: Callable[[], None] | None = None,
    stdout_limit: int = STDOUT_LIMIT,
    stderr_limit: int = STDERR_LIMIT,
) -> Finished:
    """Run `command` in `cwd` (None: nixgen's own) to its end, in a process group of its
    own, and return how it ended (see the module's docstring for what is guaranteed).

    `input` is written to its stdin (else stdin is /dev/null); `errors` is how bytes that
    are not UTF-8 are decoded (``surrogateescape`` keeps file names). `on_stdout` and
    `on_stderr` get each line (or piece of a long line) as it comes, `on_tick` about four
    times a second. Raises `ProgramMissing`, `ProcessTimeout` (after `timeout` seconds),
    `Terminated`, or whatever a callback raises, each after the command was stopped.
    """
    executable = _resolve(command)
    try:
        process = subprocess.Popen(
            list(command.argv),
            executable=executable,
            cwd=cwd,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors=errors,
            env=clean_env(),
            start_new_session=True,
            preexec_fn=_die_with_parent(),
        )
    except OSError as exc:
        raise ProgramMissing(
            f"cannot run `{command.program}` ({executable}): {exc.strerror or exc}"
        ) from None
    deadline = None if timeout is None else time.monotonic() + timeout
    lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
    threads = [
        threading.Thread(target=_pump, args=(process.stdout, lines, "out"), daemon=True),
        threading.Thread(target=_pump, args=(process.stderr, lines, "err"), daemon=True),
    ]
    if input is not None:
        threads.append(threading.Thread(target=_feed, args=(process.stdin, input), daemon=True))
    out: list[str] = []
    out_size = 0
    out_truncated = False
    err = _Tail(stderr_limit)
    open_streams = 2
    exited_at: float | None = None
    checked = 0.0

    def check_deadline(now: float) -> None:
        if deadline is not None and now >= deadline:
            raise ProcessTimeout(
                f"`{command.shown()[:200]}` did not finish within {timeout:g} s and was stopped"
            )

    try:
        with _terminate_as_interrupt():
            for thread in threads:
                thread.start()
            while open_streams:
                try:
                    tag, line = lines.get(timeout=TICK)
                except queue.Empty:
                    tag, line = "tick", ""
                if line is None:
                    open_streams -= 1
                    continue
                if tag == "out":
                    if out_size + len(line) <= stdout_limit:
                        out.append(line)
                        out_size += len(line)
                    else:
                        out_truncated = True
                    if on_stdout is not None:
                        on_stdout(line)
                elif tag == "err":
                    err.add(line)
                    if on_stderr is not None:
                        on_stderr(line)
                elif on_tick is not None:
                    on_tick()
                now = time.monotonic()
                check_deadline(now)
                if now - checked < TICK:
                    continue
                checked = now
                if exited_at is None and _exited(process):
                    # Exited: what it left in its group goes, so the pipes close.
                    exited_at = now
                    _signal_group(process, signal.SIGKILL)
                elif exited_at is not None and now - exited_at > DRAIN_GRACE:
                    break  # a process that left the group holds them open: not waited for
            # The output is closed; the command may still run (it closed its streams).
            while not _wait_unreaped(process, TICK):
                check_deadline(time.monotonic())
            _signal_group(process, signal.SIGKILL)
            code = process.wait()
            if not open_streams:
                _close(process)
    except BaseException:
        stop(process)
        raise
    return Finished(
        code=exit_status(code),
        stdout="".join(out),
        stderr=err.text(),
        stdout_truncated=out_truncated,
        stderr_truncated=err.truncated,
    )


def run_interactive(command: Command, *, cwd: Path | str) -> int:
    """Run `command` on nixgen's own terminal (stdin, stdout and stderr inherited, in
    nixgen's process group, so Ctrl-C and the keyboard are the command's) and return its
    exit status as a shell reports it. nixgen ignores SIGINT and SIGQUIT meanwhile and
    passes SIGTERM and SIGHUP on; raises `ProgramMissing`."""
    executable = _resolve(command)
    ignored: list[tuple[signal.Signals, Any]] = []
    forwarded: list[tuple[signal.Signals, Any]] = []
    process: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: object) -> None:
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signum)

    try:
        for signum in (signal.SIGINT, signal.SIGQUIT):
            with contextlib.suppress(ValueError):
                ignored.append((signum, signal.signal(signum, signal.SIG_IGN)))
        for signum in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(ValueError):
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    forwarded.append((signum, signal.signal(signum, forward)))
        try:
            # The child starts with SIGINT and SIGQUIT at their defaults (`restore_signals`
            # covers only SIGPIPE and the like; an ignored signal stays ignored across exec).
            process = subprocess.Popen(
                list(command.argv),
                executable=executable,
                cwd=cwd,
                env=clean_env(),
                preexec_fn=_default_interrupts(_die_with_parent()),
            )
        except OSError as exc:
            raise ProgramMissing(
                f"cannot run `{command.program}` ({executable}): {exc.strerror or exc}"
            ) from None
        while True:
            try:
                code = process.wait()
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
    finally:
        for signum, previous in [*ignored, *forwarded]:
            signal.signal(signum, previous)
    return exit_status(code)


def _default_interrupts(then: Callable[[], None] | None) -> Callable[[], None]:
    def preexec() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        if then is not None:
            then()

    return preexec


def argv_of(commands: Sequence[Command]) -> list[list[str]]:
    """The argument lists of `commands` (for `--dry-run --json`)."""
    return [list(c.argv) for c in commands]
