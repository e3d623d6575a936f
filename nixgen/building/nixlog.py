"""Reading ``nix build --log-format internal-json``: what is being built, and its logs.

Nix writes one event per line to stderr, ``@nix {json}``: activities start and stop
(``type`` 105 is one derivation being built, with its ``.drv`` path in ``fields``), build
log lines arrive as results of their activity (result ``type`` 101), and errors as
messages (``action: msg``, level 0) such as ``builder for '/nix/store/…drv' failed``.
`NixLog` folds these events into what a progress display and a failure report need: the
derivations running now, the ones finished, and the last lines of each one's log.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import attrs

from nixgen.core import bounded
from nixgen.core.console import terminal_safe

ACT_BUILD = 105
RES_BUILD_LOG_LINE = 101
LEVEL_ERROR = 0
LEVEL_WARN = 1

_FAILED = re.compile(r"builder for '(/[^']+\.drv)' failed")
#: The most lines that are no events kept (a failure report shows the last few).
MAX_OTHER = 1000
#: The longest log line kept (a runaway line of a build log is cut, not held whole).
MAX_LINE = 64 * 1024


def strip_ansi(text: str) -> str:
    """`text` as it may be printed: the binary framing of Nix 2.8's serialised errors made
    readable (`readable`), then every terminal control sequence removed
    (`nixgen.core.console.terminal_safe`), and at most `MAX_LINE` characters."""
    return terminal_safe(readable(text[:MAX_LINE]))


#: A control character other than a tab, and the run of them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]+")


def readable(text: str) -> str:
    """`text` without the binary framing Nix 2.8 writes into a build log when it cannot
    start a builder (its serialised error: NUL-padded length fields, the word `Error`
    twice, a length byte): what is left is the message, e.g. ``executing '…': No such
    file or directory``."""
    if "\x00" not in text:
        return text
    parts = [p.strip() for p in _CONTROL.split(text)]
    kept = [p for p in parts if len(p) > 1 and p != "Error"]
    return " ".join(kept)


def drv_name(drv: str) -> str:
    """``/nix/store/<hash>-relu-cpu-relu_cpu-1.drv`` → ``relu-cpu-relu_cpu-1``."""
    base = drv.rsplit("/", 1)[-1].removesuffix(".drv")
    return base.split("-", 1)[1] if "-" in base else base


@attrs.define
class Build:
    """One derivation that Nix builds."""

    drv: str
    started: float
    finished: float | None = None
    failed: bool = False
    #: The remote builder's store URI (`ssh-ng://host`), or "" when built on this machine
    #: (the second field of Nix's build activity).
    machine: str = ""
    log: deque[str] = attrs.field(factory=lambda: deque(maxlen=200))

    @property
    def name(self) -> str:
        return drv_name(self.drv)

    def duration(self, now: float) -> float:
        return (self.finished or now) - self.started


@attrs.define
class NixLog:
    """The state of one ``nix build`` run, fed its stderr line by line."""

    clock: Callable[[], float] = time.monotonic
    builds: dict[int, Build] = attrs.field(factory=dict)
    #: Error messages (ANSI stripped), in order.
    errors: list[str] = attrs.field(factory=list)
    #: Warning messages (ANSI stripped, without `warning: `), in order.
    warnings: list[str] = attrs.field(factory=list)
    #: A remote builder's own build activities, by id: the local build they belong to.
    relayed: dict[int, Build] = attrs.field(factory=dict)
    #: Lines that were not internal-json events (kept for error reports).
    other: list[str] = attrs.field(factory=list)
    #: Called with each build log line as it arrives (`nixgen build -L`).
    on_line: Callable[[Build, str], None] | None = None

    def feed(self, line: str) -> tuple[str, Build] | None:
        """Take one stderr line; return ``("start" | "stop", build)`` when one changes.

        A stop says whether the build failed only when Nix said so before it: Nix 2.8
        stops a top-level derivation's activity at the very end of the run and reports
        its failure after that, so a stop alone is no success (`nixgen build` waits for
        Nix's exit before calling a variant done)."""
        line = line.rstrip("\n")
        if not line.startswith("@nix "):
            if line.strip():
                self._other(line)
            return None
        try:
            event = bounded.json_loads(line[5:], limit=4 * MAX_LINE)
        except ValueError:
            event = None
        if not isinstance(event, dict):  # not an event: kept as text, like any other line
            self._other(line)
            return None
        return self._event(event)

    def _other(self, line: str) -> None:
        """Keep a line that is no event (the last `MAX_OTHER` of them)."""
        self.other.append(strip_ansi(line))
        if len(self.other) > 2 * MAX_OTHER:
            del self.other[:-MAX_OTHER]

    def _event(self, event: dict[str, Any]) -> tuple[str, Build] | None:
        action = event.get("action")
        fields = event.get("fields")
        fields = fields if isinstance(fields, list) and fields else [""]
        id_ = event.get("id")
        if isinstance(id_, bool) or not isinstance(id_, int):
            id_ = None  # an event without a usable id changes no activity
        if action == "start" and event.get("type") == ACT_BUILD and id_ is not None:
            machine = strip_ansi(str(fields[1])) if len(fields) > 1 and fields[1] else ""
            drv = strip_ansi(str(fields[0]))
            remote = next(
                (
                    b
                    for b in self.builds.values()
                    if b.drv == drv and b.machine and b.finished is None
                ),
                None,
            )
            if remote is not None and not machine:
                # The builder's own activity for a build Nix handed to it (forwarded
                # over ssh-ng): the same build, whose log lines arrive under this id.
                self.relayed[id_] = remote
                return None
            build = Build(drv=drv, started=self.clock(), machine=machine)
            self.builds[id_] = build
            return ("start", build)
        if action == "stop" and id_ in self.relayed:
            return None
        if action == "stop" and id_ in self.builds:
            build = self.builds[id_]
            if build.finished is None:
                build.finished = self.clock()
                build.failed = build.drv in self.failed_drvs()
                return ("stop", build)
            return None
        if action == "result" and event.get("type") == RES_BUILD_LOG_LINE:
            target = self.builds.get(id_) or self.relayed.get(id_)  # type: ignore[arg-type]
            if target is not None:
                text = strip_ansi(str(fields[0]))
                target.log.append(text)
                if self.on_line is not None:
                    self.on_line(target, text)
            return None
        if action == "msg" and event.get("level") == LEVEL_WARN:
            message = strip_ansi(str(event.get("msg", ""))).strip()
            if message:
                self.warnings.append(message.removeprefix("warning: ").strip())
            return None
        if action == "msg" and event.get("level") == LEVEL_ERROR:
            message = strip_ansi(str(event.get("msg", ""))).strip()
            if message:
                self.errors.append(message.removeprefix("error: ").strip())
            for build in self.builds.values():
                if build.drv in self.failed_drvs():
                    build.failed = True
        return None

    def failed_drvs(self) -> list[str]:
        """Derivations whose builder failed, in the order Nix reported them."""
        out = []
        for message in self.errors:
            match = _FAILED.search(message)
            if match and match.group(1) not in out:
                out.append(match.group(1))
        return out

    def running(self) -> list[Build]:
        return [b for b in self.builds.values() if b.finished is None]

    def build_of(self, drv: str) -> Build | None:
        return next((b for b in self.builds.values() if b.drv == drv), None)

    def failure_report(self, lines: int) -> list[str]:
        """What to show when the run failed: each failed derivation's log tail, then Nix's
        error messages (or, when nothing was built, the evaluation error)."""
        out: list[str] = []
        for drv in self.failed_drvs():
            build = self.build_of(drv)
            tail = list(build.log)[-lines:] if build and lines > 0 else []
            out.append(f"--- last {len(tail)} log lines of {drv_name(drv)} ---")
            out.extend(tail)
            out.append(f"--- (full log: nix log {drv})")
        out.extend(f"error: {message}" for message in self.errors)
        if not self.errors:
            out.extend(self.other[-lines:])
        return out
