"""What real projects of issue 26 do, on fixtures of our own in their shape: `+PTX`
capabilities in every edition, a Rust crate's lock file that `src` does not list, a kernel
of a listed backend that no variant builds, and a compiled kernel with nothing to compile.
(The `+PTX` build itself is tests/test_ptx_build.py.)"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import tomli
from click.testing import CliRunner

from nixgen.app import migrate
from nixgen.checking import project
from nixgen.cmdline.cli import main
from nixgen.core import tables
from nixgen.core.errors import ProblemError
from nixgen.planning import kernels, plan
from nixgen.rendering import render

from .nixtools import have_nix, nix_eval_json

REPO = Path(__file__).resolve().parent.parent

HEADER = """\
[general]
name = "kk"
version = 1
edition = 6
license = "MIT"
backends = {backends}

"""
TORCH = '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def validate(root: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["validate", *args, str(root)])
    return result.exit_code, result.output


# ------------------------------------------------------------------------------ +PTX

#: The same CUDA kernel in each edition's words (edition 1: no backend tag; editions
#: 3/4: no `edition` key, a `backend` tag; 5 and 6 as written).
CUDA_KERNEL = {
    1: '[general]\nname = "kk"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
    '[kernel.k]\ndepends = ["torch"]\nsrc = ["k/k.cu"]\ncuda-capabilities = ["8.0", "9.0+PTX"]\n',
    3: '[general]\nname = "kk"\nversion = 1\nbackends = ["cuda"]\n\n[torch]\n'
    'src = ["torch-ext/torch_binding.cpp"]\n\n[kernel.k]\nbackend = "cuda"\n'
    'depends = ["torch"]\nsrc = ["k/k.cu"]\ncuda-capabilities = ["8.0", "9.0+PTX"]\n',
    5: '[general]\nname = "kk"\nversion = 1\nedition = 5\nlicense = "MIT"\n'
    'backends = ["cuda"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n[kernel.k]\n'
    'backend = "cuda"\ndepends = ["torch"]\nsrc = ["k/k.cu"]\n'
    'cuda-capabilities = ["8.0", "9.0+PTX"]\n',
    6: HEADER.format(backends='["cuda"]') + '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
    '[kernel.k]\nlanguage = "cpp-cuda"\nsrc = ["k/k.cu"]\ncuda-capabilities = ["8.0", "9.0+PTX"]\n',
}


@pytest.mark.parametrize("edition", sorted(CUDA_KERNEL))
def test_a_ptx_capability_is_read_planned_and_rendered_in_every_edition(
    make_project: Callable[..., Path], edition: int
) -> None:
    loaded = project.read(make_project(CUDA_KERNEL[edition]))
    assert loaded.edition == edition
    kernel = loaded.build.kernels["k"]
    assert kernel.cuda_capabilities == ["8.0", "9.0+PTX"]
    assert not [p for p in loaded.warnings if "9.0+PTX" in p.message]
    assert kernels.cuda_capabilities(kernel, "13.0") == ["8.0", "9.0+PTX"]  # type: ignore[arg-type]
    file = render.render(plan.make(loaded.build)).tree["kernels/k.nix"].decode()
    assert '"13.0" = [ "8.0" "9.0+PTX" ];' in file


def test_noarch_capabilities_with_ptx_go_to_metadata_as_written(
    make_project: Callable[..., Path],
) -> None:
    text = HEADER.format(backends='["cuda"]') + (
        '[torch-noarch]\ncuda-capabilities = ["8.0", "9.0+PTX"]\n'
    )
    build = project.read(make_project(text)).build
    archs = render.project_data(plan.make(build))["noarchArchs"]
    assert archs["cuda"] == ["8.0", "9.0+PTX"]
    assert {b for b, listed in archs.items() if listed} == {"cuda"}  # every other one empty


def test_a_capability_listed_with_and_without_ptx_warns_and_builds_once(
    make_project: Callable[..., Path],
) -> None:
    text = (
        HEADER.format(backends='["cuda"]')
        + TORCH
        + textwrap.dedent(
            """
        [kernel.k]
        language = "cpp-cuda"
        src = ["k/k.cu"]
        cuda-capabilities = ["9.0", "8.0", "9.0+PTX"]
        """
        )
    )
    root = make_project(text)
    code, output = validate(root)
    assert code == 0
    assert (
        "build.toml:14:36: warning: kernel.k.cuda-capabilities[2]: `9.0+PTX` repeats `9.0`: "
        "9.0 is built once, with its PTX (`9.0+PTX`)" in output
    )
    kernel = project.read(root).build.kernels["k"]
    assert kernels.cuda_capabilities(kernel, "13.0") == ["9.0+PTX", "8.0"]  # type: ignore[arg-type]


def test_an_unknown_ptx_capability_warns_with_the_closest_known_one(
    make_project: Callable[..., Path],
) -> None:
    text = (
        HEADER.format(backends='["cuda"]')
        + TORCH
        + (
            '\n[kernel.k]\nlanguage = "cpp-cuda"\nsrc = ["k/k.cu"]\n'
            'cuda-capabilities = ["8.0", "11.8+PTX"]\n'
        )
    )
    code, output = validate(make_project(text))
    assert code == 0, output
    assert "unknown CUDA capability `11.8+PTX` (closest known: `11.0+PTX`)" in output


# ------------------------------------------------------------- kernels no variant builds


def test_a_tvm_ffi_rocm_kernel_is_a_located_warning_and_strict_fails(tmp_path: Path) -> None:
    """The real project's case: no tvm-ffi × ROCm build set exists."""
    root = write(
        tmp_path,
        {
            "build.toml": HEADER.format(backends='["cpu", "rocm"]')
            + textwrap.dedent(
                """\
                [tvm-ffi]
                src = ["tvm-ffi-ext/binding.cpp"]

                [kernel.k_cpu]
                language = "cpp-cpu"
                src = ["k_cpu/k.cpp"]

                [kernel.k_rocm]
                language = "cpp-rocm"
                src = ["k_rocm/k.hip"]
                """
            ),
            "tvm-ffi-ext/binding.cpp": "",
            "tvm-ffi-ext/kk/__init__.py": "",
            "k_cpu/k.cpp": "",
            "k_rocm/k.hip": "",
        },
    )
    message = (
        "build.toml:15:9: {severity}: kernel.k_rocm: kernel `k_rocm` (cpp-rocm, backend "
        "`rocm`) is built by no variant: the build table has no tvm-ffi × rocm build set"
    )
    code, output = validate(root)
    assert code == 0 and message.format(severity="warning") in output, output
    code, output = validate(root, "--strict")
    assert code == 2 and message.format(severity="error") in output, output
    # render says it too (and builds the CPU variant)
    result = CliRunner().invoke(main, ["render", str(root)])
    assert result.exit_code == 0 and message.format(severity="warning") in result.output


