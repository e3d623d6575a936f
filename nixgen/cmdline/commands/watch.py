"""`nixgen watch`: re-render a project's Nix whenever its build.toml or a source changes.

Polls modification times (no extra dependency, works on every file system): a file counts
as changed when its mtime, size or inode changes, or when it appears or disappears. The
set of watched files is build.toml, every file the project lists, its Python package's
``__init__.py`` and every place a crate's `Cargo.lock` is looked for; it is re-read after
each render that succeeds. A change is rendered once the files have settled, so an
editor's save is not read half-written.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from nixgen.app.pipeline import prepare
from nixgen.app.settings import Given, resolve
from nixgen.checking.validate import lock_search_paths
from nixgen.cmdline.cli import handle_errors, print_problems, project_argument, use_color
from nixgen.core import console
from nixgen.core.errors import NixgenError, Problem, ProblemError
from nixgen.core.paths import DEFAULT_OUT
from nixgen.reading import load, model
from nixgen.reading.model import python_package_dir
from nixgen.writing import write

Stamp = tuple[int, int, int] | None
#: A change is rendered once the files look the same twice this far apart.
SETTLE_SECONDS = 0.05
SETTLE_TRIES = 20
#: The longest --interval accepted (an hour); `nan`, `inf` and 1e308 are usage errors.
MAX_INTERVAL = 3600.0


def _finite(value: float) -> float:
    """Reject `nan` (which passes every range comparison) as a usage error."""
    import math

    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds")
    return value


def snapshot(paths: list[Path]) -> dict[Path, Stamp]:
    """The (mtime, size, inode) of each path, None for a missing one."""
    out: dict[Path, Stamp] = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            out[path] = None
        else:
            out[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return out


def watched_files(root: Path, build_file: Path, build: model.Build | None) -> list[Path]:
    """build.toml, the files `build` lists, its Python package's ``__init__.py``, and
    every place a Rust kernel's unlisted `Cargo.lock` is looked for (one that appears
    nearer the crate changes the render)."""
    files = {build_file}
    if build is not None:
        files.update(root / rel for rel in build.source_files())
        files.add(root / python_package_dir(build) / "__init__.py")
        files.update(root / rel for rel in lock_search_paths(build))
    return sorted(files)


class Watcher:
    """Renders a project once per change; `render_once` is also the unit tests' handle."""

    def __init__(self, project: Path, out: str, *, color: bool):
        self.build_file = load.resolve_build_file(project)
        self.root = self.build_file.parent
        self.out = out
        self.color = color
        self.build: model.Build | None = None
        #: The exit status the last render stands for: 0, or its error's (2: invalid).
        self.code = 0

    def style(self, text: str, **kwargs: Any) -> str:
        return click.style(text, **kwargs) if self.color else text

    def render_once(self, changed: list[Path]) -> tuple[str, list[Problem]]:
        """Render now; returns the line to print and the problems to show."""
        stamp = self.style(time.strftime("[%H:%M:%S]"), dim=True)
        why = f" ({_describe(changed, self.root)})" if changed else ""
        try:
            # nixgen.toml read again for each render: its snapshot must be current.
            settings = resolve(self.build_file, Given(out=self.out))
            prepared = prepare(self.build_file, settings)
            problems = prepared.problems
            result = write.write(prepared.project.root, prepared.rendered)
        except ProblemError as exc:
            self.code = exc.exit_code
            errors = len(exc.errors)
            what = self.style("invalid", fg="red", bold=True)
            return (
                f"{stamp} {self.build_file.name} is {what} ({errors} error"
                f"{'s' if errors != 1 else ''}){why}; waiting for a change",
                exc.problems,
            )
        except NixgenError as exc:
            self.code = exc.exit_code
            return f"{stamp} {self.style('error', fg='red', bold=True)}: {exc}{why}", []
        self.build = prepared.project.build
        self.code = 0
        if not result.stale:
            return f"{stamp} {self.out}/ is up to date{why}", problems
        done = self.style("rendered", fg="green")
        return (
            f"{stamp} {done} {self.out}/: {len(result.added)} added, {len(result.changed)} "
            f"changed, {len(result.removed)} removed{why}",
            problems,
        )

    def run(
        self,
        *,
        interval: float,
        max_renders: int | None,
        echo: Callable[[str], None],
        sleep: Callable[[float], None] = time.sleep,
    ) -> int:
        """Watch until interrupted (or `max_renders` renders); returns the render count."""
        watched = watched_files(self.root, self.build_file, None)
        previous: dict[Path, Stamp] | None = None
        renders = 0
        while max_renders is None or renders < max_renders:
            current = snapshot(watched)
            if current != previous and previous is not None:
                current = _settled(watched, current)
            if current != previous:
                changed = (
                    []
                    if previous is None
                    else [p for p in watched if current.get(p) != previous.get(p)]
                )
                line, problems = self.render_once(changed)
                renders += 1
                echo(line)
                print_problems(problems)
                if self.build is not None:
                    watched = watched_files(self.root, self.build_file, self.build)
                # Stamps from before the render, so a change made during it is seen next.
                fresh = snapshot(watched)
                previous = {p: current.get(p, fresh[p]) for p in watched}
                continue
            sleep(interval)
        return renders


def _settled(watched: list[Path], current: dict[Path, Stamp]) -> dict[Path, Stamp]:
    """Wait until the files stop changing, so a save in progress is not read half-written."""
    for _ in range(SETTLE_TRIES):
        time.sleep(SETTLE_SECONDS)
        again = snapshot(watched)
        if again == current:
            break
        current = again
    return current


def _describe(changed: list[Path], root: Path) -> str:
    names = []
    for path in changed:
        try:
            names.append(str(path.relative_to(root)))
        except ValueError:
            names.append(str(path))
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f"{shown} changed"


@click.command()
@project_argument
@click.option(
    "--out",
    default=None,
    envvar="NIXGEN_OUT",
    help="Output directory, relative to PROJECT (default: env NIXGEN_OUT, else nixgen.toml's "
    f"`out`, else {DEFAULT_OUT}).",
)
@click.option(
    "--interval",
    default=0.5,
    show_default=True,
    type=click.FloatRange(min=0.01, max=MAX_INTERVAL),
    callback=lambda _ctx, _param, value: _finite(value),
    help="Seconds between checks for changes.",
)
@click.option(
    "--max-renders",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Stop after N renders (the first one included), e.g. for scripts.",
)
@handle_errors
def watch(project: Path, out: str | None, interval: float, max_renders: int | None) -> None:
    """Re-render PROJECT's Nix whenever build.toml or a listed source changes.

    Renders once at the start, then after every change, printing one status line per
    render on stderr; when build.toml is invalid it prints the problems and waits for the
    next change. Runs until interrupted (Ctrl-C); with --max-renders, its exit status is
    the last render's (0 rendered, 2 invalid input).
    """
    # Settings that cannot be had (a bad --out, a bad nixgen.toml) are an error at once,
    # not something to wait out; the output directory stays the one chosen now.
    out = resolve(project, Given(out=out)).out
    watcher = Watcher(project, out, color=use_color(sys.stderr))
    if not watcher.build_file.is_file():
        raise NixgenError(f"{watcher.build_file}: no such file")
    console.err(f"watching {watcher.build_file} and the files it lists; Ctrl-C stops")
    try:
        watcher.run(
            interval=interval,
            max_renders=max_renders,
            echo=console.err,
        )
    except KeyboardInterrupt:
        console.err("stopped")
        sys.exit(130)  # like every command Ctrl-C ends (docs/files-and-links.md)
    if watcher.code:
        sys.exit(watcher.code)


command = watch
