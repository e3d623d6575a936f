"""The package's stage folders: each imports only the stages its rules allow.

nixgen/ is grouped by the README's data flow (`reading` -> `checking` -> `planning` ->
`rendering` -> `writing`, with `core` below them all and `cmdline` above): a module lives in
its stage's folder and imports nothing of a later stage. The rules are the one table below;
each folder's `__init__.py` states its own rule in its one-line docstring, and this file
checks that the two agree and that no module sits outside the folders.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from importlib import import_module
from pathlib import Path

import pytest

from .conftest import REPO

PACKAGE = REPO / "nixgen"

#: What each stage may import besides itself (and `nixgen` itself, for `__version__`).
RULES: dict[str, set[str]] = {
    "core": set(),
    "reading": {"core"},
    "checking": {"core", "reading"},
    "planning": {"core", "reading", "checking"},
    "rendering": {"core", "reading", "checking", "planning"},
    "writing": {"core", "reading", "checking", "planning", "rendering"},
    "app": {"core", "reading", "checking", "planning", "rendering", "writing"},
    "building": {"core", "reading", "checking", "planning", "rendering", "writing"},
    "cmdline": {
        "core",
        "reading",
        "checking",
        "planning",
        "rendering",
        "writing",
        "app",
        "building",
    },
}

#: Entries of nixgen/ outside the stage folders: the package's own files and the package
#: data several stages read (templates: render, matrix and init; data: core.tables;
#: nixlib: the Nix library, ../nix).
OUTSIDE = ["__init__.py", "__main__.py", "__pycache__", "data", "nixlib", "templates"]


def imported_stages(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    """(line, stage) for every nixgen module that `path` imports, anywhere in it."""
    text = path.read_text(encoding="utf-8") if source is None else source
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            targets = [base] if base != "nixgen" else [f"nixgen.{a.name}" for a in node.names]
        elif isinstance(node, ast.Call) and getattr(
            node.func, "id", getattr(node.func, "attr", None)
        ) in ("import_module", "find_spec"):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                targets = [first.value]
            elif (
                isinstance(first, ast.JoinedStr)
                and first.values
                and isinstance(first.values[0], ast.Constant)
            ):
                targets = [str(first.values[0].value)]
        for target in targets:
            parts = target.split(".")
            if parts[0] == "nixgen" and len(parts) > 1 and parts[1] in RULES:
                found.append((node.lineno, parts[1]))
            elif parts[0] == "nixgen" and len(parts) > 1 and parts[1] not in ("__version__", ""):
                found.append((node.lineno, f"(no stage: {target})"))
    return found


def violations(path: Path, source: str | None = None) -> list[str]:
    stage = path.relative_to(PACKAGE).parts[0]
    allowed = RULES[stage] | {stage}
    return [
        f"{path.relative_to(REPO)}:{line}: {stage} imports {other}"
        for line, other in imported_stages(path, source)
        if other not in allowed
    ]


def modules() -> list[Path]:
    return sorted(
        p
        for stage in RULES
        for p in (PACKAGE / stage).rglob("*.py")
        if "__pycache__" not in p.parts
    )


def test_the_rules_only_look_back() -> None:
    order = list(RULES)
    for i, stage in enumerate(order):
        assert RULES[stage] <= set(order[:i]), f"{stage} may import a later stage"


def test_no_stage_imports_one_it_may_not() -> None:
    assert modules(), "no stage folders"
    found = [v for path in modules() for v in violations(path)]
    assert not found, "\n".join(found)


def test_the_check_sees_every_form_of_import() -> None:
    reading = PACKAGE / "reading" / "probe.py"
    for bad in (
        "from nixgen.rendering import render",
        "import nixgen.cmdline.cli",
        "def f():\n    from nixgen.writing.write import check\n",
        "from nixgen.rendering.render import Rendered as R",
        "from ..planning import plan",
        "import_module(f'nixgen.cmdline.commands.{name}')",
        "from nixgen import nixbuild",
    ):
        assert violations(reading, bad), bad
    assert not violations(reading, "from nixgen import __version__\nfrom nixgen.core import paths")


def test_nothing_sits_outside_the_stage_folders() -> None:
    stray = sorted(
        p.name for p in PACKAGE.iterdir() if p.name not in OUTSIDE and p.name not in RULES
    )
    assert not stray, f"nixgen/ holds {stray}: put each in its stage's folder"


@pytest.mark.parametrize("stage", list(RULES))
def test_each_folder_says_what_it_owns_and_may_import(stage: str) -> None:
    init = PACKAGE / stage / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree, clean=False)
    assert doc and "\n" not in doc, f"{init}: a one-line docstring"
    assert len(tree.body) == 1, f"{init}: the docstring only (importing a stage loads nothing)"
    may = re.search(r" May import: (.*)\.$", doc)
    assert may, f"{init}: the docstring ends with its rule, `May import: ...`"
    order = list(RULES)
    if may.group(1) == "no stage":
        said: set[str] = set()
    elif " to " in may.group(1):
        first, last = may.group(1).split(" to ")
        said = set(order[order.index(first) : order.index(last) + 1])
    else:
        said = set(may.group(1).split(", "))
    assert said == RULES[stage], (said, RULES[stage])


def test_the_entry_points_still_resolve() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    module, _, attr = meta["project"]["scripts"]["nixgen"].partition(":")
    assert callable(getattr(import_module(module), attr))
    assert import_module("nixgen").__version__ == meta["project"]["version"]
    done = subprocess.run(
        [sys.executable, "-m", "nixgen", "--version"], capture_output=True, text=True, check=True
    )
    assert meta["project"]["version"] in done.stdout
