"""Write stage (`nixgen render` on disk): atomic, minimal, and careful with the user's files.

What a user notices: a re-render that changes nothing touches nothing (so `make`-style
tools and editors see no change); a change replaces only the files it changes; files
nixgen no longer generates go away; files the user wrote stay, and are never overwritten
without ``--force``; ``--check`` tells CI whether the checked-in Nix is stale.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core import writer
from nixgen.core.errors import OutputError
from nixgen.core.marker import MARKER
from nixgen.planning import plan
from nixgen.rendering import render
from nixgen.writing import write

from .conftest import EXAMPLES, copy_out, materialize

BUILD_TOML = """[general]
name = "wr"
version = 1
edition = 6
license = "MIT"
backends = ["cpu"]

[torch]
src = ["torch-ext/binding.cpp"]

[kernel.a]
language = "cpp-cpu"
src = ["a/a.cpp"]
cxx-flags = ["-DA=1"]

[kernel.b]
language = "cpp-cpu"
src = ["b/b.cpp"]
"""


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return materialize(BUILD_TOML, tmp_path / "proj")


def run(runner: CliRunner, *args: str) -> Any:
    return runner.invoke(main, ["render", *args], catch_exceptions=False)


def state(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """(inode, mtime_ns, bytes) of every file and directory under the project."""
    out: dict[str, tuple[int, int, bytes]] = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        out[str(path.relative_to(root))] = (st.st_ino, st.st_mtime_ns, data)
    return out


def set_old_mtimes(root: Path) -> None:
    """Make every mtime old, so a rewrite within the same clock tick is still visible."""
    for path in root.rglob("*"):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000), follow_symlinks=False)


def edit_build(root: Path, old: str, new: str) -> None:
    text = (root / "build.toml").read_text()
    assert old in text
    (root / "build.toml").write_text(text.replace(old, new))


# ------------------------------------------------------------------- first render


def test_first_render_writes_the_tree_and_the_flake(runner: CliRunner, proj: Path) -> None:
    result = run(runner, str(proj))
    assert result.exit_code == 0, result.output
    rendered = render.render(plan.make(project.read(proj).build))
    for rel, data in rendered.tree.items():
        assert (proj / "nix" / rel).read_bytes() == data
    assert (proj / "flake.nix").read_bytes() == rendered.root["flake.nix"]
    assert f"nix/: {len(rendered.tree)} added" in result.output
    assert "flake.nix added" in result.output
    modes = {(p.stat().st_mode & 0o777) for p in (proj / "nix").rglob("*") if p.is_file()}
    assert modes == {0o644}
    assert not list(proj.glob(".nixgen-*"))


# ---------------------------------------------------------------------- re-render


def test_no_op_render_touches_nothing(runner: CliRunner, proj: Path) -> None:
    run(runner, str(proj))
    set_old_mtimes(proj)
    before = state(proj)
    result = run(runner, str(proj))
    assert result.exit_code == 0
    assert "up to date" in result.output
    assert state(proj) == before


def test_a_change_replaces_only_the_files_it_changes(runner: CliRunner, proj: Path) -> None:
    run(runner, str(proj))
    set_old_mtimes(proj)
    before = state(proj)
    edit_build(proj, '"-DA=1"', '"-DA=2"')
    result = run(runner, str(proj))
    assert "0 added, 1 changed, 0 removed" in result.output
    after = state(proj)
    changed = {
        rel
        for rel in before
        if rel in after and after[rel] != before[rel] and (proj / rel).is_file()
    }
    assert changed == {"build.toml", "nix/kernels/a.nix"}
    assert b'"-DA=2"' in (proj / "nix/kernels/a.nix").read_bytes()
    # Unchanged files are the very same inodes (hard links into the new tree).
    assert after["nix/kernels/b.nix"] == before["nix/kernels/b.nix"]
    assert after["nix/lib/compile.nix"] == before["nix/lib/compile.nix"]


def test_files_no_longer_generated_are_removed(runner: CliRunner, proj: Path) -> None:
    run(runner, str(proj))
    stale = proj / "nix" / "old-generated.nix"
    stale.write_text(f"# {MARKER} 0.0.1 from build.toml.\n{{ }}\n")
    text = (proj / "build.toml").read_text()
    (proj / "build.toml").write_text(text[: text.index("[kernel.b]")])
    result = run(runner, str(proj))
    assert "2 removed" in result.output, result.output
    assert not (proj / "nix/kernels/b.nix").exists()
    assert not stale.exists()
    assert (proj / "nix/kernels/a.nix").exists()


def test_hand_written_files_in_the_output_directory_are_kept(runner: CliRunner, proj: Path) -> None:
    run(runner, str(proj))
    mine = proj / "nix" / "overlays" / "mine.nix"
    mine.parent.mkdir()
    mine.write_text("final: prev: { }\n")
    link = proj / "nix" / "link-to-mine.nix"
    link.symlink_to("overlays/mine.nix")
    dir_link = proj / "nix" / "shared"
    (proj / "elsewhere").mkdir()
    (proj / "elsewhere" / "x.nix").write_text("1\n")
    dir_link.symlink_to("../elsewhere", target_is_directory=True)
    inode = mine.stat().st_ino
    edit_build(proj, '"-DA=1"', '"-DA=3"')  # forces a swap of the tree
    result = run(runner, str(proj))
    assert "1 changed" in result.output
    assert mine.read_text() == "final: prev: { }\n" and mine.stat().st_ino == inode
    assert link.is_symlink() and os.readlink(link) == "overlays/mine.nix"
    assert dir_link.is_symlink() and (dir_link / "x.nix").read_text() == "1\n"
    assert (proj / "elsewhere" / "x.nix").exists()


# ------------------------------------------------------------- hand-written in the way


def test_hand_written_file_in_the_way_is_refused_without_force(
    runner: CliRunner, proj: Path
) -> None:
    run(runner, str(proj))
    mine = proj / "nix" / "kernels" / "a.nix"
    mine.write_text("# my own derivation\n{ stdenv }: stdenv.mkDerivation { }\n")
    edit_build(proj, '"-DA=1"', '"-DA=4"')
    set_old_mtimes(proj)
    before = state(proj)
    result = runner.invoke(main, ["render", str(proj)])
    assert result.exit_code == 2
    assert "nix/kernels/a.nix" in result.output
    assert "--force" in result.output and "hand-written" in result.output
    assert state(proj) == before, "nothing may be written"

    result = run(runner, "--force", str(proj))
    assert result.exit_code == 0
    assert MARKER in mine.read_text() and '"-DA=4"' in mine.read_text()


def test_hand_written_flake_is_kept_with_a_warning_and_handed_over_by_force(
    runner: CliRunner, proj: Path
) -> None:
    flake = proj / "flake.nix"
    flake.write_text("{ outputs = _: { }; }\n")
    result = run(runner, str(proj))
    assert result.exit_code == 0
    assert "flake.nix: warning: hand-written" in result.output
    assert flake.read_text() == "{ outputs = _: { }; }\n"
    assert (proj / "nix" / "default.nix").exists()
    # Issue 12: --force hands the flake over to nixgen.
    assert run(runner, "--force", str(proj)).exit_code == 0
    assert flake.read_text().startswith("# @generated by nixgen")


def test_generated_flake_is_updated_and_absent_flake_is_written(
    runner: CliRunner, proj: Path
) -> None:
    run(runner, str(proj))
    flake = proj / "flake.nix"
    flake.write_text(flake.read_text().replace("kernels, built by nixgen", "old text"))
    result = run(runner, str(proj))
    assert "flake.nix changed" in result.output
    assert "old text" not in flake.read_text()
    flake.unlink()
    result = run(runner, str(proj))
    assert "flake.nix added" in result.output and flake.exists()


# ------------------------------------------------------------------------- --check


def test_check_is_zero_when_fresh_and_one_with_a_diff_when_stale(
    runner: CliRunner, proj: Path
) -> None:
    result = runner.invoke(main, ["render", "--check", str(proj)])
    assert result.exit_code == 1 and not (proj / "nix").exists()
    run(runner, str(proj))
    result = runner.invoke(main, ["render", "--check", str(proj)])
    assert result.exit_code == 0, result.output
    assert "up to date" in result.output

    set_old_mtimes(proj)
    edit_build(proj, '"-DA=1"', '"-DA=5"')
    before = state(proj)
    result = runner.invoke(main, ["render", "--check", str(proj)])
    assert result.exit_code == 1
    assert "--- a/nix/kernels/a.nix\n+++ b/nix/kernels/a.nix\n" in result.output
    assert '-  cxxFlags = [ "-DA=1" ];\n+  cxxFlags = [ "-DA=5" ];\n' in result.output
    assert "stale" in result.output and "nixgen render" in result.output
    assert state(proj) == before, "--check writes nothing"


def test_check_reports_removed_files(runner: CliRunner, proj: Path) -> None:
    run(runner, str(proj))
    text = (proj / "build.toml").read_text()
    (proj / "build.toml").write_text(text[: text.index("[kernel.b]")])
    result = runner.invoke(main, ["render", "--check", str(proj)])
    assert result.exit_code == 1
    assert "--- a/nix/kernels/b.nix\n+++ /dev/null\n" in result.output


# ----------------------------------------------------------------- permissions


def test_read_only_output_is_a_clear_error(
    runner: CliRunner, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests run as root, which may write anywhere: simulate a read-only directory."""
    run(runner, str(proj))
    edit_build(proj, '"-DA=1"', '"-DA=6"')
    set_old_mtimes(proj)
    before = state(proj)
    real_access = os.access
    read_only = {str(proj / "nix")}

    def access(path: Any, mode: int, **kw: Any) -> bool:
        if str(path) in read_only and mode & os.W_OK:
            return False
        return real_access(path, mode, **kw)

    monkeypatch.setattr(os, "access", access)
    result = runner.invoke(main, ["render", str(proj)])
    assert result.exit_code == 2
    assert "nix/" in result.output and "read-only" in result.output
    assert "Traceback" not in result.output
    assert state(proj) == before


