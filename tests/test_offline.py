"""The offline path: `--offline` on a fresh project names every missing input at once and
passes Nix its offline settings; a locked input in the store is not missing; the stand-ins
laid out by scripts/offline-inputs.sh build offline; a failed download points at
`--offline`."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import scaffold
from nixgen.building.nixlog import NixLog
from nixgen.cmdline.cli import main

from . import nixtools
from .conftest import REPO
from .fakenix import SYSTEM, FakeNix, calls_of, event, nixgen
from .fakenix import demo as demo  # a fixture
from .fakenix import fake_nix as fake_nix  # a fixture

# ------------------------------------------------------------------ 2. the offline path


@pytest.mark.slow
def test_offline_on_a_fresh_project_names_the_missing_inputs_at_once(demo: Path) -> None:
    started = time.monotonic()
    done = nixgen("build", "--offline", cwd=demo)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stderr
    assert took < 10, took
    err = done.stderr
    assert "nixgen: error: --offline: the flake inputs `kernel-builder` (github:huggingface/" in err
    assert "`nixpkgs` (github:NixOS/nixpkgs/" in err
    assert "--override-input kernel-builder path:DIR --override-input nixpkgs path:DIR" in err
    assert "scripts/offline-inputs.sh DIR" in err
    # NIXGEN_OFFLINE is its environment twin; an override leaves only the other input.
    twin = nixgen("build", "--override-input", "nixpkgs", "path:/x", cwd=demo, env=OFFLINE)
    assert "the flake input `kernel-builder` (github:" in twin.stderr
    assert "`nixpkgs`" not in twin.stderr


OFFLINE = {"NIXGEN_OFFLINE": "1"}


def test_offline_passes_nix_its_offline_settings(
    runner: CliRunner, fake_nix: FakeNix, demo: Path
) -> None:
    args = ["build", str(demo), "--no-link", "--offline"]
    args += [
        "--override-input",
        "nixpkgs",
        "path:/a",
        "--override-input",
        "kernel-builder",
        "path:/b",
    ]
    done = runner.invoke(main, args)
    assert done.exit_code == 0, done.output
    [evaluate] = calls_of(fake_nix, "eval")
    [build] = calls_of(fake_nix, "build")
    for command in (evaluate, build):
        assert "--offline" in command
        i = command.index("substituters")
        assert command[i - 1 : i + 2] == ["--option", "substituters", ""]
        assert "connect-timeout" in command


def test_a_locked_input_in_the_store_is_not_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nixgen.building import offline

    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.setenv("NIX_STORE_DIR", str(store))
    nar = "sha256-h4gyzSK14DjhF7cBN4VY+Km2ytc4Gg5tV6noZdNPhaY="
    lock = {
        "nodes": {
            "root": {"inputs": {"nixpkgs": "nixpkgs"}},
            "nixpkgs": {"locked": {"narHash": nar, "type": "github"}},
        },
        "root": "root",
        "version": 7,
    }
    (tmp_path / "flake.lock").write_text(json.dumps(lock))
    assert [n for n, _ in offline.missing_inputs(tmp_path, [])] == ["kernel-builder", "nixpkgs"]
    path = offline.source_path(nar)
    assert path is not None
    Path(path).mkdir()
    assert [n for n, _ in offline.missing_inputs(tmp_path, [])] == ["kernel-builder"]


@pytest.mark.slow
def test_the_store_path_of_a_locked_input_is_nixs(tmp_path: Path) -> None:
    from nixgen.building import offline

    # What `nix hash path` and `nix store add-path --name source` give for one file `a`
    # holding "hi\n" (Nix 2.8); the same with Nix at hand.
    nar = "sha256-h4gyzSK14DjhF7cBN4VY+Km2ytc4Gg5tV6noZdNPhaY="
    expected = "/nix/store/ms37m6i4z2hfa1lm7a6lch7lw9vcr26l-source"
    assert offline.source_path(nar, store="/nix/store") == expected
    if shutil.which("nix") is None:
        return
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "b").write_text("other\n")
    env = nixtools.nix_env()
    run = functools.partial(subprocess.run, capture_output=True, text=True, env=env, check=True)
    hashed = run(["nix", "hash", "path", str(tmp_path / "src")]).stdout.strip()
    added = run(["nix", "store", "add-path", "--name", "source", str(tmp_path / "src")])
    assert offline.source_path(hashed) == added.stdout.strip()


#: A build log line as Nix 2.8 writes it when a builder cannot be started: its
#: serialised error, NUL-padded (the review's `Error  Error  p  executing …`).
GARBLED = (
    "\x05\x00\x00\x00\x00\x00\x00\x00Error\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
    "\x05\x00\x00\x00\x00\x00\x00\x00Error\x00\x00\x00p\x00\x00\x00\x00\x00\x00\x00"
    "executing 'host.nix-is-missing--run-tests/nixpkgs/make_host.py': No such file or "
    "directory\x00\x00\x00\x00\x00\x00\x00\x00"
)


def test_a_stand_in_without_host_nix_gets_a_clear_message() -> None:
    from nixgen.building import offline

    state = NixLog()
    drv = "/nix/store/zcgn88sbs053if0fj31ivcmshc5kfpdy-stub-host-tools.drv"
    for line in (
        event(action="start", id=1, level=3, type=105, fields=[drv, "", 1, 1]),
        event(action="result", id=1, type=101, fields=[GARBLED]),
        event(action="msg", level=0, msg=f"error: builder for '{drv}' failed with exit code 1"),
    ):
        state.feed(line)
    report = state.failure_report(10)
    assert (
        "executing 'host.nix-is-missing--run-tests/nixpkgs/make_host.py': No such file or "
        "directory" in report
    )
    assert not any("\x00" in line or "Error" in line for line in report)
    [note] = offline.notes(report, offline=True)
    assert "has no host.nix" in note and "scripts/offline-inputs.sh DIR" in note


def test_a_failed_download_points_at_offline() -> None:
    from nixgen.building import offline

    message = (
        "unable to download 'https://api.github.com/repos/huggingface/kernels/tarball/8ac69f': "
        "Couldn't resolve host name (6)"
    )
    [note] = offline.notes([f"error: {message}"], offline=False)
    assert "Nix could not download (https://api.github.com/" in note
    assert "--offline" in note and "scripts/offline-inputs.sh" in note


def test_a_host_builder_outside_the_sandbox_names_the_sandbox_setting() -> None:
    """A stand-in's builder is a host program (its bash): without the script's
    `extra-sandbox-paths`, Nix cannot start it, and the note names the setting's file."""
    from nixgen.building import offline

    report = ["error: executing '/usr/bin/bash': No such file or directory"]
    [note] = offline.notes(report, offline=True)
    assert "/usr/bin/bash is not in the Nix sandbox" in note
    assert 'export NIX_CONFIG="$(cat DIR/nix.conf)"' in note
    assert "scripts/offline-inputs.sh DIR" in note
    # A store path that is missing is something else: no note.
    missing = ["error: executing '/nix/store/0123-bash/bin/bash': No such file or directory"]
    assert offline.notes(missing, offline=True) == []


