"""Odd project trees: a link added in a listed Rust source directory, a link out of the project
inside the Python package, hostile Cargo.toml files `migrate` reads, a project directory named
like a TOML file, a crate in a directory named like an option, a `-` source and a long source
path in the per-object mode, and a project path that holds a space.

Each case runs the real ``python -m nixgen`` in a subprocess with a timeout (tests/hostile.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .hostile import (
    BUILD_TOML,
    RUST_TVM,
    SECRET,
    nixgen,
    project,
    rust_project,
)

pytestmark = pytest.mark.slow  # starts processes (tests/tiers.py)


@pytest.fixture(autouse=True)
def private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


# ------------------------------------------------------------ links in the sources


@pytest.mark.parametrize("where", ["relu_rs/src", "relu_rs/src/inner"])
def test_a_link_added_in_a_listed_rust_directory_fails_the_next_render(
    tmp_path: Path, where: str
) -> None:
    root = rust_project(tmp_path)
    assert nixgen("render", ".", cwd=root).returncode == 0
    (tmp_path / "elsewhere.rs").write_text("// outside\n")
    (root / where / "evil.rs").symlink_to(tmp_path / "elsewhere.rs")
    done = nixgen("render", ".", cwd=root)
    assert done.returncode == 2, done.stdout
    assert "up to date" not in done.stdout


# ---------------------------------------------------------- accepted, then the build fails


def test_a_link_out_of_the_project_inside_the_python_package(tmp_path: Path) -> None:
    root = project(tmp_path)
    (tmp_path / "secret.py").write_bytes(SECRET)
    (root / "torch-ext" / "relu" / "helper.py").symlink_to(tmp_path / "secret.py")
    done = nixgen("validate", ".", cwd=root)
    assert done.returncode == 2, done.stderr
    assert "torch-ext/relu/helper.py" in done.stderr and "symbolic link" in done.stderr


# ------------------------------------------------------ a crate's Cargo.toml, where read


def rust_v5(tmp_path: Path) -> Path:
    from .projects import relu_rust_v5

    return relu_rust_v5(tmp_path / "rust")


def _hostile_manifest(root: Path, kind: str, tmp_path: Path) -> None:
    manifest = root / "relu-rs" / "Cargo.toml"
    manifest.unlink()
    if kind == "fifo":
        os.mkfifo(manifest)
    elif kind == "zero":
        manifest.symlink_to("/dev/zero")
    elif kind == "deep":
        manifest.write_text('[package]\nname = "relu-rs"\nx = ' + "[" * 1000 + "]" * 1000 + "\n")
    elif kind == "bad-name":
        manifest.write_text('[package]\nname = "relu-rs"\n[lib]\nname = "no such; name"\n')
    elif kind == "outside":
        (tmp_path / "Cargo.toml").write_text('[package]\nname = "stolen-name"\n')
        manifest.symlink_to(tmp_path / "Cargo.toml")


@pytest.mark.parametrize("kind", ["fifo", "zero", "deep", "bad-name", "outside"])
def test_the_crates_cargo_toml_is_read_by_the_path_rule(tmp_path: Path, kind: str) -> None:
    """nixgen reads a Rust crate's library name from its `Cargo.toml` (`validate`, `render`,
    `build`): a FIFO, a device, a file past the TOML limits, a name that is no identifier
    or a link out of the project is a located error, and nothing of it is printed."""
    root = rust_v5(tmp_path)
    before = (root / "build.toml").read_text()
    _hostile_manifest(root, kind, tmp_path)
    done = nixgen("validate", ".", cwd=root, timeout=30)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "relu-rs/Cargo.toml" in done.stderr
    assert (root / "build.toml").read_text() == before
    assert "stolen" not in done.stderr


# -------------------------------------------------------------- odd names and paths


def test_a_project_directory_named_like_a_toml_file(tmp_path: Path) -> None:
    root = project(tmp_path, name="kernels.toml")
    done = nixgen("validate", str(root), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = nixgen("render", "kernels.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (root / "nix" / "default.nix").is_file()


def test_a_crate_in_a_directory_named_like_an_option(tmp_path: Path) -> None:
    """`-x/` is accepted, so the cargo hooks and `--manifest-path` get `./-x` (the kernel
    file's `crateDir`, which `nixgen.rust.kernel` passes on as `buildAndTestSubdir`)."""
    root = rust_project(tmp_path)
    (root / "relu_rs").rename(root / "-x")
    (root / "build.toml").write_text(RUST_TVM.replace('"relu_rs/', '"-x/'))
    done = nixgen("render", ".", cwd=root)
    assert done.returncode == 0, done.stderr
    kernel = (root / "nix" / "kernels" / "relu_rs.nix").read_text()
    assert 'crateDir = "./-x";' in kernel
    assert 'cargoRoot = "./-x";' in kernel


LONG_DIR = "/".join(["directory_of_sources"] * 10)  # 209 bytes


def per_object_project(root: Path) -> Path:
    """A cpp-cpu kernel of 32 sources (the per-object mode), one named like an option and
    one 239 bytes long (its encoded object name would be 260 bytes)."""
    sources = ["-x.cpp", f"{LONG_DIR}/kernel_with_a_long_name_a.cpp"]
    sources += [f"k/s{i:02}.cpp" for i in range(30)]
    toml = BUILD_TOML.replace('depends = ["torch"]\nsrc = ["relu/relu.cpp"]', "src = %s") % (
        json.dumps(sources),
    )
    project(root.parent, toml, name=root.name)
    for index, rel in enumerate(sources):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"int nixgen_source_{index}() {{ return {index}; }}\n")
    return root


@pytest.mark.build
@pytest.mark.skipif(shutil.which("nix-build") is None, reason="nix is not installed")
def test_a_dash_source_and_a_long_source_path_build_in_the_per_object_mode(
    tmp_path: Path,
) -> None:
    from tests.nixtools import make_stub, nix_build

    from .projects import kernel_expr

    root = per_object_project(tmp_path / "objects")
    assert nixgen("render", ".", cwd=root).returncode == 0
    stub = make_stub(tmp_path / "stub")
    out = nix_build(kernel_expr(stub, "relu"), cwd=root, timeout=1200, max_jobs=4)
    archives = list(out.rglob("*.a"))
    assert archives, list(out.rglob("*"))
    members = subprocess.run(
        ["ar", "t", str(archives[0])], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(members) == 32
    assert all(len(name.encode()) <= 200 for name in members)


@pytest.mark.skipif(shutil.which("nix") is None, reason="nix is not installed")
def test_the_flake_of_a_project_whose_path_holds_a_space_evaluates(tmp_path: Path) -> None:
    """`nixgen build`'s evaluation, run for real (the build itself is the same `nix build`
    of derivation paths as for any project): the flake reference Nix gets is valid."""
    from nixgen.building import nixcommand
    from tests.nixtools import kernel_builder, make_stub, nix_env

    root = project(tmp_path / "sp ace", name="relu demo")
    assert nixgen("render", ".", cwd=root).returncode == 0
    stub = make_stub(tmp_path / "stub")
    pairs = [("nixpkgs", f"path:{stub}"), ("kernel-builder", f"path:{kernel_builder(stub)}")]
    settings = nixcommand.Settings(overrides=tuple(pairs))
    command = nixcommand.eval_drv_paths(
        root, "x86_64-linux", ["torch213-cxx11-cpu-x86_64-linux"], settings
    )
    done = subprocess.run(
        command.argv, cwd=root, capture_output=True, text=True, timeout=600, env=nix_env()
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [drv] = json.loads(done.stdout)
    assert drv.endswith(".drv")
