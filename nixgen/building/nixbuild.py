"""Running Nix for `nixgen build`: one evaluation and one `nix build` for all variants.

The chosen variants' derivations are found with one `nix eval` of the flake (one
evaluation, whatever the number of variants), then built by one `nix build` that lists
them all, so Nix schedules every derivation of every variant together (`--max-jobs`
derivations at once, each on `--cores` cores). Nix's internal-json log (see `nixlog`)
drives the progress display: each derivation as it starts and stops, each variant as
its own derivation is done. Built variants are then linked without evaluating again
(`nix build --out-link LINK /nix/store/…drv`: the store path is already valid).
"""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.building import nixcheck
from nixgen.building.nixlog import Build, NixLog
from nixgen.core import bounded, console
from nixgen.core.errors import NixgenError, printable
from nixgen.rendering import nixlit

EXPERIMENTAL = "nix-command flakes"
#: A flake reference Nix 2.8 parses as written: it does not decode `%20`, so a path with
#: any other character is given as `.` with Nix running in the project directory.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._~/+=@,:-]+")


#: Options that leave only Nix's errors on its stderr: each `--quiet` lowers the verbosity
#: one level, and three reach errors (Nix 2.8 prints the lock-file messages of every
#: `--override-input` run, `warning: not writing modified lock file` and `• Added input`, as
#: one warning, which `--no-write-lock-file` does not silence). For a `nix develop` after
#: nixgen evaluated and built it, through its own log reader.
ERRORS_ONLY = ("--quiet", "--quiet", "--quiet")


def host_system() -> str:
    """This machine as a Nix system name (``x86_64-linux``, ``aarch64-darwin``, …)."""
    machine = {"arm64": "aarch64", "amd64": "x86_64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    return f"{machine}-{platform.system().lower()}"


def flake_ref(root: Path) -> str:
    """The flake reference of the project at `root` for a Nix started in `root`.

    The absolute path when Nix can parse it as one, else ``.`` (a path with a space,
    ``#`` or ``?`` is no valid flake URL, and Nix 2.8 does not decode ``%20``)."""
    path = str(root.resolve())
    return path if _PLAIN_PATH.fullmatch(path) else "."


#: What Nix says when it leaves out a flake's `nixConfig` (not accepted) or a setting a
#: user who is not in `trusted-users` passed (the daemon refuses it).
_IGNORED_SETTING = re.compile(
    r"ignoring untrusted flake configuration setting '([^']+)'"
    r"|ignoring the (?:client-specified |user-specified )?setting '([^']+)', because it is a "
    r"restricted setting"
)
#: Settings of the flake's `nixConfig` that make the kernels' binary cache work.
CACHE_SETTINGS = ("extra-substituters", "extra-trusted-public-keys", "substituters")


def nix_options(
    options: Sequence[tuple[str, str]] = (), *, accept_flake_config: bool = False
) -> list[str]:
    """The arguments of ``--option NAME VALUE`` (repeated) and ``--accept-flake-config``."""
    out = ["--accept-flake-config"] if accept_flake_config else []
    for name, value in options:
        out += ["--option", name, value]
    return out


def ignored_cache_settings(messages: Sequence[str]) -> list[str]:
    """The binary-cache settings Nix said it ignored, in `messages` (its warnings)."""
    found: list[str] = []
    for message in messages:
        for match in _IGNORED_SETTING.finditer(message):
            name = match.group(1) or match.group(2)
            if name in CACHE_SETTINGS and name not in found:
                found.append(name)
    return found


def cache_hint(substituter: str, key: str, ignored: Sequence[str], *, accepted: bool) -> str:
    """How to make Nix use the kernels' binary cache, after it ignored `ignored`."""
    settings = ", ".join(f"`{name}`" for name in ignored)
    how = (
        "your user is not trusted by the Nix daemon: add it to `trusted-users` in "
        "/etc/nix/nix.conf (and restart the daemon), or add these lines there"
        if accepted
        else "pass --accept-flake-config (with the Nix daemon, your user must also be in "
        "`trusted-users`), or add these lines to /etc/nix/nix.conf (or ~/.config/nix/nix.conf)"
    )
    return (
        f"nixgen: note: Nix ignored the flake's binary cache settings ({settings}), so torch "
        f"and the toolkits are built from source, which takes hours; {how}:\n"
        f"  extra-substituters = {substituter}\n"
        f"  extra-trusted-public-keys = {key}"
    )


#: Nix's base-32 digits (no e, o, t, u) and the characters of a store path's name.
_STORE_NAME = r"[0-9a-df-np-sv-z]{32}-[A-Za-z0-9+_?=-][A-Za-z0-9+._?=-]*"


def store_dir() -> str:
    """The Nix store in use: ``$NIX_STORE_DIR``, else ``$NIX_STORE``, else ``/nix/store``
    (the order Nix reads them in)."""
    return (os.environ.get("NIX_STORE_DIR") or os.environ.get("NIX_STORE") or "/nix/store").rstrip(
        "/"
    ) or "/"


def is_store_drv(value: str, store: str | None = None) -> bool:
    """Whether `value` is the path of a derivation in the store `store` (default: the one
    in use): ``<store>/<32 base-32 digits>-<name>.drv``, nothing else. A value read from an
    evaluation is checked with it before it goes on a command line."""
    store = store_dir() if store is None else store
    return re.fullmatch(re.escape(store) + "/" + _STORE_NAME + r"\.drv", value) is not None


#: A flake input's name as `--override-input` takes it: an attribute name, or a path of
#: them into nested inputs (``nixgen/nixpkgs``). Never anything Nix could read as an
#: option (``--foo``, ``-x``).
_INPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_'-]*(/[A-Za-z_][A-Za-z0-9_'-]*)*")


