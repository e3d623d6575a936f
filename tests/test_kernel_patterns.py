"""Patterns of real kernel projects (issue 12), checked without building: shared headers
as compile inputs, the unlisted-include warning, a hand-written flake.nix.

The builds of the fixture projects (tests/fixtures/) are in tests/test_build_patterns.py.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.planning import plan
from nixgen.rendering import render

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


_EXTENSION = """
let
  p = import ./nix;
  v = builtins.head (builtins.filter (v: v.backend == "cpu") (p.variants "x86_64-linux"));
  d = p.variantPackage {
    nixpkgs = STUB; kernel-builder = KERNEL_BUILDER; system = "x86_64-linux";
  } v;
in {
  link = d.configurePhase;
  compile = d.nixgen.binding.configurePhase;
  bindingSrc = "${d.nixgen.binding.src}";
  # Each kernel: its source tree, and the sources its plan compiles.
  kernels = builtins.mapAttrs (name: k: {
    src = "${k.src}";
    compiled = map (o: o.source) k.nixgen.plan.objects;
  }) d.nixgen.kernels;
}
"""


def _cpu_extension(tmp_path: Path, name: str) -> dict[str, str]:
    """The CPU extension of a rendered fixture, evaluated with the stand-ins: the link's
    and the binding compile's configure phases, the binding's source tree."""
    from .nixtools import have_nix, kernel_builder, make_stub, nix_eval_json

    if not have_nix():
        pytest.skip("nix is not installed")
    root = _copy(tmp_path, name)
    assert CliRunner().invoke(main, ["render", str(root)]).exit_code == 0
    stub = make_stub(tmp_path / "stub")
    expr = _EXTENSION.replace("STUB", str(stub)).replace(
        "KERNEL_BUILDER", str(kernel_builder(stub))
    )
    got: dict[str, str] = nix_eval_json(expr, cwd=root, read_write=True)
    return got


# ------------------------------------------------------------------ shared headers


@pytest.mark.slow
def test_every_kernel_gets_every_listed_header_but_compiles_only_its_own_sources(
    tmp_path: Path,
) -> None:
    build = project.read(FIXTURES / "simd-ops").build
    tree = render.render(plan.make(build)).tree
    scale = tree["kernels/scale_simd.nix"].decode()
    assert 'sources = [ "scale_simd/scale.cpp" ];' in scale
    # The project's headers are written once, in project.nix; each kernel takes them as the
    # `headers` argument and adds those it does not list itself, as inputs.
    data = tree["project.nix"].decode()
    listed = ["common/dispatch.h", "common/simd.hpp", "torch-ext/torch_binding.h"]
    assert "  headers = [\n" + "".join(f'    "{h}"\n' for h in listed) + "  ];" in data
    for text in (scale, tree["kernels/relu_simd.nix"].decode()):
        assert "  headers,\n" in text
    # The binding compiles with every header too (nixgen.extension.mkExtension).
    assert "  headers,\n" in tree["extension.nix"].decode()
    got = _cpu_extension(tmp_path, "simd-ops")

    def files(tree: str) -> list[str]:
        return sorted(str(p.relative_to(tree)) for p in Path(tree).rglob("*") if p.is_file())

    assert files(got["bindingSrc"]) == sorted(["torch-ext/torch_binding.cpp", *listed])
    # Every kernel's source tree holds its own sources and every listed header; its plan
    # compiles only its own sources (nixgen.kernel.cpp).
    kernels: Any = got["kernels"]
    for name, kernel in build.kernels.items():
        own = [s for s in kernel.src if not s.endswith((".h", ".hpp"))]
        assert files(kernels[name]["src"]) == sorted({*kernel.src, *listed}), name
        assert kernels[name]["compiled"] == own, name


def test_unlisted_quoted_include_is_a_located_warning(tmp_path: Path) -> None:
    root = _copy(tmp_path, "simd-ops")
    (root / "scale_simd" / "extra.h").write_text("#define EXTRA 1\n")
    cpp = root / "scale_simd" / "scale.cpp"
    cpp.write_text('#include "extra.h"\n#include "not/in/project.h"\n' + cpp.read_text())
    result = CliRunner().invoke(main, ["validate", str(root)])
    assert result.exit_code == 0, result.output
    assert "build.toml:23:8: warning: kernel.scale_simd.src[0]: scale_simd/scale.cpp:1:" in (
        result.output
    )
    assert '`#include "extra.h"` names `scale_simd/extra.h`, which no `src` list names' in (
        result.output
    )
    assert 'add "scale_simd/extra.h" to kernel.scale_simd.src' in result.output
    # A name found nowhere in the project (a dependency's header) is left alone, and so
    # are headers another list names (common/simd.hpp, common/dispatch.h).
    assert "not/in/project.h" not in result.output
    assert result.output.count("warning") == 1


# ------------------------------------------------------------- hand-written flake


def test_render_warns_about_a_kept_hand_written_flake_and_hands_it_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = _copy(tmp_path, "simd-ops")
    mine = b"{ outputs = _: { }; }\n"
    (root / "flake.nix").write_bytes(mine)
    runner = CliRunner()
    first = runner.invoke(main, ["render", str(root)])
    assert first.exit_code == 0, first.output
    assert "flake.nix: warning: hand-written" in first.output
    assert "To hand it over to nixgen: mv " in first.output
    assert (root / "flake.nix").read_bytes() == mine
    # Every render repeats the warning, an unchanged one too.
    again = runner.invoke(main, ["render", str(root)])
    assert again.exit_code == 0, again.output
    assert "flake.nix: warning: hand-written" in again.output
    assert "nothing written" in again.output
    assert (root / "flake.nix").read_bytes() == mine
    # Removed: the next render writes the generated flake (not "up to date").
    (root / "flake.nix").unlink()
    second = runner.invoke(main, ["render", str(root)])
    assert "; flake.nix added" in second.output, second.output
    assert (root / "flake.nix").read_bytes().startswith(b"# @generated by nixgen")
    # --force replaces a hand-written one.
    (root / "flake.nix").write_bytes(mine)
    third = runner.invoke(main, ["render", "--force", str(root)])
    assert third.exit_code == 0, third.output
    assert (root / "flake.nix").read_bytes().startswith(b"# @generated by nixgen")


def test_check_ignores_a_hand_written_flake(tmp_path: Path) -> None:
    root = _copy(tmp_path, "simd-ops")
    runner = CliRunner()
    assert runner.invoke(main, ["render", str(root)]).exit_code == 0
    (root / "flake.nix").write_text("{ outputs = _: { }; }\n")
    result = runner.invoke(main, ["render", "--check", str(root)])
    assert result.exit_code == 0, result.output


# ------------------------------------------------------------------------ tvm-ffi


def test_tvm_ffi_kernels_get_the_tvm_ffi_headers_without_listing_them() -> None:
    build = project.read(FIXTURES / "tvm-ffi-clamp").build
    kernel = render.render(plan.make(build)).tree["kernels/clamp_cpu.nix"].decode()
    # The plan adds the library's `tvm-ffi` dependency (its headers and package, resolved by
    # nixgen.kernel.dependencies) though build.toml does not list it.
    assert 'depends = [ "tvm-ffi" ];' in kernel


def test_tvm_ffi_in_depends_is_a_located_error_that_says_why(tmp_path: Path) -> None:
    # The format's dependencies do not include `tvm-ffi` (nixgen's earlier edition 6 let a
    # kernel list it); the error says the [tvm-ffi] project's kernels need no such entry.
    root = _copy(tmp_path, "simd-ops")
    toml = root / "build.toml"
    toml.write_text(
        toml.read_text()
        .replace('src = ["scale_simd/scale.cpp"]', 'src = ["scale_simd/scale.cpp"]')
        .replace(
            '[kernel.scale_simd]\nlanguage = "cpp-cpu"\ndepends = ["torch"]',
            '[kernel.scale_simd]\nlanguage = "cpp-cpu"\ndepends = ["torch", "tvm-ffi"]',
        )
    )
    result = CliRunner().invoke(main, ["validate", str(root)])
    assert result.exit_code != 0
    assert "build.toml:22:21: error: kernel.scale_simd.depends[1]: unknown value `tvm-ffi`" in (
        result.output
    )
    assert "`tvm-ffi` is no dependency of the format" in result.output
    assert "Traceback" not in result.output


# ------------------------------------------------------------- OpenMP, stable ABI


@pytest.mark.slow
def test_openmp_flag_reaches_the_extension_link(tmp_path: Path) -> None:
    tree = render.render(plan.make(project.read(FIXTURES / "omp-rowsum").build)).tree
    assert 'linkFlags = [ "-fopenmp" ];' in tree["kernels/rowsum_omp.nix"].decode()
    link = _cpu_extension(tmp_path, "omp-rowsum")["link"]
    assert re.search(r"-shared .* -fopenmp", link), link


@pytest.mark.slow
def test_torch_kernels_and_binding_get_the_stable_abi_target_define(tmp_path: Path) -> None:
    tree = render.render(plan.make(project.read(FIXTURES / "stable-abi").build)).tree
    kernel = tree["kernels/softplus_cpu.nix"].decode()
    # `torch`: nixgen.kernel.dependencies gives its headers and the variant's stable-ABI
    # target (nixgen.torch.abiDefines); the library's unit tests check the flags.
    assert 'depends = [ "torch" ];' in kernel
    # The binding's compile (nixgen.extension.frameworks.torch.defines).
    compile = _cpu_extension(tmp_path, "stable-abi")["compile"]
    assert "-DTORCH_TARGET_VERSION=0x" in compile


@pytest.mark.slow
def test_torch_target_version_is_major_minor_shifted_like_torch_compares_it() -> None:
    from .nixtools import have_nix, nix_eval_json

    if not have_nix():
        pytest.skip("nix is not installed")
    lib = Path(__file__).resolve().parent.parent / "nix" / "torch.nix"
    stand_in = Path(__file__).resolve().parent / "nixpkgs" / "lib"
    got = nix_eval_json(
        f"let t = import {lib} {{ lib = import {stand_in}; }}; in map t.abiDefines "
        '[ { stableAbi = "2.11"; } { stableAbi = "2.9"; } { stableAbi = null; } ]'
    )
    assert got == [
        [f"-DTORCH_TARGET_VERSION={(2 << 56) | (11 << 48):#018x}"],
        [f"-DTORCH_TARGET_VERSION={(2 << 56) | (9 << 48):#018x}"],
        [],
    ]


@pytest.mark.slow
def test_torch_extension_links_the_backends_torch_libraries() -> None:
    """CUDA, ROCm and XPU bindings use torch's device API (guards, streams), so the link
    names torch's libraries of that backend, as the anchor's build does."""
    from .nixtools import have_nix, nix_eval_json

    if not have_nix():
        pytest.skip("nix is not installed")
    lib = Path(__file__).resolve().parent.parent / "nix" / "torch.nix"
    stand_in = Path(__file__).resolve().parent / "nixpkgs" / "lib"
    got = nix_eval_json(
        f"let t = import {lib} {{ lib = import {stand_in}; }}; "
        'torch = { outPath = "/T"; pythonModule.sitePackages = "sp"; }; '
        'python = { outPath = "/P"; libPrefix = "python3.11"; }; in '
        "map (backend: (t.framework { inherit torch python backend; }).libs) "
        '[ "cpu" "cuda" "rocm" "xpu" "metal" ]'
    )
    base = ["-L/T/sp/torch/lib", "-lc10", "-ltorch_cpu"]
    assert got == [
        base,
        [*base, "-lc10_cuda", "-ltorch_cuda"],
        [*base, "-lc10_hip", "-ltorch_hip"],
        [*base, "-lc10_xpu", "-ltorch_xpu"],
        base,
    ]
