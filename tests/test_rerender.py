"""Rendering a project again: an unchanged project is rendered in full and nothing is
written (no file, no directory, no leftover touched), and any change since the last
render — to build.toml, a listed file, a `Cargo.lock` the render found, the output — is
what the next render shows."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

State = dict[str, tuple[int, int, int]]


def _state(top: Path) -> State:
    """(inode, mtime, ctime) in ns of `top` and of every entry under it, links not
    followed: a file rewritten, replaced, hard-linked or chmod-ed, and a directory that
    gained or lost an entry (a staging directory made and removed), all change it."""
    out: State = {}
    for base, dirs, files in os.walk(top):
        for name in [".", *dirs, *files]:
            path = os.path.join(base, name)
            info = os.lstat(path)
            out[os.path.relpath(path, top)] = (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
    return out


def _render(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`nixgen render` as a user runs it: a whole process."""
    return subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(project), *args],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
    )


@pytest.fixture
def rendered(copy_example: Callable[[str], Path]) -> Path:
    project = copy_example("relu-mixed")
    first = _render(project)
    assert first.returncode == 0, first.stderr
    return project


def test_a_render_of_an_unchanged_project_touches_nothing_and_says_so(rendered: Path) -> None:
    before = _state(rendered.parent)
    again = _render(rendered)
    assert again.returncode == 0, again.stderr
    assert _state(rendered.parent) == before  # same inodes, mtimes and ctimes, no new entry
    count = sum(len(files) for _, _, files in os.walk(rendered / "nix"))
    assert again.stderr.splitlines() == [
        f"nix/ is up to date ({count} files; flake.nix unchanged): nothing written"
    ]
    assert again.stdout == ""


def _relocate_crate(project: Path) -> None:
    """relu-mixed with its Rust crate one level deeper (`crates/leaky_relu_rs`) and the
    crate's lock at the project root, not listed: the render finds it by searching each
    directory from the crate up (`validate.listed_lock_files`), `crates/` among them."""
    (project / "crates").mkdir()
    (project / "leaky_relu_rs").rename(project / "crates" / "leaky_relu_rs")
    (project / "crates" / "leaky_relu_rs" / "Cargo.lock").rename(project / "Cargo.lock")
    # The crate is linked into [torch]: nixgen.toml defines the kernel.
    assert "[kernel.leaky_relu_rs]" in (project / "nixgen.toml").read_text()
    (project / "nixgen.toml").write_text(
        '[kernel.leaky_relu_rs]\nlanguage = "rust-cpu"\n'
        'cargo-manifest = "crates/leaky_relu_rs/Cargo.toml"\n'
        'src = ["crates/leaky_relu_rs/Cargo.toml", "crates/leaky_relu_rs/src"]\n'
    )


def test_a_cargo_lock_that_appears_or_goes_is_seen_by_the_next_render(
    copy_example: Callable[[str], Path],
) -> None:
    project = copy_example("relu-mixed")
    _relocate_crate(project)
    kernel = project / "nix" / "kernels" / "leaky_relu_rs.nix"
    first = _render(project)
    assert first.returncode == 0, first.stderr
    assert "using `Cargo.lock`, the nearest" in first.stderr
    assert 'lockfile = "Cargo.lock";' in kernel.read_text()
    # A nearer lock appears: the next render uses it.
    (project / "crates" / "Cargo.lock").write_bytes((project / "Cargo.lock").read_bytes())
    nearer = _render(project, "-v")
    assert nearer.returncode == 0, nearer.stderr
    assert "using `crates/Cargo.lock`, the nearest" in nearer.stderr
    assert "  changed nix/kernels/leaky_relu_rs.nix" in nearer.stderr.splitlines()
    assert 'lockfile = "crates/Cargo.lock";' in kernel.read_text()
    # Every lock goes: the next render is a located error, and writes nothing.
    (project / "crates" / "Cargo.lock").unlink()
    (project / "Cargo.lock").unlink()
    before = _state(project)
    gone = _render(project)
    assert gone.returncode == 2, gone.stderr
    assert "kernel.leaky_relu_rs.src: a rust-cpu kernel builds offline from its crate's" in (
        gone.stderr
    )
    assert _state(project) == before


def test_a_source_list_change_is_seen_by_the_next_render(rendered: Path) -> None:
    (rendered / "relu_cpu" / "extra.cpp").write_text("// more\n")
    build = rendered / "build.toml"
    text = build.read_text()
    build.write_text(
        text.replace('["relu_cpu/relu_cpu.cpp"]', '["relu_cpu/relu_cpu.cpp", "relu_cpu/extra.cpp"]')
    )
    listed = _render(rendered, "-v")
    assert listed.returncode == 0, listed.stderr
    assert "  changed nix/kernels/relu_cpu.nix" in listed.stderr.splitlines()
    assert "relu_cpu/extra.cpp" in (rendered / "nix" / "kernels" / "relu_cpu.nix").read_text()


def test_a_listed_source_deleted_after_a_render_fails_the_next_one(rendered: Path) -> None:
    (rendered / "relu_cpu" / "relu_cpu.cpp").unlink()
    before = _state(rendered)
    done = _render(rendered)
    assert done.returncode == 2
    assert "relu_cpu/relu_cpu.cpp` does not exist" in done.stderr
    assert "up to date" not in done.stderr
    assert _state(rendered) == before


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        pytest.param(
            lambda p: (p / "nix" / "project.nix").write_bytes(
                (p / "nix" / "project.nix").read_bytes() + b"# an edit\n"
            ),
            "rendered nix/: 0 added, 1 changed, 0 removed",
            id="output edited",
        ),
        pytest.param(
            lambda p: (p / "nix" / "kernels" / "old.nix").write_text("# @generated by nixgen\n"),
            "rendered nix/: 0 added, 0 changed, 1 removed",
            id="stale generated file",
        ),
        pytest.param(lambda p: (p / "flake.nix").unlink(), "; flake.nix added", id="flake deleted"),
    ],
)
def test_the_next_render_repairs_what_changed_in_the_output(
    rendered: Path, runner: CliRunner, change: Callable[[Path], object], reported: str
) -> None:
    pristine = _generated(rendered)
    change(rendered)
    result = runner.invoke(main, ["render", str(rendered)])
    assert result.exit_code == 0, result.output
    assert reported in result.output
    assert _generated(rendered) == pristine


def _generated(project: Path) -> dict[Path, bytes]:
    """The bytes of flake.nix and of every file under nix/."""
    found = [project / "flake.nix", *(project / "nix").rglob("*")]
    return {p: p.read_bytes() for p in found if p.is_file()}
