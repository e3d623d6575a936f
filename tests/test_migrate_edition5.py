"""`nixgen migrate --edition 5`: a project written back in the edition before the field's 6.

The oracle is the field's own parser: kernels-data, inside the locked `kernels` client
(`kernels._rust.Build.open`, reached through tests/client.py), which reads edition 6 and
upgrades edition 5 in memory. Every C++ backend's project parses there before and, migrated,
after, with the same backends; migrating again to edition 6 gives back the original file
byte for byte; the Rust kernels of a [tvm-ffi] project get one located error each.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main
from nixgen.core import tables

from . import client
from .conftest import EXAMPLES, copy_out

CPP_LANGUAGES = [lang for lang in tables.LANGUAGES if lang.startswith("cpp-")]


def client_backends(root: Path) -> list[str]:
    """The backends kernels-data reads from `root`'s build.toml (raises on refusal)."""
    return client.build_backends(root)


def edition5_round_trip(runner: CliRunner, root: Path, backends: list[str]) -> None:
    before = (root / "build.toml").read_bytes()
    assert client_backends(root) == backends
    result = runner.invoke(main, ["migrate", str(root), "--edition", "5"])
    assert result.exit_code == 0, result.output
    assert "from edition 6 to 5" in result.stderr
    assert client_backends(root) == backends
    # nixgen reads it too, and a second run has nothing to do.
    assert runner.invoke(main, ["validate", str(root)]).exit_code == 0
    again = runner.invoke(main, ["migrate", str(root), "--edition", "5"])
    assert again.exit_code == 0 and "already edition 5" in again.stderr
    # Going forward again restores the file exactly (comments and layout kept both ways).
    assert runner.invoke(main, ["migrate", str(root)]).exit_code == 0
    assert (root / "build.toml").read_bytes() == before


@pytest.mark.parametrize("language", CPP_LANGUAGES)
@pytest.mark.slow
def test_each_cpp_backend_parses_in_kernels_data(tmp_path: Path, language: str) -> None:
    runner = CliRunner()
    root = tmp_path / "demo"
    made = runner.invoke(main, ["init", "relu-demo", "--dir", str(root), "-l", language])
    assert made.exit_code == 0, made.output
    edition5_round_trip(runner, root, [tables.LANGUAGE_BACKEND[language]])


@pytest.mark.parametrize("example", ["relu-cpu", "relu-cuda", "relu-xpu"])
def test_examples_parse_in_kernels_data(tmp_path: Path, example: str) -> None:
    root = tmp_path / example
    copy_out(EXAMPLES / example, root)
    backend = example.removeprefix("relu-")
    edition5_round_trip(CliRunner(), root, [backend])


def test_torch_noarch_keys_take_their_edition5_spelling(tmp_path: Path) -> None:
    (tmp_path / "build.toml").write_text(
        '[general]\nname = "noarch-demo"\nversion = 1\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cpu", "cuda"]\n\n[torch-noarch]\n'
        'cuda-capabilities = ["8.0"]  # metadata only\n'
    )
    runner = CliRunner()
    assert runner.invoke(main, ["migrate", str(tmp_path), "--edition", "5"]).exit_code == 0
    text = (tmp_path / "build.toml").read_text()
    assert 'cuda_capabilities = ["8.0"]  # metadata only\n' in text
    assert client_backends(tmp_path) == ["cpu", "cuda"]


@pytest.mark.slow
def test_rust_kernels_of_tvm_ffi_are_refused_by_name(tmp_path: Path) -> None:
    root = tmp_path / "relu-tvm"
    made = CliRunner().invoke(
        main, ["init", "relu-tvm", "--dir", str(root), "-l", "rust-cpu", "--binding", "tvm-ffi"]
    )
    assert made.exit_code == 0, made.output
    before = (root / "build.toml").read_bytes()
    result = CliRunner().invoke(main, ["migrate", str(root), "--edition", "5"])
    assert result.exit_code == 2
    line = next(i for i, text in enumerate(before.decode().splitlines(), 1) if "rust-cpu" in text)
    assert f"build.toml:{line}:" in result.stderr
    assert "`rust-cpu` kernel `relu_rs` has no edition-5 form" in result.stderr
    assert "Traceback" not in result.output
    assert (root / "build.toml").read_bytes() == before


def test_rust_kernels_linked_into_torch_stay_in_nixgen_toml(tmp_path: Path) -> None:
    """relu-mixed's Rust crate is nixgen's own (nixgen.toml): its build.toml goes to edition 5
    with the C++ kernels, which the client reads."""
    root = tmp_path / "relu-mixed"
    copy_out(EXAMPLES / "relu-mixed", root)
    runner = CliRunner()
    result = runner.invoke(main, ["migrate", str(root), "--edition", "5"])
    assert result.exit_code == 0, result.output
    assert client_backends(root) == ["cpu", "cuda"]
    assert "[kernel.leaky_relu_rs]" in (root / "nixgen.toml").read_text()
    assert runner.invoke(main, ["validate", str(root)]).exit_code == 0
