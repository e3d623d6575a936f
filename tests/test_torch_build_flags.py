"""What torch's CMake config gives the compiles of an extension (issue 42), read from a torch
by the Nix library's reader (`nix/support/torch/build_flags.py` running
`cmake-flags.cmake`), checked against the real torch 2.11.0 CUDA wheel the stand-ins build
with, against a real CMake configure of a project that calls `find_package(Torch)` (where a
CUDA toolkit is installed), and against nvcc itself: the reader's option file is what makes
a `__host__ __device__` lambda compile. No Nix here; the builds that use the flags are in
tests/test_cuda_builds.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .cudatools import HAVE_WHEELS, SKIP_REASON, needs_wheels, prefix

REPO = Path(__file__).resolve().parent.parent
SUPPORT = REPO / "nix" / "support" / "torch"
SCRIPT = SUPPORT / "cmake-flags.cmake"
CUDA = "13.0"
HAVE_CMAKE = shutil.which("cmake") is not None
needs_cmake = pytest.mark.skipif(not HAVE_CMAKE, reason="cmake is not installed")

#: The six definitions torch 2.11.0's CUDA wheel's Caffe2Targets.cmake puts on `torch_cpu`
#: (line 88) and `torch_cuda` (line 108), which every target linking `torch` gets.
TORCH_DEFINITIONS = [
    "-DUSE_DISTRIBUTED",
    "-DUSE_C10D_GLOO",
    "-DUSE_RPC",
    "-DUSE_TENSORPIPE",
    "-DUSE_NVSHMEM",
    "-DUSE_C10D_NCCL",
]
#: What that wheel's share/cmake/Caffe2/public/cuda.cmake appends to CMAKE_CUDA_FLAGS on
#: Linux (lines 317-351, 380, 383), without the `-gencode` pairs (lines 328-338).
TORCH_CUDA_FLAGS = [
    "-DONNX_NAMESPACE=onnx_c2",
    "-Xcudafe",
    "--diag_suppress=cc_clobber_ignored,--diag_suppress=field_without_dll_interface,"
    "--diag_suppress=base_class_has_different_dll_interface,"
    "--diag_suppress=dll_interface_conflict_none_assumed,"
    "--diag_suppress=dll_interface_conflict_dllexport_assumed,--diag_suppress=bad_friend_decl",
    "--expt-relaxed-constexpr",
    "--expt-extended-lambda",
]


def _reader() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nixgen_build_flags", SUPPORT / "build_flags.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cuda_torch() -> Path:
    return prefix("torch", "torch")


def _venv_torch() -> Path:
    import torch

    return Path(torch.__file__).parent


def _run_reader(torch: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            str(SUPPORT / "build_flags.py"),
            "--torch",
            str(torch),
            "--script",
            str(SCRIPT),
            "--out",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def cuda_flags(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reader's output for torch 2.11.0's CUDA wheel and CUDA 13.0."""
    if not HAVE_WHEELS:
        pytest.skip(SKIP_REASON)
    if not HAVE_CMAKE:
        pytest.skip("cmake is not installed")
    out = tmp_path_factory.mktemp("flags")
    done = _run_reader(_cuda_torch(), out, f"--cuda={CUDA}")
    assert done.returncode == 0, done.stderr
    return out


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


# ------------------------------------------------------------------ the real wheel


def test_the_flags_come_from_the_wheels_own_cmake_files() -> None:
    """The facts the next tests expect are in torch 2.11.0's files, where they are cited."""
    if not HAVE_WHEELS:
        pytest.skip(SKIP_REASON)
    cmake = _cuda_torch() / "share" / "cmake" / "Caffe2"
    cuda = (cmake / "public" / "cuda.cmake").read_text().splitlines()
    assert cuda[379] == 'list(APPEND CUDA_NVCC_FLAGS "--expt-relaxed-constexpr")'
    assert cuda[382] == 'list(APPEND CUDA_NVCC_FLAGS "--expt-extended-lambda")'
    assert cuda[318] == '  list(APPEND CUDA_NVCC_FLAGS "-DONNX_NAMESPACE=onnx_c2")'
    assert cuda[350] == "list(APPEND CUDA_NVCC_FLAGS -Xcudafe ${SUPPRESS_WARNING_FLAGS})"
    targets = (cmake / "Caffe2Targets.cmake").read_text().splitlines()
    assert "USE_DISTRIBUTED;USE_C10D_GLOO;USE_RPC;USE_TENSORPIPE" in targets[87]
    assert "USE_NVSHMEM;USE_C10D_NCCL" in targets[107]