def test_permission_error_while_writing_is_a_clear_error(
    runner: CliRunner, proj: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_mkdir = os.mkdir

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if os.fspath(path).startswith(".nixgen-staging-"):
            raise PermissionError(errno.EACCES, "Permission denied", str(proj / ".nixgen-x"))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    result = runner.invoke(main, ["render", str(proj)])
    assert result.exit_code == 2
    assert "permission denied" in result.output.lower()
    assert not (proj / "nix").exists()


_AS_NOBODY = """
import sys
sys.path.insert(0, sys.argv[1])
from nixgen.cmdline.cli import main
main(["render", sys.argv[2]])
"""


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv"
)
@pytest.mark.slow
def test_read_only_project_as_an_ordinary_user(tmp_path: Path) -> None:
    """The real thing: a user without write permission gets a message, not a traceback."""
    python = shutil.which("python3", path="/usr/bin")
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    if python is None or not (site / "site-packages").is_dir():
        pytest.skip("no system python to run as another user")
    base = Path(tempfile.mkdtemp(prefix="nixgen-ro-"))
    try:
        base.chmod(0o755)
        root = materialize(BUILD_TOML, base / "proj")
        for path in [root, *root.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        env = {
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": str(site / "site-packages"),
            "HOME": str(base),
        }
        done = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                python,
                "-c",
                _AS_NOBODY,
                str(Path(__file__).resolve().parent.parent),
                str(root),
            ],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if "No module named" in done.stderr:
            pytest.skip(f"the venv is not importable as another user: {done.stderr[-200:]}")
        assert done.returncode == 2, done.stderr
        message = done.stderr.lower()
        assert "not writable" in message or "read-only" in message, done.stderr
        assert "Traceback" not in done.stderr
        assert not (root / "nix").exists()
    finally:
        shutil.rmtree(base)


