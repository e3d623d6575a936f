"""What the render benchmarks share (`bench/run` row 1, `bench/instructions`): the design
card's floor, the floor plus nixgen's own imports, and nixgen installed from its wheel.

The floor is `python -c 'import tomli, attrs, cattrs, jinja2, click; tomli.load(...)'`: the
libraries nixgen is built on, and the read of the file.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

FLOOR_IMPORTS = "tomli, attrs, cattrs, jinja2, click"


def _read(build_toml: Path) -> str:
    return f"tomli.load(open({str(build_toml)!r}, 'rb'))"


def floor_cmd(python: str, build_toml: Path) -> list[str]:
    """The floor: the design card's libraries imported, `build_toml` read."""
    return [python, "-c", f"import {FLOOR_IMPORTS}; {_read(build_toml)}"]


def modules_listing_cmd(python: str, nixgen_args: Sequence[str]) -> list[str]:
    """`nixgen <nixgen_args>` run in-process, printing the nixgen modules it loaded on one
    stderr line (`loaded_modules` reads it)."""
    listing = (
        "import atexit, runpy, sys; "
        "atexit.register(lambda: sys.__stderr__.write('NIXGEN-MODULES ' + ' '.join(sorted("
        "m for m in sys.modules if m == 'nixgen' or m.startswith('nixgen.'))) + '\\n')); "
        f"sys.argv = ['nixgen', *{list(nixgen_args)!r}]; "
        "runpy.run_module('nixgen', run_name='__main__')"
    )
    return [python, "-c", listing]


def loaded_modules(stderr: str) -> list[str]:
    """The modules `modules_listing_cmd`'s run printed."""
    return next(
        line.split()[1:] for line in stderr.splitlines() if line.startswith("NIXGEN-MODULES")
    )


def imports_cmd(python: str, build_toml: Path, modules: Sequence[str]) -> list[str]:
    """The floor plus importing `modules` (those a render loads) and nothing else: how much
    of a render is nixgen's own start."""
    return [
        python,
        "-c",
        f"import {FLOOR_IMPORTS}; {_read(build_toml)}; import {', '.join(modules)}",
    ]


def pip_install_cmd(python: str, source: Path, site: Path) -> list[str]:
    """nixgen from `source` installed into `site` from its wheel, as users install it."""
    return [
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "--target",
        str(site),
        str(source),
    ]


def checkout(repo: Path, rev: str, dest: Path) -> None:
    """The committed tree of `rev` extracted into `dest` (made here)."""
    dest.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", rev], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
