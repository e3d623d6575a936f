"""The checks `nixgen build` and `nixgen shell` make of the Nix they run
(`nixgen/building/nixcheck.py`): each a one-line `nixgen: error:` with the fix, exit 2,
before Nix evaluates anything. The first tests run this machine's real Nix (the suite's:
2.18 or newer, scripts/nix.sh); the others a fake `nix` that answers the version and the
settings a scenario gives (a Nix too old for the pinned nixpkgs among them: Debian 12's 2.8,
which no test builds with any more)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import scaffold
from nixgen.building import nixcheck, nixcommand
from nixgen.cmdline.cli import main

from . import nixtools
from .fakenix import FakeNix, calls_of
from .fakenix import fake_nix as fake_nix

real_nix = pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    root = tmp_path / "relu-demo"
    scaffold.create(root, "relu-demo", ["cpp-cpu"])
    return root


def _sandbox_off() -> str:
    return nixtools.NIX_CONFIG.replace("sandbox = true", "sandbox = false")


OLD_NIX = """\
#!/bin/sh
# A fake `nix` that is Nix 2.8.0 (Debian 12's) for the version check, and records any other
# call: nixgen must stop at the version, before it evaluates anything.
if [ "$1" = --version ]; then echo 'nix (Nix) 2.8.0'; exit 0; fi
echo "$@" >> "$(dirname "$0")/calls"
exit 1
"""


@pytest.mark.parametrize("verb", [["build", "--no-link"], ["shell", "-c", "true"]])
@pytest.mark.slow
def test_a_nix_older_than_2_18_is_refused_before_anything_is_evaluated(
    runner: CliRunner, demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb
) -> None:
    """The "Nix too old" refusal, tested with a fake `nix` script that says it is 2.8.0
    (the suite's own Nix is 2.26, scripts/nix.sh, which is new enough; the real-Nix
    version of this check below runs only on a machine whose Nix is older than 2.18)."""
    bin_dir = tmp_path / "old-nix"
    bin_dir.mkdir()
    script = bin_dir / "nix"
    script.write_text(OLD_NIX)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    result = runner.invoke(main, [verb[0], str(demo), *verb[1:]])
    assert result.exit_code == 2, result.output
    [line] = [line for line in result.output.splitlines() if "error" in line]
    assert line.startswith(
        "nixgen: error: Nix 2.8.0 is too old: the flake's nixpkgs needs Nix "
        "2.18 or newer (the pinned nixpkgs' lib/minver.nix)"
    ), line
    assert "Traceback" not in result.output
    assert not (bin_dir / "calls").exists(), "nixgen ran Nix past the version check"


@real_nix
@pytest.mark.nix
def test_real_nix_with_the_sandbox_off_is_exit_2_naming_sandbox_true(
    runner: CliRunner, demo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The stand-in nixpkgs skips the version check; the sandbox is checked whatever the inputs.
    stub = nixtools.make_stub(tmp_path / "stub")
    args = ["build", str(demo), "--no-link", *nixtools.overrides(stub)]
    monkeypatch.setenv("NIX_CONFIG", _sandbox_off())
    result = runner.invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "nixgen: error: the Nix sandbox is off (sandbox = false)" in result.output
    assert "set `sandbox = true` in /etc/nix/nix.conf" in result.output
    assert "--no-sandbox-check" in result.output
    # A command line's `--option sandbox false` counts too, as it would for the build.
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    option = runner.invoke(main, [*args, "--option", "sandbox", "false"])
    assert option.exit_code == 2, option.output
    assert "the Nix sandbox is off (sandbox = false)" in option.output


def test_the_sandbox_setting_is_read_from_the_nix_config(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    fake_nix.scenario(**{"@sandbox": "false", "*": {"stderr": [], "exit": 0}})
    off = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert off.exit_code == 2, off.output
    assert "the Nix sandbox is off (sandbox = false)" in off.output
    assert calls_of(fake_nix, "eval") == [], "nothing is evaluated"
    for setting in ("true", "relaxed"):
        fake_nix.scenario(**{"@sandbox": setting, "*": {"stderr": [], "exit": 0}})
        on = runner.invoke(main, ["build", str(demo), "--no-link"])
        assert on.exit_code == 0, on.output
        assert "sandbox" not in on.output


def test_no_sandbox_check_builds_and_says_what_is_lost(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    fake_nix.scenario(**{"@sandbox": "false", "*": {"stderr": [], "exit": 0}})
    result = runner.invoke(main, ["build", str(demo), "--no-link", "--no-sandbox-check"])
    assert result.exit_code == 0, result.output
    assert "nixgen: warning: the Nix sandbox is off (sandbox = false)" in result.output
    assert "not proven reproducible" in result.output
    assert len(calls_of(fake_nix, "build")) == 1


def test_a_nix_older_than_the_pinned_nixpkgs_needs_is_exit_2_naming_2_18(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    """Debian 12's Nix 2.8, as `nix --version` prints it (a fake: the suite's Nix is new)."""
    fake_nix.scenario(**{"@version": "nix (Nix) 2.8.0", "*": {"stderr": [], "exit": 0}})
    result = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert result.exit_code == 2, result.output
    [line] = [line for line in result.output.splitlines() if "error" in line]
    assert line.startswith("nixgen: error: Nix 2.8.0 is too old"), line
    minimum = ".".join(map(str, nixcheck.MINIMUM_NIX))
    assert f"needs Nix {minimum} or newer" in line and minimum == "2.18"
    assert "lib/minver.nix" in line
    assert "Traceback" not in result.output
    assert calls_of(fake_nix, "build") == []
    # `nixgen shell` makes the same check.
    shell = runner.invoke(main, ["shell", str(demo), "-c", "true"])
    assert shell.exit_code == 2, shell.output
    assert "Nix 2.8.0 is too old" in shell.output


def test_a_new_enough_nix_passes_and_a_nixpkgs_override_skips_the_version_check(
    runner: CliRunner, fake_nix: FakeNix, demo: Path, tmp_path: Path
) -> None:
    fake_nix.scenario(**{"@version": "nix (Nix) 2.18.0", "*": {"stderr": [], "exit": 0}})
    assert runner.invoke(main, ["build", str(demo), "--no-link"]).exit_code == 0
    fake_nix.scenario(**{"@version": "nix (Nix) 2.17.1", "*": {"stderr": [], "exit": 0}})
    nixcommand.forget_version()  # asked once per process and `nix` executable: ask again
    old = runner.invoke(main, ["build", str(demo), "--no-link"])
    assert old.exit_code == 2
    assert "Nix 2.17.1 is too old" in old.output
    overridden = runner.invoke(
        main, ["build", str(demo), "--no-link", "--override-input", "nixpkgs", f"path:{tmp_path}"]
    )
    assert overridden.exit_code == 0, overridden.output


def test_shell_checks_the_sandbox_too(runner: CliRunner, fake_nix: FakeNix, demo: Path) -> None:
    fake_nix.scenario(**{"@sandbox": "false", "*": {"stderr": [], "exit": 0}})
    result = runner.invoke(main, ["shell", str(demo), "-c", "true"])
    assert result.exit_code == 2, result.output
    assert "the Nix sandbox is off" in result.output
    assert fake_nix.calls() == [], "nix develop never runs"


def test_without_nix_on_path_shell_is_exit_2(
    runner: CliRunner, demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    # An interpreter with no Nix beside it (a nixgen installed without the checkout's venv).
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    result = runner.invoke(main, ["shell", str(demo), "-c", "true"])
    assert result.exit_code == 2
    assert "nixgen: error: `nix` is not on PATH: install Nix" in result.output


@pytest.mark.parametrize("verb", [["build"], ["shell", "-c", "true"], ["compdb"]])
def test_without_nix_on_path_but_in_the_venv_the_export_is_named(
    runner: CliRunner, demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: list[str]
) -> None:
    """`.venv/bin/nixgen` run without the venv activated: scripts/setup.sh's Nix is in the
    venv's bin/, beside the interpreter, but not on PATH. The one command is named."""
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "nix").write_text("#!/bin/sh\nexit 1\n")
    (venv_bin / "nix").chmod(0o755)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    result = runner.invoke(main, [verb[0], str(demo), *verb[1:]])
    assert result.exit_code != 0, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("nixgen: error:")]
    assert "`nix` is not on PATH: this nixgen's environment has one" in line
    assert f'run `export PATH={venv_bin}:"$PATH"`' in line
    assert "Traceback" not in result.output
