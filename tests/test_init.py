"""`nixgen init`: a new project per language renders as is; the CPU ones build and load."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema as js
import pytest

from nixgen.app import scaffold
from nixgen.app.scaffold import LANGUAGES
from nixgen.building.nixbuild import host_system
from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.rendering import jsonschema

from . import nixtools
from .conftest import REPO

ALL = list(LANGUAGES)
needs_nix = nixtools.needs_nix


def init(runner, root: Path, *args: str, name: str = "relu-demo"):
    return runner.invoke(main, ["init", name, "--dir", str(root), *args])


def languages_args(languages: list[str]) -> list[str]:
    return [arg for language in languages for arg in ("--language", language)]


# ------------------------------------------------------------------ the files written


@pytest.mark.parametrize("language", ALL)
@pytest.mark.slow
def test_project_for_each_language_validates_and_renders(runner, tmp_path, language):
    root = tmp_path / "demo"
    result = init(runner, root, "--language", language)
    assert result.exit_code == 0, result.output
    kernel = scaffold.kernels([language])[0]
    for path in [*kernel.src, "build.toml", "flake.nix", "nix/default.nix", ".gitignore"]:
        assert (root / path).is_file(), path
    loaded = project.read(root)
    assert loaded.edition == 6
    assert [k.language for k in loaded.build.kernels.values()] == [language]
    assert loaded.build.general.backends == [kernel.backend]
    check = runner.invoke(main, ["render", str(root), "--check"])
    assert check.exit_code == 0, check.output
    assert "up to date" in check.output
    schema = js.Draft202012Validator(jsonschema.schema())
    assert list(schema.iter_errors(tomllib.loads((root / "build.toml").read_text()))) == []


@pytest.mark.slow
def test_every_language_at_once(runner, tmp_path):
    root = tmp_path / "all"
    result = init(runner, root, *languages_args(ALL))
    assert result.exit_code == 0, result.output
    build = project.read(root).build
    assert sorted(build.kernels) == sorted(scaffold.SOURCES[lang][0] for lang in ALL)
    assert build.general.backends == ["cpu", "cuda", "metal", "rocm", "xpu"]
    binding = (root / "torch-ext/torch_binding.cpp").read_text()
    for backend, key in [("CPU", "kCPU"), ("CUDA", "kCUDA"), ("ROCM", "kCUDA"), ("XPU", "kXPU")]:
        section = binding.split(f"defined({backend}_KERNEL)", 2)[-1].split("#", 1)[0]
        assert f'ops.impl("relu", torch::{key}, &relu);' in section, backend
    assert 'ops.impl("relu", torch::kMPS, &relu);' in binding
    assert runner.invoke(main, ["render", str(root), "--check"]).exit_code == 0


@pytest.mark.slow
def test_cpu_and_rust_together_expose_two_ops(runner, tmp_path):
    root = tmp_path / "both"
    assert init(runner, root, "-l", "rust-cpu", "-l", "cpp-cpu").exit_code == 0
    binding = (root / "torch-ext/torch_binding.cpp").read_text()
    assert 'ops.impl("relu", torch::kCPU, &relu);' in binding
    assert 'ops.impl("relu_rs", torch::kCPU, &relu_rs);' in binding
    package = (root / "torch-ext/relu_demo/__init__.py").read_text()
    assert "def relu(" in package
    assert "def relu_rs(" in package
    tests = (root / "tests/test_relu_demo.py").read_text()
    assert 'ONLY_ON = {"relu_rs": "cpu"}' in tests


@pytest.mark.slow
def test_rust_crate_follows_the_convention(runner, tmp_path):
    root = tmp_path / "rust"
    assert init(runner, root, "-l", "rust-cpu").exit_code == 0
    build = project.read(root).build
    (name,) = build.kernels
    manifest = tomllib.loads((root / "relu_rs/Cargo.toml").read_text())
    assert manifest["lib"]["name"] == name.replace("-", "_")
    assert manifest["lib"]["crate-type"] == ["staticlib"]
    assert "dependencies" not in manifest
    lock = tomllib.loads((root / "relu_rs/Cargo.lock").read_text())
    assert [p["name"] for p in lock["package"]] == [manifest["package"]["name"]]
    lib = (root / "relu_rs/src/lib.rs").read_text()
    header = (root / "torch-ext/torch_binding.h").read_text()
    for symbol in ("relu_rs_f32", "relu_rs_f64"):
        assert f'pub unsafe extern "C" fn {symbol}(' in lib
        assert f"void {symbol}(" in header


@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
@pytest.mark.build
def test_rust_crate_passes_its_own_tests_offline_and_locked(runner, tmp_path):
    root = tmp_path / "rust"
    assert init(runner, root, "-l", "rust-cpu").exit_code == 0
    done = subprocess.run(
        ["cargo", "test", "--offline", "--locked", "--manifest-path", "relu_rs/Cargo.toml"],
        cwd=root,
        env={**os.environ, "CARGO_TARGET_DIR": str(tmp_path / "target")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "2 passed" in done.stdout


def test_templates_make_no_nix():
    templates = REPO / "nixgen" / "templates" / "init"
    assert not list(templates.rglob("*.nix*"))


# ------------------------------------------------------------------------- the verb


@pytest.mark.slow
def test_default_directory_is_the_name_and_default_language_cpp_cpu(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(main, ["init", "my-relu"])
    assert result.exit_code == 0, result.output
    assert "cd my-relu" in result.output
    build = project.read(tmp_path / "my-relu").build
    assert [k.language for k in build.kernels.values()] == ["cpp-cpu"]
    assert (tmp_path / "my-relu/tests/test_my_relu.py").is_file()


@pytest.mark.slow
def test_repeated_language_is_one_kernel(runner, tmp_path):
    root = tmp_path / "twice"
    assert init(runner, root, "-l", "cpp-cpu", "-l", "cpp-cpu").exit_code == 0
    assert len(project.read(root).build.kernels) == 1


@pytest.mark.slow
def test_license_option(runner, tmp_path):
    root = tmp_path / "mit"
    assert init(runner, root, "--license", "MIT").exit_code == 0
    assert project.read(root).build.general.license == "MIT"
    assert init(runner, tmp_path / "x", "--license", " ").exit_code == 2


@pytest.mark.slow
def test_refuses_a_non_empty_directory_without_force(runner, tmp_path):
    root = tmp_path / "busy"
    root.mkdir()
    (root / "notes.txt").write_text("mine")
    result = init(runner, root)
    assert result.exit_code == 2
    assert "not empty" in result.output
    assert "--force" in result.output
    assert sorted(p.name for p in root.iterdir()) == ["notes.txt"]
    forced = init(runner, root, "--force")
    assert forced.exit_code == 0, forced.output
    assert (root / "notes.txt").read_text() == "mine"
    assert (root / "build.toml").is_file()


@pytest.mark.slow
def test_force_replaces_files_of_the_same_name(runner, tmp_path):
    root = tmp_path / "again"
    assert init(runner, root).exit_code == 0
    (root / "build.toml").write_text("broken")
    assert init(runner, root).exit_code == 2
    assert init(runner, root, "--force").exit_code == 0
    assert project.read(root).edition == 6


@pytest.mark.slow
def test_an_empty_directory_is_fine(runner, tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    assert init(runner, root).exit_code == 0


def test_refuses_a_file_in_the_way(runner, tmp_path):
    (tmp_path / "file").write_text("x")
    result = init(runner, tmp_path / "file")
    assert result.exit_code == 2


@pytest.mark.parametrize("name", ["Relu", "relu_kernel", "r", "relu-", "9relu"])
def test_rejects_an_invalid_name(runner, tmp_path, name):
    result = init(runner, tmp_path / "x", name=name)
    assert result.exit_code == 2
    assert "lowercase letters, digits and dashes" in result.output
    assert not (tmp_path / "x").exists()


def test_rejects_an_unknown_language(runner, tmp_path):
    result = init(runner, tmp_path / "x", "--language", "cpp-tpu")
    assert result.exit_code == 2
    assert "cpp-cuda" in result.output


# --------------------------------------------------------------------------------- Nix


@needs_nix
def test_every_variant_of_an_all_language_project_evaluates(runner, tmp_path):
    root = tmp_path / "all"
    assert init(runner, root, *languages_args(ALL)).exit_code == 0
    stub = nixtools.make_stub(tmp_path)
    drvs = nixtools.flake_eval(
        root,
        "packages",
        stub=stub,
        apply="ps: builtins.mapAttrs (s: builtins.mapAttrs (n: d: d.drvPath)) "
        "{ inherit (ps) x86_64-linux aarch64-darwin; }",
    )
    linux, darwin = drvs["x86_64-linux"], drvs["aarch64-darwin"]
    for compute in ("cpu", "cu130", "rocm71", "xpu20260"):
        assert f"torch213-cxx11-{compute}-x86_64-linux" in linux, compute
    assert "torch213-metal-aarch64-darwin" in darwin
    assert all(path.endswith(".drv") for path in [*linux.values(), *darwin.values()])


def _torch_213() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch").startswith("2.13")
    except PackageNotFoundError:
        return False


@needs_nix
@pytest.mark.build
@pytest.mark.skipif(not _torch_213(), reason="loads the build with torch 2.13")
@pytest.mark.parametrize(
    "languages", [["cpp-cpu"], ["rust-cpu"], ["cpp-cpu", "rust-cpu"]], ids="+".join
)
def test_cpu_project_builds_and_loads(runner, tmp_path, monkeypatch, languages):
    root = tmp_path / "relu-demo"
    assert init(runner, root, *languages_args(languages)).exit_code == 0
    stub = nixtools.make_stub(tmp_path)
    monkeypatch.setenv("NIX_CONFIG", nixtools.NIX_CONFIG)
    variant = f"torch213-cxx11-cpu-{host_system()}"
    result = runner.invoke(
        main,
        [
            "build",
            str(root),
            "--variant",
            variant,
            *nixtools.overrides(stub),
        ],
    )
    assert result.exit_code == 0, result.output
    assert (root / "build" / variant / "metadata.json").is_file()

    import torch
    from kernels import get_local_kernel

    kernel = get_local_kernel(root, backend="cpu")
    x = torch.randn(1000, dtype=torch.float64)
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)
    if languages == ["cpp-cpu", "rust-cpu"]:
        torch.testing.assert_close(kernel.relu_rs(x), torch.relu(x), rtol=0, atol=0)

    # The project's own tests pass against the build, as a user runs them.
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        env={**os.environ, "KERNEL_BUILD": str(root / "build")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " passed" in done.stdout
    assert "skipped" not in done.stdout


def _torch_include() -> list[str]:
    from importlib.util import find_spec

    spec = find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return []
    torch_dir = Path(spec.submodule_search_locations[0])
    return [str(torch_dir / "include"), str(torch_dir / "include/torch/csrc/api/include")]


@pytest.mark.build
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.skipif(not _torch_include(), reason="needs the torch headers")
def test_cuda_kernel_and_its_binding_compile(runner, tmp_path):
    """No GPU here: compile the CUDA kernel with nvcc for one capability, and the binding
    as the CUDA variant compiles it (both against the torch headers)."""
    import sysconfig

    root = tmp_path / "cuda"
    assert init(runner, root, "-l", "cpp-cuda").exit_code == 0
    includes = [f"-I{d}" for d in _torch_include()]
    common = ["-std=c++20", "-D_GLIBCXX_USE_CXX11_ABI=1", "-DCUDA_KERNEL", *includes]
    nvcc = ["nvcc", "-ccbin", "g++", "--expt-relaxed-constexpr", "-arch=sm_80", *common]
    steps = [
        [*nvcc, "-c", "relu_cuda/relu_cuda.cu", "-o", str(tmp_path / "relu_cuda.o")],
        [
            "g++",
            "-fsyntax-only",
            *common,
            "-DTORCH_EXTENSION_NAME=_relu_demo_cuda_0",
            f"-I{REPO / 'nix/support/torch'}",
            f"-I{sysconfig.get_paths()['include']}",
            "torch-ext/torch_binding.cpp",
        ],
    ]
    for step in steps:
        done = subprocess.run(step, cwd=root, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
    symbols = subprocess.run(
        ["nm", "-C", str(tmp_path / "relu_cuda.o")], capture_output=True, text=True, check=True
    ).stdout
    assert "relu(at::Tensor&, at::Tensor const&)" in symbols
