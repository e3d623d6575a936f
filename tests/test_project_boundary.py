"""Where a project ends: nixgen writes nothing outside it (nor into it by accident, as a
relative cache directory would), finds it upwards only up to the boundaries git stops
at, sees the files Nix sees whatever GIT_DIR says, and watches every file a render reads.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nixgen.cmdline.commands.watch import Watcher

from .fake_nix_argv import Fake, drv, install_fake, make_demo
from .fakenix import bundled
from .hostile import NOBODY, nixgen, project, small_tmpfs

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="needs git")
is_root = os.geteuid() == 0


def git(*args: str, cwd: Path) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "protocol.file.allow=always",
            *args,
        ],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    )


def committed(root: Path) -> Path:
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "all", cwd=root)
    return root


# ------------------------------------------------------------------ the cache


def test_a_relative_xdg_cache_home_is_ignored(tmp_path: Path) -> None:
    root = project(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    done = nixgen("render", ".", cwd=root, env={"XDG_CACHE_HOME": "rel-cache", "HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert not (root / "rel-cache").exists()
    assert (home / ".cache" / "nixgen").is_dir()  # the spec's default instead


def test_no_absolute_home_means_no_cache_not_one_in_the_project(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = nixgen("render", ".", cwd=root, env={"XDG_CACHE_HOME": "", "HOME": "rel-home"})
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in root.iterdir()) == [
        "build.toml",
        "flake.nix",
        "nix",
        "relu",
        "torch-ext",
    ]


# ------------------------------------------------------------ the upward search


def test_a_project_found_above_the_working_directory_is_said(tmp_path: Path) -> None:
    root = project(tmp_path)
    done = nixgen("validate", cwd=root / "relu")
    assert done.returncode == 0, done.stderr
    assert f"using the project at .. (the nearest build.toml above {root / 'relu'})" in (
        done.stderr
    )


@pytest.mark.skipif(not is_root, reason="needs root to give a directory another owner")
def test_the_search_stops_at_a_directory_owned_by_another_user(tmp_path: Path) -> None:
    """Another user's project two levels up is never picked up (git's safe.directory)."""
    theirs = project(tmp_path, name="theirs")
    os.chown(theirs, NOBODY, NOBODY)
    mine = theirs / "shared" / "mine"
    mine.mkdir(parents=True)
    done = nixgen("render", cwd=mine)
    assert done.returncode == 2, done.stderr
    assert not (theirs / "nix").exists() and not (theirs / "flake.nix").exists()
    assert "no such file" in done.stderr


@pytest.mark.skipif(not is_root, reason="needs root to give a file another owner")
def test_a_build_toml_another_user_dropped_above_is_not_a_project(tmp_path: Path) -> None:
    """A world-writable directory above (as /tmp): the directory is root's, the
    build.toml someone else's."""
    shared = tmp_path / "shared"
    dropped = project(shared, name=".")
    os.chown(dropped / "build.toml", NOBODY, NOBODY)
    mine = shared / "work" / "sub"
    mine.mkdir(parents=True)
    done = nixgen("render", cwd=mine)
    assert done.returncode == 2, done.stderr
    assert not (shared / "nix").exists()


@pytest.mark.skipif(not is_root or shutil.which("mount") is None, reason="needs root to mount")
def test_the_search_stops_at_a_file_system_boundary(tmp_path: Path) -> None:
    root = project(tmp_path)
    with small_tmpfs(root / "mnt", size="1m") as mounted:
        (mounted / "work").mkdir()
        done = nixgen("render", cwd=mounted / "work")
        assert done.returncode == 2, done.stderr
        assert not (root / "nix").exists()


# --------------------------------------------------------------- git and Nix


@needs_git
def test_git_dir_of_another_repository_does_not_change_the_check(tmp_path: Path) -> None:
    """Nix finds a flake's repository by its `.git`, so GIT_DIR does not change what it
    copies; nor does it change nixgen's check: every file is committed, none is said
    untracked."""
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    committed(root)
    other = committed(project(tmp_path, name="other"))
    env = {"GIT_DIR": str(other / ".git"), "GIT_WORK_TREE": str(other)}
    done = nixgen("build", ".", "--dry-run", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    assert "not tracked by git" not in done.stderr


@needs_git
def test_git_dir_outside_any_work_tree_does_not_invent_one(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    other = committed(project(tmp_path, name="other"))
    done = nixgen("build", ".", "--dry-run", cwd=root, env={"GIT_DIR": str(other / ".git")})
    assert done.returncode == 0, done.stderr
    assert "not tracked by git" not in done.stderr


def test_nix_runs_without_git_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner) -> None:
    from nixgen.cmdline.cli import main

    fake: Fake = install_fake(tmp_path, monkeypatch)
    script = fake.dir / "bin" / "nix"
    script.write_text(
        script.read_text().replace(
            "args = sys.argv[1:]\n",
            "args = sys.argv[1:]\n(root / 'env.txt').write_text(os.environ.get('GIT_DIR', '-'))\n",
        )
    )
    demo = make_demo(tmp_path)
    fake.evaluates_to([drv(v) for v in bundled(demo)])
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "nowhere" / ".git"))
    result = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert result.exit_code == 0, result.output
    assert (fake.dir / "env.txt").read_text() == "-"


