"""`nixgen compdb`: compile_commands.json from a variant's planned compile commands.

The oracle is clangd (Debian's, `clangd --check`): on the CPU example's kernel source it
finds no error with the database nixgen writes, and errors without it (torch's headers are
found only through the database's include paths, store paths of the realised inputs).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import compdb
from nixgen.cmdline.cli import main

from . import nixtools
from .conftest import EXAMPLES, copy_out

VARIANT = "torch213-cxx11-cpu-x86_64-linux"


CC = f"/nix/store/{'c' * 32}-gcc-wrapper"
CC_DRV = f"/nix/store/{'c' * 32}-gcc-wrapper.drv"
DEP_DRV = f"/nix/store/{'d' * 32}-dep.drv"


def part(objects: list[dict[str, str]], inputs: list[dict[str, str]] | None = None) -> dict:
    return {"objects": objects, "cc": CC, "ccDrv": CC_DRV, "inputs": inputs or []}


def test_commands_get_the_build_environment_filled_in(tmp_path: Path) -> None:
    include = tmp_path / "dep" / "include"
    include.mkdir(parents=True)
    dep = {"path": str(tmp_path / "dep"), "drv": DEP_DRV}
    cuda = 'nvcc -ccbin "$(command -v "$CXX")" -Xcompiler -fPIC -c k.cu -o k.o'
    gcc = "$CXX -ffile-prefix-map=$NIX_BUILD_TOP/= -fno-gnu-unique '-DX=a b' -c k.cpp -o k.o"
    parts = {
        "kernels": {
            "b_cuda": part([{"source": "k.cu", "object": "k.o", "command": cuda}]),
            "a_cpu": part(
                [{"source": "k.cpp", "object": "k.o", "command": gcc, "compiler": "gcc"}], [dep]
            ),
            # A Rust kernel: no planned objects, so no entry.
            "rs": part([]),
        },
        "binding": part([{"source": "b.c", "object": "b.o", "command": "$CC -c b.c -o b.o"}]),
    }
    root = tmp_path / "my project"
    entries = compdb.database(parts, root, frozenset({"-fno-gnu-unique"}))
    assert [e["file"] for e in entries] == [str(root / f) for f in ("k.cpp", "k.cu", "b.c")]
    assert entries[0]["arguments"] == [
        f"{CC}/bin/c++",
        f"-ffile-prefix-map={root}/=",
        "-DX=a b",
        "-isystem",
        str(include),
        "-c",
        "k.cpp",
        "-o",
        "k.o",
    ]
    assert entries[1]["arguments"][:3] == ["nvcc", "-ccbin", f"{CC}/bin/c++"]
    assert entries[2]["arguments"][0] == f"{CC}/bin/cc"
    assert all(e["directory"] == str(root) for e in entries)
    assert [d.path for d in compdb.drv_paths(parts)] == [CC_DRV, DEP_DRV]
    # Without the drop list GCC's flag stays (the build's own command).
    assert "-fno-gnu-unique" in compdb.database(parts, root)[0]["arguments"]


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.slow
def test_gcc_only_flags_come_from_the_nix_library() -> None:
    # GCC's `-fno-gnu-unique` (clang rejects it), nothing both families have.
    assert compdb.gcc_only_flags() == frozenset({"-fno-gnu-unique"})


def test_dry_run_prints_the_nix_commands(tmp_path: Path) -> None:
    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root)
    result = CliRunner().invoke(main, ["compdb", str(root), "--variant", VARIANT, "--dry-run"])
    assert result.exit_code == 0, result.output
    # The installable follows `--` (the `--apply` expression spans lines).
    assert f" -- '{root}#packages.x86_64-linux.{VARIANT}'\n" in result.stdout
    realise = result.stdout.splitlines()[-1]
    assert realise.startswith("nix build ") and "--no-link -- '<drvPath of each input>'" in realise
    assert not (root / "compile_commands.json").exists()


def test_an_unknown_variant_is_refused_with_the_closest(tmp_path: Path) -> None:
    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root)
    result = CliRunner().invoke(main, ["compdb", str(root), "--variant", VARIANT + "x"])
    assert result.exit_code == 2
    assert f"did you mean `{VARIANT}`" in result.stderr
    bad = CliRunner().invoke(main, ["compdb", str(root), "-o", "../out.json"])
    assert bad.exit_code == 2 and "--output" in bad.stderr


def clangd_errors(root: Path, source: str) -> int:
    done = subprocess.run(
        ["clangd", f"--check={source}", "--query-driver=/nix/store/**"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    tail = done.stderr.strip().splitlines()[-1]
    assert "All checks completed" in tail, done.stderr[-2000:]
    return int(tail.rsplit(",", 1)[1].split()[0])


@pytest.mark.skipif(not nixtools.have_nix(), reason="nix is not installed")
@pytest.mark.skipif(shutil.which("clangd") is None, reason="clangd is not installed (setup.sh)")
@pytest.mark.slow
def test_clangd_parses_the_cpu_example_with_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root)
    stub = nixtools.make_stub(tmp_path)
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    runner = CliRunner()
    cli = ["compdb", str(root), "--variant", VARIANT, *nixtools.overrides(stub)]
    result = runner.invoke(main, cli)
    assert result.exit_code == 0, result.output
    assert f"wrote compile_commands.json: 2 command(s) of {VARIANT}" in result.stderr
    path = root / "compile_commands.json"
    entries = json.loads(path.read_text())
    assert [Path(e["file"]).relative_to(root).as_posix() for e in entries] == [
        "relu_cpu/relu_cpu.cpp",
        "torch-ext/torch_binding.cpp",
    ]
    for entry in entries:
        # The toolchain's compiler wrapper and every include directory exist (realised).
        assert Path(entry["arguments"][0]).is_file()
        args = entry["arguments"]
        includes = [args[i + 1] for i, a in enumerate(args) if a == "-isystem"]
        assert any(p.endswith("/torch/include") for p in includes)
        assert all(Path(p).is_dir() for p in includes)
        assert "-fno-gnu-unique" not in args
    # Byte-identical run to run.
    before = path.read_bytes()
    again = runner.invoke(main, cli)
    assert again.exit_code == 0, again.output
    assert "up to date" in again.stderr
    assert path.read_bytes() == before
    assert clangd_errors(root, "relu_cpu/relu_cpu.cpp") == 0
    # Without the database clangd cannot find torch's headers: the check above can fail.
    path.unlink()
    assert clangd_errors(root, "relu_cpu/relu_cpu.cpp") > 0