def test_a_kernel_newer_than_every_toolkit_is_a_warning_naming_its_cuda_minver(
    make_project: Callable[..., Path],
) -> None:
    text = (
        HEADER.format(backends='["cpu", "cuda"]')
        + TORCH
        + textwrap.dedent(
            """
        [kernel.k_cpu]
        language = "cpp-cpu"
        src = ["k_cpu/k.cpp"]

        [kernel.k_cuda]
        language = "cpp-cuda"
        src = ["k_cuda/k.cu"]
        cuda-minver = "99.0"
        """
        )
    )
    build = project.read(make_project(text)).build
    [problem] = [p for p in plan.check(build) if p.path == ("kernel", "k_cuda")]
    assert problem.severity == "warning"
    assert "kernel `k_cuda` (cpp-cuda, backend `cuda`) is built by no variant" in problem.message
    assert "its `cuda-minver` 99.0 is newer than every CUDA toolkit" in problem.message


def test_a_backend_out_of_the_version_bounds_is_a_warning_for_its_kernels(
    make_project: Callable[..., Path],
) -> None:
    text = (
        HEADER.format(backends='["cpu", "cuda"]')
        + TORCH
        + textwrap.dedent(
            """
        [general.cuda]
        minver = "99.0"

        [kernel.k_cpu]
        language = "cpp-cpu"
        src = ["k_cpu/k.cpp"]

        [kernel.k_cuda]
        language = "cpp-cuda"
        src = ["k_cuda/k.cu"]
        """
        )
    )
    build = project.read(make_project(text)).build
    [problem] = [p for p in plan.check(build) if p.path == ("kernel", "k_cuda")]
    assert "no torch × cuda build configuration is within the project's version bounds" in (
        problem.message
    )


def test_every_kernel_built_somewhere_gives_no_such_warning(
    make_project: Callable[..., Path],
) -> None:
    text = (
        HEADER.format(backends='["cpu", "cuda"]')
        + TORCH
        + textwrap.dedent(
            """
        [kernel.k_cpu]
        language = "cpp-cpu"
        src = ["k_cpu/k.cpp"]

        [kernel.k_cuda]
        language = "cpp-cuda"
        src = ["k_cuda/k.cu"]
        cuda-minver = "13.0"
        """
        )
    )
    build = project.read(make_project(text)).build
    assert not [p for p in plan.check(build) if "built by no variant" in p.message]


# --------------------------------------------------------------------- nothing to compile


