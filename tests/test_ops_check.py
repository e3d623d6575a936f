"""The torch ops check is a setup hook (nix/support/ops-check-hook.sh, the toolchain's
`opsCheck`), like the ABI check: it runs after the unpack, on the package directory the
derivation's own `torchOpsCheckDir` names, so an `overrideAttrs` of the phases keeps it and
`env.dontCheckPythonOps` (the kernels toolchain's switch) turns it off. Real builds, through
the stand-ins, of the pure-Python fixture and of the smallest compiled CPU fixture.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from .nixtools import NixError, have_nix, kernel_builder, make_stub, nix_build

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SYSTEM = "x86_64-linux"
MESSAGE = "torch ops registered without `add_op_namespace_prefix`"

_BAD_OP = """import torch


@torch.library.custom_op("simdns::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def _rendered(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


def _render(project: Path) -> None:
    result = CliRunner().invoke(main, ["render", str(project)])
    assert result.exit_code == 0, result.output


def _variant(project: Path, stub: Path, variant: str, override: str) -> str:
    """The expression of `variant`'s package of `project`, with `override` applied
    (`overrideAttrs`)."""
    return f"""
      let
        p = import {project}/nix;
        args = {{
          nixpkgs = {stub}; kernel-builder = {kernel_builder(stub)}; system = "{SYSTEM}";
        }};
        v = builtins.head (builtins.filter (v: v.name == "{variant}") (p.variants "{SYSTEM}"));
      in
      (p.variantPackage args v).overrideAttrs ({override})
    """


# An install phase of the user's own: the check is not in it, and must still run.
_OWN_INSTALL = "o: { installPhase = ''mkdir -p $out; cp -r torch-ext/. $out/''; }"


def test_an_overridden_install_phase_keeps_the_check(tmp_path: Path, stub: Path) -> None:
    project = _rendered(tmp_path, "bad-registration")
    _render(project)
    with pytest.raises(NixError) as caught:
        nix_build(_variant(project, stub, "torch-cpu", _OWN_INSTALL), cwd=project, timeout=900)
    log = caught.value.stderr
    assert MESSAGE in log
    assert 'op.py:6: @custom_op("badns::gelu_and_mul", ...) on `_gelu_and_mul`' in log


def test_dont_check_python_ops_skips_the_check(tmp_path: Path, stub: Path) -> None:
    project = _rendered(tmp_path, "bad-registration")
    _render(project)
    skip = 'o: { env = o.env // { dontCheckPythonOps = "1"; }; }'
    out = nix_build(_variant(project, stub, "torch-cpu", skip), cwd=project, timeout=900)
    assert (out / "op.py").is_file()
    assert (out / "metadata.json").is_file()


def test_a_compiled_extension_with_an_overridden_install_phase_keeps_the_check(
    tmp_path: Path, stub: Path
) -> None:
    """The smallest compiled CPU fixture, with a module that registers an op by a literal
    name: its extension fails to build, naming the file and line, even with an install
    phase of the user's own."""
    project = _rendered(tmp_path, "simd-ops")
    (project / "torch-ext" / "simd_ops" / "twice.py").write_text(_BAD_OP)
    _render(project)
    variant = f"torch213-cxx11-cpu-{SYSTEM}"
    with pytest.raises(NixError) as caught:
        nix_build(_variant(project, stub, variant, _OWN_INSTALL), cwd=project, timeout=1800)
    log = caught.value.stderr
    assert MESSAGE in log
    assert 'twice.py:4: @custom_op("simdns::twice", ...) on `_twice`' in log