def input_name_problem(name: str) -> str | None:
    """Why `name` is no flake input name `--override-input` may be given (None: it is)."""
    if _INPUT_NAME.fullmatch(name):
        return None
    dash = " (it starts with `-`: Nix would read it as an option)" if name[:1] == "-" else ""
    return (
        f"`{printable(name)}` is not a flake input name{dash}; an input name is letters, "
        "digits, `_`, `'` and `-`, starting with a letter or `_` (`nixpkgs`; "
        "`nixgen/nixpkgs` for a nested input)"
    )


def override_problem(name: str, ref: str) -> str | None:
    """Why `--override-input NAME REF` must not be run (None: it may): a name that is no
    input name, a reference that is empty, starts with `-` or holds a line break or
    another control character (a space is fine: `path:/my stub`)."""
    why = input_name_problem(name)
    if why is not None:
        return why
    if not ref or ref[:1] == "-" or any(c != " " and not c.isprintable() for c in ref):
        return (
            f"`{printable(ref)}` is not a flake reference (`path:/srv/nixpkgs`, "
            "`github:NixOS/nixpkgs/REV`): it is empty, starts with `-` (Nix would read it "
            "as an option), or holds a control character"
        )
    return None


def override_arguments(overrides: Sequence[tuple[str, str]]) -> list[str]:
    """``--override-input NAME REF`` for each override: the one place they become
    arguments of a Nix command. Every verb checks them where they are read
    (`nixgen.app.config`), so a bad one here is nixgen's bug; it is refused all the same."""
    arguments: list[str] = []
    for name, ref in overrides:
        why = override_problem(name, ref)
        if why is not None:
            raise NixgenError(f"internal error: refusing `--override-input`: {why}")
        arguments += ["--override-input", name, ref]
    return arguments


def eval_command(
    ref: str,
    system: str,
    variants: Sequence[str],
    overrides: Sequence[tuple[str, str]],
    extra: Sequence[str] = (),
) -> list[str]:
    """`nix eval` printing the drvPath of each variant, in order, as a JSON list; `extra`
    holds `nix_options`."""
    apply = f"packages: map (name: packages.${{name}}.drvPath) {nixlit.value(list(variants))}"
    command = [
        "nix",
        "eval",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--json",
        "--apply",
        apply,
    ]
    command += override_arguments(overrides)
    # `--` first: no positional argument is ever read as an option.
    return [*command, *extra, "--", f"{ref}#packages.{system}"]


#: The first Nix that names a derivation's outputs `DRV^*` (2.13). From 2.15 on a bare
#: `/nix/store/…drv` is the derivation file itself, already valid, so nothing is built.
OUTPUTS_SYNTAX = (2, 13)


@functools.cache
def outputs_of(drv: str) -> str:
    """The installable that means the outputs of `drv` to the `nix` on PATH: `DRV^*` on
    Nix 2.13 and newer, the bare path before (2.8 reads that as its outputs)."""
    version = nixcheck.nix_version()
    return drv if version is not None and version[:2] < OUTPUTS_SYNTAX else f"{drv}^*"


