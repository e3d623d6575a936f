"""The sandboxed build tier: every build the tests run is in the Nix sandbox
(`tests/nixtools.py` NIX_CONFIG), which sees the store and only the host paths the
stand-ins declare (`tests/nixpkgs/make_host.py` `sandbox_paths`). These tests show the tier
is on and has teeth: a kernel that reads a host file it never declared fails to build."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import textwrap
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from . import nixtools
from .fakenix import bundled

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)


def test_every_nix_command_of_the_tests_builds_in_the_sandbox(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    config = dict(
        line.split(" = ", 1) if " = " in line else (line.rstrip(" ="), "")
        for line in nixtools.NIX_CONFIG.splitlines()
    )
    assert config["sandbox"] == "true"
    declared = config["extra-sandbox-paths"].split()
    assert declared == nixtools.sandbox_paths()
    # Only host paths the stand-ins name, and none that lets a build see what it must not:
    # the tests' projects (pytest's temporary directories, the system's temp directory),
    # $HOME, the work tree's sources, or the whole root. Where the clone lives does not
    # matter: under /tmp, its venv (the Python a stand-in links to) is a sandbox path, and
    # holds none of those.
    repo = nixtools.TESTS.parent.resolve()
    venv = Path(sys.prefix).resolve()
    unseen = [
        Path(tempfile.gettempdir()),
        tmp_path_factory.getbasetemp(),
        Path.home(),
        repo,
        repo / "tests",
        repo / "examples",
    ]
    for path in map(Path, declared):
        assert path.is_absolute(), path
        for place in unseen:
            assert not place.resolve().is_relative_to(path.resolve()), (path, place)
        assert not path.resolve().is_relative_to(tmp_path_factory.getbasetemp().resolve()), path
        inside = path.resolve().is_relative_to(repo)
        assert not inside or path.resolve().is_relative_to(venv), path
    assert "/usr" in declared


def test_sandbox_paths_are_what_host_nix_names() -> None:
    facts = {
        "rust": {"rustupHome": "/usr", "cargoHome": "/missing/cargo", "toolchainBin": None},
        "python": {"prefixes": ["/usr/lib"], "executable": "/usr/bin/python3"},
        "cuda": None,
    }
    paths = nixtools.make_host.sandbox_paths(facts)
    assert paths == [p for p in nixtools.make_host.system_dirs() if Path(p).exists()]
    # A missing path is left out (Nix refuses to bind one); nested ones are held by a parent.
    assert "/missing/cargo" not in paths and "/usr/lib" not in paths


LEAK_TOML = """\
[general]
name = "leak"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.leak]
language = "cpp-cpu"
src = ["leak/leak.cpp"]
"""


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.build
def test_a_kernel_including_an_undeclared_host_header_fails_in_the_sandbox(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A header outside the project, on the host only, found through an absolute include.
    outside = tmp_path / "host-only"
    outside.mkdir()
    header = outside / "answer.h"
    header.write_text("inline int answer() { return 42; }\n")
    root = tmp_path / "leak"
    (root / "leak").mkdir(parents=True)
    (root / "torch-ext" / "leak").mkdir(parents=True)
    (root / "build.toml").write_text(LEAK_TOML)
    source = root / "leak" / "leak.cpp"
    # A fresh source each run: a kernel built once outside the sandbox (a valid path in the
    # store) would not be built again, so it could not fail.
    source.write_text(
        textwrap.dedent(f"""\
            // {uuid.uuid4()}
            #include "{header}"
            int leaked() {{ return answer(); }}
        """)
    )
    (root / "torch-ext" / "torch_binding.cpp").write_text("// never compiled\n")
    (root / "torch-ext" / "leak" / "__init__.py").write_text("")
    # On the host the source compiles: the header is there to read.
    host = subprocess.run(
        ["g++", "-fsyntax-only", str(source)], capture_output=True, text=True, check=False
    )
    assert host.returncode == 0, host.stderr
    stub = nixtools.make_stub(tmp_path / "stub")
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    nixtools.assert_real_nix()  # Nix >= 2.15 "builds" a bare .drv: nothing, exit 0
    variant = next(n for n in bundled(root) if n.startswith("torch213"))
    result = runner.invoke(
        main, ["build", str(root), "--no-link", "--variant", variant, *nixtools.overrides(stub)]
    )
    assert result.exit_code == 1, result.output
    assert f"kernel leak ({variant}) failed" in result.output
    assert f"{header}: No such file or directory" in result.output


NOARCH_TOML = """\
[general]
name = "tri"
version = 1
edition = 6
license = "MIT"
backends = ["cpu"]

[torch-noarch]
"""


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.build
def test_a_noarch_kernel_builds_in_the_sandbox_bit_for_bit(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "tri"
    (root / "torch-ext" / "tri").mkdir(parents=True)
    (root / "build.toml").write_text(NOARCH_TOML)
    (root / "torch-ext" / "tri" / "__init__.py").write_text("def one():\n    return 1\n")
    stub = nixtools.make_stub(tmp_path / "stub")
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    nixtools.assert_real_nix()
    result = runner.invoke(main, ["build", str(root), *nixtools.overrides(stub)])
    assert result.exit_code == 0, result.output
    out = (root / "build" / "torch-cpu").resolve()
    assert out.is_dir() and not out.name.endswith(".drv"), out  # the output, not the .drv
    assert sorted(p.name for p in out.iterdir()) == ["__init__.py", "_ops.py", "metadata.json"]
    assert "return 1" in (out / "__init__.py").read_text()
    # Rebuilt outside the sandbox, in another build directory: the same bytes.
    deriver = subprocess.run(
        ["nix-store", "--query", "--deriver", str(out)],
        env=nixtools.nix_env(), capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    nixtools.nix_build(file=deriver, check=True, sandbox=False)