@pytest.mark.slow
def test_nvcc_gets_torchs_cuda_flags_definitions_and_the_toolchains_gpu_flags(
    cuda_flags: Path,
) -> None:
    # In CMake's order: the definitions, CMAKE_CUDA_FLAGS, then the toolchain's flags from
    # COMMON_NVCC_FLAGS (less its four -D__CUDA_NO_* definitions, plus -DENABLE_FP8).
    assert _lines(cuda_flags / "nvcc") == [
        *TORCH_DEFINITIONS,
        *TORCH_CUDA_FLAGS,
        "--expt-relaxed-constexpr",
        "-DENABLE_FP8",
    ]
    record = json.loads((cuda_flags / "flags.json").read_text())
    assert record["commonNvccFlags"] == [
        "-D__CUDA_NO_HALF_OPERATORS__",
        "-D__CUDA_NO_HALF_CONVERSIONS__",
        "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
        "-D__CUDA_NO_HALF2_OPERATORS__",
        "--expt-relaxed-constexpr",
    ]
    # CUDA::cudart's requirements come from the toolkit (the derivation's build inputs).
    assert record["cmake"]["external"] == ["CUDA::cudart"]
    assert not any(f.startswith("-gencode") or "arch=" in f for f in _lines(cuda_flags / "nvcc"))


@pytest.mark.slow
def test_the_host_compiler_gets_torchs_definitions(cuda_flags: Path) -> None:
    assert _lines(cuda_flags / "cxx") == TORCH_DEFINITIONS


@pytest.mark.slow
def test_a_cpu_torch_gives_its_definitions_and_is_refused_as_a_cuda_build(tmp_path: Path) -> None:
    if not HAVE_CMAKE:
        pytest.skip("cmake is not installed")
    pytest.importorskip("torch")
    done = _run_reader(_venv_torch(), tmp_path / "cpu")
    assert done.returncode == 0, done.stderr
    assert "-DUSE_DISTRIBUTED" in _lines(tmp_path / "cpu" / "cxx")
    assert not (tmp_path / "cpu" / "nvcc").exists()
    done = _run_reader(_venv_torch(), tmp_path / "cuda", "--cuda=13.0")
    assert done.returncode == 1
    assert "is not a CUDA build" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_torch_without_a_cmake_config_fails_naming_it(tmp_path: Path) -> None:
    if not HAVE_CMAKE:
        pytest.skip("cmake is not installed")
    done = _run_reader(tmp_path, tmp_path / "out", "--cuda=13.0")
    assert done.returncode == 1
    assert "reading torch's CMake config under" in done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------ the reader's rules


def test_the_toolchains_gpu_flags_rule() -> None:
    reader = _reader()
    common = ["-D__CUDA_NO_HALF_OPERATORS__", "--expt-relaxed-constexpr", "-DX"]
    assert reader.gpu_flags(common, "12.6") == ["--expt-relaxed-constexpr", "-DX", "-DENABLE_FP8"]
    # Before CUDA 11.8 the toolchain keeps torch's list as it is.
    assert reader.gpu_flags(common, "11.7") == common


@pytest.mark.parametrize("flag", ["-DNAME=a b", '-DNAME="a"', "-DA\\B", "$(x)", ""])
def test_a_flag_a_response_file_cannot_hold_as_one_word_is_refused(flag: str) -> None:
    reader = _reader()
    with pytest.raises(reader.FlagsError, match="cannot hold as one word"):
        reader.check_words("CUDA", ["--ok", flag])


def test_common_nvcc_flags_must_be_a_literal_list(tmp_path: Path) -> None:
    reader = _reader()
    (tmp_path / "utils").mkdir()
    source = tmp_path / "utils" / "cpp_extension.py"
    source.write_text("COMMON_NVCC_FLAGS = ['-DA', '--b']\n")
    assert reader.common_nvcc_flags(tmp_path) == ["-DA", "--b"]
    source.write_text("X = 1\nCOMMON_NVCC_FLAGS = make_flags()\n")
    with pytest.raises(reader.FlagsError, match=r"cpp_extension\.py:2: COMMON_NVCC_FLAGS is not"):
        reader.common_nvcc_flags(tmp_path)
    source.write_text("OTHER = []\n")
    with pytest.raises(reader.FlagsError, match="no module-level COMMON_NVCC_FLAGS"):
        reader.common_nvcc_flags(tmp_path)


# ------------------------------------------------------------------ against real CMake


def _cuda_toolkit() -> Path | None:
    """A CUDA 13.0 toolkit installed on this machine, if any ($CUDA_HOME, /usr/local/cuda*)."""
    candidates = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda-13.0", "/usr/local/cuda"]
    for candidate in candidates:
        nvcc = Path(candidate) / "bin" / "nvcc"
        if candidate and nvcc.is_file():
            version = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True)
            if f"release {CUDA}," in version.stdout:
                return Path(candidate)
    return None


