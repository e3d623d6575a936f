"""What a cold `nixgen render` of a valid project loads: nothing it never runs.

A render's start is most of its time (CONTRIBUTING.md "Performance"): the SPDX checker is
`nixgen validate`'s, the key-position scanner is only for locating a problem.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import CORPUS, REPO, materialize

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

#: Modules a render of a valid project never uses.
UNUSED = ("nixgen.checking.spdx", "nixgen.reading.positions")


def _loaded_by(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], str]:
    code = textwrap.dedent(
        f"""
        import sys
        from nixgen.cmdline.cli import main
        try:
            main({argv!r})
        except SystemExit as exit:
            assert not exit.code, exit.code
        print("LOADED", sorted(m for m in {UNUSED!r} if m in sys.modules), file=sys.stderr)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=env
    )
    loaded = [line for line in done.stderr.splitlines() if line.startswith("LOADED")]
    return done, loaded[-1] if loaded else "LOADED ?"


def test_a_cold_render_loads_neither_the_spdx_checker_nor_the_position_scanner(
    tmp_path: Path,
) -> None:
    largest = max(sorted(CORPUS.glob("*.toml")), key=lambda p: p.stat().st_size)
    project = materialize(largest, tmp_path / "project")
    done, loaded = _loaded_by(["render", str(project)])
    assert done.returncode == 0, done.stderr
    assert (project / "nix" / "default.nix").is_file()
    assert loaded == "LOADED []", done.stderr


def test_a_problem_is_still_located_and_a_license_still_checked(tmp_path: Path) -> None:
    """The modules are imported where they are used: a located warning and the SPDX check
    of `nixgen validate` work as before."""
    largest = max(sorted(CORPUS.glob("*.toml")), key=lambda p: p.stat().st_size)
    project = materialize(largest, tmp_path / "project")
    text = (project / "build.toml").read_text()
    (project / "build.toml").write_text(
        text.replace('license = "BSD-3-Clause"', 'license = "BSD-3-Clause-Nope"', 1)
    )
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "validate", str(project)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
    )
    assert "build.toml:4:" in done.stderr, done.stderr
    assert "BSD-3-Clause-Nope" in done.stderr, done.stderr
