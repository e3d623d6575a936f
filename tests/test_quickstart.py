"""quickstart.sh, as a new user runs it (README's first command; issue 42, item 5).

The setup (scripts/setup.sh) is skipped (``NIXGEN_QUICKSTART_SETUP=0``): the suite runs in the
venv it made. Everything else runs as it would for a user who has not activated the venv:
the example copied into ``NIXGEN_QUICKSTART_DIR``, the offline stand-ins laid out by
scripts/offline-inputs.sh and named in the project's nixgen.toml, the build made by `nixgen
build` in the Nix sandbox, loaded by the `kernels` client. The project stays; the last line
is the next command, and that command works. A failure is one line, never a traceback.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from . import nixtools

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

REPO = Path(__file__).resolve().parent.parent
VARIANT = f"torch213-cxx11-cpu-{platform.machine()}-linux"


def user_env(dest: Path) -> dict[str, str]:
    """The session's environment as a user's shell has it: without the tests' `NIX_CONFIG`
    and without the venv's bin/ on PATH (tests/conftest.py puts it first)."""
    env = dict(nixtools._SESSION_ENV)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.pop("NIX_CONFIG", None)
    env.update(NIXGEN_QUICKSTART_SETUP="0", NIXGEN_QUICKSTART_DIR=str(dest))
    return env


def quickstart(dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(REPO / "quickstart.sh")],
        env=user_env(dest),
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


@pytest.mark.nix
@pytest.mark.build
@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
def test_quickstart_builds_with_nixgen_build_and_leaves_the_project(tmp_path: Path) -> None:
    dest = tmp_path / "quickstart"
    done = quickstart(dest)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-6000:]
    assert "Traceback" not in output
    project = dest / "relu-cpu"
    assert f"nixgen build --variant {VARIANT}" in done.stdout
    assert "matches torch.relu" in done.stdout
    # The project is left as a user would make it: nixgen.toml names the stand-ins.
    settings = tomllib.loads((project / "nixgen.toml").read_text())
    assert settings["offline"] is True
    assert settings["override-input"] == {
        "nixpkgs": f"path:{dest / 'offline' / 'nixpkgs'}",
        "kernel-builder": f"path:{dest / 'offline' / 'kernel-builder'}",
    }
    assert (project / "build" / VARIANT / "metadata.json").is_file()
    assert (dest / "offline" / "nix.conf").read_text().startswith("extra-sandbox-paths = ")
    # The last line is the next command, and it works as printed (a dry run: the build it
    # would make is the one just made, in the same sandbox).
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("next: . "), last
    command = last.removeprefix("next: ").split("   #")[0]
    assert command == f". {dest}/env.sh && cd {project} && nixgen build"
    again = subprocess.run(
        ["bash", "-c", f"{command} --dry-run"],
        env=user_env(dest),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Traceback" not in again.stdout + again.stderr


def test_a_directory_inside_a_git_work_tree_is_one_line_and_nothing_made(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    dest = tmp_path / "inside"
    done = quickstart(dest)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"quickstart.sh: error: {dest} is inside a git work tree, where a flake sees only "
        "tracked files: set NIXGEN_QUICKSTART_DIR to a directory outside it"
    ]
    assert list(dest.iterdir()) == []
