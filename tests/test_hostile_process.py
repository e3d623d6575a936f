"""Hostile surroundings, round 2: streams, signals, locales, a vanished working directory,
usage errors under ``--json``, and ``init``/``migrate`` arguments nixgen cannot write.

Every case runs the real ``python -m nixgen`` in a subprocess and must end with a clean
message and the documented exit status (0, 1 stale, 2 input/output the user must fix,
130 interrupted), never a traceback or an "internal error".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .hostile import BUILD_TOML, project

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


def run(
    args: list[str], *, cwd: Path, python: list[str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[bytes]:
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **kwargs.pop("env", {}),
    }
    kwargs.setdefault("stdout", subprocess.PIPE)
    done = subprocess.run(
        [sys.executable, *(python or ["-m", "nixgen"]), *args],
        cwd=cwd,
        stderr=subprocess.PIPE,
        timeout=60,
        env=env,
        **kwargs,
    )
    for stream in (done.stdout or b"", done.stderr):
        assert b"Traceback" not in stream, stream.decode(errors="replace")
        assert b"internal error" not in stream, stream.decode(errors="replace")
    return done


# ------------------------------------------------------------------ F: streams and signals


def test_a_closed_stdout(tmp_path: Path) -> None:
    root = project(tmp_path)
    for args in (["validate", "."], ["render", "."], ["render", "."], ["validate", ".", "--json"]):
        done = run(args, cwd=root, stdout=None, preexec_fn=lambda: os.close(1))
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "args", [["show", "."], ["validate", ".", "--json"], ["schema"], ["variants", "."]]
)
def test_a_full_stdout(tmp_path: Path, args: list[str]) -> None:
    root = project(tmp_path)
    with open("/dev/full", "wb") as full:
        done = run(args, cwd=root, stdout=full)
    assert done.returncode == 2
    assert b"cannot write to standard output (No space left on device)" in done.stderr


def test_non_ascii_values_under_the_c_locale(tmp_path: Path) -> None:
    root = project(tmp_path, BUILD_TOML.replace('name = "relu"', 'name = "r\u00e9lu-\u2713"'))
    env = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    done = run(["validate", ".", "--json"], cwd=root, env=env)
    assert done.returncode == 2
    answer = json.loads(done.stdout)
    assert "r\u00e9lu-\u2713" in answer["problems"][0]["message"]
    done = run(["validate", "."], cwd=root, env=env)
    assert done.returncode == 2
    assert b"general.name" in done.stderr


@pytest.mark.parametrize("module", ["click", "jinja2"])
def test_ctrl_c_during_start_up(tmp_path: Path, module: str) -> None:
    """SIGINT arrives while nixgen imports a module (deterministically, from an import
    hook): a one-line "interrupted" and status 130, never a traceback from an import."""
    root = project(tmp_path)
    hook = (
        "import builtins, os, signal, sys\n"
        "real = builtins.__import__\n"
        "def imp(name, *a, **k):\n"
        f"    if name == {module!r}:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "    return real(name, *a, **k)\n"
        "import nixgen.cmdline.entry\n"
        "builtins.__import__ = imp\n"
        "sys.argv = ['nixgen', *sys.argv[1:]]\n"
        "nixgen.cmdline.entry.main()\n"
    )
    args = ["validate", "."] if module == "click" else ["render", "."]
    done = run(args, cwd=root, python=["-c", hook])
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().endswith(b"interrupted")


def test_a_deleted_working_directory(tmp_path: Path) -> None:
    root = project(tmp_path)
    gone = tmp_path / "gone"
    gone.mkdir()
    done = run(["validate", str(root)], cwd=gone, preexec_fn=lambda: os.rmdir(gone))
    assert done.returncode == 0, done.stderr
    gone.mkdir()
    done = run(["render", str(root)], cwd=gone, preexec_fn=lambda: os.rmdir(gone))
    assert done.returncode == 0, done.stderr
    gone.mkdir()
    done = run(["validate", "."], cwd=gone, preexec_fn=lambda: os.rmdir(gone))
    assert done.returncode == 2
    assert b"the current directory no longer exists" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "--bogus", "--json"],
        ["variants", ".", "--json", "--system", "no-such-system", "--bogus"],
        ["--json", "validate"],
    ],
)
def test_usage_errors_answer_in_json(tmp_path: Path, args: list[str]) -> None:
    root = project(tmp_path)
    done = run(args, cwd=root)
    assert done.returncode == 2
    answer = json.loads(done.stdout)
    assert answer["ok"] is False
    assert "option" in answer["problems"][0]["message"]


@pytest.mark.parametrize("interval", ["nan", "inf", "1e308", "-inf"])
def test_watch_interval_must_be_a_sensible_number(tmp_path: Path, interval: str) -> None:
    root = project(tmp_path)
    done = run(["watch", ".", "--interval", interval, "--max-renders", "1"], cwd=root)
    assert done.returncode == 2
    assert b"Invalid value for '--interval'" in done.stderr
    assert not (root / "nix").exists()


# ------------------------------------------------------------------ G: init and migrate

EDITION5 = (
    BUILD_TOML.replace("edition = 6", "edition = 5")
    .replace('language = "cpp-cpu"', 'backend = "cpu"')
    .replace('license = "Apache-2.0"\n', "")
)


@pytest.mark.parametrize(
    "license", [b"MIT\x7f", b"MIT\x07", b"MIT\x1b[31m", b"Apache\xff-2.0", b"MIT\nOR X"]
)
def test_init_license_that_cannot_be_written(tmp_path: Path, license: bytes) -> None:
    done = run(["init", "kern", "--license", os.fsdecode(license)], cwd=tmp_path)
    assert done.returncode == 2
    assert b"Invalid value for '--license'" in done.stderr
    assert not (tmp_path / "kern").exists(), "a half-made project was left behind"


@pytest.mark.parametrize("license", [b"Apache\xff-2.0", b"MIT\x7f"])
def test_migrate_license_that_cannot_be_written(tmp_path: Path, license: bytes) -> None:
    root = project(tmp_path, EDITION5)
    before = (root / "build.toml").read_bytes()
    done = run(["migrate", ".", "--license", os.fsdecode(license)], cwd=root)
    assert done.returncode == 2
    assert b"Invalid value for '--license'" in done.stderr
    assert (root / "build.toml").read_bytes() == before


def test_init_license_with_odd_but_printable_text_round_trips(tmp_path: Path) -> None:
    done = run(["init", "kern", "--license", "LicenseRef-Cafe-1.0 OR MIT"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert run(["validate", "--strict", "."], cwd=tmp_path / "kern").returncode == 0
    # Printable, but no SPDX identifier (SPDX ids are ASCII letters, digits, `.` and `-`).
    refused = run(["init", "kern2", "--license", "LicenseRef-Caf\u00e9 OR MIT"], cwd=tmp_path)
    assert refused.returncode == 2
    assert "unknown SPDX license identifier `LicenseRef-Caf\u00e9`".encode() in refused.stderr


# ------------------------------------------------- E: a project path Nix cannot parse


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed")
def test_build_a_project_whose_path_has_a_space(tmp_path: Path) -> None:
    """`nix build '/a b#…'` is not a valid flake reference (Nix does not unescape `%20`):
    nixgen runs Nix in the project with `.` instead, and Nix finds the flake."""
    from nixgen.building.nixcommand import flake_ref
    from tests.nixtools import nix_env

    root = tmp_path / "my kernels #1"
    root.mkdir()
    (root / "flake.nix").write_text('{ outputs = { self }: { x = "found"; }; }\n')
    ref = flake_ref(root)  # Nix runs in the project directory
    done = subprocess.run(
        ["nix", "eval", "--raw", f"{ref}#x"],
        cwd=root,
        env=nix_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout == "found", done.stderr
    assert flake_ref(tmp_path) == str(tmp_path.resolve())


def test_build_dry_run_on_a_path_with_a_space(tmp_path: Path) -> None:
    root = project(tmp_path, name="my kernels")
    done = run(["build", ".", "--dry-run"], cwd=root)
    assert done.returncode == 0, done.stderr
    evaluate = done.stdout.decode().splitlines()[-2]
    assert evaluate.startswith(f"cd '{root.resolve()}' && nix eval ")
    assert "'.#packages." in evaluate


def test_an_empty_binding_list_next_to_compiled_kernels_is_flagged(tmp_path: Path) -> None:
    text = BUILD_TOML.replace('src = ["torch-ext/torch_binding.cpp"]', "src = []")
    root = project(tmp_path, text)
    done = run(["validate", "."], cwd=root)
    assert done.returncode == 0
    assert b"build.toml:9:7: warning: torch.src: `src` is empty" in done.stderr
    assert b"nothing registers the kernels' ops" in done.stderr
