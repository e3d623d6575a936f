"""Resources and encodings: a full disk under the cache directory, a 300-byte path
component, a path longer than PATH_MAX, an integer of thousands of digits, paths that are not
UTF-8 or not ASCII, a Latin-1 terminal: each is a located message (or no error), never an
"internal error"; what nixgen accepts it can render again.

Each case runs the real ``python -m nixgen`` in a subprocess with a timeout (tests/hostile.py).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .hostile import (
    BUILD_TOML,
    REPO,
    can_mount,
    clean,
    driver,
    env,
    nixgen,
    project,
    small_tmpfs,
)

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


# ------------------------------------------------------------------ resources, limits


@pytest.mark.skipif(not can_mount, reason="needs root to mount a small tmpfs")
def test_a_full_disk_under_the_cache_directory_is_no_error(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "cache") as cache:
        with contextlib.suppress(OSError), open(cache / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        root = project(tmp_path)
        for args, cwd in ((["render", "."], root), (["init", "fresh"], tmp_path)):
            done = subprocess.run(
                [sys.executable, "-m", "nixgen", *args],
                cwd=cwd,
                capture_output=True,
                timeout=60,
                env=env(XDG_CACHE_HOME=str(cache)),
            )
            clean(done)
            assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("where", ["project", "out", "dir"])
def test_a_300_byte_path_component_is_a_clear_error(tmp_path: Path, where: str) -> None:
    root = project(tmp_path)
    long = "x" * 300
    args = {
        "project": ["render", long],
        "out": ["render", ".", "--out", long],
        "dir": ["init", "relu", "--dir", long],
    }[where]
    done = nixgen(*args, cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "too long" in done.stderr


def test_a_project_path_longer_than_path_max_is_said_so(tmp_path: Path) -> None:
    """20 components of 250 bytes (5 KB, over PATH_MAX): made by `chdir` one at a time."""
    os.chdir(tmp_path)
    try:
        for _ in range(20):
            os.mkdir("d" * 250)
            os.chdir("d" * 250)
        for rel in ("torch-ext/torch_binding.cpp", "torch-ext/relu/__init__.py", "relu/relu.cpp"):
            os.makedirs(os.path.dirname(rel), exist_ok=True)
            with open(rel, "w") as handle:
                handle.write("// x\n")
        with open("build.toml", "w") as handle:
            handle.write(BUILD_TOML)
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", "validate", "."],
            capture_output=True,
            timeout=60,
            env=env(),
        )
    finally:
        os.chdir(REPO)
    text = clean(done)
    assert "does not exist" not in text
    assert done.returncode in (0, 2)
    if done.returncode == 2:
        assert "too long" in text


def test_an_integer_of_thousands_of_digits_is_a_located_toml_error(tmp_path: Path) -> None:
    root = project(tmp_path, BUILD_TOML.replace("version = 1", "version = " + "9" * 5000))
    done = nixgen("validate", ".", cwd=root)
    assert done.returncode == 2
    assert "build.toml:3:" in done.stderr and "digits" in done.stderr


def test_what_nixgen_accepts_it_can_re_render(tmp_path: Path) -> None:
    """The read limit on output files never refuses a file nixgen itself wrote."""
    root = project(tmp_path)
    done = driver(
        """
        import sys
        import nixgen.core.paths as p
        # As if the 16 MiB read limit were 2000 bytes: generated files here are larger.
        p.MAX_READ = 2000
        p.read_under.__kwdefaults__ = {"limit": 2000}
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr
    (root / "build.toml").write_text(BUILD_TOML.replace("version = 1", "version = 2"))
    done = driver(
        """
        import sys
        import nixgen.core.paths as p
        p.MAX_READ = 2000
        p.read_under.__kwdefaults__ = {"limit": 2000}
        sys.argv = ["nixgen", "render", "."]
        import nixgen.cmdline.entry
        nixgen.cmdline.entry.main()
        """,
        cwd=root,
    )
    assert done.returncode == 0, done.stderr


def test_a_project_path_that_is_not_utf8(tmp_path: Path) -> None:
    base = os.fsencode(tmp_path) + b"/caf\xe9"
    os.mkdir(base)
    root = project(Path(os.fsdecode(base)), name="proj\xff")
    for args in (["render", "."], ["render", "."], ["validate", "."], ["render", ".", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            cwd=root,
            capture_output=True,
            timeout=60,
            env=env(),
        )
        clean(done)
        assert done.returncode == 0, done.stderr


def test_a_non_ascii_project_path_under_an_ascii_file_system_encoding(tmp_path: Path) -> None:
    root = project(tmp_path, name="caf\u00e9-\u2713")
    ascii_locale = env(LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    for args in (["render", "."], ["render", "."], ["validate", "."], ["render", ".", "--check"]):
        done = subprocess.run(
            [sys.executable, "-m", "nixgen", *args],
            cwd=root,
            capture_output=True,
            timeout=60,
            env=ascii_locale,
        )
        clean(done)
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(root), "--check"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        env=ascii_locale,
    )
    clean(done)
    assert done.returncode == 0, done.stderr


def test_a_latin1_terminal(tmp_path: Path) -> None:
    from .projects import V4

    root = project(tmp_path, V4.replace("[general]", "[general]\n# \u2713 \u00e9t\u00e9"))
    latin1 = env(PYTHONIOENCODING="latin-1")
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "migrate", ".", "--diff"],
        cwd=root,
        capture_output=True,
        timeout=60,
        env=latin1,
    )
    clean(done)
    assert done.returncode == 0, done.stderr
    assert "\u2713".encode() in done.stdout  # the diff is the file's own bytes (UTF-8)
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "watch", ".", "--max-renders", "1"],
        cwd=project(tmp_path, name="\u2713proj"),
        capture_output=True,
        timeout=60,
        env=latin1,
    )
    clean(done)
    assert done.returncode == 0, done.stderr
