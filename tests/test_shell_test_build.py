"""`nixgen shell --test` (issue 38): the variant is built first with `nixgen build`'s
progress display (one evaluation, one `nix build`, through nixgen's log reader), then `nix
develop` enters the test shell with Nix's own messages left out (the lock-file lines that
Nix 2.8 prints on every `--override-input` run), errors only. Against the stand-in `nix`
of test_build_cli (it replays internal-json logs and records each call)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.building.nixcommand import ERRORS_ONLY
from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.planning import variants

from . import nixtools
from .fakenix import SYSTEM, FakeNix, calls_of, drv
from .fakenix import demo as demo  # a fixture
from .fakenix import fake_nix as fake_nix  # a fixture

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

OVERRIDE = ("--override-input", "nixpkgs", "path:/stub")


def _default(root: Path) -> str:
    return variants.default_shell_variant(
        variants.variants(project.read(root).build, system=SYSTEM)
    )


def test_shell_test_builds_the_variant_with_builds_progress_before_nix_develop(
    fake_nix: FakeNix,
    demo: Path,
) -> None:
    result = CliRunner().invoke(main, ["shell", str(demo), "--test", "-c", "pytest", *OVERRIDE])
    assert result.exit_code == 0, result.output
    variant = _default(demo)
    # `nixgen build`'s lines: what is built, each derivation in the project's words, the
    # variant done and the summary.
    assert f"building 1 variant of relu-demo for {SYSTEM}" in result.stderr
    assert "building kernel relu_cpu" in result.stderr
    assert "building extension" in result.stderr
    assert f"[1/1] {variant}: done" in result.stderr
    assert "built 1 of 1 variant(s) in " in result.stderr
    # Evaluated, built, then entered: in that order, the build before `nix develop`.
    kinds = [c["args"][0] for c in fake_nix.calls()]
    assert kinds == ["eval", "build", "develop"]
    [evaluate] = calls_of(fake_nix, "eval")
    assert evaluate[evaluate.index("--apply") + 1].endswith(f'[ "{variant}" ]')
    assert evaluate[evaluate.index("--override-input") :][:3] == list(OVERRIDE)
    [build] = calls_of(fake_nix, "build")
    assert drv(variant) + "^*" in build and "internal-json" in build
    develop = fake_nix.calls()[-1]["args"]
    assert f"{demo.resolve()}#devShells.{SYSTEM}.test-{variant}" in develop
    # Nix's own messages of the shell it enters (nothing left to evaluate) are errors only.
    i = develop.index(ERRORS_ONLY[0])
    assert tuple(develop[i : i + 3]) == ERRORS_ONLY
    assert develop[-4:] == ["--command", "bash", "-c", "pytest"]
    # -v keeps Nix's messages; a plain shell (whose inputs Nix may build) keeps them too.
    verbose = CliRunner().invoke(main, ["shell", str(demo), "--test", "-v", *OVERRIDE])
    assert verbose.exit_code == 0, verbose.output
    assert "--quiet" not in fake_nix.calls()[-1]["args"]
    plain = CliRunner().invoke(main, ["shell", str(demo), *OVERRIDE])
    assert plain.exit_code == 0, plain.output
    assert [c["args"][0] for c in fake_nix.calls()][-1] == "develop"
    assert "--quiet" not in fake_nix.calls()[-1]["args"]
    assert len(calls_of(fake_nix, "build")) == 2  # the plain shell built nothing


def test_shell_test_stops_at_a_failed_build_without_entering(
    fake_nix: FakeNix,
    demo: Path,
) -> None:
    fake_nix.scenario(**{"*": {"stderr": [], "exit": 1}})
    result = CliRunner().invoke(main, ["shell", str(demo), "--test", *OVERRIDE])
    assert result.exit_code == 1, result.output
    assert "built 0 of 1 variant(s)" in result.stderr
    assert "develop" not in [c["args"][0] for c in fake_nix.calls()]


def test_shell_test_dry_run_prints_the_build_then_nix_develop(
    fake_nix: FakeNix,
    demo: Path,
) -> None:
    result = CliRunner().invoke(main, ["shell", str(demo), "--test", "--dry-run", *OVERRIDE])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[1] for line in lines] == ["eval", "build", "develop"]
    assert fake_nix.calls() == []


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.nix
def test_nix_28_prints_no_lock_messages_with_errors_only(tmp_path: Path) -> None:
    """The real Nix: `--override-input` makes it print the lock-file messages on every run,
    `--no-write-lock-file` does not silence them, `ERRORS_ONLY` does, and an error still
    prints."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "flake.nix").write_text("{ outputs = { self }: { v = 1; }; }\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "flake.nix").write_text(
        '{ inputs.a.url = "path:/nonexistent"; outputs = { self, a }: { x = a.v; }; }\n'
    )
    env = nixtools.nix_env()

    def nix(attr: str, *flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                *("nix", "eval", f"path:{tmp_path / 'b'}#{attr}"),
                *("--override-input", "a", f"path:{tmp_path / 'a'}", *flags),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    for flags in [(), ("--no-write-lock-file",)]:
        loud = nix("x", *flags)
        assert loud.returncode == 0 and "• Added input 'a'" in loud.stderr, loud.stderr
    quiet = nix("x", *ERRORS_ONLY)
    assert (quiet.returncode, quiet.stdout.strip(), quiet.stderr) == (0, "1", "")
    failed = nix("y", *ERRORS_ONLY)
    assert failed.returncode != 0 and "does not provide attribute" in failed.stderr
