"""Real builds of the fixture projects of issue 12 (tests/fixtures/): each is copied out
of the work tree, rendered, built through the stub nixpkgs (`--override-input nixpkgs
path:<stub>`), and — for the CPU ones — loaded with the PyPI `kernels` client and checked
against torch. The bad-registration fixture must fail to build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from .cudatools import (
    demangle,
    dynamic_symbols,
    needed,
    needs_wheels,
    torch_cuda_symbols,
    unresolved,
)
from .nixtools import NixError, flake_build, flake_eval, have_nix, make_stub

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SYSTEM = "x86_64-linux"
CPU_VARIANT = f"torch213-cxx11-cpu-{SYSTEM}"


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fixtures")


def rendered(workdir: Path, name: str) -> Path:
    """A rendered copy of fixture `name` (outside any git work tree)."""
    target = workdir / name
    if not target.exists():
        shutil.copytree(FIXTURES / name, target)
        result = CliRunner().invoke(main, ["render", str(target)])
        assert result.exit_code == 0, result.output
    return target


def build(workdir: Path, stub: Path, name: str, variant: str = CPU_VARIANT) -> Path:
    """The built variant, laid out as `<workdir>/<name>-built/<variant>` for the client."""
    [out] = flake_build(rendered(workdir, name), variant, stub=stub, timeout=1800)
    layout = workdir / f"{name}-built"
    layout.mkdir(exist_ok=True)
    link = layout / variant
    if not link.exists():
        link.symlink_to(out)
    return layout


def load(layout: Path) -> ModuleType:
    import kernels as client  # locked (requirements/dev.txt): never skipped

    return client.get_local_kernel(layout, backend="cpu")


def undefined_symbols(library: Path) -> list[str]:
    done = subprocess.run(
        ["nm", "-D", "--undefined-only", str(library)], capture_output=True, text=True, check=True
    )
    return [line.split()[-1] for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def torch() -> Any:
    return pytest.importorskip("torch")


# ------------------------------------------------------------------ shared headers


@pytest.fixture(scope="module")
def simd_ops(workdir: Path, stub: Path) -> ModuleType:
    return load(build(workdir, stub, "simd-ops"))


def test_kernels_including_headers_listed_elsewhere_build_and_match_torch(
    simd_ops: ModuleType, torch: Any
) -> None:
    generator = torch.Generator().manual_seed(12)
    for shape in [(0,), (1,), (3,), (4,), (1003,), (17, 33)]:
        x = torch.randn(shape, generator=generator)
        torch.testing.assert_close(simd_ops.relu(x), torch.relu(x), rtol=0, atol=0)
        torch.testing.assert_close(simd_ops.scale(x, -2.5), x * -2.5, rtol=0, atol=0)
    x = torch.randn(40, 30, generator=generator).t()
    torch.testing.assert_close(simd_ops.scale(x, 3.0), x * 3.0, rtol=0, atol=0)


def _kernel_drvs(project: Path, stub: Path) -> dict[str, str]:
    drvs: dict[str, str] = flake_eval(
        project,
        f"packages.{SYSTEM}.{CPU_VARIANT}",
        stub=stub,
        apply="p: builtins.mapAttrs (n: k: k.drvPath) p.passthru.nixgen.kernels",
    )
    return drvs


def test_a_source_edit_rebuilds_one_kernel_a_shared_header_edit_rebuilds_all(
    workdir: Path, stub: Path
) -> None:
    project = workdir / "simd-ops-edits"
    shutil.copytree(rendered(workdir, "simd-ops"), project)
    before = _kernel_drvs(project, stub)
    with (project / "scale_simd" / "scale.cpp").open("a") as handle:
        handle.write("// edited\n")
    after_source = _kernel_drvs(project, stub)
    assert after_source["relu_simd"] == before["relu_simd"]
    assert after_source["scale_simd"] != before["scale_simd"]
    with (project / "common" / "simd.hpp").open("a") as handle:
        handle.write("// edited\n")
    after_header = _kernel_drvs(project, stub)
    assert after_header["relu_simd"] != after_source["relu_simd"]
    assert after_header["scale_simd"] != after_source["scale_simd"]


# ------------------------------------------------------------------- registration


def test_ops_registered_without_namespace_prefix_fail_the_build(workdir: Path, stub: Path) -> None:
    with pytest.raises(NixError) as caught:
        build(workdir, stub, "bad-registration", "torch-cpu")
    log = caught.value.stderr
    assert "torch ops registered without `add_op_namespace_prefix`" in log
    assert 'op.py:6: @custom_op("badns::gelu_and_mul", ...) on `_gelu_and_mul`' in log


# ------------------------------------------------------------------------- OpenMP


@pytest.fixture(scope="module")
def omp_layout(workdir: Path, stub: Path) -> Path:
    return build(workdir, stub, "omp-rowsum")


def _library(variant_dir: Path) -> Path:
    [library] = sorted(variant_dir.glob("*.abi3.so"))
    return library


def test_openmp_kernel_links_the_openmp_runtime(omp_layout: Path) -> None:
    library = _library(omp_layout / CPU_VARIANT)
    dynamic = subprocess.run(
        ["readelf", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout
    assert "Shared library: [libgomp.so.1]" in dynamic
    gomp = [s for s in undefined_symbols(library) if s.startswith("GOMP_")]
    assert gomp, "the kernel's parallel regions call the OpenMP runtime"
    # Each resolved against libgomp's version nodes, none left dangling.
    assert all("@GOMP_" in s or "@OMP_" in s for s in gomp), gomp


def test_openmp_kernel_matches_torch(omp_layout: Path, torch: Any) -> None:
    module = load(omp_layout)
    generator = torch.Generator().manual_seed(3)
    for shape in [(0, 4), (1, 1), (7, 300), (513, 17)]:
        x = torch.randn(shape, generator=generator, dtype=torch.float64)
        torch.testing.assert_close(module.rowsum(x), x.sum(dim=1))
    assert module.omp_threads() >= 1


# --------------------------------------------------------------------- stable ABI

STABLE_VARIANT = f"torch-stable-abi211-cpu-{SYSTEM}"


def test_stable_abi_variant_targets_torch_211_and_loads_in_213(
    workdir: Path, stub: Path, torch: Any
) -> None:
    module = load(build(workdir, stub, "stable-abi", STABLE_VARIANT))
    # The kernel was compiled with -DTORCH_TARGET_VERSION=0x020b000000000000.
    assert module.target_version() == 0x020B
    x = torch.randn(2048, generator=torch.Generator().manual_seed(5)) * 20
    torch.testing.assert_close(module.softplus(x), torch.nn.functional.softplus(x))


# ------------------------------------------------------------------------ tvm-ffi

TVM_FFI_VARIANT = f"tvm-ffi01-cpu-{SYSTEM}"


def test_tvm_ffi_extension_imports_and_runs(workdir: Path, stub: Path, torch: Any) -> None:
    pytest.importorskip("tvm_ffi")
    layout = build(workdir, stub, "tvm-ffi-clamp", TVM_FFI_VARIANT)
    module = load(layout)
    x = torch.randn(999, generator=torch.Generator().manual_seed(9))
    torch.testing.assert_close(module.clamp(x, -0.5, 0.25), x.clamp(-0.5, 0.25), rtol=0, atol=0)
    # What the anchor's tvm-ffi `_ops.py` offers, namespaced by this build.
    ops_name = json.loads((layout / TVM_FFI_VARIANT / "metadata.json").read_text())["id"]
    assert module.jax_add_ffi_target_name_prefix("clamp") == f"{ops_name}.clamp"
    assert module.has_jax in (True, False)
    with pytest.raises(TypeError, match="float32 tensors only"):
        module.clamp(x.double(), 0.0, 1.0)
    needed = subprocess.run(
        ["readelf", "-d", str(_library(layout / TVM_FFI_VARIANT))],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Shared library: [libtvm_ffi.so]" in needed


# --------------------------------------------------------------------------- CUDA

CUDA_VARIANT = f"torch212-cxx11-cu130-{SYSTEM}"


@needs_wheels
def test_cuda_kernel_using_guard_and_stream_compiles_and_links(workdir: Path, stub: Path) -> None:
    project = rendered(workdir, "cuda-guard")
    # The link step is in the build.ninja the configure phase writes.
    # The link step is the extension's, behind the variant's provenance stamp.
    phase = flake_eval(
        project,
        f"packages.{SYSTEM}.{CUDA_VARIANT}",
        stub=stub,
        apply="v: (v.passthru.nixgen.unstamped or v).configurePhase",
    )
    assert "-lc10_cuda" in phase and "-ltorch_cuda" in phase and "-lcudart" in phase
    library = _library(build(workdir, stub, "cuda-guard", CUDA_VARIANT) / CUDA_VARIANT)
    # Linked against torch's real CUDA build (torch 2.11.0's wheel): it needs c10_cuda, and
    # every torch symbol it takes, the CUDA device API's (c10::cuda::) included, is defined
    # there.
    assert "libc10_cuda.so" in needed(library)
    torch_symbols = torch_cuda_symbols()
    assert unresolved(library, torch_symbols) == []
    names = demangle(sorted(dynamic_symbols(library, defined=False) & torch_symbols))
    assert any(n.startswith("c10::cuda::getCurrentCUDAStream") for n in names)
    assert any(n.startswith("c10::cuda::") for n in names)


# ------------------------------------------------- the anchor's own examples, if present

ANCHOR = Path("/work/.mirror/huggingface+kernels/repo")
_PLUGIN = """
import os, pathlib, kernels
def _local(repo_id, *args, **kwargs):
    return kernels.get_local_kernel(pathlib.Path(os.environ["LOCAL_KERNEL"]), backend="cpu")