@pytest.mark.slow
def test_the_script_lays_out_the_stand_ins(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(REPO / "scripts" / "offline-inputs.sh"), str(tmp_path / "inputs")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    table = tomllib.loads(done.stdout)["override-input"]
    assert table == {
        "nixpkgs": f"path:{tmp_path / 'inputs' / 'nixpkgs'}",
        "kernel-builder": f"path:{tmp_path / 'inputs' / 'kernel-builder'}",
    }
    assert (tmp_path / "inputs" / "nixpkgs" / "host.nix").is_file()
    assert (tmp_path / "inputs" / "kernel-builder" / "flake.nix").is_file()
    assert "nixgen build --offline --override-input nixpkgs path:" in done.stderr
    # The sandbox setting the stand-ins need, printed and in a file for NIX_CONFIG: the
    # machine's system directories first, as the tests' own setting has them.
    line = (tmp_path / "inputs" / "nix.conf").read_text().removesuffix("\n")
    assert line in done.stderr.splitlines()[-1] and "\n" not in line
    system = " ".join(p for p in nixtools.make_host.system_dirs() if Path(p).exists())
    assert line.startswith(f"extra-sandbox-paths = {system} ")


@pytest.mark.build
def test_offline_builds_with_the_laid_out_stand_ins(tmp_path: Path) -> None:
    root = tmp_path / "relu-off"
    scaffold.create(root, "relu-off", ["cpp-cpu"])
    script = REPO / "scripts" / "offline-inputs.sh"
    laid = subprocess.run(
        [str(script), str(tmp_path / "inputs")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        check=True,
        timeout=300,
    )
    (root / "nixgen.toml").write_text("offline = true\n" + laid.stdout)
    variant = f"torch213-cxx11-cpu-{SYSTEM}"
    env = {"NIX_CONFIG": nixtools.NIX_CONFIG}
    done = nixgen("build", "--variant", variant, cwd=root, env=env, timeout=1800)
    assert done.returncode == 0, done.stderr
    assert (root / "build" / variant).is_dir()
