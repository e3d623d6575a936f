"""`nixgen build`: render when stale, then `nix build` the chosen variants, with progress."""

from __future__ import annotations

import os
import platform
import queue
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from nixgen.cli import emit_json, handle_errors, print_problems, project_argument, use_color
from nixgen.errors import EXIT_INTERNAL, NixgenError, ProblemError, error

#: Where each variant is linked, relative to the project (what the `kernels` client and
#: the tests of `nixgen init` look at).
DEFAULT_LINKS = "build"
EXPERIMENTAL = "nix-command flakes"


class BuildFailed(NixgenError):
    """`nix build` failed; the details were already printed."""

    exit_code = EXIT_INTERNAL


def host_system() -> str:
    """This machine as a Nix system name (``x86_64-linux``, ``aarch64-darwin``, …)."""
    machine = {"arm64": "aarch64", "amd64": "x86_64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    return f"{machine}-{platform.system().lower()}"


def _complete_variant(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Variant names for shell completion, computed in Python (no Nix evaluation)."""
    from click.shell_completion import CompletionItem

    try:
        from nixgen import plan
        from nixgen import project as project_mod

        root = ctx.params.get("project") or Path(".")
        build = project_mod.read(root, check_files=False).build
        system = ctx.params.get("system") or host_system()
        names = [v.name for v in plan.variants(build, system=system)]
    except Exception:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def _elapsed(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}:{seconds % 60:02d}"


def _label(drv_name: str, project: str, version: str, kernels: list[str]) -> str:
    """What a derivation is, in the project's words: ``kernel relu_cpu``, ``extension``."""
    suffix = f"-{version}"
    stem = drv_name.removesuffix(suffix)
    if stem.startswith(f"{project}-"):
        part = stem[len(project) + 1 :]
        if part in kernels:
            return f"kernel {part}"
        if part in ("torch-ext", "tvm-ffi-ext"):
            return "extension"
        if part.startswith("noarch"):
            return "python package"
    return drv_name


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
        return _elapsed(time.monotonic() - self.start)


def _pump(stream: Any, sink: queue.Queue[tuple[str, str | None]], tag: str) -> None:
    for line in iter(stream.readline, ""):
        sink.put((tag, line))
    sink.put((tag, None))


def run_one(
    command: list[str],
    *,
    index: int,
    variant: str,
    progress: Progress,
    label: Any,
    log_lines: int,
) -> tuple[bool, str, list[str]]:
    """Run one `nix build`; returns (ok, stdout, failure report lines)."""
    from nixgen.nixlog import NixLog

    prefix = f"[{index}/{progress.total}] {variant}"
    log = NixLog()
    try:
        process = subprocess.Popen(
            command,
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
    started = time.monotonic()
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
            if change is not None:
                kind, build = change
                what = label(build.name)
                if kind == "start":
                    progress.event(f"{prefix}: building {what}")
                elif build.failed:
                    progress.event(f"{prefix}: {what} {progress.style('failed', fg='red')}")
                else:
                    took = build.duration(time.monotonic())
                    progress.event(f"{prefix}: built {what} ({took:.1f}s)")
            running = ", ".join(label(b.name) for b in log.running()) or "evaluating"
            progress.show(
                f"{prefix}: {running} · {_elapsed(time.monotonic() - started)} "
                f"(total {progress.total_elapsed()})"
            )
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        raise
    code = process.wait()
    report = log.failure_report(log_lines) if code != 0 else []
    return code == 0, "".join(stdout), report


@click.command(name="build")
@project_argument
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    shell_complete=_complete_variant,
    help="A variant to build; repeat for several (default: every bundled variant of SYSTEM).",
)
@click.option(
    "--system",
    default=None,
    metavar="SYSTEM",
    help="Nix system of the variants (default: this machine).",
)
@click.option(
    "--override-input",
    "overrides",
    nargs=2,
    multiple=True,
    metavar="INPUT REF",
    help="Passed to nix build (e.g. `nixpkgs path:/src/nixpkgs`); repeatable.",
)
@click.option(
    "--out-link",
    "links",
    default=DEFAULT_LINKS,
    show_default=True,
    metavar="DIR",
    help="Link each built variant as DIR/<variant>, relative to PROJECT.",
)
@click.option("--no-link", is_flag=True, help="Do not link the results.")
@click.option("--keep-going", is_flag=True, help="Build the other variants after a failure.")
@click.option(
    "--log-lines",
    default=40,
    show_default=True,
    type=click.IntRange(0),
    help="Log lines of a failed derivation to show.",
)
@click.option("--dry-run", is_flag=True, help="Print what would be rendered and run; do nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: print the plan as JSON.")
@handle_errors
def build_command(
    project: Path,
    variants: tuple[str, ...],
    system: str | None,
    overrides: tuple[tuple[str, str], ...],
    links: str,
    no_link: bool,
    keep_going: bool,
    log_lines: int,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Build PROJECT's variants with Nix, rendering its Nix files first when stale.

    Runs one `nix build` per variant and shows which variant and which kernel is being
    built, how many are done and the time elapsed (a live line on a terminal, plain lines
    otherwise). Each result is linked as build/<variant>, where the `kernels` client
    finds it (`kernels.get_local_kernel(PROJECT, backend=...)`). A failure ends with the
    failing derivation's last log lines. Exit status: 0 built, 1 a build failed,
    2 invalid input.
    """
    from nixgen import plan, write
    from nixgen.commands.render import prepare

    if as_json and not dry_run:
        raise click.UsageError("--json needs --dry-run (a build prints progress, not JSON)")
    system = system or host_system()
    loaded, rendered, problems = prepare(project, "nix")
    print_problems(problems)
    root = loaded.root
    available = plan.variants(loaded.build, system=system)
    names = [v.name for v in available]
    if variants:
        unknown = [v for v in variants if v not in names]
        if unknown:
            raise ProblemError(
                [
                    error(
                        f"unknown variant `{v}` for {system}; valid variants: "
                        f"{', '.join(names) or 'none'}",
                    )
                    for v in unknown
                ]
            )
        chosen = list(dict.fromkeys(variants))
    else:
        chosen = [v.name for v in available if v.bundle]
    if not chosen:
        raise ProblemError([error(f"{loaded.build.general.name} has no variants for {system}")])

    stale = write.plan(root, rendered)
    from nixgen.pipeline import kept_warnings

    for note in kept_warnings(stale.kept):
        click.echo(note, err=True)
    ref = str(root.resolve())
    commands = {
        name: _command(ref, system, name, overrides, None if no_link else root / links / name)
        for name in chosen
    }
    if dry_run:
        changed = [*stale.added, *stale.changed, *stale.removed]
        if as_json:
            emit_json(
                {
                    "render": changed,
                    "system": system,
                    "variants": [{"name": n, "command": commands[n]} for n in chosen],
                }
            )
            return
        if changed:
            click.echo(f"would render {rendered.out_dir}/ ({len(changed)} file(s) stale)")
        for name in chosen:
            click.echo(shlex.join(commands[name]))
        return

    if shutil.which("nix") is None:
        raise NixgenError(
            "`nix` is not on PATH: install Nix (https://nixos.org/download), or run "
            "`nixgen render` here and build the flake elsewhere"
        )
    if stale.stale:
        result = write.write(root, rendered)
        click.echo(
            f"rendered {rendered.out_dir}/: {len(result.added)} added, "
            f"{len(result.changed)} changed, {len(result.removed)} removed",
            err=True,
        )
    if not no_link:
        (root / links).mkdir(parents=True, exist_ok=True)
    err = sys.stderr
    progress = Progress(len(chosen), live=err.isatty(), color=use_color(err), stream=err)
    meta = loaded.build.general
    kernels = sorted(loaded.build.kernels)

    def label(drv_name: str) -> str:
        return _label(drv_name, meta.name, str(meta.version), kernels)

    progress.line(
        f"building {len(chosen)} variant{'s' if len(chosen) != 1 else ''} of {meta.name} "
        f"for {system}"
    )
    failed: list[str] = []
    built: list[str] = []
    for index, name in enumerate(chosen, start=1):
        started = time.monotonic()
        ok, _, report = run_one(
            commands[name],
            index=index,
            variant=name,
            progress=progress,
            label=label,
            log_lines=log_lines,
        )
        took = time.monotonic() - started
        where = "" if no_link else f" -> {os.path.relpath(root / links / name)}"
        if ok:
            built.append(name)
            progress.line(
                f"[{index}/{len(chosen)}] {name}: {progress.style('done', fg='green')} in "
                f"{took:.1f}s (total {progress.total_elapsed()}){where}"
            )
            continue
        failed.append(name)
        progress.line(
            f"[{index}/{len(chosen)}] {name}: {progress.style('failed', fg='red', bold=True)} "
            f"after {took:.1f}s"
        )
        for line in report:
            progress.line(line)
        if not keep_going:
            break
    summary = f"built {len(built)} of {len(chosen)} variant(s) in {progress.total_elapsed()}"
    if failed:
        raise BuildFailed(f"{summary}; failed: {', '.join(failed)}")
    click.echo(summary)


def _command(
    ref: str,
    system: str,
    variant: str,
    overrides: tuple[tuple[str, str], ...],
    link: Path | None,
) -> list[str]:
    command = [
        "nix",
        "build",
        "--extra-experimental-features",
        EXPERIMENTAL,
        "--log-format",
        "internal-json",
        "--json",
        f"{ref}#packages.{system}.{variant}",
    ]
    command += ["--no-link"] if link is None else ["--out-link", str(link)]
    for name, value in overrides:
        command += ["--override-input", name, value]
    return command


command = build_command