kernels.get_kernel = _local
"""


@pytest.mark.skipif(not ANCHOR.is_dir(), reason="no local mirror of huggingface/kernels")
@pytest.mark.parametrize(
    ("example", "variant"),
    [
        ("relu-tvm-ffi", TVM_FFI_VARIANT),
        ("relu-torch-stable-abi", STABLE_VARIANT),
    ],
)
def test_anchor_example_migrated_builds_and_passes_its_own_tests(
    workdir: Path, stub: Path, example: str, variant: str
) -> None:
    """An anchor example, migrated with `nixgen migrate` and nothing else (its hand-written
    flake.nix removed, as render's warning says), builds and passes its own tests, with
    `kernels.get_kernel` pointed at the local build."""
    pytest.importorskip("tvm_ffi")
    archive = subprocess.run(
        ["git", "-C", str(ANCHOR), "archive", "HEAD", f"examples/kernels/{example}"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(workdir)], input=archive, check=True)
    project = workdir / "examples" / "kernels" / example
    runner = CliRunner()
    assert runner.invoke(main, ["migrate", str(project)]).exit_code == 0
    (project / "flake.nix").unlink()
    assert runner.invoke(main, ["render", str(project)]).exit_code == 0
    [out] = flake_build(project, variant, stub=stub, timeout=1800)
    layout = workdir / f"{example}-built"
    layout.mkdir()
    (layout / variant).symlink_to(out)
    plugins = workdir / f"plugin-{example}"
    plugins.mkdir()
    (plugins / "localkernel.py").write_text(_PLUGIN)
    env = {**os.environ, "LOCAL_KERNEL": str(layout), "PYTHONPATH": str(plugins)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "localkernel",
            "-p",
            "no:cacheprovider",
            "tests",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout
