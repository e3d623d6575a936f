"""Hand-written data is never lost: nixgen run as an ordinary user never moves or deletes a
directory it cannot list, `init --force` and `migrate` never write through a planted link, a
hand-written file that mentions the generated-file marker is kept, and an edit saved while
`migrate` writes survives.

Each case runs the real ``python -m nixgen`` in a subprocess with a timeout
(tests/hostile.py), or, where a moment inside a write must be hit exactly, a small driver
script that patches one function of nixgen in the child.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .hostile import (
    BUILD_TOML,
    NOBODY,
    SECRET,
    clean,
    driver,
    env,
    nixgen,
    outside_dir,
    project,
    snapshot,
)

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


# ---------------------------------------------------------------- as an ordinary user

can_drop = os.geteuid() == 0 and shutil.which("setpriv") is not None
needs_user = pytest.mark.skipif(
    not can_drop, reason="needs root and setpriv to run nixgen as an ordinary user"
)


@contextlib.contextmanager
def user_tree() -> Iterator[Path]:
    """A directory an ordinary user (nobody) owns, outside pytest's private tmp_path."""
    base = Path(tempfile.mkdtemp(prefix="nixgen-user-", dir="/tmp"))
    try:
        os.chmod(base, 0o755)
        os.chown(base, NOBODY, NOBODY)
        yield base
    finally:
        for dirpath, dirnames, _ in os.walk(base):
            for name in dirnames:
                with contextlib.suppress(OSError):
                    os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(base, ignore_errors=True)


def as_user(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [
            *("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"),
            *(sys.executable, "-m", "nixgen", *args),
        ],
        cwd=cwd,
        capture_output=True,
        timeout=60,
        env=env(XDG_CACHE_HOME=str(cwd / ".cache"), HOME=str(cwd)),
    )
    clean(done)
    return done


def chown_tree(top: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*dirnames, *filenames]:
            os.lchown(os.path.join(dirpath, name), NOBODY, NOBODY)
    os.lchown(top, NOBODY, NOBODY)


@needs_user
def test_an_unlistable_hand_written_directory_is_never_moved_or_deleted() -> None:
    with user_tree() as base:
        root = project(base)
        chown_tree(base)
        assert as_user(["render", "."], cwd=root).returncode == 0
        private = root / "nix" / "private"
        private.mkdir()
        (private / "key.txt").write_bytes(SECRET)
        chown_tree(private)
        (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
        private.chmod(0)
        done = as_user(["render", "."], cwd=root)
        assert done.returncode == 2, done.stderr
        assert b"nix/private" in done.stderr and b"cannot be listed" in done.stderr
        private.chmod(0o755)
        assert (private / "key.txt").read_bytes() == SECRET
        assert as_user(["render", "."], cwd=root).returncode == 0
        assert (private / "key.txt").read_bytes() == SECRET


@needs_user
def test_a_source_in_an_unsearchable_directory_is_permission_denied() -> None:
    with user_tree() as base:
        root = project(base)
        chown_tree(base)
        (root / "relu").chmod(0o600)
        done = as_user(["validate", "."], cwd=root)
        assert done.returncode == 2
        assert b"permission denied" in done.stderr
        assert b"does not exist" not in done.stderr


# ----------------------------------------------------- init, migrate: no write via link


def test_init_force_never_writes_through_a_planted_temporary_link(tmp_path: Path) -> None:
    other = outside_dir(tmp_path)
    before = snapshot(other)
    target = tmp_path / "new"
    target.mkdir()
    (target / ".build.toml.nixgen-init").symlink_to(other / "precious.txt")
    done = nixgen("init", "relu", "--dir", str(target), "--force", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert snapshot(other) == before
    assert (target / "build.toml").is_file() and not (target / "build.toml").is_symlink()


def test_init_force_refuses_a_symlinked_source_directory(tmp_path: Path) -> None:
    other = outside_dir(tmp_path)
    before = snapshot(other)
    target = tmp_path / "new"
    target.mkdir()
    (target / "relu_cpu").symlink_to(other)
    done = nixgen("init", "relu", "--dir", str(target), "--force", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "relu_cpu" in done.stderr and "symbolic link" in done.stderr
    assert snapshot(other) == before


def test_migrate_never_rewrites_a_build_toml_linked_from_outside(tmp_path: Path) -> None:
    from .projects import V4

    root = project(tmp_path)
    outside = tmp_path / "shared.toml"
    outside.write_text(V4)
    (root / "build.toml").unlink()
    (root / "build.toml").symlink_to(outside)
    done = nixgen("migrate", ".", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "symbolic link" in done.stderr
    assert outside.read_text() == V4


def test_a_hand_written_file_that_mentions_the_marker_is_kept(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    notes = root / "nix" / "NOTES.md"
    text = "# Notes\n\nThe files here are @generated by nixgen; this one is mine.\n"
    notes.write_text(text)
    (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
    assert nixgen("render", ".", cwd=root).returncode == 0
    assert notes.read_text() == text
    assert nixgen("render", ".", "--check", cwd=root).returncode == 0


def test_an_edit_saved_while_migrate_writes_is_not_lost(tmp_path: Path) -> None:
    """The editor saves (by renaming a new file over build.toml, as editors do) just as
    migrate has written its temporary file: the edit survives, migrate exits 2."""
    from .projects import V4

    root = project(tmp_path, V4)
    edited = V4 + "# saved by the editor\n"
    done = driver(
        f"""
        import os, sys
        import nixgen.core.writer as w
        real = w._fsync_file
        def save(fd):
            real(fd)
            with open("build.toml.swp", "w") as f:
                f.write({edited!r})
            os.replace("build.toml.swp", "build.toml")
        w._fsync_file = save
        sys.argv = ["nixgen", "migrate", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    text = clean(done)
    assert done.returncode == 2, text
    assert "changed while it was migrated" in text
    assert (root / "build.toml").read_text() == edited
    assert not [p for p in root.iterdir() if ".nixgen-tmp-" in p.name]