_PROBE = """cmake_minimum_required(VERSION 3.18)
project(probe LANGUAGES CXX)
find_package(Torch REQUIRED)
add_library(probe MODULE probe.cu probe.cpp)
target_link_libraries(probe PRIVATE torch)
"""


@needs_wheels
@needs_cmake
@pytest.mark.slow
def test_the_reader_agrees_with_a_real_cmake_configure(cuda_flags: Path, tmp_path: Path) -> None:
    """What the kernels toolchain's CMake does, done for real: a project that calls
    `find_package(Torch)` and links `torch`, configured with a CUDA 13.0 toolkit, compiles
    its `.cu` and `.cpp` with exactly the definitions and CUDA flags the reader gives (CMake
    sorts definitions; its `-gencode` pair, from TORCH_CUDA_ARCH_LIST, is the one the
    kernels toolchain clears)."""
    toolkit = _cuda_toolkit()
    if toolkit is None:
        pytest.skip(f"no CUDA {CUDA} toolkit installed on this machine (CUDA_HOME, /usr/local)")
    (tmp_path / "CMakeLists.txt").write_text(_PROBE)
    (tmp_path / "probe.cu").write_text("int f() { return 1; }\n")
    (tmp_path / "probe.cpp").write_text("int g() { return 1; }\n")
    done = subprocess.run(
        [
            "cmake",
            "-S",
            str(tmp_path),
            "-B",
            str(tmp_path / "build"),
            "-G",
            "Unix Makefiles",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            f"-DCMAKE_PREFIX_PATH={_cuda_torch() / 'share' / 'cmake'}",
            f"-DCMAKE_CUDA_COMPILER={toolkit / 'bin' / 'nvcc'}",
            f"-DCUDA_TOOLKIT_ROOT_DIR={toolkit}",
            "-DTORCH_CUDA_ARCH_LIST=9.0",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{toolkit / 'bin'}:{os.environ['PATH']}"},
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    commands = json.loads((tmp_path / "build" / "compile_commands.json").read_text())
    by_file = {Path(c["file"]).name: c["command"].split() for c in commands}
    cu, cpp = by_file["probe.cu"], by_file["probe.cpp"]
    definitions = sorted(f for f in cu if f.startswith("-DUSE_"))
    assert definitions == sorted(TORCH_DEFINITIONS)
    assert sorted(f for f in cpp if f.startswith("-DUSE_")) == sorted(TORCH_DEFINITIONS)
    start = cu.index("-DONNX_NAMESPACE=onnx_c2")
    end = cu.index("--expt-extended-lambda") + 1
    cmake_cuda_flags = [f for f in cu[start:end] if not f.startswith(("-gencode", "arch="))]
    record = json.loads((cuda_flags / "flags.json").read_text())
    assert record["cmake"]["cuda-flags"] == cmake_cuda_flags
    assert [f"-D{d}" for d in record["cmake"]["definition"]] == TORCH_DEFINITIONS


# ------------------------------------------------------------------ against nvcc

_LAMBDA = """template <class F> __global__ void apply(F f, float *p) {
  p[threadIdx.x] = f(p[threadIdx.x]);
}
void twice(float *p) {
  auto f = [] __host__ __device__(float x) { return 2 * x; };
  apply<<<1, 32>>>(f, p);
}
"""


@needs_wheels
@pytest.mark.slow
def test_the_nvcc_option_file_is_what_compiles_an_extended_lambda(
    cuda_flags: Path, tmp_path: Path
) -> None:
    """nvcc 13.0 (the wheel's) refuses a `__host__ __device__` lambda passed to a kernel,
    as it refused kernels-community's rotary, and compiles it with the reader's file."""
    (tmp_path / "l.cu").write_text(_LAMBDA)
    nvcc = str(prefix(CUDA, "cuda_nvcc") / "bin" / "nvcc")
    include = [prefix(CUDA, "cuda_cudart") / "include", prefix(CUDA, "cccl") / "include" / "cccl"]
    env = {**os.environ, "CPATH": ":".join(map(str, include))}
    base = [nvcc, "-c", "l.cu", "-o", "l.o", "-gencode=arch=compute_90,code=sm_90"]
    without = subprocess.run(base, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert without.returncode != 0
    assert "extended-lambda" in without.stdout + without.stderr
    with_flags = subprocess.run(
        [*base, "--options-file", str(cuda_flags / "nvcc")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert with_flags.returncode == 0, with_flags.stdout + with_flags.stderr
