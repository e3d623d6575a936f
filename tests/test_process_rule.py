"""One module starts processes, and the structure of the code holds it.

`nixgen.building.process` is the only module of nixgen that imports `subprocess` or calls
`os.system`, `os.exec*`, `os.spawn*`, `os.popen`, `os.fork`, `pty.spawn` or
`asyncio.create_subprocess_*`; the Nix and git command lines it runs are made only by
`nixgen.building.nixcommand` and `nixgen.building.gitcommand` (and the one of nixgen's ABI
checker, `nix/support/abi_check.py`, by `nixgen.building.abicommand`). Two checks of CI hold the
first rule: ruff's banned-api rule (TID251, pyproject.toml's
``[tool.ruff.lint.flake8-tidy-imports.banned-api]``, with a per-file exception for
`process.py`) and the import-linter contract ``processes``. These tests run both on a copy
of the package with one violation added, as tests/test_import_contracts.py does for the
other contracts, so a rule that stopped seeing what it forbids fails here rather than
passing in CI unseen. The second rule is read from the source itself (below).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

BIN = Path(sys.executable).parent
RUFF = BIN / "ruff"
LINT = BIN / "lint-imports"
#: The name of the contract, as lint-imports reports it.
PROCESSES = "One module starts processes"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of nixgen's Python modules and of pyproject.toml, for breaking."""
    root = tmp_path_factory.mktemp("process-rule")
    shutil.copytree(
        REPO / "nixgen",
        root / "nixgen",
        ignore=shutil.ignore_patterns("__pycache__", "nixlib", "templates", "data"),
    )
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def ruff(root: Path) -> subprocess.CompletedProcess[str]:
    """ruff's banned-api rule, with `root`'s pyproject.toml, on the package under `root`."""
    return subprocess.run(
        [str(RUFF), "check", "--no-cache", "--select", "TID251", "--output-format", "concise"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT), "--no-cache", "--no-logo", str(root / "pyproject.toml")],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def with_added(package: Path, module: str, added: str, check) -> subprocess.CompletedProcess[str]:
    """`check` run on the copy with `added` appended to `module`, which is restored."""
    path = package / "nixgen" / module
    kept = path.read_text()
    try:
        path.write_text(f"{kept}\n\n{added}\n")
        return check(package)
    finally:
        path.write_text(kept)


@pytest.mark.skipif(not RUFF.exists(), reason="ruff (pip install -e '.[dev]') is absent")
@pytest.mark.slow
def test_ruff_passes_the_package_and_allows_the_one_module(package: Path) -> None:
    done = ruff(package)
    assert done.returncode == 0, done.stdout + done.stderr
    # The one module may: its own `import subprocess` is what it is for.
    assert "import subprocess" in (package / "nixgen/building/process.py").read_text()


@pytest.mark.skipif(not RUFF.exists(), reason="ruff (pip install -e '.[dev]') is absent")
@pytest.mark.parametrize(
    ("module", "added", "banned"),
    [
        ("app/compdb.py", "import subprocess", "`subprocess` is banned"),
        (
            "cmdline/commands/compdb.py",
            "def _late() -> None:\n    import subprocess  # noqa: F401",
            "`subprocess` is banned",
        ),
        ("building/nixbuild.py", "from subprocess import run  # noqa: F401", "`subprocess`"),
        ("cmdline/commands/shell.py", "def _x() -> None:\n    os.system('nix')", "`os.system`"),
        ("building/gitfiles.py", "def _x() -> None:\n    os.execvp('git', ['git'])", "os.execvp"),
        ("core/console.py", "def _x() -> None:\n    os.spawnlp(0, 'nix', 'nix')", "os.spawnlp"),
        ("building/nixcheck.py", "def _x() -> None:\n    os.popen('nix')", "`os.popen`"),
        ("app/upload.py", "import pty\npty.spawn('nix')", "`pty` is banned"),
        (
            "app/scaffold.py",
            "import asyncio\nasyncio.create_subprocess_exec('git')",
            "asyncio.create_subprocess_exec",
        ),
        ("writing/write.py", "from os import execv  # noqa: F401", "`os.execv`"),
    ],
)
@pytest.mark.slow
def test_starting_a_process_outside_the_one_module_fails_ruff(
    package: Path, module: str, added: str, banned: str
) -> None:
    if "os." in added and "import os" not in (package / "nixgen" / module).read_text():
        added = f"import os\n{added}"
    done = with_added(package, module, added, ruff)
    assert done.returncode != 0, done.stdout
    assert f"nixgen/{module}" in done.stdout and "TID251" in done.stdout, done.stdout
    assert banned in done.stdout, done.stdout


@pytest.mark.skipif(not LINT.exists(), reason="import-linter (pip install -e '.[dev]') is absent")
@pytest.mark.parametrize(
    ("module", "added"),
    [
        ("app/compdb.py", "def _late() -> None:\n    import subprocess  # noqa: F401"),
        ("core/paths.py", "import multiprocessing  # noqa: F401"),
        ("cmdline/commands/shell.py", "import pty  # noqa: F401"),
    ],
)
@pytest.mark.slow
def test_importing_subprocess_outside_the_one_module_breaks_the_contract(
    package: Path, module: str, added: str
) -> None:
    done = with_added(package, module, added, lint)
    assert done.returncode != 0, done.stdout
    report = done.stdout.split("Broken contracts", 1)[-1]
    assert PROCESSES in report, done.stdout


# ------------------------------------------------------- one builder spells the argv

#: The programs whose command lines only their builder spells.
PROGRAMS = {
    "nix": "building/nixcommand.py",
    "nix-instantiate": "building/nixcommand.py",
    "nix-build": "building/nixcommand.py",
    "nix-store": "building/nixcommand.py",
    "nix-shell": "building/nixcommand.py",
    "git": "building/gitcommand.py",
}
BUILDERS = {"building/nixcommand.py", "building/gitcommand.py", "building/abicommand.py"}


def _modules() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted((REPO / "nixgen").rglob("*.py")):
        rel = path.relative_to(REPO / "nixgen").as_posix()
        if rel.startswith("nixlib/"):
            continue
        out.append((rel, ast.parse(path.read_text(), filename=str(path))))
    return out


def test_only_the_builders_make_commands_or_spell_an_argv() -> None:
    """No module but `nixcommand` and `gitcommand` makes a `Command`, and none but they
    writes a list or tuple that starts with a program's name (an argv)."""
    found = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                # click's `click.Command` (a verb made without the decorator) is no process.
                of_click = isinstance(func, ast.Attribute) and ast.unparse(func.value) == "click"
                if name == "Command" and not of_click and rel not in BUILDERS:
                    found.append((rel, node.lineno, "Command(...)"))
            if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
                first = node.elts[0]
                if (
                    isinstance(first, ast.Constant)
                    and first.value in PROGRAMS
                    and rel != PROGRAMS[first.value]
                ):
                    found.append((rel, node.lineno, first.value))
    assert found == []


def test_the_process_functions_take_commands_only() -> None:
    """`process.run` and `process.run_interactive` take a `Command` (the type checker
    holds every caller to it), and a `Command` refuses what no argv holds."""
    import inspect

    from nixgen.building import process

    for function in (process.run, process.run_interactive):
        assert inspect.signature(function).parameters["command"].annotation == "Command"
    for bad in ((), ("",), ("nix", "a\0b")):
        with pytest.raises(ValueError, match="not a command line"):
            process.Command(bad)
