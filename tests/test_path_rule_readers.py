"""The path rule has one home: `migrate.write`, `gitfiles.unseen_files`,
`load.read_text` and `validate`'s resolver reach project files only through
`nixgen.core.paths`. One hostile case per rerouted reader: a link or a FIFO where it reads.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.building import gitfiles
from nixgen.checking import validate
from nixgen.cmdline.cli import main
from nixgen.core import paths
from nixgen.core.errors import ProblemError
from nixgen.reading import load

from .conftest import copy_out
from .test_migrate import V4

REPO = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def finishes_within(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging the suite) when the body blocks, as an open FIFO would."""

    def expired(*_: object) -> None:
        raise AssertionError(f"blocked for more than {seconds} s (a FIFO was opened?)")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


# --------------------------------------------------------------------- load.read_text


def test_a_build_toml_linked_to_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "build.toml").symlink_to("pipe")
    with finishes_within(10), pytest.raises(ProblemError) as raised:
        load.read_text(tmp_path / "build.toml", "build.toml")
    (problem,) = raised.value.errors
    assert problem.render() == (
        "build.toml: error: is not a regular file (a FIFO, socket or device); expected a "
        "build.toml file"
    )


def test_a_build_toml_linked_to_a_file_of_the_project_is_read_through_the_link(
    tmp_path: Path,
) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "build.toml").write_text("[general]\n")
    (tmp_path / "build.toml").symlink_to("configs/build.toml")
    assert load.read_text(tmp_path / "build.toml", "build.toml") == "[general]\n"


# ------------------------------------------------------------------- migrate.write


def test_a_build_toml_linked_through_the_project_to_outside_is_not_migrated(
    tmp_path: Path,
) -> None:
    """A chain of links (build.toml → a link inside the project → a file outside) is
    resolved to its end before `paths.inside` judges it; a sibling directory whose name
    starts with the project's is outside too."""
    project = tmp_path / "relu"
    outside = tmp_path / "relu-shared"
    project.mkdir()
    outside.mkdir()
    (outside / "build.toml").write_text(V4)
    (project / "hop.toml").symlink_to(outside / "build.toml")
    (project / "build.toml").symlink_to("hop.toml")

    result = CliRunner().invoke(main, ["migrate", str(project)])

    assert result.exit_code == 2, result.output
    assert f"is a symbolic link to `{outside / 'build.toml'}`, outside the project" in (
        result.output
    )
    assert (outside / "build.toml").read_text() == V4
    assert (project / "build.toml").is_symlink() and (project / "hop.toml").is_symlink()


# ------------------------------------------------------------- gitfiles.unseen_files


@pytest.mark.slow
def test_an_untracked_link_in_the_package_is_a_file_the_flake_would_not_see(
    tmp_path: Path,
) -> None:
    """`paths.walk` lists a link to a directory as the file git tracks (or not), where
    `os.walk` listed it as a directory and never looked at it again."""
    package = tmp_path / "torch-ext" / "relu"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data.py").write_text("")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "torch-ext", "shared")
    (package / "data").symlink_to("../../shared")

    found = gitfiles.unseen_files(tmp_path, ["torch-ext/relu"])

    assert found is not None
    assert found.untracked == ["torch-ext/relu/data"]


# ----------------------------------------------------------------- validate's resolver


def test_a_source_swapped_for_a_fifo_is_not_opened_by_the_include_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The include scan reads a listed source with `paths.head`: when the source becomes a
    FIFO after the resolver looked at it, the scan reads nothing instead of blocking."""
    from nixgen.checking import project

    (tmp_path / "relu").mkdir()
    os.mkfifo(tmp_path / "relu" / "relu.cpp")
    text = (
        '[general]\nname = "relu"\nversion = 1\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cpu"]\n\n[torch-noarch]\n\n[kernel.relu]\nlanguage = "cpp-cpu"\n'
        'src = ["relu/relu.cpp"]\n'
    )
    document = load.parse(text, tmp_path / "build.toml", "build.toml")
    _, build, _ = project.structure(document)
    regular = os.stat(REPO / "README.md")
    real_resolve = paths.Resolver.resolve

    def as_if_regular(self: paths.Resolver, rel: str) -> tuple[str, os.stat_result | None]:
        real, info = real_resolve(self, rel)
        return real, (regular if rel == "relu/relu.cpp" else info)

    monkeypatch.setattr(paths.Resolver, "resolve", as_if_regular)
    resolver = paths.Resolver(os.path.realpath(tmp_path))
    with finishes_within(10):
        assert validate.unlisted_includes(build, resolver) == []


def test_an_include_scan_reads_a_source_through_a_link_inside_the_project(
    tmp_path: Path,
) -> None:
    (tmp_path / "relu").mkdir()
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "relu.cpp").write_text('#include "relu.h"\n')
    (tmp_path / "relu" / "relu.h").write_text("")
    (tmp_path / "relu" / "relu.cpp").symlink_to("../common/relu.cpp")
    from nixgen.checking import project

    text = (
        '[general]\nname = "relu"\nversion = 1\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cpu"]\n\n[torch-noarch]\n\n[kernel.relu]\nlanguage = "cpp-cpu"\n'
        'src = ["relu/relu.cpp"]\n'
    )
    document = load.parse(text, tmp_path / "build.toml", "build.toml")
    _, build, _ = project.structure(document)
    found = validate.unlisted_includes(build, paths.Resolver(os.path.realpath(tmp_path)))
    assert [p.message for p in found] == [
        'relu/relu.cpp:1: `#include "relu.h"` names `relu/relu.h`, which no `src` list names, '
        "so the build will not see it"
    ]


# ------------------------------------------------------------------- nixgen compdb


def test_compdb_writes_through_no_link_on_the_way(tmp_path: Path) -> None:
    """`--output build/compile_commands.json` where `build` is a link out of the project:
    refused before anything runs (only the file itself was looked at before)."""

    from .conftest import EXAMPLES

    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root)
    (tmp_path / "elsewhere").mkdir()
    (root / "build").symlink_to(tmp_path / "elsewhere")
    result = CliRunner().invoke(
        main, ["compdb", str(root), "-o", "build/compile_commands.json", "--dry-run"]
    )
    assert result.exit_code == 2, result.output
    assert "goes through `build`, which is a symbolic link" in result.stderr
    assert list((tmp_path / "elsewhere").iterdir()) == []


# ------------------------------------------------------------------------ one home
# The readers above walk and open project paths only through nixgen.core.paths: each has a
# hostile case in this file (a FIFO, a link out, an untracked link), and ruff's banned-api
# refuses `os.walk`, `os.path.islink` and `glob` outside that module (pyproject.toml;
# tests/test_lint_rules.py proves it fires). A search of the readers' source for
# `is_symlink()` or `rglob(` used to stand here: it froze spelling, not behaviour.
