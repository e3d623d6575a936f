"""The host half of a ``.cu`` file is compiled by the stdenv's compiler, not by nvcc's own.

Real nixpkgs wraps nvcc so that its PATH starts with ``cudaPackages.backendStdenv.cc/bin``
(``cuda_nvcc.nix``, NixOS/nixpkgs#465329): a host compiler named without a path (``-ccbin
g++``, or no ``-ccbin``) is nixpkgs' gcc against nixpkgs' glibc, not the toolchain's
manylinux_2_28 compiler. The nvcc stand-in (tests/nixpkgs/cuda.nix) models that wrapper with a
decoy ``gcc``/``g++``/``cc``/``c++`` first on its PATH that fails loudly. A rendered CUDA
kernel builds through it, and the same kernel with the host compiler named the old way
(``-ccbin "$CXX"``, a bare name) fails on the decoy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nixgen.checking import project
from nixgen.planning import plan
from nixgen.rendering import render
from nixgen.writing import write

from .conftest import copy_out
from .nixtools import NixError, have_nix, kernel_builder, make_stub, nix_build, require_host

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SYSTEM = "x86_64-linux"

pytestmark = [
    pytest.mark.nix,
    pytest.mark.build,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]


@pytest.fixture(autouse=True)
def _nvcc() -> None:
    require_host("cuda", "prefix", reason="no CUDA toolkit (nvcc) on this machine")


#: How the generated command names the host compiler (nix/compile.nix, ninja-escaped and
#: shell-quoted in the configure phase), and the bare-name form it replaced.
FULL_PATH = '-ccbin "$$(command -v "$$CXX")"'
BARE_NAME = '-ccbin "$$CXX"'
DECOY = "nvcc ran the decoy host compiler"


def _kernel(root: Path, stub: Path, *, patch: bool) -> str:
    """The relu_cuda kernel of the CUDA 13.0 variant; with ``patch``, its build plan names
    the host compiler by bare name instead (the generated command must hold the full-path
    form either way)."""
    replacement = _nix(BARE_NAME if patch else FULL_PATH)
    return f"""
      let
        p = import ./nix;
        v = builtins.head (builtins.filter
          (v: v.backend == "cuda" && v.backendVersion == "13.0") (p.variants "{SYSTEM}"));
        d = p.variantPackage {{
          nixpkgs = {stub}; kernel-builder = {kernel_builder(stub)}; system = "{SYSTEM}";
        }} v;
        k = d.nixgen.kernels.relu_cuda;
        without = builtins.replaceStrings [ {_nix(FULL_PATH)} ] [ "" ] k.configurePhase;
      in
      assert without != k.configurePhase;
      k.overrideAttrs (_: {{
        configurePhase =
          builtins.replaceStrings [ {_nix(FULL_PATH)} ] [ {replacement} ] k.configurePhase;
      }})
    """


def _nix(text: str) -> str:
    """``text`` as a Nix string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


@pytest.fixture(scope="module")
def cuda_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("host-compiler")
    root = tmp / "relu-cuda"
    copy_out(EXAMPLES / "relu-cuda", root, "nix")
    write.write(root, render.render(plan.make(project.read(root).build)))
    return root, make_stub(tmp / "stub")


def test_the_generated_cuda_kernel_builds_with_the_stdenv_compiler(
    cuda_project: tuple[Path, Path],
) -> None:
    root, stub = cuda_project
    out = nix_build(_kernel(root, stub, patch=False), cwd=root, timeout=900)
    assert list(out.rglob("*.a")), f"no archive in {out}"


def test_a_bare_host_compiler_name_reaches_the_decoy_and_fails(
    cuda_project: tuple[Path, Path],
) -> None:
    root, stub = cuda_project
    with pytest.raises(NixError) as caught:
        nix_build(_kernel(root, stub, patch=True), cwd=root, timeout=900)
    assert DECOY in str(caught.value.stderr)