@pytest.mark.parametrize(
    ("language", "src", "compiles"),
    [
        ("cpp-cuda", '["k/k.py"]', False),
        ("cpp-cuda", '["k/k.cuh", "k/k.h"]', False),
        ("cpp-cuda", '["k/k.cuh", "k/host.cpp"]', True),
        ("cpp-cpu", '["k/k.c"]', True),
        ("cpp-rocm", '["k/k.hip"]', True),
        ("cpp-cpu", '["k/k.cu"]', False),
    ],
)
def test_a_compiled_kernel_with_nothing_to_compile_is_a_located_warning(
    make_project: Callable[..., Path], language: str, src: str, compiles: bool
) -> None:
    backend = {"cpp-cuda": "cuda", "cpp-cpu": "cpu", "cpp-rocm": "rocm"}[language]
    text = (
        HEADER.format(backends=f'["{backend}"]')
        + TORCH
        + (f'\n[kernel.k]\nlanguage = "{language}"\nsrc = {src}\ndepends = []\n')
    )
    root = make_project(text)
    code, output = validate(root)
    assert code == 0, output
    warned = f"build.toml:13:7: warning: kernel.k.src: nothing to compile: a {language} kernel"
    assert (warned in output) is not compiles, output
    code, output = validate(root, "--strict")
    assert (code == 2) is not compiles, output


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
def test_what_each_language_compiles_is_what_the_nix_library_compiles() -> None:
    """The warning's table (`tables.COMPILED_EXTENSIONS`) against the build plans of
    `nix/compile.nix`, given one source of every extension (Metal shaders become the
    embedded library, the rest objects)."""
    candidates = sorted({e for exts in tables.COMPILED_EXTENSIONS.values() for e in exts})
    sources = " ".join(f'"k/k.{e}"' for e in [*candidates, "h", "cuh", "py"])
    expr = f"""
      let
        lib = import {REPO}/tests/nixpkgs/lib;
        compile = ((import {REPO}/nix/default.nix).withLib lib).compile;
        base = {{ name = "k"; includes = [ ]; cxxFlags = [ ]; sources = [ {sources} ]; }};
        # objects, and the sources of the extra steps (Metal shaders into a .air each)
        compiled = p: map (o: o.source) p.objects
          ++ builtins.filter (s: builtins.match "k/.*" s != null)
            (builtins.concatMap (e: e.inputs) (p.extraEdges or [ ]));
      in {{
        cpp-cpu = compiled (compile.cppCpu base);
        cpp-cuda = compiled (compile.cppCuda (base // {{
          cudaFlags = [ ];
          capabilities = [ "8.0" ];
        }}));
        cpp-rocm = compiled (compile.cppRocm (base // {{ hipFlags = [ ]; archs = [ "gfx942" ]; }}));
        cpp-xpu = compiled (compile.cppXpu (base // {{ syclFlags = [ ]; }}));
        cpp-metal = compiled (compile.cppMetal base);
      }}
    """
    got = nix_eval_json(expr)
    assert {
        language: sorted(p.rpartition(".")[2] for p in paths) for language, paths in got.items()
    } == {language: sorted(exts) for language, exts in tables.COMPILED_EXTENSIONS.items()}


# ---------------------------------------------------------------------- Rust lock files

RUST = HEADER.format(backends='["cpu"]') + '[tvm-ffi]\n\n[kernel.k]\nlanguage = "rust-cpu"\n'
CRATE = '[package]\nname = "kk"\nversion = "0.1.0"\n'
MANIFEST = 'cargo-manifest = "crate/Cargo.toml"\n'


def _rust_project(root: Path, src: list[str], files: dict[str, str]) -> Path:
    listed = ", ".join(f'"{p}"' for p in src)
    return write(
        root,
        {
            "build.toml": RUST + f"src = [{listed}]\n{MANIFEST}",
            "tvm-ffi-ext/kk/__init__.py": "",
            "crate/src/lib.rs": "",
            "crate/Cargo.toml": CRATE,
            **files,
        },
    )


@pytest.mark.parametrize(
    ("locks", "found"),
    [
        (["crate/Cargo.lock", "Cargo.lock"], "crate/Cargo.lock"),  # next to the manifest first
        (["Cargo.lock"], "Cargo.lock"),  # else the nearest directory above it
    ],
)
def test_an_unlisted_lock_file_is_found_with_a_located_warning(
    tmp_path: Path, locks: list[str], found: str
) -> None:
    root = _rust_project(
        tmp_path, ["crate/Cargo.toml", "crate/src"], dict.fromkeys(locks, "version = 4\n")
    )
    loaded = project.read(root)
    assert loaded.build.kernels["k"].src == ["crate/Cargo.toml", "crate/src", found]
    assert loaded.build.kernels["k"].lockfile() == found  # type: ignore[union-attr]
    [warning] = [p for p in loaded.warnings if p.path == ("kernel", "k", "src")]
    assert warning.severity == "warning" and warning.line == 12
    assert f"`src` does not list the crate's lock file; using `{found}`" in warning.message
    assert f"add `{found}` to `src` (`nixgen migrate` does)" in warning.message
    # The build sees it: it is in the kernel's source set and is its lock file.
    file = render.render(plan.make(loaded.build)).tree["kernels/k.nix"].decode()
    assert f'"crate/src" "{found}" ];' in file
    assert f'lockfile = "{found}";' in file


