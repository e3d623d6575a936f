"""The one-home rules ruff holds (pyproject.toml's banned-api list and SLF001) fire.

Each rule used to be a test that grepped nixgen's source for a spelling (`"trim_blocks="`
outside `core/jinja.py`, `os.walk(` in two modules, `values._`), which a rename passed and a
second home spelt otherwise slipped past. ruff resolves names, so `from jinja2 import
Environment as E` is caught as well as `jinja2.Environment(`. These tests give ruff a real
module of nixgen with one violation added (on stdin, under the module's own name, so the
per-file exceptions apply as in CI) and expect the rule's message; and the module as it is,
expecting none. A rule that stopped seeing what it forbids fails here, not silently in CI.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

RUFF = Path(sys.executable).parent / "ruff"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not RUFF.exists(), reason="ruff (pip install -e '.[dev]') is absent"),
]


def ruff(module: str, added: str = "") -> str:
    """ruff's findings (rule and message) for nixgen's `module` with `added` appended."""
    text = (REPO / "nixgen" / module).read_text()
    done = subprocess.run(
        [
            str(RUFF),
            "check",
            "--no-cache",
            "--select",
            "TID251,SLF001",
            "--output-format",
            "concise",
            "--stdin-filename",
            f"nixgen/{module}",
            "-",
        ],
        input=f"{text}\n\n{added}\n" if added else text,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


RULES = [
    # One Jinja configuration: nixgen.core.jinja.environment.
    ("rendering/workflow.py", "import jinja2\njinja2.Environment()", "`jinja2.Environment`"),
    (
        "app/scaffold.py",
        "def _x() -> None:\n    from jinja2 import Environment as E\n\n    E(trim_blocks=False)",
        "`jinja2.Environment`",
    ),
    ("rendering/render.py", "import jinja2\njinja2.Template('{{ x }}')", "`jinja2.Template`"),
    (
        "rendering/render.py",
        "from jinja2.sandbox import SandboxedEnvironment  # noqa: F401",
        "`jinja2.sandbox`",
    ),
    # One walk of a project tree: nixgen.core.paths.walk.
    ("writing/write.py", "import os\nos.walk('.')", "`os.walk`"),
    ("checking/validate.py", "import os.path\nos.path.islink('x')", "`os.path.islink`"),
    ("app/migrate.py", "import glob\nglob.glob('*.toml')", "`glob.glob`"),
    # The value rules' private parts stay inside nixgen.reading.values.
    (
        "rendering/jsonschema.py",
        "from nixgen.reading import values\nvalues._private_pattern",
        "SLF001",
    ),
]


@pytest.mark.parametrize(("module", "added", "expected"), RULES, ids=[r[2] for r in RULES])
def test_the_rule_fires_outside_its_home(module: str, added: str, expected: str) -> None:
    found = ruff(module, added)
    assert f"nixgen/{module}" in found and expected in found, found


@pytest.mark.parametrize(
    "module",
    ["core/jinja.py", "core/paths.py", "reading/values.py", *sorted({r[0] for r in RULES})],
)
def test_the_modules_as_they_are_pass(module: str) -> None:
    found = ruff(module)
    assert "TID251" not in found and "SLF001" not in found, found
