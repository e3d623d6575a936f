"""The package's import rules: pyproject.toml's ``[tool.importlinter]`` contracts, which
`lint-imports` checks in .ci/run beside ruff and mypy.

The stages import only the stages below them (core → reading → checking → planning →
rendering → writing → building → app → cmdline), `cmdline/streams.py` is a leaf, planning's
modules form no circle, no package of nixgen holds an import circle, only the command line
imports click, and a render never asks git. These tests run the same check on a copy of the
package with one forbidden import added, so a contract that stopped seeing what it forbids
(a renamed folder, a mistyped module) fails here rather than passing in CI unseen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

LINT = Path(sys.executable).with_name("lint-imports")
#: The name of the stages contract, as lint-imports reports it.
STAGES = "imports only the stages below it"

pytestmark = [
    pytest.mark.slow,  # starts lint-imports (tests/tiers.py)
    pytest.mark.skipif(
        not LINT.exists(), reason="import-linter (pip install -e '.[dev]') is absent"
    ),
]


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with `root`'s pyproject.toml, on the nixgen package under `root`."""
    return subprocess.run(
        [str(LINT), "--no-cache", "--no-logo", str(root / "pyproject.toml")],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of nixgen's Python modules and of pyproject.toml, for breaking."""
    root = tmp_path_factory.mktemp("layout")
    shutil.copytree(
        REPO / "nixgen",
        root / "nixgen",
        ignore=shutil.ignore_patterns("__pycache__", "nixlib", "templates", "data"),
    )
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_package_keeps_every_contract(package: Path) -> None:
    done = lint(package)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "added", "broken"),
    [
        # A stage reaching up: the ground floor importing the command line.
        ("core/paths.py", "from nixgen.cmdline import cli", STAGES),
        # building runs Nix below the use cases: it never reaches up into app.
        ("building/nixbuild.py", "from nixgen.app import pipeline", STAGES),
        # streams is the command line's leaf: the old cli <-> entry <-> output circle.
        ("cmdline/streams.py", "from nixgen.cmdline import output", "No import circle"),
        # A function-local import counts: the old lazy plan <-> matrix circle.
        (
            "planning/ci.py",
            "def _late() -> None:\n    from nixgen.planning import plan  # noqa: F401",
            "the plan from the variants",
        ),
        ("rendering/render.py", "import click", "click is imported by nixgen.cmdline alone"),
        # The render deciding by git state (the old "library in place" default).
        ("app/pipeline.py", "from nixgen.building import gitfiles", "A render never asks git"),
        # The Hub reached around app.hub, whose checks and bounds it would skip.
        ("app/upload.py", "import huggingface_hub", "The Hub is reached only through app.hub"),
        # Editing TOML text beside tomledit (nixgen.toml by hand: the duplicated-key bug).
        ("app/config.py", "import tomlkit", "TOML text is edited by core.tomledit alone"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    package: Path, module: str, added: str, broken: str
) -> None:
    path = package / "nixgen" / module
    kept = path.read_text()
    try:
        path.write_text(f"{kept}\n\n{added}\n")
        done = lint(package)
    finally:
        path.write_text(kept)
    assert done.returncode != 0, done.stdout
    report = done.stdout.split("Broken contracts", 1)[-1]
    assert broken in report, done.stdout


def test_the_entry_points_still_resolve() -> None:
    """The `nixgen` script of pyproject.toml names a function that exists, and
    ``python -m nixgen`` runs (both survive a module moving between folders)."""
    import tomllib
    from importlib import import_module

    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    module, _, attr = meta["project"]["scripts"]["nixgen"].partition(":")
    assert callable(getattr(import_module(module), attr))
    assert import_module("nixgen").__version__ == meta["project"]["version"]
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "--version"], capture_output=True, text=True, check=True
    )
    assert meta["project"]["version"] in done.stdout
