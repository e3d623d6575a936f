"""kernel-builder projects migrate cleanly: their standard flake is replaced by nixgen's.

The fixture reproduces the pattern every project made for the kernels toolchain ships (its
`kernel-builder init` template and its `examples/kernels/*/flake.nix`, huggingface/kernels
8ac69fc5): an edition-5 build.toml and a flake whose outputs only call
`kernel-builder.lib.genKernelFlakeOutputs { inherit self; path = ./.; }`. The sources are
nixgen's own CPU example.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import anchorflake
from nixgen.cmdline.cli import main
from nixgen.core.marker import MARKER

from . import nixtools
from .conftest import EXAMPLES, copy_out

#: The shape of the toolchain's example flakes (written here, not copied).
STANDARD = """{
  description = "Flake for ReLU kernel";

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    {
      self,
      kernel-builder,
    }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
    };
}
"""

EDITION5 = """[general]
name = "relu-cpu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

# The CPU kernel.
[kernel.relu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["relu_cpu/relu_cpu.cpp", "relu_cpu/relu_impl.h"]
include = ["relu_cpu"]
cxx-flags = ["-DRELU_CPU_BLOCK=64"]
"""

#: kernel-builder's flake with an argument nixgen.toml has no home for (what it can carry
#: over is tests/test_community_flakes.py's).
CUSTOM = STANDARD.replace("path = ./.;", 'path = ./.;\n      rev = self.shortRev or "dirty";')


def kernel_builder_project(tmp_path: Path, flake: str = STANDARD) -> Path:
    root = tmp_path / "relu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix", "flake.nix", "flake.lock")
    (root / "build.toml").write_text(EDITION5)
    (root / "flake.nix").write_text(flake)
    return root


@pytest.mark.parametrize(
    "text",
    [
        STANDARD,
        # kernel-builder init's template: no description, `...`, one line per binding.
        STANDARD.replace('  description = "Flake for ReLU kernel";\n', "").replace(
            "kernel-builder,\n", "kernel-builder,\n      ...\n"
        ),
        # Another input name, the old function name, a comment, a local path input.
        STANDARD.replace("kernel-builder", "builder")
        .replace("genKernelFlakeOutputs", "genFlakeOutputs")
        .replace('"github:huggingface/kernels";', '"path:../../.."; # the checkout'),
        STANDARD.replace("inherit self;\n      path = ./.;", "path = ./.; inherit self;"),
    ],
)
def test_the_standard_flake_is_recognised(text: str) -> None:
    assert anchorflake.standard(text).standard


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (CUSTOM, "`genKernelFlakeOutputs` is given `rev`"),
        (STANDARD.replace("path = ./.;", "path = ./src;"), "expected ./."),
        (
            STANDARD.replace("    };\n}", "    } // { packages = { }; };\n}"),
            "expected ;",
        ),
        (
            STANDARD.replace("inputs = {", "nixConfig = { };\n  inputs = {"),
            "`nixConfig` besides",
        ),
        (
            STANDARD.replace(
                'kernel-builder.url = "github:huggingface/kernels";',
                'kernel-builder.url = "github:huggingface/kernels";\n    nixpkgs.url = "x";',
            ),
            "inputs besides `kernel-builder`: nixpkgs",
        ),
        (STANDARD.replace("inherit self;\n", ""), "not given `inherit self;`"),
        (STANDARD.replace("kernel-builder.lib", "kernel-builder.lib.x"), "genKernelFlakeOutputs"),
    ],
)
def test_anything_more_is_not_the_standard_flake(text: str, why: str) -> None:
    verdict = anchorflake.standard(text)
    assert not verdict.standard
    assert why in verdict.why


def test_migrate_replaces_the_standard_flake_and_keeps_it(tmp_path: Path) -> None:
    root = kernel_builder_project(tmp_path)
    runner = CliRunner()
    check = runner.invoke(main, ["migrate", str(root), "--check"])
    assert check.exit_code == 1
    assert "would replace kernel-builder's standard flake.nix with nixgen's" in check.stderr
    assert (root / "flake.nix").read_text() == STANDARD
    result = runner.invoke(main, ["migrate", str(root)])
    assert result.exit_code == 0, result.output
    assert "migrated" in result.stderr and "from edition 5 to 6" in result.stderr
    assert "replaced kernel-builder's standard flake.nix with nixgen's, keeping it as " in (
        result.stderr
    )
    assert (root / "flake.nix.orig").read_text() == STANDARD
    assert MARKER in (root / "flake.nix").read_text()
    assert (root / "nix" / "default.nix").is_file()
    # The project is now nixgen's: render has nothing to do and keeps nothing hand-written.
    again = runner.invoke(main, ["render", str(root)])
    assert again.exit_code == 0 and "hand-written" not in again.stderr
    assert runner.invoke(main, ["migrate", str(root)]).stderr.endswith("nothing to do\n")


def test_going_back_to_edition_5_keeps_kernel_builders_flake(tmp_path: Path) -> None:
    root = kernel_builder_project(tmp_path)
    result = CliRunner().invoke(main, ["migrate", str(root), "--edition", "5"])
    assert result.exit_code == 0 and "already edition 5" in result.stderr
    assert (root / "flake.nix").read_text() == STANDARD
    assert not (root / "flake.nix.orig").exists()


def test_no_backup_and_an_existing_backup(tmp_path: Path) -> None:
    root = kernel_builder_project(tmp_path)
    (root / "flake.nix.orig").write_text("mine\n")
    runner = CliRunner()
    refused = runner.invoke(main, ["migrate", str(root)])
    assert refused.exit_code == 2
    assert "flake.nix.orig: exists" in refused.stderr and "--no-backup" in refused.stderr
    # Nothing was migrated: build.toml, the flake and the old backup are as they were.
    assert (root / "build.toml").read_text() == EDITION5
    assert (root / "flake.nix").read_text() == STANDARD
    assert (root / "flake.nix.orig").read_text() == "mine\n"
    result = runner.invoke(main, ["migrate", str(root), "--no-backup"])
    assert result.exit_code == 0, result.output
    assert MARKER in (root / "flake.nix").read_text()
    assert (root / "flake.nix.orig").read_text() == "mine\n"


def test_another_hand_written_flake_is_kept_with_the_command(tmp_path: Path) -> None:
    root = kernel_builder_project(tmp_path, CUSTOM)
    runner = CliRunner()
    result = runner.invoke(main, ["migrate", str(root)])
    assert result.exit_code == 0, result.output
    assert (root / "flake.nix").read_text() == CUSTOM
    command = f"mv {root}/flake.nix {root}/flake.nix.orig && nixgen render {root}"
    assert "`rev`: not an argument nixgen knows how to carry over" in result.stderr
    assert f"Taking it over would lose that; to do it anyway: {command}" in result.stderr
    # render says the same of it, word for word.
    render = runner.invoke(main, ["render", str(root)])
    assert render.exit_code == 0
    [note] = [line for line in result.stderr.splitlines() if "warning:" in line]
    assert note in render.stderr.splitlines()


def test_render_names_migrate_for_the_standard_flake(tmp_path: Path) -> None:
    root = kernel_builder_project(tmp_path)
    render = CliRunner().invoke(main, ["render", str(root)])
    assert render.exit_code == 0
    assert f"run: nixgen migrate {root}" in render.stderr
    assert "kernel-builder's standard flake, kept" in render.stderr
    assert (root / "flake.nix").read_text() == STANDARD


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.build
def test_the_guides_one_minute_block_builds_a_kernel_builder_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = kernel_builder_project(tmp_path)
    stub = nixtools.make_stub(tmp_path)
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    runner = CliRunner()
    for step in (["validate"], ["migrate", "--diff"], ["migrate"], ["render"]):
        result = runner.invoke(main, [step[0], str(root), *step[1:]])
        assert result.exit_code == 0, (step, result.output)
    variant = "torch213-cxx11-cpu-x86_64-linux"
    built = runner.invoke(
        main, ["build", str(root), "--variant", variant, *nixtools.overrides(stub)]
    )
    assert built.exit_code == 0, built.output
    built_dir = root / "build" / variant
    assert (built_dir / "metadata.json").is_file()
    assert any(p.suffix == ".so" for p in built_dir.iterdir())


# ------------------------------------------------- a takeover that fails or is killed


def test_a_failed_takeover_leaves_no_backup_and_runs_again(tmp_path: Path) -> None:
    """The render of a takeover fails (a hand-written file where nix/default.nix goes):
    the old flake stays, no flake.nix.orig is left behind to block the retry, and once the
    cause is gone the same `nixgen migrate` finishes the takeover."""
    root = kernel_builder_project(tmp_path)
    (root / "nix").mkdir()
    (root / "nix" / "default.nix").write_text("# mine\n")
    runner = CliRunner()
    failed = runner.invoke(main, ["migrate", str(root)])
    assert failed.exit_code == 2, failed.output
    assert "hand-written" in failed.stderr and "Traceback" not in failed.output
    assert (root / "flake.nix").read_text() == STANDARD
    assert not (root / "flake.nix.orig").exists()
    assert sorted(p.name for p in (root / "nix").iterdir()) == ["default.nix"]
    assert not [p for p in root.iterdir() if p.name.startswith(".nixgen")]
    (root / "nix" / "default.nix").unlink()
    again = runner.invoke(main, ["migrate", str(root)])
    assert again.exit_code == 0, again.output
    assert (root / "flake.nix.orig").read_text() == STANDARD
    assert MARKER in (root / "flake.nix").read_text()


def test_a_backup_left_by_an_older_nixgen_does_not_block_the_retry(tmp_path: Path) -> None:
    """A flake.nix.orig that holds exactly the standard flake (an earlier takeover that did
    not finish left it) is written again; one that holds anything else still stops it."""
    root = kernel_builder_project(tmp_path)
    (root / "flake.nix.orig").write_text(STANDARD)
    result = CliRunner().invoke(main, ["migrate", str(root)])
    assert result.exit_code == 0, result.output
    assert (root / "flake.nix.orig").read_text() == STANDARD
    assert MARKER in (root / "flake.nix").read_text()


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_backup_path_that_is_no_file_stops_the_takeover(tmp_path: Path, kind: str) -> None:
    root = kernel_builder_project(tmp_path)
    outside = tmp_path / "outside.nix"
    outside.write_text(STANDARD)  # even the very same bytes, behind a link
    if kind == "link":
        (root / "flake.nix.orig").symlink_to(outside)
    else:
        import os

        os.mkfifo(root / "flake.nix.orig")
    result = CliRunner().invoke(main, ["migrate", str(root)])
    assert result.exit_code == 2, result.output
    assert "flake.nix.orig: exists" in result.stderr
    assert (root / "flake.nix").read_text() == STANDARD
    assert outside.read_text() == STANDARD


KILL_AT = """
import os, sys
import nixgen.core.writer as w
step = sys.argv[1]
w._reached = lambda name: os._exit(137) if name == step else None
sys.argv = ["nixgen", "migrate", "."]
import nixgen.cmdline.entry
nixgen.cmdline.entry.main()
"""


@pytest.mark.parametrize(
    "step", ["staged", "journal", "tree", "file:flake.nix", "file:flake.nix.orig", "done"]
)
@pytest.mark.slow
def test_a_takeover_killed_at_each_step_is_finished_by_the_next_migrate(
    tmp_path: Path, step: str
) -> None:
    """nix/, flake.nix and flake.nix.orig are one transaction: killed before its journal
    nothing of the takeover is on disk, killed after it the next run completes it; either
    way the next `nixgen migrate` leaves the project taken over, with nothing left behind."""
    import subprocess
    import sys

    from .hostile import env

    root = kernel_builder_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", KILL_AT, step],
        cwd=root,
        env=env(),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 137, done.stderr.decode()
    if step == "staged":
        assert (root / "flake.nix").read_text() == STANDARD
        assert not (root / "flake.nix.orig").exists()
    again = subprocess.run(
        [sys.executable, "-m", "nixgen", "migrate", "."],
        cwd=root,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert (root / "flake.nix.orig").read_text() == STANDARD
    assert MARKER in (root / "flake.nix").read_text()
    assert (root / "nix" / "default.nix").is_file()
    render = CliRunner().invoke(main, ["render", "--check", str(root)])
    assert render.exit_code == 0, render.output
    assert not list(root.rglob(".nixgen*"))
