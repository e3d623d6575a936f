"""Hostile project trees: nixgen never reads or writes outside the project,
never hangs on a FIFO or a device, and never damages hand-written content.

Each test builds a small valid project, plants something hostile in it (a link in the
output tree, a FIFO where the renderer reads, a link named like a swap leftover…) and
runs the real ``python -m nixgen`` in a subprocess with a timeout, so a hang fails the
test instead of the suite. Every run must end without a traceback, and what lies outside
the project must be byte-for-byte what it was.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from .hostile import BUILD_TOML, SECRET, nixgen, outside_dir, project, snapshot

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nixgen's cache (compiled templates) is a private one (the subprocesses inherit it)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


# ------------------------------------------------------- A: writes and reads outside


def test_a_link_in_the_output_tree_is_never_written_through(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    other = outside_dir(tmp_path)
    before = snapshot(other)
    lib = root / "nix" / "lib"
    for path in sorted(lib.rglob("*"), reverse=True):
        path.unlink() if not path.is_dir() else path.rmdir()
    lib.rmdir()
    lib.symlink_to(other)
    done = nixgen("render", ".", cwd=root)
    assert done.returncode == 2, done.stderr
    assert "nix/lib is a symbolic link" in done.stderr
    assert snapshot(other) == before
    # --force replaces the link by a real directory; still nothing written elsewhere.
    assert nixgen("render", ".", "--force", cwd=root).returncode == 0
    assert snapshot(other) == before
    assert not lib.is_symlink() and (lib / "compile.nix").is_file()


def test_check_never_prints_a_file_outside_the_project(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    target = root / "nix" / "default.nix"
    target.unlink()
    target.symlink_to(secret)
    done = nixgen("render", ".", "--check", cwd=root)
    assert done.returncode == 1
    assert "TOP-SECRET" not in done.stdout + done.stderr
    assert "nix/default.nix is a symbolic link" in done.stdout


def test_a_link_named_like_a_swap_leftover_is_not_renamed_into_place(tmp_path: Path) -> None:
    root = project(tmp_path)
    other = outside_dir(tmp_path)
    before = snapshot(other)
    (root / ".nixgen-old-nix").symlink_to(other)
    done = nixgen("render", ".", cwd=root)
    assert done.returncode == 0, done.stderr
    assert not (root / "nix").is_symlink() and (root / "nix" / "default.nix").is_file()
    assert snapshot(other) == before
    assert (root / ".nixgen-old-nix").is_symlink()  # not ours: left alone


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_the_python_package_may_not_be_a_link(tmp_path: Path, where: str) -> None:
    root = project(tmp_path)
    package = root / "torch-ext" / "relu"
    real = tmp_path / "pkg" if where == "outside" else root / "pkg"
    package.rename(real)
    package.symlink_to(real)
    done = nixgen("validate", ".", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the Python package `torch-ext/relu`" in done.stderr
    assert (
        "resolves outside the project" if where == "outside" else "symbolic link"
    ) in done.stderr


def test_a_render_refuses_a_linked_output_tree_it_rendered_before(tmp_path: Path) -> None:
    """An earlier render must not make nixgen accept a linked output tree."""
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    copy = tmp_path / "copy-of-lib"
    (root / "nix" / "lib").rename(copy)
    (root / "nix" / "lib").symlink_to(copy)  # identical content, through a link
    done = nixgen("render", ".", cwd=root)
    assert "up to date" not in done.stderr
    assert done.returncode == 2


def test_hand_written_directories_keep_their_mode_and_existence(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    mine = root / "nix" / "mine"
    (mine / "empty").mkdir(parents=True)
    (mine / "notes.txt").write_text("keep\n")
    os.chmod(mine / "notes.txt", 0o600)
    os.chmod(mine, 0o700)
    os.chmod(root / "nix" / "kernels", 0o750)
    (root / "nix" / "kernels" / "empty-too").mkdir()
    before = snapshot(mine)
    # A change, so the tree is swapped.
    (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
    done = nixgen("render", ".", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "changed" in done.stderr
    assert snapshot(mine) == before
    assert stat.S_IMODE(os.lstat(mine).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(root / "nix" / "kernels").st_mode) == 0o750
    assert (root / "nix" / "kernels" / "empty-too").is_dir()


# ---------------------------------------------------------- B: hangs and unbounded reads


@pytest.mark.parametrize("where", ["nix/pipe", "nix/kernels/relu.nix", "flake.nix"])
def test_a_fifo_where_the_renderer_reads_never_hangs(tmp_path: Path, where: str) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    (root / where).unlink(missing_ok=True)
    os.mkfifo(root / where)
    for args in (["render", ".", "--check"], ["render", "."], ["render", "."]):
        done = nixgen(*args, cwd=root, timeout=30)
        assert done.returncode in (0, 1, 2), done.stderr
    assert stat.S_ISFIFO(os.lstat(root / where).st_mode)


def test_a_generated_file_linked_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    (root / "nix" / "default.nix").unlink()
    (root / "nix" / "default.nix").symlink_to("/dev/zero")
    done = nixgen("render", ".", "--check", cwd=root, timeout=30)
    assert done.returncode == 1
    done = nixgen("render", ".", cwd=root, timeout=30)
    assert done.returncode == 2
    assert "nix/default.nix is a symbolic link" in done.stderr


def test_a_very_deep_hand_written_directory(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    deep = root / "nix" / "deep"
    deep.mkdir()
    try:
        fd = os.open(deep, os.O_RDONLY)
        try:
            for _ in range(1500):  # deeper than Python's recursion limit
                os.mkdir("d", dir_fd=fd)
                next_fd = os.open("d", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = next_fd
            with open(os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
                f.write("leaf\n")
        finally:
            os.close(fd)
        (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
        done = nixgen("render", ".", cwd=root, timeout=120)
        assert done.returncode == 0, done.stderr
        assert nixgen("render", ".", "--check", cwd=root, timeout=120).returncode == 0
        leaf = os.path.join("nix", "deep", *(["d"] * 1500), "leaf.txt")
        fd = os.open(root, os.O_RDONLY)
        try:
            assert os.stat(leaf, dir_fd=fd).st_size == 5
        finally:
            os.close(fd)
    finally:
        # pytest's removal of old temporary directories recurses: a tree this deep left
        # behind (by a failing or interrupted run) is a RecursionError at a later exit.
        subprocess.run(["rm", "-rf", str(deep)], check=True)


# --------------------------------- E and H: sources as Nix will see them, links named right


@pytest.mark.parametrize("link", ["relu/relu.cpp", "relu"])
def test_sources_through_an_in_project_link_are_refused(tmp_path: Path, link: str) -> None:
    """`lib.fileset` copies a link as a link: the build would get a dangling link (or
    nothing), so `validate` refuses what it cannot build."""
    root = project(tmp_path)
    real = root / "real"
    (root / link).rename(real)
    (root / link).symlink_to(
        real.relative_to((root / link).parent) if link == "relu" else "../real"
    )
    done = nixgen("validate", ".", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "build.toml:14:8: error: kernel.relu.src[0]: `relu/relu.cpp` is reached through "
        f"the symbolic link `{link}`" in done.stderr
    )
    assert "lib.fileset" in done.stderr


def test_a_symlink_loop_is_reported_as_a_loop(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "relu" / "relu.cpp").unlink()
    (root / "relu" / "relu.cpp").symlink_to("relu.cpp")
    done = nixgen("validate", ".", cwd=root)
    assert done.returncode == 2
    assert "`relu/relu.cpp` is a symbolic link loop" in done.stderr
    assert "does not exist" not in done.stderr


# ------------------------------------------ D: an edit during a render, rendered by the next


def test_build_toml_edited_during_a_render_is_rendered_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nixgen.app import pipeline
    from nixgen.writing import write

    root = project(tmp_path)
    real_write = write.write

    def write_then_edit(*args: object, **kwargs: object) -> object:
        result = real_write(*args, **kwargs)  # type: ignore[arg-type]
        (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
        return result

    monkeypatch.setattr(write, "write", write_then_edit)
    assert pipeline.render_project(root) == 0
    monkeypatch.undo()
    done = nixgen("render", ".", cwd=root)
    assert "up to date" not in done.stderr and "changed" in done.stderr


def test_nix_replaced_by_a_link_to_an_identical_copy_is_not_up_to_date(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    copy = root / "nix-copy"
    (root / "nix").rename(copy)
    (root / "nix").symlink_to("nix-copy")
    done = nixgen("render", ".", cwd=root)
    assert "up to date" not in done.stderr
    assert done.returncode == 2
    assert "symbolic link" in done.stderr