def test_a_workspace_members_lock_is_found_at_the_workspace_root(tmp_path: Path) -> None:
    root = _rust_project(
        tmp_path,
        ["Cargo.toml", "crate/Cargo.toml", "crate/src"],
        {"Cargo.toml": '[workspace]\nmembers = ["crate"]\n', "Cargo.lock": "version = 4\n"},
    )
    kernel = project.read(root).build.kernels["k"]
    assert kernel.src[-1] == "Cargo.lock"
    assert kernel.workspace_manifest() == "Cargo.toml"  # type: ignore[union-attr]


def test_migrate_lists_the_found_lock_file(tmp_path: Path) -> None:
    root = _rust_project(tmp_path, ["crate/Cargo.toml", "crate/src"], {"Cargo.lock": ""})
    migration = migrate.plan(root)
    assert migration.changed and migration.reason == "to list `Cargo.lock` in `src`"
    assert tomli.loads(migration.after)["kernel"]["k"]["src"] == [
        "crate/Cargo.toml",
        "crate/src",
        "Cargo.lock",
    ]
    migrate.write(migration)
    loaded = project.read(root)
    assert not [p for p in loaded.warnings if "lock file" in p.message]


def test_migrate_from_edition_5_lists_the_lock_file_too(tmp_path: Path) -> None:
    root = _rust_project(tmp_path, ["crate/Cargo.toml", "crate/src"], {"crate/Cargo.lock": ""})
    text = (root / "build.toml").read_text().replace(MANIFEST, "")
    text = text.replace("edition = 6", "edition = 5").replace(
        'language = "rust-cpu"', 'backend = "cpu"\ndsl = "rust"\ndepends = []'
    )
    (root / "build.toml").write_text(text)
    after = tomli.loads(migrate.plan(root).after)
    assert after["general"]["edition"] == 6
    assert after["kernel"]["k"]["src"][-1] == "crate/Cargo.lock"


def test_migrate_from_edition_5_lists_a_workspaces_lock_file(tmp_path: Path) -> None:
    """Edition 5 → 6 names the member crate's manifest, told from the workspace's by where
    they sit; its library name is the crate's own (read from it, not written)."""
    root = _rust_project(
        tmp_path,
        ["Cargo.toml", "crate/Cargo.toml", "crate/src"],
        {
            "Cargo.toml": '[workspace]\nmembers = ["crate"]\n',
            "Cargo.lock": "",
            "crate/Cargo.toml": '[package]\nname = "k-crate"\nversion = "0.1.0"\n',
        },
    )
    text = (root / "build.toml").read_text().replace(MANIFEST, "")
    text = text.replace("edition = 6", "edition = 5").replace(
        'language = "rust-cpu"', 'backend = "cpu"\ndsl = "rust"\ndepends = []'
    )
    (root / "build.toml").write_text(text)
    kernel = tomli.loads(migrate.plan(root).after)["kernel"]["k"]
    assert kernel["src"] == ["Cargo.toml", "crate/Cargo.toml", "crate/src", "Cargo.lock"]
    assert kernel["cargo-manifest"] == "crate/Cargo.toml" and "lib-name" not in kernel
    migrate.write(migrate.plan(root))
    assert project.read(root).build.kernels["k"].library == "k_crate"  # type: ignore[union-attr]


def test_a_crate_with_no_lock_file_anywhere_is_an_error_naming_the_fix(tmp_path: Path) -> None:
    root = _rust_project(tmp_path, ["crate/Cargo.toml", "crate/src"], {})
    with pytest.raises(ProblemError) as caught:
        project.read(root)
    [problem] = [p for p in caught.value.problems if p.severity == "error"]
    assert problem.path == ("kernel", "k", "src") and problem.line == 12
    assert "not at `crate/Cargo.lock`, `Cargo.lock`" in problem.message
    assert "run `cargo generate-lockfile`" in problem.message
    assert "add `crate/Cargo.lock` to `src`" in problem.message
    with pytest.raises(ProblemError):
        migrate.plan(root)
