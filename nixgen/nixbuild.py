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

import platform
import queue
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import click

from nixgen import nixlit
from nixgen.errors import NixgenError
from nixgen.nixlog import Build, NixLog

EXPERIMENTAL = "nix-command flakes"
#: A flake reference Nix 2.8 parses as written: it does not decode `%20`, so a path with
#: any other character is given as `.` with Nix running in the project directory.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9._~/+=@,:-]+")


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


def eval_command(
    ref: str, system: str, variants: Sequence[str], overrides: Sequence[tuple[str, str]]
) -> list[str]:
    """`nix eval` printing the drvPath of each variant, in order, as a JSON list."""
    apply = f"packages: map (name: packages.${{name}}.drvPath) {nixlit.value(list(variants))}"
    command = [
        "nix",
        "eval",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--json",
        f"{ref}#packages.{system}",
        "--apply",
        apply,
    ]
    for name, value in overrides:
        command += ["--override-input", name, value]
    return command


def build_command(
    drvs: Sequence[str],
    *,
    keep_going: bool = False,
    max_jobs: int | None = None,
    cores: int | None = None,
) -> list[str]:
    """One `nix build` of every derivation in `drvs` (already evaluated: no flake here)."""
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
    return [*command, *drvs]


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
        drv,
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

    def style(self, text: str, **kwargs: Any) -> str:
        return click.style(text, **kwargs) if self.color else text

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


def _pump(stream: Any, sink: queue.Queue[tuple[str, str | None]], tag: str) -> None:
    for line in iter(stream.readline, ""):
        sink.put((tag, line))
    sink.put((tag, None))


def run(
    command: list[str],
    *,
    cwd: Path,
    on_change: Callable[[str, Build], None] | None = None,
    on_tick: Callable[[NixLog], None] | None = None,
) -> Result:
    """Run one Nix command in `cwd`, feeding its stderr to a `NixLog`; `on_change` gets
    each derivation that starts or stops, `on_tick` the log about four times a second."""
    log = NixLog()
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
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
                stdout.append(line)
                continue
            change = log.feed(line) if tag == "err" else None
            if change is not None and on_change is not None:
                on_change(*change)
            if on_tick is not None:
                on_tick(log)
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        raise
    return Result(process.wait(), "".join(stdout), log)
