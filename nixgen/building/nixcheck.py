"""What `nixgen build` and `nixgen shell` check of the Nix they run, before running it.

Each check ends the command with one ``nixgen: error:`` line naming what is wrong and the
fix (exit 2), rather than letting Nix fail later with an error of its own:

- Nix is installed (``nix`` on PATH);
- Nix is at least `MINIMUM_NIX` when the flake's pinned nixpkgs is used: that nixpkgs
  refuses an older Nix (its ``lib/minver.nix``, read at the pin); with the ``nixpkgs``
  input overridden (``--override-input nixpkgs …``, as the tests' stand-ins are) the
  override carries its own requirement, so the check is left to it;
- on Linux, the Nix sandbox is on (``sandbox = true``, or ``relaxed``), as kernel-builder
  requires (huggingface/kernels ``kernel-builder/src/nix.rs``: "Nix sandboxing must be
  enabled on Linux"): without it a build can read files it never declared (the project
  directory, ``$HOME``, ``/tmp``, host compilers) and build for you what fails for others.
  ``--no-sandbox-check`` proceeds anyway, with a warning saying what is lost.

The settings are read from ``nix show-config`` (``nix config show`` from Nix 2.20, which
renamed it), with the command's own ``--option`` settings, so ``--option sandbox false``
counts as it would for the build.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from nixgen.core.errors import EXIT_INVALID, NixgenError, Problem, warning

#: The oldest Nix the pinned nixpkgs evaluates with: its ``lib/minver.nix`` ("2.18.0", read
#: at nixpkgs 40cc908f; the pin, ec1a1121, is newer, and the minimum only goes up).
MINIMUM_NIX = (2, 18)
MINIMUM_SOURCE = "the pinned nixpkgs' lib/minver.nix"
#: From this version the settings are printed by `nix config show` (2.20 renamed it).
CONFIG_SHOW = (2, 20)

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_SANDBOX = re.compile(r"^sandbox = (\S*)\s*$", re.MULTILINE)


class NixSetupError(NixgenError):
    """The Nix on this machine cannot build the flake as it is set up: fix it, then rerun."""

    exit_code = EXIT_INVALID


def _run(command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(command), capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise NixSetupError(f"cannot run `{' '.join(command[:2])}`: {exc}") from None


def missing_nix() -> str:
    """What to say when `nix` is not on PATH. A nixgen checkout's scripts/setup.sh puts its
    Nix in the venv's bin/, beside this interpreter: when that directory is not on PATH (the
    venv not activated, nixgen run as `.venv/bin/nixgen`), the one command that makes `nix`
    found is named, rather than "install Nix"."""
    beside = Path(sys.executable).parent
    on_path = {os.path.abspath(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p}
    if os.access(beside / "nix", os.X_OK) and os.path.abspath(beside) not in on_path:
        return (
            f"`nix` is not on PATH, but this nixgen's environment has one ({beside / 'nix'}): "
            f'run `export PATH={shlex.quote(str(beside))}:"$PATH"` (or activate the venv), '
            "then run nixgen again"
        )
    return "`nix` is not on PATH: install Nix (https://nixos.org/download)"


def nix_version() -> tuple[int, int, int] | None:
    """The version `nix --version` prints (``nix (Nix) 2.8.0``), or None if unreadable."""
    done = _run(["nix", "--version"])
    found = _VERSION.search(done.stdout) if done.returncode == 0 else None
    if found is None:
        return None
    return int(found[1]), int(found[2]), int(found[3] or 0)


def sandbox_setting(version: tuple[int, int, int] | None, options: Sequence[str]) -> str | None:
    """The `sandbox` setting Nix would build with (``true``, ``false``, ``relaxed``), given
    the command's ``--option`` arguments; None when Nix does not print it."""
    show = ["config", "show"] if version is not None and version >= CONFIG_SHOW else ["show-config"]
    done = _run(["nix", *show, "--extra-experimental-features", "nix-command", *options])
    found = _SANDBOX.search(done.stdout) if done.returncode == 0 else None
    return found[1] if found else None


def _dotted(version: Sequence[int]) -> str:
    return ".".join(map(str, version))


def check(
    *,
    overrides: Sequence[tuple[str, str]],
    options: Sequence[str],
    sandbox_check: bool,
    hint: str,
    system: str | None = None,
) -> list[Problem]:
    """Check the Nix on PATH (the module docstring); raise NixSetupError on the first
    problem. ``options`` are the ``--option`` arguments the command passes to Nix; ``hint``
    ends the missing-Nix message (what to do instead). Returns warnings to show (the
    sandbox left unchecked or off with ``--no-sandbox-check``)."""
    if shutil.which("nix") is None:
        raise NixSetupError(f"{missing_nix()}{hint}")
    version = nix_version()
    if not any(name == "nixpkgs" for name, _ in overrides):
        if version is None:
            raise NixSetupError(
                "`nix --version` printed no version: check that the `nix` on PATH is Nix "
                f"(nixgen needs Nix {_dotted(MINIMUM_NIX)} or newer, {MINIMUM_SOURCE})"
            )
        if version[:2] < MINIMUM_NIX:
            raise NixSetupError(
                f"Nix {_dotted(version)} is too old: the flake's nixpkgs needs Nix "
                f"{_dotted(MINIMUM_NIX)} or newer ({MINIMUM_SOURCE}); install a newer Nix "
                "(https://nixos.org/download), or pass `--override-input nixpkgs <flake>` "
                "with a nixpkgs this Nix can evaluate"
            )
    if (system or platform.system()) != "Linux":
        return []
    setting = sandbox_setting(version, options)
    if setting in ("true", "relaxed"):
        return []
    lost = (
        "builds may read host files they do not declare, so a build that works here can "
        "fail elsewhere, and its outputs are not proven reproducible"
    )
    if not sandbox_check:
        return [warning(f"the Nix sandbox is off (sandbox = {setting or 'unknown'}): {lost}")]
    if setting is None:
        raise NixSetupError(
            "cannot tell whether the Nix sandbox is on (`nix show-config` printed no "
            "`sandbox` setting); set `sandbox = true` in nix.conf, or pass "
            "--no-sandbox-check to build anyway"
        )
    raise NixSetupError(
        f"the Nix sandbox is off (sandbox = {setting}), and on Linux kernels are built in "
        "it (kernel-builder requires it): set `sandbox = true` in /etc/nix/nix.conf (or "
        "~/.config/nix/nix.conf; a multi-user install: restart nix-daemon), or pass "
        f"--no-sandbox-check to build anyway ({lost})"
    )
