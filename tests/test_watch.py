"""`nixgen watch`: one render per change of build.toml or a listed source, errors shown."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nixgen.app import scaffold
from nixgen.cmdline.cli import main
from nixgen.cmdline.commands.watch import Watcher, snapshot, watched_files

from .conftest import REPO
from .fakenix import run_in_pty

CXX_FLAGS = 'src = ["relu_cpu/relu_cpu.cpp"]\ncxx-flags = ["-O3"]'


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    root = tmp_path / "relu-demo"
    scaffold.create(root, "relu-demo", ["cpp-cpu"])
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


# --------------------------------------------------------------- a real process, real files


class Lines:
    """The per-render status lines (``[12:00:00] …``) of a process's stderr, read on a
    thread, each awaited with a deadline; its other lines (problems) go to `other`."""

    def __init__(self, stream) -> None:
        self.queue: queue.Queue[str | None] = queue.Queue()
        self.other: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            if re.match(r"\[\d\d:\d\d:\d\d\] ", line):
                self.queue.put(line.rstrip("\n"))
            else:
                self.other.append(line)
        self.queue.put(None)

    def next(self, timeout: float = 30) -> str | None:
        return self.queue.get(timeout=timeout)


def start_watch(root: Path, *args: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("NO_COLOR", None)
    return subprocess.Popen(
        [sys.executable, "-m", "nixgen", "watch", str(root), "--interval", "0.05", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow
def test_rerenders_after_a_real_change_and_reports_an_invalid_file(demo):
    process = start_watch(demo, "--max-renders", "4")
    try:
        lines = Lines(process.stderr)
        first = lines.next()
        assert re.fullmatch(
            r"\[\d\d:\d\d:\d\d\] rendered nix/: \d+ added, 0 changed, 0 removed", first
        )
        kernel = demo / "nix" / "kernels" / "relu_cpu.nix"
        assert "-O3" not in kernel.read_text()

        edit(demo / "build.toml", 'src = ["relu_cpu/relu_cpu.cpp"]', CXX_FLAGS)
        second = lines.next()
        assert second.endswith("rendered nix/: 0 added, 1 changed, 0 removed (build.toml changed)")
        assert '"-O3"' in kernel.read_text()

        edit(demo / "build.toml", "edition = 6", "edition = 6\nlicence = 'MIT'")
        third = lines.next()
        assert third.endswith(
            "build.toml is invalid (1 error) (build.toml changed); waiting for a change"
        )

        edit(demo / "build.toml", "\nlicence = 'MIT'", "")
        (demo / "relu_cpu" / "relu_cpu.cpp").write_text("// rewritten\n")
        fourth = lines.next()
        assert fourth.endswith(
            "nix/ is up to date (build.toml, relu_cpu/relu_cpu.cpp changed)"
        ) or (fourth.endswith("nix/ is up to date (build.toml changed)"))
        assert lines.next() is None, "stops after --max-renders"
        assert process.wait(timeout=30) == 0
        assert process.stdout.read() == ""  # stdout carries data; watch prints none
        errors = "".join(lines.other)
        assert re.search(
            r"build\.toml:9:1: error: general\.licence: unknown key `licence`; "
            r"did you mean `license`\?",
            errors,
        )
    finally:
        process.kill()
        process.wait()


@pytest.mark.slow
def test_interrupt_stops_cleanly(demo):
    import signal

    process = start_watch(demo)
    try:
        lines = Lines(process.stderr)
        assert "rendered nix/" in lines.next()
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130  # interrupted, as the docs promise
        assert lines.next() is None and "stopped\n" in lines.other
    finally:
        process.kill()
        process.wait()


# -------------------------------------------------------- the loop, step by step in-process


class Script:
    """A `sleep` that makes the next change on each call, then stops the watcher."""

    def __init__(self, *steps):
        self.steps = list(steps)

    def __call__(self, seconds: float) -> None:
        if not self.steps:
            raise KeyboardInterrupt
        step = self.steps.pop(0)
        if step is not None:
            step()
        time.sleep(0.01)  # distinct mtimes even on coarse clocks


def run(watcher: Watcher, script: Script, max_renders: int | None = None) -> list[str]:
    lines: list[str] = []
    with contextlib.suppress(KeyboardInterrupt):
        watcher.run(interval=0, max_renders=max_renders, echo=lines.append, sleep=script)
    return lines


def test_a_source_change_rerenders_and_an_unrelated_file_does_not(demo):
    watcher = Watcher(demo, "nix", color=False)
    lines = run(
        watcher,
        Script(
            lambda: (demo / "notes.txt").write_text("not listed"),
            lambda: (demo / "relu_cpu" / "relu_cpu.cpp").write_text("// new\n"),
            None,
        ),
    )
    assert len(lines) == 2
    assert lines[1].endswith("nix/ is up to date (relu_cpu/relu_cpu.cpp changed)")


def test_a_deleted_source_is_an_error_until_it_comes_back(demo):
    source = demo / "relu_cpu" / "relu_cpu.cpp"
    text = source.read_text()
    watcher = Watcher(demo, "nix", color=False)
    lines = run(watcher, Script(source.unlink, lambda: source.write_text(text), None))
    assert len(lines) == 3
    assert "build.toml is invalid (1 error) (relu_cpu/relu_cpu.cpp changed)" in lines[1]
    assert lines[2].endswith("nix/ is up to date (relu_cpu/relu_cpu.cpp changed)")


def test_a_new_source_is_watched_once_listed(demo):
    extra = demo / "relu_cpu" / "extra.h"
    watcher = Watcher(demo, "nix", color=False)
    listed = 'src = ["relu_cpu/relu_cpu.cpp", "relu_cpu/extra.h"]'
    lines = run(
        watcher,
        Script(
            lambda: extra.write_text("#pragma once\n"),  # not listed yet: no render
            lambda: edit(demo / "build.toml", 'src = ["relu_cpu/relu_cpu.cpp"]', listed),
            lambda: extra.write_text("#pragma once\n// changed\n"),
            None,
        ),
    )
    assert [line.split("] ", 1)[1] for line in lines[1:]] == [
        # The kernel and the extension (a listed header is an input of the binding too).
        "rendered nix/: 0 added, 2 changed, 0 removed (build.toml changed)",
        "nix/ is up to date (relu_cpu/extra.h changed)",
    ]


def test_max_renders_counts_the_first_render(demo):
    watcher = Watcher(demo, "nix", color=False)
    assert len(run(watcher, Script(), max_renders=1)) == 1


def test_watched_files_are_build_toml_sources_and_package(demo):
    watcher = Watcher(demo, "nix", color=False)
    run(watcher, Script(), max_renders=1)
    names = [
        str(p.relative_to(demo)) for p in watched_files(demo, demo / "build.toml", watcher.build)
    ]
    assert names == [
        "build.toml",
        "relu_cpu/relu_cpu.cpp",
        "torch-ext/relu_demo/__init__.py",
        "torch-ext/torch_binding.cpp",
        "torch-ext/torch_binding.h",
    ]


def test_snapshot_marks_missing_files(tmp_path):
    present = tmp_path / "a"
    present.write_text("x")
    stamps = snapshot([present, tmp_path / "missing"])
    assert stamps[tmp_path / "missing"] is None
    assert stamps[present] is not None


def test_missing_build_toml_is_an_error(runner, tmp_path):
    result = runner.invoke(main, ["watch", str(tmp_path), "--max-renders", "1"])
    assert result.exit_code == 1
    assert "no such file" in result.output


# ------------------------------------------------------------------------------ colour


def _watch_once(demo: Path) -> list[str]:
    return [
        sys.executable, "-c", "from nixgen.cmdline.cli import main; main(prog_name='nixgen')",
        "watch", str(demo), "--max-renders", "1",
    ]  # fmt: skip


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return {**env, **extra}


@pytest.mark.slow
def test_colour_on_a_terminal(demo):
    code, out = run_in_pty(_watch_once(demo), _env())
    assert code == 0, out
    assert "\x1b[32mrendered\x1b[0m" in out


@pytest.mark.slow
def test_no_colour_with_no_color_or_without_a_terminal(demo):
    code, out = run_in_pty(_watch_once(demo), _env(NO_COLOR="1"))
    assert code == 0, out
    assert "rendered nix/" in out
    assert "\x1b[" not in out
    done = subprocess.run(_watch_once(demo), env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert "nix/ is up to date" in done.stderr
    assert "\x1b[" not in done.stdout + done.stderr
