"""The rows of the round-4 review's §3 table ("rules with two homes") answered here: each rule
keeps one home, and a test fails when a second one comes back (or evaluates both sides).

* row 11, the default output directory: `nixgen.core.paths.DEFAULT_OUT`, read by the CLI's
  help texts, nixgen.toml's settings, the pipeline and the renderer;
* row 12, the `pyext` default (`model.DEFAULT_PYEXT`) and GitHub's job limit
  (`matrix.GITHUB_MAX_JOBS`), each read by `render` and `nixgen matrix`;
* the exit status of "not the user's input" failures is one name, `EXIT_FAILURE`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline import config
from nixgen.cmdline.cli import main
from nixgen.core import errors, paths
from nixgen.planning import matrix
from nixgen.reading import model
from nixgen.rendering import render

REPO = Path(__file__).resolve().parent.parent


def _package_sources() -> dict[str, str]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", "nixgen"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {
        rel: (REPO / rel).read_text()
        for rel in listed.split("\0")
        if rel.endswith(".py") and (REPO / rel).is_file()
    }


def _written(pattern: str) -> list[str]:
    found = re.compile(pattern)
    return sorted(rel for rel, text in _package_sources().items() if found.search(text))


def test_the_default_output_directory_has_one_home() -> None:
    assert render.DEFAULT_OUT is paths.DEFAULT_OUT
    assert config.DEFAULT_OUT is paths.DEFAULT_OUT
    # No module spells the default again: not as an argument default, not in a help text.
    assert _written(r'out(?:_dir)?: str = "nix"') == []
    assert _written(r"else nix\b") == []
    assert _written(r'DEFAULT_OUT = "') == ["nixgen/core/paths.py"]


@pytest.mark.parametrize("verb", ["render", "watch", "build", "shell"])
def test_every_verb_names_the_one_default_output_directory(verb: str) -> None:
    shown = CliRunner().invoke(main, [verb, "--help"], terminal_width=400)
    assert shown.exit_code == 0, shown.output
    assert f"`out`, else {paths.DEFAULT_OUT})" in " ".join(shown.output.split())


def test_the_pyext_default_has_one_home() -> None:
    assert model.Torch(src=["a.cpp"]).pyext == list(model.DEFAULT_PYEXT)
    assert _written(r'\["py", "pyi"\]') == []


def test_githubs_job_limit_has_one_home() -> None:
    assert _written(r"(?<![-\w])256\b(?! \*)") == ["nixgen/planning/matrix.py"]
    shown = CliRunner().invoke(main, ["matrix", "--help"], terminal_width=400)
    text = " ".join(shown.output.split())
    limit = matrix.GITHUB_MAX_JOBS
    assert f"(GitHub allows {limit} per matrix). [default: {limit}; 1<=x<={limit}]" in text


def test_exit_status_one_is_named_for_every_failure_it_means() -> None:
    assert errors.EXIT_FAILURE == 1
    assert not hasattr(errors, "EXIT_INTERNAL")
    assert _written(r"\bEXIT_INTERNAL\b") == []
