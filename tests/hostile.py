"""What the tests of hostile input share: a small valid project, `python -m nixgen` run as a
user runs it (in a subprocess, with a timeout; a traceback or "internal error" fails the test),
a driver that patches nixgen in the child, a snapshot of a tree, a small tmpfs."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

BUILD_TOML = """\
[general]
name = "relu"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu]
language = "cpp-cpu"
depends = ["torch"]
src = ["relu/relu.cpp"]
"""

SECRET = b"TOP-SECRET-TOKEN-1234\n"


def project(tmp_path: Path, text: str = BUILD_TOML, name: str = "project") -> Path:
    """A valid project tree under `tmp_path`."""
    root = tmp_path / name
    for rel in ("torch-ext/torch_binding.cpp", "torch-ext/relu/__init__.py", "relu/relu.cpp"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"// {rel}\n")
    (root / "build.toml").write_text(text)
    return root


def nixgen(
    *args: str, cwd: Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m nixgen ARGS` as a user runs it; fails the test on a hang or a traceback."""
    environment = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **(env or {}),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`nixgen {' '.join(args)}` hung (no answer in {timeout} s)")
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    return done


def snapshot(root: Path) -> dict[str, tuple[str, object]]:
    """Every entry under `root` (links not followed): kind, mode and content."""
    entries: dict[str, tuple[str, object]] = {}
    stack = [root]
    while stack:
        directory = stack.pop()
        for entry in sorted(os.scandir(directory), key=lambda e: e.name):
            path = Path(entry.path)
            rel = str(path.relative_to(root))
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                entries[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                entries[rel] = ("dir", stat.S_IMODE(info.st_mode))
                stack.append(path)
            elif stat.S_ISREG(info.st_mode):
                entries[rel] = ("file", (stat.S_IMODE(info.st_mode), path.read_bytes()))
            else:
                entries[rel] = ("special", stat.S_IFMT(info.st_mode))
    return entries


def outside_dir(tmp_path: Path) -> Path:
    """A directory next to the project with a file someone cares about."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "precious.txt").write_bytes(SECRET)
    (other / "compile.nix").write_bytes(b"# the user's own file\n")
    return other


#: The user and group id of `nobody`, who runs nixgen where a test needs an ordinary user.
NOBODY = 65534


def env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **extra,
    }


def clean(done: subprocess.CompletedProcess[bytes]) -> str:
    text = (done.stdout or b"").decode(errors="replace") + done.stderr.decode(errors="replace")
    assert "Traceback" not in text, text
    assert "internal error" not in text, text
    return text


def driver(code: str, *, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    """Run `code` (which patches nixgen, then calls `nixgen.cmdline.entry.main()`) in a child."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        timeout=60,
        env=env(),
        **kwargs,  # type: ignore[arg-type]
    )


RUST_TVM = """\
[general]
name = "relu-rs"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[tvm-ffi]

[kernel.relu_rs]
language = "rust-cpu"
src = ["relu_rs/Cargo.toml", "relu_rs/Cargo.lock", "relu_rs/src"]
"""


def rust_project(tmp_path: Path) -> Path:
    root = tmp_path / "rs"
    for rel, text in {
        "build.toml": RUST_TVM,
        "relu_rs/Cargo.toml": '[package]\nname = "relu_rs"\nversion = "0.1.0"\n',
        "relu_rs/Cargo.lock": "version = 4\n",
        "relu_rs/src/lib.rs": "// lib\n",
        "relu_rs/src/inner/mod.rs": "// mod\n",
        "tvm-ffi-ext/relu_rs/__init__.py": "",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


can_mount = os.geteuid() == 0 and shutil.which("mount") is not None


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace')}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)
