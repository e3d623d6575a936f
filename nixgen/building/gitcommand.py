"""Every git command line nixgen runs: the one place that spells ``git`` argv (the sibling
of `nixgen.building.nixcommand`). Each is run by `nixgen.building.process`, with its
environment (`process.clean_env`: no `GIT_DIR` and the like, ``core.fsmonitor`` off).

The directory comes as the value of ``-C`` and file names after ``--`` or on stdin, so no
path of the project is ever read as an option of git.
"""

from __future__ import annotations

from pathlib import Path

from nixgen.building.process import Command

GIT = "git"
INSTALL = "install git"


def _git(root: Path, *args: str) -> Command:
    return Command((GIT, "-C", str(root), *args), install=INSTALL)


def show_toplevel(root: Path) -> Command:
    """The top of the work tree `root` is in (`git rev-parse --show-toplevel`)."""
    return _git(root, "rev-parse", "--show-toplevel")


def ls_files(root: Path) -> Command:
    """Every file git tracks under `root`, with its mode (a submodule's is 160000),
    NUL-separated."""
    return _git(root, "ls-files", "-z", "--stage", "--", ".")


def check_ignore(root: Path) -> Command:
    """Which of the NUL-separated paths on stdin a .gitignore rule ignores."""
    return _git(root, "check-ignore", "-z", "--stdin")
