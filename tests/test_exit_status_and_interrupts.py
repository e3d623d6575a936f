"""Exit statuses are true and interrupts leave no traceback: a closed stdout pipe never turns
a failure into success, Ctrl-C ends `watch` with 130 and is clean at any moment (start-up, a
finalizer, random instants), and a render killed between the tree and the flake is repaired
and reported on the next run; an interrupted `init` leaves nothing and runs again.

Each case runs the real ``python -m nixgen`` in a subprocess with a timeout
(tests/hostile.py), or a small driver script that patches nixgen in the child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .hostile import (
    BUILD_TOML,
    clean,
    driver,
    env,
    nixgen,
    project,
)

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


# ------------------------------------------------------------------- exit status


def closed_pipe_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    """`nixgen ARGS | head -n 0`: the reader is gone before nixgen writes."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            cwd=cwd,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=60,
            env=env(),
        )
    finally:
        os.close(write)
    clean(done)
    return done


def test_a_closed_stdout_pipe_never_turns_failure_into_success(tmp_path: Path) -> None:
    from .projects import V4

    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
    assert closed_pipe_run(["render", ".", "--check"], root).returncode == 1
    (root / "build.toml").write_text(BUILD_TOML.replace('"cpu"]', '"cpx"]'))
    assert closed_pipe_run(["validate", ".", "--json"], root).returncode == 2
    assert closed_pipe_run(["render", ".", "--json"], root).returncode == 2
    old = project(tmp_path, V4, name="old")
    assert closed_pipe_run(["migrate", ".", "--check"], old).returncode == 1
    assert closed_pipe_run(["migrate", ".", "--diff"], old).returncode == 0
    # and success stays success
    assert closed_pipe_run(["schema"], root).returncode == 0


def test_watch_stopped_with_ctrl_c_exits_130(tmp_path: Path) -> None:
    root = project(tmp_path)
    child = subprocess.Popen(
        [sys.executable, "-m", "nixgen", "watch", ".", "--interval", "0.05"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    try:
        assert child.stderr is not None
        child.stderr.readline()  # `watching …`; the render's status line follows on stderr
        line = child.stderr.readline()
        assert b"rendered" in line or b"up to date" in line, line
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130, err
    assert b"Traceback" not in err


# ------------------------------------------------------------- interrupts, partial output


def test_a_kill_between_the_tree_and_the_flake_is_repaired_and_reported(tmp_path: Path) -> None:
    """Killed after the `nix/` exchange, before `flake.nix` is renamed into place (the
    writer's fault-injection point `_reached("tree")`): `--check` reports the flake, the
    next render completes the write from its journal and says so, and nothing of the
    killed render is left in the tree."""
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    old_flake = (root / "flake.nix").read_bytes()
    (root / "build.toml").write_text(BUILD_TOML.replace('name = "relu"', 'name = "relu2"'))
    (root / "torch-ext" / "relu2").mkdir()
    (root / "torch-ext" / "relu2" / "__init__.py").write_text("")
    done = driver(
        """
        import os, sys
        import nixgen.core.writer as w
        w._reached = lambda step: os._exit(137) if step == "tree" else None
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    assert done.returncode == 137, done.stderr
    assert (root / "flake.nix").read_bytes() == old_flake  # killed before the flake
    check = nixgen("render", ".", "--check", cwd=root)
    assert check.returncode == 1 and "flake.nix" in check.stdout
    repaired = nixgen("render", ".", cwd=root)
    assert repaired.returncode == 0
    assert "completed the write of an interrupted nixgen run" in repaired.stderr
    assert b"relu2" in (root / "flake.nix").read_bytes()
    assert nixgen("render", ".", "--check", cwd=root).returncode == 0
    assert not [p for p in (root / "nix").rglob("*") if ".nixgen" in p.name]
    assert not [p for p in root.iterdir() if p.name.startswith(".nixgen")]


def test_ctrl_c_during_init_leaves_nothing_and_init_runs_again(tmp_path: Path) -> None:
    done = driver(
        """
        import sys
        import nixgen.writing.write as w
        def stop(*a, **k):
            raise KeyboardInterrupt
        w.write = stop
        sys.argv = ["nixgen", "init", "relu"]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=tmp_path,
    )
    text = clean(done)
    assert done.returncode == 130, text
    assert not (tmp_path / "relu").exists()
    assert os.listdir(tmp_path) == []
    again = nixgen("init", "relu", cwd=tmp_path)
    assert again.returncode == 0, again.stderr


# ---------------------------------------------------------------- Ctrl-C, anywhere


def test_ctrl_c_inside_a_finalizer_is_no_traceback(tmp_path: Path) -> None:
    """SIGINT landing while Python runs a `__del__` (or another place where it reports an
    exception it cannot raise) is not printed as "Exception ignored … Traceback": nixgen
    stops with `interrupted` and 130, as for a Ctrl-C anywhere else."""
    root = project(tmp_path)
    done = driver(
        """
        import os, signal, sys, time
        import nixgen.app.pipeline as pipeline
        real = pipeline.prepare
        class Finalized:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.2)
        def prepare(*args, **kwargs):
            item = Finalized()
            del item
            time.sleep(5)  # the interrupt must end the command, not be lost
            return real(*args, **kwargs)
        pipeline.prepare = prepare
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 130, err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert err.strip().endswith("interrupted")


@pytest.mark.parametrize("args", [["render", "."], ["validate", "."], ["init", "fresh"]])
def test_ctrl_c_at_random_moments_never_prints_a_traceback(tmp_path: Path, args: list[str]) -> None:
    """SIGINT at spread-out moments from `main()` on (Python's own start-up, before
    nixgen runs, is outside nixgen's reach): `interrupted` and 130, or a finished run."""
    import random

    rng = random.Random(27)
    root = project(tmp_path)
    code = textwrap.dedent(
        f"""
        import os, sys
        sys.argv = ["nixgen", *{args!r}]
        import nixgen.cmdline.entry
        os.write(2, b"ready\\n")
        nixgen.cmdline.entry.main()
        """
    )
    for attempt in range(12):
        cwd = tmp_path / f"run{attempt}" if args[0] == "init" else root
        cwd.mkdir(exist_ok=True)
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(),
        )
        assert child.stderr is not None
        assert child.stderr.readline() == b"ready\n"
        time.sleep(rng.uniform(0, 0.6))
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        text = err.decode(errors="replace")
        assert "Traceback" not in text and "Exception ignored" not in text, text
        assert child.returncode in (0, 130), text
        if child.returncode == 130:
            assert text.strip().endswith("interrupted"), text
