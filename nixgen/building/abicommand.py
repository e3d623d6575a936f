"""The command line of nixgen's addition to the ABI check, for `nixgen check-abi`: the one
place that spells its argv (a sibling of `nixcommand` and `gitcommand`). It is the program
each Linux extension build runs after the toolchain's `kernel-builder check-abi`
(nix/support/abi_check.py, through nix/support/abi-check-hook.sh), run here by the Python
nixgen runs on; it reads ELF data with `readelf`.

Paths come after ``--``, so no file name is ever read as an option.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from nixgen.building.process import Command
from nixgen.core import tables

#: nixgen's addition, as installed with nixgen (`nixgen/nixlib` is the library `nix/`).
CHECKER = Path(tables.PACKAGE) / "nixlib" / "support" / "abi_check.py"
INSTALL = "reinstall nixgen (its Nix library holds the ABI checker)"


def addition(policy: Path, libraries: Sequence[Path]) -> Command:
    """nixgen's addition holding each of `libraries` to the policy in the file `policy`."""
    return Command(
        (sys.executable, str(CHECKER), "--policy", str(policy), "--", *map(str, libraries)),
        install=INSTALL,
    )
