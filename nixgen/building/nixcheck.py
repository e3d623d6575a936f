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

import platform
import re
from collections.abc import Sequence

from nixgen.building import nixcommand, process
from nixgen.core.errors import EXIT_INVALID, NixgenError, Problem, warning

#: The oldest Nix the pinned nixpkgs evaluates with: its ``lib/minver.nix`` ("2.18.0", read
#: at nixpkgs 40cc908f; the pin, ec1a1121, is newer, and the minimum only goes up).
MINIMUM_NIX = (2, 18)
MINIMUM_SOURCE = "the pinned nixpkgs' lib/minver.nix"
#: From this version the settings are printed by `nix config show` (2.20 renamed it).
CONFIG_SHOW = nixcommand.CONFIG_SHOW

_SANDBOX = re.compile(r"^sandbox = (\S*)\s*$", re.MULTILINE)


class NixSetupError(NixgenError):
    """The Nix on this machine cannot build the flake as it is set up: fix it, then rerun."""

    exit_code = EXIT_INVALID


def _run(command: process.Command) -> process.Finished:
    try:
        return process.run(command, cwd=None, timeout=nixcommand.PROBE_TIMEOUT)
    except process.ProcessTimeout:
        raise NixSetupError(
            f"`{command.shown()}` did not answer within {nixcommand.PROBE_TIMEOUT:g} s: check "
            "the Nix installation (is the Nix daemon running?)"
        ) from None


def nix_version() -> tuple[int, int, int] | None:
    """The version `nix --version` prints (``nix (Nix) 2.8.0``), or None if unreadable;
    asked once per process (`nixcommand.nix_version`)."""
    try:
        return nixcommand.nix_version()
    except process.ProcessTimeout:
        raise NixSetupError(
            f"`nix --version` did not answer within {nixcommand.PROBE_TIMEOUT:g} s: check "
            "the Nix installation"
        ) from None


def sandbox_setting(version: tuple[int, int, int] | None, options: Sequence[str]) -> str | None:
    """The `sandbox` setting Nix would build with (``true``, ``false``, ``relaxed``), given
    the command's ``--option`` arguments; None when Nix does not print it."""
    done = _run(nixcommand.config_show(version, options))
    found = _SANDBOX.search(done.stdout) if done.code == 0 else None
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
    if process.find(nixcommand.NIX) is None:
        raise NixSetupError(f"`nix` is not on PATH: {nixcommand.install_hint()}{hint}")
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
