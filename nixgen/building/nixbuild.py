"""Running Nix for `nixgen build`: one evaluation and one `nix build` for all variants.

The chosen variants' derivations are found with one `nix eval` of the flake (one
evaluation, whatever the number of variants), then built by one `nix build` that lists
them all, so Nix schedules every derivation of every variant together (`--max-jobs`
derivations at once, each on `--cores` cores). Nix's internal-json log (see `nixlog`)
drives the progress display: each derivation as it starts and stops, each variant as
its own derivation is done. Built variants are then linked without evaluating again
(`nix build --out-link LINK -- /nix/store/…drv^*`: the outputs are already valid).

The command lines are `nixgen.building.nixcommand`'s and they run through
`nixgen.building.process` (a process group of their own, stopped on Ctrl-C).
"""

from __future__ import annotations

import platform
import re
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.building import process
from nixgen.building.nixlog import Build, NixLog
from nixgen.core import bounded, console, outside


def host_system() -> str:
    """This machine as a Nix system name (``x86_64-linux``, ``aarch64-darwin``, …)."""
    machine = {"arm64": "aarch64", "amd64": "x86_64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    return f"{machine}-{platform.system().lower()}"


#: What Nix says when it leaves out a flake's `nixConfig` (not accepted) or a setting a
#: user who is not in `trusted-users` passed (the daemon refuses it).
_IGNORED_SETTING = re.compile(
    r"ignoring untrusted flake configuration setting '([^']+)'"
    r"|ignoring the (?:client-specified |user-specified )?setting '([^']+)', because it is a "
    r"restricted setting"
)
#: Settings of the flake's `nixConfig` that make the kernels' binary cache work.
CACHE_SETTINGS = ("extra-substituters", "extra-trusted-public-keys", "substituters")


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
        """A permanent line (through the console's sink, as everything nixgen prints)."""
        self._clear()
        console.write(self.stream, text + "\n")

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
        self.stream.write("\r\x1b[K" + outside.at_sink(text))
        self.stream.flush()
        self.status = text

    def total_elapsed(self) -> str:
        return elapsed(time.monotonic() - self.start)


@attrs.define
class Result:
    """How one Nix run ended: its exit status, its stdout, and the log it wrote.
    `truncated`: stdout was longer than `bounded.MAX_JSON` (no list of derivations)."""

    code: int
    stdout: str
    log: NixLog
    truncated: bool = False


def run(
    command: process.Command,
    *,
    cwd: Path,
    on_change: Callable[[str, Build], None] | None = None,
    on_tick: Callable[[NixLog], None] | None = None,
    on_line: Callable[[Build, str], None] | None = None,
) -> Result:
    """Run one Nix command in `cwd` (`process.run`: stopped, with everything it started,
    on Ctrl-C), feeding its stderr to a `NixLog`; `on_change` gets each derivation that
    starts or stops, `on_tick` the log about four times a second and after each line,
    `on_line` each build log line."""
    log = NixLog(on_line=on_line)

    def on_stderr(line: str) -> None:
        change = log.feed(line)
        if change is not None and on_change is not None:
            on_change(*change)
        if on_tick is not None:
            on_tick(log)

    done = process.run(
        command,
        cwd=cwd,
        on_stderr=on_stderr,
        on_tick=None if on_tick is None else lambda: on_tick(log),
        stdout_limit=bounded.MAX_JSON,
        # The log is read line by line into `log`; only the end of the raw text is kept.
        stderr_limit=64 * 1024,
    )
    return Result(done.code, done.stdout, log, done.stdout_truncated)