# ---------------------------------------------------------------- interrupted swaps


def _rendered(root: Path) -> render.Rendered:
    return render.render(plan.make(project.read(root).build))


def test_recover_restores_a_tree_moved_aside_by_an_interrupted_swap(proj: Path) -> None:
    """The two-rename fallback moved `nix` aside and was killed before the second rename."""
    write.write(proj, _rendered(proj))
    (proj / "nix").rename(proj / ".nixgen-old-nix")
    write.recover(proj, "nix")
    assert (proj / "nix" / "default.nix").exists()
    assert not (proj / ".nixgen-old-nix").exists()


def test_recover_drops_the_old_tree_and_leftover_staging(proj: Path) -> None:
    write.write(proj, _rendered(proj))
    old = proj / ".nixgen-old-nix"
    shutil.copytree(proj / "nix", old)
    (old / "default.nix").write_text("stale")
    staging = proj / ".nixgen-staging-abc"
    (staging / "kernels").mkdir(parents=True)
    write.recover(proj, "nix")
    assert not old.exists() and not staging.exists()
    assert (proj / "nix" / "default.nix").read_text() != "stale"


def test_render_after_an_interrupted_swap_finishes_cleanly(runner: CliRunner, proj: Path) -> None:
    run(runner, str(proj))
    (proj / "nix").rename(proj / ".nixgen-old-nix")
    (proj / ".nixgen-staging-123").mkdir()
    result = run(runner, str(proj))
    assert result.exit_code == 0
    assert "up to date" in result.output
    assert sorted(p.name for p in proj.iterdir() if p.name.startswith(".nixgen")) == []


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_a_failed_swap_leaves_the_old_tree_whole(
    proj: Path, monkeypatch: pytest.MonkeyPatch, failure: type[BaseException]
) -> None:
    write.write(proj, _rendered(proj))
    before = state(proj)
    edit_build(proj, '"-DA=1"', '"-DA=7"')
    before["build.toml"] = state(proj)["build.toml"]

    def broken(self: writer.Tree) -> None:
        raise failure(errno.EIO, "I/O error") if failure is OSError else failure()

    monkeypatch.setattr(writer.Tree, "_swap", broken)
    with pytest.raises((KeyboardInterrupt, OutputError)):
        write.write(proj, _rendered(proj))
    assert state(proj) == before
    assert not list(proj.glob(".nixgen-*"))


