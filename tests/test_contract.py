"""The data contract between nixgen and its Nix library: `project.nix` carries the format
it was rendered for (`data/format.json`), and the library checks it before reading anything
else, so a project rendered by another nixgen fails with one line saying to render again
instead of a missing attribute deep in the library."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nixgen import __version__
from nixgen.rendering import render

from .conftest import EXAMPLES
from .nixtools import nix_env, nix_eval_json
from .test_render_eval import render_into

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(
        shutil.which("nix-instantiate") is None, reason="nix-instantiate is not installed"
    ),
]

VARIANTS = "map (v: v.name) ((import ./nix).variants null)"


def _rendered(tmp_path: Path) -> Path:
    root = tmp_path / "relu-cpu"
    shutil.copytree(EXAMPLES / "relu-cpu", root, ignore=shutil.ignore_patterns("nix", "result*"))
    render_into(root)
    return root


def _fails(root: Path) -> str:
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--expr", VARIANTS],
        cwd=root,
        env=nix_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    return done.stderr


def test_a_rendered_project_carries_the_librarys_format(tmp_path: Path) -> None:
    root = _rendered(tmp_path)
    text = (root / "nix" / "project.nix").read_text()
    assert f"formatVersion = {render.FORMAT};" in text
    assert f'nixgenVersion = "{__version__}";' in text
    assert nix_eval_json(VARIANTS, cwd=root)


def test_a_project_of_another_format_fails_saying_to_render_again(tmp_path: Path) -> None:
    root = _rendered(tmp_path)
    data = root / "nix" / "project.nix"
    text = data.read_text()
    data.write_text(
        text.replace(
            f"formatVersion = {render.FORMAT};", f"formatVersion = {render.FORMAT + 1};"
        ).replace(f'nixgenVersion = "{__version__}";', 'nixgenVersion = "9.9.9";')
    )
    assert (
        "error: nixgen: this project's nix/project.nix was rendered by nixgen 9.9.9 for library "
        f"format {render.FORMAT + 1}; this library reads format {render.FORMAT}: run "
        "`nixgen render`"
    ) in _fails(root)


def test_an_old_project_nix_with_a_new_library_fails_saying_to_render_again(
    tmp_path: Path,
) -> None:
    """A project.nix written before the format existed (no `formatVersion`), read by this
    library, as a flake-input library (`lib.projectOutputs`) would read it."""
    root = _rendered(tmp_path)
    data = root / "nix" / "project.nix"
    old = re.sub(r"\n *(formatVersion|nixgenVersion) = [^;]*;", "", data.read_text())
    assert "formatVersion" not in old
    data.write_text(old)
    assert (
        "this project's nix/project.nix was rendered by an older nixgen with no format "
        f"version; this library reads format {render.FORMAT}: run `nixgen render`"
    ) in _fails(root)