def build_command(
    drvs: Sequence[str],
    *,
    keep_going: bool = False,
    max_jobs: int | None = None,
    cores: int | None = None,
    builders: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """One `nix build` of every derivation in `drvs` (already evaluated: no flake here,
    so no `nixConfig` either: `extra` carries the options, and the flake's cache settings
    when they were accepted). `builders` is Nix's `builders` setting, passed as written:
    machine specs separated by `;` or newlines, or `@FILE` (the empty string: none).
    `drvs` follow `--`, so none can be read as an option of Nix (and each was checked by
    `evaluated_drvs` to be a store derivation)."""
    command = [
        "nix",
        "build",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--log-format",
        "internal-json",
        "--json",
        "--no-link",
    ]
    if keep_going:
        command.append("--keep-going")
    if max_jobs is not None:
        command += ["--max-jobs", str(max_jobs)]
    if cores is not None:
        command += ["--cores", str(cores)]
    if builders is not None:
        command += ["--builders", builders]
    return [*command, *extra, "--", *map(outputs_of, drvs)]


def link_command(drv: str, link: Path) -> list[str]:
    """Link the output of `drv` as `link`, registering it as a GC root; with
    `--max-jobs 0`, so an output that was not built fails instead of being built here."""
    return [
        "nix",
        "build",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--max-jobs",
        "0",
        "--out-link",
        str(link),
        "--",
        outputs_of(drv),
    ]


def elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    """Prints what is being built: a live status line on a terminal, plain lines otherwise."""

    def __init__(self, total: int, *, live: bool, color: bool, stream: Any):
        self.total = total
        self.live = live
        self.color = color
        self.stream = stream
        self.start = time.monotonic()
        self.status = ""

    def style(self, text: str, *, fg: str) -> str:
        return console.style(text, fg=fg) if self.color else text

    def _clear(self) -> None:
        if self.live and self.status:
            self.stream.write("\r\x1b[K")
            self.status = ""

    def line(self, text: str) -> None:
        """A permanent line."""
        self._clear()
        self.stream.write(text + "\n")
        self.stream.flush()

    def event(self, text: str) -> None:
        """A step: a line when not live, nothing otherwise (the status line shows it)."""
        if not self.live:
            self.line(text)

    def show(self, text: str) -> None:
        """Replace the status line (live only)."""
        if not self.live:
            return
        width = shutil.get_terminal_size((100, 20)).columns - 1
        text = text if len(text) <= width else text[: width - 1] + "…"
        self.stream.write("\r\x1b[K" + text)
        self.stream.flush()
        self.status = text

    def total_elapsed(self) -> str:
        return elapsed(time.monotonic() - self.start)


@attrs.define
class Result:
    """How one Nix run ended: its exit status, its stdout, and the log it wrote."""

    code: int
    stdout: str
    log: NixLog


#: The longest piece of one line of Nix's output taken at once (a longer line arrives in
#: pieces, so no line of a hostile log is held whole).
_READ_LINE = 1 << 20


def _pump(stream: Any, sink: queue.Queue[tuple[str, str | None]], tag: str) -> None:
    for line in iter(lambda: stream.readline(_READ_LINE), ""):
        sink.put((tag, line))
    sink.put((tag, None))


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
#: Seconds Nix gets to stop after SIGTERM (Ctrl-C) before it is killed; a second Ctrl-C
#: kills it at once.
STOP_GRACE = 10.0


#: git settings forced on every git that nixgen, or a Nix it starts, runs in the project:
#: a repository's own config must not name a command that git then runs (`ls-files`, which
#: nixgen's check and Nix both run, starts `core.fsmonitor`).
GIT_SAFE_CONFIG = (("core.fsmonitor", "false"),)


def clean_env() -> dict[str, str]:
    """The environment of every git and Nix nixgen runs: its own, less `GIT_LOCATION_ENV`,
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


def exit_status(returncode: int) -> int:
    """A child's exit status as a shell reports it: its own code, or 128 + n when signal n
    ended it (143 for SIGTERM, 137 for SIGKILL, 129 for SIGHUP; Python says -n)."""
    return 128 - returncode if returncode < 0 else returncode


def stop(process: subprocess.Popen[Any]) -> None:
    """End `process` after Ctrl-C: SIGTERM, then SIGKILL after `STOP_GRACE` seconds or at
    a second Ctrl-C, whichever is first (a Nix that ignores SIGTERM cannot keep nixgen
    waiting)."""

    def kill_now(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            process.kill()

    try:
        previous: Any = signal.signal(signal.SIGINT, kill_now)
    except ValueError:  # not the main thread
        previous = None
    try:
        with contextlib.suppress(OSError):
            process.terminate()
        try:
            process.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def run(
    command: list[str],
    *,
    cwd: Path,
    on_change: Callable[[str, Build], None] | None = None,
    on_tick: Callable[[NixLog], None] | None = None,
    on_line: Callable[[Build, str], None] | None = None,
) -> Result:
    """Run one Nix command in `cwd`, feeding its stderr to a `NixLog`; `on_change` gets
    each derivation that starts or stops, `on_tick` the log about four times a second,
    `on_line` each build log line."""
    log = NixLog(on_line=on_line)
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            env=clean_env(),
        )
    except OSError as exc:
        raise NixgenError(f"cannot run {command[0]}: {exc.strerror}") from None
    lines: queue.Queue[tuple[str, str | None]] = queue.Queue()
    threads = [
        threading.Thread(target=_pump, args=(process.stderr, lines, "err"), daemon=True),
        threading.Thread(target=_pump, args=(process.stdout, lines, "out"), daemon=True),
    ]
    for thread in threads:
        thread.start()
    stdout: list[str] = []
    size = 0
    open_streams = 2
    try:
        while open_streams:
            try:
                tag, line = lines.get(timeout=0.25)
            except queue.Empty:
                tag, line = "tick", ""
            if line is None:
                open_streams -= 1
                continue
            if tag == "out":
                if size <= bounded.MAX_JSON:  # more is no list of derivations: not kept
                    stdout.append(line)
                    size += len(line)
                continue
            change = log.feed(line) if tag == "err" else None
            if change is not None and on_change is not None:
                on_change(*change)
            if on_tick is not None:
                on_tick(log)
        code = process.wait()
    except KeyboardInterrupt:
        stop(process)
        raise
    return Result(code, "".join(stdout), log)