def test_renders_of_the_examples_are_fresh_after_rendering(tmp_path: Path) -> None:
    runner = CliRunner()
    for example in sorted(p for p in EXAMPLES.iterdir() if (p / "build.toml").exists()):
        root = tmp_path / example.name
        copy_out(example, root, "nix", "flake.nix")
        assert runner.invoke(main, ["render", str(root)]).exit_code == 0
        check = runner.invoke(main, ["render", "--check", str(root)])
        assert check.exit_code == 0, (example.name, check.output)


def test_a_directory_whose_generated_files_all_go_goes_too(tmp_path: Path) -> None:
    """Rendering without the vendored library (`--library input:URL`) leaves no empty
    `nix/lib/…` behind, while a hand-written directory of the tree, empty or not, stays."""
    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix")
    runner = CliRunner()
    assert runner.invoke(main, ["render", str(root)]).exit_code == 0
    assert (root / "nix" / "lib" / "support").is_dir()
    (root / "nix" / "empty").mkdir()
    (root / "nix" / "lib" / "mine").mkdir()
    (root / "nix" / "lib" / "notes.txt").write_text("mine\n")
    done = runner.invoke(main, ["render", "--library", "input:github:o/nixgen", str(root)])
    assert done.exit_code == 0, done.output
    left = sorted(str(p.relative_to(root / "nix")) for p in (root / "nix").rglob("*"))
    assert "lib/support" not in left and "lib/data" not in left
    assert {"empty", "lib", "lib/mine", "lib/notes.txt"} <= set(left)
