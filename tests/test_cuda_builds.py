"""Real CUDA builds through the stand-ins, with NVIDIA's own PyPI wheels (issue 22).

The stub nixpkgs builds `cudaPackages_13_0` and `cudaPackages_13_2` from the CUDA wheels of
their own version and the CUDA variants' torch from torch 2.11.0's CUDA wheel, all unpacked
once by scripts/cuda_wheels.py (host.nix `cudaWheels`); `cudaPackages_12_6` has the real
12.6 libraries and no compiler (PyPI has none). The fixture tests/fixtures/cuda-libs uses
what real CUDA kernels use (ATen/cuda/CUDAContext.h, the current stream, a cuBLAS call on
torch's handle, CUTLASS through `depends`, two .cu files sharing a .cuh header, a .cpp host
file); each 13.x variant is built once per session. No GPU: the results are checked for
device code, for the compiler that made it, and for links against the real torch CUDA
libraries.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nixgen.cmdline.cli import main

from .cudatools import (
    HAVE_WHEELS,
    SKIP_REASON,
    WHEELS,
    cuobjdump,
    demangle,
    dynamic_symbols,
    needed,
    needs_wheels,
    prefix,
    torch_cuda_symbols,
    unresolved,
)
from .nixtools import NixError, flake_build, flake_eval, have_nix, make_stub, nix_build, nix_env

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "cuda-libs"
SYSTEM = "x86_64-linux"
CAPABILITIES = ["8.0", "9.0"]
#: One variant per CUDA 13.x toolkit (the torch212 ones differ only in torch's version).
VARIANTS = {
    "13.0": f"torch213-cxx11-cu130-{SYSTEM}",
    "13.2": f"torch213-cxx11-cu132-{SYSTEM}",
}
CUDA12_VARIANT = f"torch213-cxx11-cu126-{SYSTEM}"


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)


def _library(variant_dir: Path) -> Path:
    [library] = sorted(variant_dir.glob("*.abi3.so"))
    return library


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("fixture") / "cuda-libs"
    shutil.copytree(FIXTURE, target)
    result = CliRunner().invoke(main, ["render", str(target)])
    assert result.exit_code == 0, result.output
    return target


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def built(request: pytest.FixtureRequest, project: Path, stub: Path) -> tuple[str, Path]:
    """(CUDA version, the built variant directory), one build per 13.x set per session."""
    if not HAVE_WHEELS:
        pytest.skip(SKIP_REASON)
    cuda: str = request.param
    [out] = flake_build(project, VARIANTS[cuda], stub=stub, timeout=3600)
    return cuda, out


# ------------------------------------------------------------------- the toolkits


@needs_wheels
@pytest.mark.parametrize("cuda", sorted(VARIANTS))
def test_each_13x_set_has_an_nvcc_of_its_own_version(stub: Path, cuda: str) -> None:
    attr = "cudaPackages_" + cuda.replace(".", "_")
    nvcc = nix_build(
        f'(import {stub} {{ system = "{SYSTEM}"; config.allowUnfree = true; }}).{attr}.cuda_nvcc'
    )
    done = _run([str(nvcc / "bin" / "nvcc"), "--version"])
    assert done.returncode == 0, done.stderr
    version = WHEELS[cuda]["cuda_nvcc"]["version"]
    assert f"release {cuda}, V{version}" in done.stdout


@needs_wheels
def test_cuda12_variant_evaluates_and_fails_to_build_saying_no_compiler_exists(
    project: Path, stub: Path
) -> None:
    drv = flake_eval(project, f"packages.{SYSTEM}.{CUDA12_VARIANT}.drvPath", stub=stub)
    assert drv.endswith(".drv")
    with pytest.raises(NixError) as failed:
        flake_build(project, CUDA12_VARIANT, stub=stub, timeout=1800)
    assert "cudaPackages_12_6.cuda_nvcc cannot be built" in failed.value.stderr
    assert "no CUDA 12.6 compiler exists here" in failed.value.stderr


# ------------------------------------------------------------------- the fixture


def test_fixture_uses_what_real_cuda_kernels_use() -> None:
    sources = {p.name: p.read_text() for p in (FIXTURE / "axpy_cuda").iterdir()}
    assert {"axpy.cu", "gemv.cu", "launch.cuh", "checks.cpp", "checks.h"} <= set(sources)
    assert all('#include "launch.cuh"' in sources[n] for n in ("axpy.cu", "gemv.cu"))
    assert "#include <ATen/cuda/CUDAContext.h>" in sources["checks.cpp"]
    assert "at::cuda::getCurrentCUDAStream()" in sources["axpy.cu"]
    assert "at::cuda::getCurrentCUDABlasHandle()" in sources["gemv.cu"]
    assert "cutlass::ceil_div" in sources["launch.cuh"]


def test_fixture_links_the_real_torch_cuda_libraries(built: tuple[str, Path]) -> None:
    cuda, vdir = built
    library = _library(vdir)
    assert {"libtorch_cuda.so", "libc10_cuda.so", "libcudart.so.13"} <= set(needed(library))
    # Every unversioned symbol the extension takes from elsewhere is defined by torch 2.11's
    # real CUDA build or, for the cuBLAS calls (resolved through the libcublas torch loads),
    # by the set's cuBLAS.
    torch_symbols = torch_cuda_symbols()
    cublas = prefix(cuda, "libcublas") / "lib" / "libcublas.so.13"
    cublas_symbols = {s.split("@")[0] for s in dynamic_symbols(cublas, defined=True)}
    assert unresolved(library, torch_symbols, cublas_symbols) == []
    undefined = dynamic_symbols(library, defined=False)
    cuda_api = demangle(sorted(undefined & torch_symbols))
    assert any(n.startswith("c10::cuda::getCurrentCUDAStream") for n in cuda_api)
    assert any(n.startswith("at::cuda::getCurrentCUDABlasHandle") for n in cuda_api)
    assert {"cublasSgemv_v2", "cublasSetStream_v2"} <= undefined & cublas_symbols


def test_fixture_holds_device_code_for_each_capability(built: tuple[str, Path]) -> None:
    _, vdir = built
    library = str(_library(vdir))
    elf = _run([cuobjdump(), "--list-elf", library])
    assert elf.returncode == 0, elf.stderr
    ptx = _run([cuobjdump(), "--list-ptx", library])
    assert ptx.returncode == 0, ptx.stderr
    # One fat binary per .cu file: a cubin per capability, PTX of the `+PTX` one (9.0).
    cubins = sorted(line.rsplit(".", 2)[-2] for line in elf.stdout.splitlines() if line.strip())
    ptxs = sorted(line.rsplit(".", 2)[-2] for line in ptx.stdout.splitlines() if line.strip())
    want = [f"sm_{c.replace('.', '')}" for c in CAPABILITIES]
    assert cubins == sorted(want * 2)
    assert ptxs == [want[-1]] * 2


def test_fixture_device_code_comes_from_the_variants_own_nvcc(
    built: tuple[str, Path], tmp_path: Path
) -> None:
    cuda, vdir = built
    # Each cubin's .note.nv.tkinfo names the toolkit whose ptxas made it (the PTX is
    # compressed in the fat binary, its header comment unreadable).
    done = _run([cuobjdump(), "-xelf", "all", str(_library(vdir))], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cubins = sorted(tmp_path.glob("*.cubin"))
    assert len(cubins) == 2 * len(CAPABILITIES)
    version = WHEELS[cuda]["cuda_nvcc"]["version"]
    for cubin in cubins:
        stamps = set(re.findall(rb"Cuda compilation tools, release [^\0]+", cubin.read_bytes()))
        assert stamps == {f"Cuda compilation tools, release {cuda}, V{version}".encode()}, cubin


def _extension_drv(vdir: Path) -> str:
    """The extension's derivation behind the variant built at `vdir` (a copy of it whose
    `metadata.json` holds the flake's provenance, `nixgen.provenance.stamp`, of the same
    name, references it)."""
    stamp = _run(["nix-store", "--query", "--deriver", str(vdir)], env=nix_env()).stdout.strip()
    refs = _run(["nix-store", "--query", "--references", stamp], env=nix_env()).stdout.split()
    name = stamp.split("-", 1)[1]
    [extension] = [ref for ref in refs if ref.split("-", 1)[1] == name] or [stamp]
    return extension


def test_fixture_extension_passed_the_abi_check(built: tuple[str, Path]) -> None:
    _, vdir = built
    log = _run(["nix-store", "--read-log", _extension_drv(vdir)], env=nix_env())
    assert log.returncode == 0, log.stderr
    name = _library(vdir).name
    assert f"nixgen ABI check: {name}: libraries and unversioned symbols keep to" in log.stdout


def test_fixture_python_package_and_metadata(built: tuple[str, Path]) -> None:
    _, vdir = built
    assert {"__init__.py", "_ops.py", "metadata.json"} <= set(os.listdir(vdir))
    assert "def gemv(" in (vdir / "__init__.py").read_text()


def test_without_the_wheels_cuda_components_fail_naming_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NIXGEN_CUDA_CACHE", str(tmp_path / "empty-cache"))
    bare = make_stub(tmp_path / "bare")
    assert "cudaWheels = null;" in (bare / "host.nix").read_text()
    config = "{ allowUnfree = true; cudaSupport = true; }"
    pkgs = f'(import {bare} {{ system = "{SYSTEM}"; config = {config}; }})'
    with pytest.raises(NixError) as failed:
        nix_build(f"{pkgs}.cudaPackages_13_0.libcublas")
    assert "cudaPackages_13_0.libcublas cannot be built" in failed.value.stderr
    assert "run `python scripts/cuda_wheels.py`" in failed.value.stderr
    with pytest.raises(NixError) as failed:
        nix_build(f"{pkgs}.python3.pkgs.torch")
    assert "no CUDA build of torch is unpacked on this machine" in failed.value.stderr


def test_a_kernel_of_several_cu_sources_rebuilds_bit_for_bit_in_the_sandbox(
    built: tuple[str, Path],
) -> None:
    """The fixture's kernel compiles two `.cu` sources and a `.cpp` in one derivation. nvcc
    writes its own process id into its objects (`tmpxft_<pid>_…`), so the kernel's edges
    run one at a time (`compile.serialEdges`) and the sandbox's process ids repeat: a
    rebuild (`nix-build --check`, which fails on any differing byte) is identical."""
    _, vdir = built
    refs = _run(["nix-store", "--query", "--references", _extension_drv(vdir)], env=nix_env())
    assert refs.returncode == 0, refs.stderr
    [kernel] = [r for r in refs.stdout.split() if r.endswith("-cuda-libs-axpy_gemv-1.drv")]
    done = _run(
        ["nix-build", "--check", "--no-out-link", "--option", "sandbox", "true", kernel],
        env=nix_env(),
        timeout=1800,
    )
    assert done.returncode == 0, f"not reproducible:\n{done.stderr[-3000:]}"


# ------------------------------------------------------ the CUDA 13 headers (issue 42)


@needs_wheels
@pytest.mark.parametrize("cuda", sorted(VARIANTS))
def test_cuda_cudart_brings_the_crt_headers_and_cuda_nvcc_does_not(stub: Path, cuda: str) -> None:
    """As nixpkgs from CUDA 13.0 (packages/cuda_cudart.nix, cuda_crt.nix, cuda_nvcc.nix):
    the crt/ headers that cuda_runtime_api.h includes are cuda_crt's, whose include output
    cuda_cudart propagates; cuda_nvcc's include holds none. A compile without nvcc (a torch
    binding including c10/cuda/CUDAGuard.h) finds them through cuda_cudart alone."""
    attr = "cudaPackages_" + cuda.replace(".", "_")
    pkgs = f'(import {stub} {{ system = "{SYSTEM}"; config.allowUnfree = true; }}).{attr}'
    cudart, crt, nvcc = (
        nix_build(f"{pkgs}.{name}") for name in ("cuda_cudart", "cuda_crt", "cuda_nvcc")
    )
    assert (crt / "include" / "crt" / "host_defines.h").is_file()
    assert sorted(p.name for p in (crt / "include").iterdir()) == ["crt"]
    assert not (nvcc / "include" / "crt").exists()
    assert not (cudart / "include" / "crt").exists()
    propagated = (cudart / "nix-support" / "propagated-build-inputs").read_text().split()
    assert str(crt) in propagated
    # Its version is the pin of the CRT wheel unpacked with nvcc's.
    wheels = json.loads((Path(__file__).parent / "nixpkgs" / "cuda-wheels.json").read_text())
    assert f"nvidia-cuda-crt=={crt.name.rsplit('-', 1)[1]}" in wheels["sets"][cuda]["cuda_nvcc"]


# ------------------------------------- rotary's pattern: torch's flags, CUDAGuard.h (issue 42)

ROTATE = Path(__file__).resolve().parent / "fixtures" / "cuda-rotate"
#: The variant the fixture is built for: CUDA 13.0's own nvcc.
ROTATE_VARIANT = f"torch212-cxx11-cu130-{SYSTEM}"


@pytest.fixture(scope="module")
def rotate_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("fixture") / "cuda-rotate"
    shutil.copytree(ROTATE, target)
    result = CliRunner().invoke(main, ["render", str(target)])
    assert result.exit_code == 0, result.output
    return target


@pytest.fixture(scope="module")
def rotate_built(rotate_project: Path, stub: Path) -> Path:
    if not HAVE_WHEELS:
        pytest.skip(SKIP_REASON)
    [out] = flake_build(rotate_project, ROTATE_VARIANT, stub=stub, timeout=3600)
    return out


def test_rotate_fixture_is_rotarys_pattern() -> None:
    """No cuda-flags (as kernels-community's rotary); a GPU_LAMBDA handed to ATen's
    gpu_kernel_multiple_outputs; a binding, compiled without nvcc, that includes
    c10/cuda/CUDAGuard.h."""
    build = (ROTATE / "build.toml").read_text()
    assert "cuda-flags" not in build.replace("# ", "").split("[general]")[1]
    kernel = (ROTATE / "rotate_cuda" / "rotate.cu").read_text()
    assert "#include <ATen/native/cuda/Loops.cuh>" in kernel
    assert "at::native::gpu_kernel_multiple_outputs(" in kernel
    assert "[] GPU_LAMBDA(" in kernel
    binding = (ROTATE / "torch-ext" / "torch_binding.cpp").read_text()
    assert "#include <c10/cuda/CUDAGuard.h>" in binding
    assert "c10::cuda::CUDAGuard device_guard" in binding


@needs_wheels
def test_rotate_compiles_read_torchs_flags_from_the_variants_torch(
    rotate_project: Path, stub: Path
) -> None:
    """The kernel's nvcc reads nvcc's flags and the binding's compiler its C++ flags from
    the derivation that read them from the variant's torch; the library writes none of
    torch's flags itself."""
    commands = flake_eval(
        rotate_project,
        f"packages.{SYSTEM}.{ROTATE_VARIANT}",
        stub=stub,
        apply=(
            "v: let u = v.passthru.nixgen.unstamped or v; n = u.passthru.nixgen; in {"
            " kernel = map (o: o.command) n.kernels.rotate_cuda.passthru.nixgen.plan.objects;"
            " binding = map (o: o.command) n.binding.passthru.nixgen.plan.objects; }"
        ),
        timeout=600,
    )
    [nvcc] = commands["kernel"]
    [cxx] = commands["binding"]
    assert re.search(
        r" --options-file /nix/store/[a-z0-9]{32}-torch-2\.12\.0-build-flags/nvcc ", nvcc
    )
    assert re.search(r" @/nix/store/[a-z0-9]{32}-torch-2\.12\.0-build-flags/cxx ", cxx)
    assert "--expt-" not in nvcc and "--expt-" not in cxx


def test_rotate_builds_its_lambda_kernel_and_its_guarded_binding(rotate_built: Path) -> None:
    """Both halves compiled and linked with the CUDA 13.0 wheels' nvcc and the stdenv's
    g++: the device code of ATen's multi-output kernel instantiated for the lambda, for
    9.0; the binding's device guard taken from torch's real libc10_cuda. (No GPU: the kernel
    is not run.)"""
    library = _library(rotate_built)
    elf = _run([cuobjdump(), "--list-elf", str(library)])
    assert elf.returncode == 0, elf.stderr
    assert [line.rsplit(".", 2)[-2] for line in elf.stdout.splitlines() if line.strip()] == [
        "sm_90"
    ]
    functions = _run([cuobjdump(), "--dump-resource-usage", str(library)])
    assert functions.returncode == 0, functions.stderr
    assert "unrolled_elementwise_kernel_for_multi_outputs" in functions.stdout
    assert {"libc10_cuda.so", "libcudart.so.13"} <= set(needed(library))
    torch_symbols = torch_cuda_symbols()
    assert unresolved(library, torch_symbols) == []
    names = demangle(sorted(dynamic_symbols(library, defined=False) & torch_symbols))
    assert any(n.startswith("c10::cuda::") for n in names), names