def test_a_dry_run_outside_git_warns_of_no_untracked_file(tmp_path: Path) -> None:
    done = nixgen("build", ".", "--dry-run", cwd=project(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "not tracked by git" not in done.stderr


@needs_git
def test_a_repository_config_names_no_command_that_nixgen_or_nix_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner
) -> None:
    """`core.fsmonitor` in a project's own .git/config is a command that `git ls-files`
    starts: neither nixgen's git check nor the git that Nix runs may start it."""
    from nixgen.cmdline.cli import main

    ran = tmp_path / "fsmonitor-ran"
    fake: Fake = install_fake(tmp_path, monkeypatch)
    script = fake.dir / "bin" / "nix"
    script.write_text(  # as Nix does for a flake in a git work tree
        script.read_text().replace(
            "args = sys.argv[1:]\n",
            "args = sys.argv[1:]\nimport subprocess\n"
            "subprocess.run(['git', 'ls-files'], capture_output=True)\n",
        )
    )
    demo = make_demo(tmp_path)
    assert nixgen("render", ".", cwd=demo).returncode == 0
    committed(demo)
    git("config", "core.fsmonitor", f"touch {ran}; false", cwd=demo)
    fake.evaluates_to([drv(v) for v in bundled(demo)])
    result = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert result.exit_code == 0, result.output
    assert fake.calls()
    assert not ran.exists(), "the repository's core.fsmonitor command ran"


@needs_git
def test_a_committed_file_in_a_submodule_is_not_called_untracked(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "relu.cpp").write_text("// the kernel\n")
    committed(inner)
    root = project(tmp_path)
    shutil.rmtree(root / "relu")
    committed(root)
    git("submodule", "add", "-q", str(inner), "relu", cwd=root)
    assert nixgen("render", ".", cwd=root).returncode == 0
    git("add", "-A", cwd=root)
    git("commit", "-qm", "sub", cwd=root)
    done = nixgen("build", ".", "--dry-run", cwd=root)
    assert "`relu/relu.cpp` is inside the git submodule `relu`: committed there" in done.stderr
    assert "is not tracked by git" not in done.stderr
    assert "git add" not in done.stderr


# ------------------------------------------------------------------ watch

RUST = """\
[general]
name = "relu-rs"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[tvm-ffi]

[kernel.relu_rs]
language = "rust-cpu"
src = ["relu_rs/Cargo.toml", "relu_rs/src"]
"""


@contextlib.contextmanager
def chdir(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def test_watch_renders_when_a_cargo_lock_appears_nearer_the_crate(tmp_path: Path) -> None:
    root = tmp_path / "rs"
    for rel, text in {
        "build.toml": RUST,
        "Cargo.lock": "version = 4\n",
        "relu_rs/Cargo.toml": '[package]\nname = "relu_rs"\nversion = "0.1.0"\n',
        "relu_rs/src/lib.rs": "// lib\n",
        "tvm-ffi-ext/relu_rs/__init__.py": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    lines: list[str] = []
    sleeps = 0

    def sleep(_: float) -> None:
        nonlocal sleeps
        sleeps += 1
        if sleeps == 1:
            (root / "relu_rs" / "Cargo.lock").write_text("version = 4\n# nearer\n")
        assert sleeps < 50, f"no render after the lock appeared: {lines}"

    with chdir(root):
        watcher = Watcher(Path("."), "nix", color=False)
        watcher.run(interval=0.01, max_renders=2, echo=lines.append, sleep=sleep)
    assert len(lines) == 2 and "relu_rs/Cargo.lock changed" in lines[1], lines
    assert nixgen("render", ".", "--check", cwd=root).returncode == 0
    assert "relu_rs/Cargo.lock" in json.dumps(lines)
