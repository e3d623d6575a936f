"""Rust kernels as huggingface/kernels' `support-rust-kernels` branch writes them: edition-5
files with `dsl`, `features`, `lib-name`, `device-manifest`; their edition-6 form
(`rust-cpu`, `rust-cuda-oxide`, with `cargo-manifest`; what the format lacks in
nixgen.toml); crates in a workspace, source directories; git dependencies without hashes;
the library name read from the crate. The fixtures are our own files in the shape of the
branch's `examples/kernels/relu-rust` and `relu-cuda-oxide`."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import tomli

from nixgen.app import migrate
from nixgen.checking import project
from nixgen.core.errors import ProblemError
from nixgen.planning import plan, variants
from nixgen.rendering import render

from .nixtools import make_stub, needs_nix, nix_build, require_host, toolchain_input
from .projects import kernel_expr, relu_rust_v5, write

SYSTEM = "x86_64-linux"

RELU_OXIDE_V5 = """\
[general]
name = "relu-cuda-oxide"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[tvm-ffi]

[kernel.relu_cuda_oxide]
backend = "cuda"
dsl = "cuda-oxide"
depends = []
src = ["Cargo.toml", "Cargo.lock", "rust-toolchain.toml", "src", "device/Cargo.toml", "device/src"]
device-manifest = "device/Cargo.toml"
cuda-capabilities = ["8.0"]
"""


#: The tvm-ffi crate of the branch's relu-rust, as a lock file holds it (a git dependency).
def relu_oxide_v5(root: Path) -> Path:
    """A project shaped like the branch's relu-cuda-oxide: host crate at the root, device
    crate in `device/`, a nightly toolchain file."""
    return write(
        root,
        {
            "build.toml": RELU_OXIDE_V5,
            "Cargo.toml": '[package]\nname = "relu-cuda-oxide"\nversion = "0.1.0"\n'
            'edition = "2021"\n\n[lib]\ncrate-type = ["staticlib"]\n',
            "Cargo.lock": 'version = 4\n\n[[package]]\nname = "relu-cuda-oxide"\n'
            'version = "0.1.0"\n',
            "rust-toolchain.toml": '[toolchain]\nchannel = "nightly-2026-04-03"\n',
            "src/lib.rs": "// host\n",
            "device/Cargo.toml": '[package]\nname = "device"\nversion = "0.1.0"\n',
            "device/src/main.rs": "// device\n",
            "tvm-ffi-ext/relu_cuda_oxide/__init__.py": "",
        },
    )


def errors(root: Path) -> str:
    """The rendered errors of reading the project at `root` (which must fail)."""
    with pytest.raises(ProblemError) as info:
        project.read(root)
    return "\n".join(p.render() for p in info.value.errors)


def edit(root: Path, old: str, new: str) -> Path:
    toml = root / "build.toml"
    text = toml.read_text()
    assert old in text
    toml.write_text(text.replace(old, new))
    return root


# ------------------------------------------------------------------ edition 5 with `dsl`


def test_branch_relu_rust_reads_as_rust_cpu(tmp_path: Path) -> None:
    read = project.read(relu_rust_v5(tmp_path))
    assert read.edition == 5
    kernel = read.build.kernels["relu_rust"]
    assert kernel.language == "rust-cpu"
    assert kernel.src == ["relu-rs/Cargo.toml", "relu-rs/src", "Cargo.toml", "Cargo.lock"]
    # the crate's manifest (the workspace member's, by the branch's convention) names the
    # library: `[package] name = "relu-rs"` makes `relu_rs`, not the kernel's `relu_rust`
    assert kernel.cargo_manifest == kernel.manifest() == "relu-rs/Cargo.toml"
    assert kernel.library == "relu_rs"
    # parsing build.toml alone never reads Cargo files: the convention's name
    unread = project.read(tmp_path, check_files=False).build.kernels["relu_rust"]
    assert unread.library is None and unread.library_name("relu_rust") == "relu_rust"
    assert kernel.workspace_manifest() == "Cargo.toml"
    assert read.build.framework.src == []


def test_validate_points_at_the_language_to_use(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    done = CliRunner().invoke(main, ["validate", str(relu_rust_v5(tmp_path))])
    assert done.exit_code == 0, done.output
    assert 'kernel.relu_rust: `dsl = "rust"` is `language = "rust-cpu"` in edition 6' in done.output


def test_branch_relu_cuda_oxide_reads_as_rust_cuda_oxide(tmp_path: Path) -> None:
    read = project.read(relu_oxide_v5(tmp_path))
    kernel = read.build.kernels["relu_cuda_oxide"]
    assert kernel.language == "rust-cuda-oxide"
    assert kernel.device_manifest == "device/Cargo.toml"
    assert kernel.cuda_capabilities == ["8.0"]
    assert kernel.toolchain_file() == "rust-toolchain.toml"
    assert kernel.manifest() == "Cargo.toml" and kernel.workspace_manifest() is None


def test_migrate_writes_the_fields_edition_6_naming_the_crate(tmp_path: Path) -> None:
    root = relu_rust_v5(tmp_path)
    migration = migrate.plan(root / "build.toml")
    migrate.write(migration)
    data = tomli.loads((root / "build.toml").read_text())
    assert data["general"]["edition"] == 6
    assert data["tvm-ffi"] == {}
    assert data["kernel"]["relu_rust"] == {
        "language": "rust-cpu",
        "cargo-manifest": "relu-rs/Cargo.toml",
        "src": ["relu-rs/Cargo.toml", "relu-rs/src", "Cargo.toml", "Cargo.lock"],
    }
    # nothing beyond the format: no nixgen.toml
    assert not (root / "nixgen.toml").exists()
    # the comment above [tvm-ffi] stays
    assert "# No binding sources" in (root / "build.toml").read_text()
    read = project.read(root)
    assert read.edition == 6 and read.warnings == []
    # `[package] name = "relu-rs"` makes `relu_rs`, not the kernel's `relu_rust`
    assert read.build.kernels["relu_rust"].library == "relu_rs"
    tree = render.render(plan.make(read.build)).tree
    kernel_nix = tree["kernels/relu_rust.nix"].decode()
    # Data for nixgen.rust.kernel (lib/rust.nix), which vendors with allowBuiltinFetchGit:
    # a workspace member builds in its directory, from the workspace root (the project's).
    assert 'library = "relu_rs";' in kernel_nix
    assert 'crateDir = "relu-rs";' in kernel_nix and "cargoRoot" not in kernel_nix


def test_a_lib_name_the_crate_contradicts_is_refused_by_migrate(tmp_path: Path) -> None:
    # the format has no `lib-name`: the crate names its library, so an earlier file's
    # `lib-name` must be what the crate builds, or migrate would change the build
    root = relu_rust_v5(tmp_path)
    edit(root, 'dsl = "rust"', 'dsl = "rust"\nlib-name = "relu_other"')
    with pytest.raises(ProblemError) as info:
        migrate.plan(root / "build.toml")
    message = "\n".join(p.render() for p in info.value.errors)
    assert "kernel.relu_rust.lib-name" in message and "relu_other" in message, message
    assert "relu_rs" in message


def test_migrate_turns_cuda_oxide_into_rust_cuda_oxide(tmp_path: Path) -> None:
    root = relu_oxide_v5(tmp_path)
    migrate.write(migrate.plan(root / "build.toml"))
    kernel = tomli.loads((root / "build.toml").read_text())["kernel"]["relu_cuda_oxide"]
    assert kernel == {
        "language": "rust-cuda-oxide",
        "cargo-manifest": "Cargo.toml",
        "src": [
            "Cargo.toml",
            "Cargo.lock",
            "rust-toolchain.toml",
            "src",
            "device/Cargo.toml",
            "device/src",
        ],
        "cuda-capabilities": ["8.0"],
    }
    # the device crate is nixgen's own: the format's cuda-oxide builder reads it from the
    # crate's metadata, whose keys nixgen does not pin (docs/rust-kernels.md)
    options = tomli.loads((root / "nixgen.toml").read_text())
    assert options["kernel"]["relu_cuda_oxide"] == {"device-manifest": "device/Cargo.toml"}
    read = project.read(root)
    assert read.edition == 6
    tree = render.render(plan.make(read.build)).tree
    assert "kernels/relu_cuda_oxide.nix" in tree


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            'backend = "cpu"\ndsl = "rust"',
            'backend = "cpu"\ndsl = "cuda-oxide"',
            'language = "rust-cuda-oxide"',
        ),
        (
            'backend = "cpu"\ndsl = "rust"',
            'backend = "cuda"\ndsl = "rust"',
            'language = "rust-cuda-oxide"',
        ),
        ('dsl = "rust"', 'dsl = "cpp"\nfeatures = ["x"]', 'language = "rust-cpu"'),
        ('dsl = "rust"', 'dsl = "rust"\nptx-dir = "ptx"', 'language = "rust-cuda-oxide"'),
        ('dsl = "rust"', 'dsl = "rust"\ncxx-flags = ["-O3"]', "rust-cpu"),
    ],
)
def test_impossible_dsl_combinations_name_the_language(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    root = edit(relu_rust_v5(tmp_path), old, new)
    if 'backend = "cuda"' in new:
        edit(root, 'backends = ["cpu"]', 'backends = ["cpu", "cuda"]')
    message = errors(root)
    assert expected in message, message
    assert "build.toml:" in message  # located


def test_cuda_oxide_without_device_manifest_says_so(tmp_path: Path) -> None:
    root = edit(relu_oxide_v5(tmp_path), 'device-manifest = "device/Cargo.toml"\n', "")
    message = errors(root)
    assert "requires `device-manifest`" in message and "cuda-oxide" in message


@pytest.mark.parametrize("edition", ["4", "6"])
def test_dsl_in_another_edition_points_at_the_language(tmp_path: Path, edition: str) -> None:
    root = relu_rust_v5(tmp_path)
    if edition == "4":
        edit(root, "edition = 5\n", "")
        edit(root, "[tvm-ffi]\n", '[tvm-ffi]\nsrc = ["tvm-ffi-ext/b.cpp"]\n')
    else:
        edit(root, "edition = 5", "edition = 6")
        edit(root, 'backend = "cpu"', 'language = "rust-cpu"')
    message = errors(root)
    assert "kernel.relu_rust.dsl" in message
    assert 'language = "rust-cpu"' in message and 'language = "rust-cuda-oxide"' in message


# ------------------------------------------------------------------ edition 6 rules


def test_a_source_directory_may_not_hold_a_symlink_out_of_the_project(tmp_path: Path) -> None:
    root = relu_rust_v5(tmp_path / "p")
    (tmp_path / "outside.rs").write_text("")
    os.symlink(tmp_path / "outside.rs", root / "relu-rs" / "src" / "leak.rs")
    message = errors(root)
    assert "relu-rs/src/leak.rs" in message and "out of the project" in message


def test_three_manifests_are_refused(tmp_path: Path) -> None:
    root = relu_rust_v5(tmp_path)
    write(root, {"other/Cargo.toml": ""})
    edit(root, '"Cargo.toml", "Cargo.lock"]', '"Cargo.toml", "Cargo.lock", "other/Cargo.toml"]')
    message = errors(root)
    assert "workspace" in message and "next to `Cargo.lock`" in message


def test_rust_cuda_needs_a_toolchain_file(tmp_path: Path) -> None:
    root = edit(relu_oxide_v5(tmp_path), '"rust-toolchain.toml", ', "")
    assert "rust-toolchain.toml" in errors(root)


# ------------------------------------------------------------------ Nix: evaluation, builds

needs_cargo = pytest.mark.usefixtures("_cargo")


@pytest.fixture
def _cargo() -> None:
    require_host("rust", "toolchainBin", reason="no cargo on this machine")


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def rendered(root: Path) -> None:
    """Migrate (when needed) and render the project at `root`, as a user would."""
    from nixgen.writing import write

    if project.read(root).edition != 6:
        migrate.write(migrate.plan(root / "build.toml"))
    write.write(root, render.render(plan.make(project.read(root).build)))


def nix_error(expr: str, root: Path, *, build: bool = False) -> str:
    """The error output of evaluating (or building) `expr`, which must fail."""
    from .nixtools import NixError, nix_eval_json

    with pytest.raises(NixError) as info:
        if build:
            nix_build(expr, cwd=root, timeout=900)
        else:
            nix_eval_json(expr, cwd=root, read_write=True, timeout=300)
    return str(info.value)


@needs_nix
def test_relu_rust_evaluation_reaches_the_git_fetch_of_tvm_ffi(stub: Path, tmp_path: Path) -> None:
    """The branch's relu-rust, migrated alone, evaluates up to fetching its git dependency
    (no network here): nothing before it fails, and no hash is asked for."""
    root = relu_rust_v5(tmp_path / "relu-rust")
    rendered(root)
    message = nix_error(kernel_expr(stub, "relu_rust", attr=".cargoDeps.drvPath"), root)
    assert "https://github.com/apache/tvm-ffi.git" in message, message
    assert "No hash was found" not in message
    # the rest of the kernel evaluates: the workspace layout and the crate's library name
    from .nixtools import nix_eval_json

    got = nix_eval_json(
        f"""let k = {kernel_expr(stub, "relu_rust")}; in {{
          inherit (k) buildAndTestSubdir;
          library = k.passthru.nixgen.library;
        }}""",
        cwd=root,
        read_write=True,
    )
    assert got == {"buildAndTestSubdir": "relu-rs", "library": "relu_rs"}


@needs_nix
def test_rust_cuda_evaluates_up_to_the_codegen_backend(stub: Path, tmp_path: Path) -> None:
    """rust-cuda (cuda-oxide) is rendered the way the branch builds it; without network only
    evaluation is possible, and it reaches the fetch of the codegen backend's source."""
    from .nixtools import nix_eval_json

    root = relu_oxide_v5(tmp_path / "relu-cuda-oxide")
    rendered(root)
    base = kernel_expr(stub, "relu_cuda_oxide", backend="cuda")
    got = nix_eval_json(
        f"""let k = {base}; in {{
          inherit (k) pname preBuild postInstall;
          arch = k.KERNEL_BUILDER_CUDA_ARCHS or k.env.KERNEL_BUILDER_CUDA_ARCHS;
          passthru = k.passthru.nixgen;
          vendor = k.cargoDeps.drvPath;
        }}""",
        cwd=root,
        read_write=True,
    )
    assert got["passthru"]["library"] == "relu_cuda_oxide"
    assert got["passthru"]["capabilities"] == ["8.0"]
    assert "CUDA_OXIDE_TARGET=sm_80" in got["preBuild"]
    assert "--manifest-path device/Cargo.toml" in got["preBuild"]
    assert "librelu_cuda_oxide.a" in got["postInstall"]
    message = nix_error(f"({base}).drvPath", root)
    assert "drbh/cuda-oxide" in message, message


RELU_TILE = """\
[general]
name = "relu-tile"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cuda"]

[tvm-ffi]

[kernel.relu_tile]
language = "rust-cutile"
cargo-manifest = "tile/Cargo.toml"
src = ["tile/Cargo.lock", "tile/src/lib.rs"]
tileiras-minver = "13.2"
"""


@needs_nix
def test_rust_cutile_evaluates_and_names_what_it_lacks(stub: Path, tmp_path: Path) -> None:
    """rust-cutile renders and its project evaluates: the kernel is in the variants of CUDA
    13.2 and later only (`tileiras-minver`); its derivation needs the toolkit's
    `cuda_tileiras`, which neither the stand-ins nor the pinned toolchain flake have, and
    evaluating it says so (nix/tests/rust.nix evaluates it with one)."""
    from .nixtools import nix_eval_json

    root = write(
        tmp_path / "relu-tile",
        {
            "build.toml": RELU_TILE,
            "tile/Cargo.toml": '[package]\nname = "relu-tile"\nversion = "0.1.0"\n',
            "tile/Cargo.lock": "version = 3\n",
            "tile/src/lib.rs": "// cuTile kernels\n",
            "tvm-ffi-ext/relu_tile/__init__.py": "",
        },
    )
    rendered(root)
    got = nix_eval_json(
        f"""map (v: {{ inherit (v) backendVersion kernels; }})
          ((import ./nix).variants "{SYSTEM}")""",
        cwd=root,
        read_write=True,
    )
    cuda = {v["backendVersion"]: v["kernels"] for v in got}
    assert cuda and all(
        kernels == (["relu_tile"] if version == "13.2" else []) for version, kernels in cuda.items()
    ), cuda
    expr = f"""
      let
        p = import ./nix;
        v = builtins.head (builtins.filter (v: v.kernels != [ ]) (p.variants "{SYSTEM}"));
        d = p.variantPackage {{
          nixpkgs = {stub}; kernel-builder = {toolchain_input(stub)}; system = "{SYSTEM}";
        }} v;
      in d.nixgen.kernels.relu_tile.drvPath
    """
    message = nix_error(expr, root)
    assert "kernel relu_tile (rust-cutile)" in message and "cuda_tileiras" in message, message


def git_dependency_project(root: Path, dep: Path, *, library: str = "relu_git") -> Path:
    """A rust-cpu kernel whose crate depends on `relu-helper` from the local git repository
    `dep` (a file URL), locked at its commit; nothing in build.toml or nixgen.toml names a
    hash. The kernel links into a [torch] extension: nixgen.toml defines it."""
    write(
        dep,
        {
            "Cargo.toml": '[package]\nname = "relu-helper"\nversion = "0.1.0"\nedition = "2021"\n',
            "src/lib.rs": "pub fn relu(x: f32) -> f32 {\n    if x > 0.0 { x } else { 0.0 }\n}\n",
        },
    )
    git = ["git", "-C", str(dep), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "helper"], check=True)
    sha = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    url = f"file://{dep}"
    return write(
        root,
        {
            "build.toml": textwrap.dedent(
                """\
                [general]
                name = "relu-git"
                version = 1
                edition = 6
                license = "Apache-2.0"
                backends = ["cpu"]

                [torch]
                src = ["torch-ext/torch_binding.cpp"]
                """
            ),
            "nixgen.toml": textwrap.dedent(
                """                [kernel.relu_git]
                language = "rust-cpu"
                cargo-manifest = "relu_git/Cargo.toml"
                src = ["relu_git/src", "Cargo.lock"]
                """
            ),
            "torch-ext/torch_binding.cpp": "",
            "torch-ext/relu_git/__init__.py": "",
            "relu_git/Cargo.toml": textwrap.dedent(
                f"""\
                [package]
                name = "relu-git"
                version = "0.1.0"
                edition = "2021"

                [lib]
                name = "{library}"
                crate-type = ["staticlib"]

                [dependencies]
                relu-helper = {{ git = "{url}" }}
                """
            ),
            "relu_git/src/lib.rs": textwrap.dedent(
                """\
                #[no_mangle]
                pub extern "C" fn relu_git_f32(x: f32) -> f32 {
                    relu_helper::relu(x)
                }
                """
            ),
            "Cargo.lock": textwrap.dedent(
                f"""\
                version = 3

                [[package]]
                name = "relu-git"
                version = "0.1.0"
                dependencies = [
                 "relu-helper",
                ]

                [[package]]
                name = "relu-helper"
                version = "0.1.0"
                source = "git+{url}#{sha}"
                """
            ),
        },
    )


@needs_nix
@needs_cargo
@pytest.mark.build
def test_git_dependency_in_a_local_repository_builds_without_a_hash(
    stub: Path, tmp_path: Path
) -> None:
    root = git_dependency_project(tmp_path / "p", tmp_path / "relu-helper")
    assert "hash" not in (root / "build.toml").read_text() + (root / "nixgen.toml").read_text()
    rendered(root)
    out = nix_build(kernel_expr(stub, "relu_git"), cwd=root, timeout=900)
    symbols = subprocess.run(
        ["nm", "--defined-only", str(out / "lib" / "librelu_git.a")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert " T relu_git_f32" in symbols


@needs_nix
@needs_cargo
@pytest.mark.build
def test_a_crate_renamed_after_rendering_fails_with_the_fix(stub: Path, tmp_path: Path) -> None:
    # nixgen reads the library name from the crate when it renders; a crate renamed since
    # builds another archive, which the kernel's check names
    root = git_dependency_project(tmp_path / "p", tmp_path / "relu-helper")
    rendered(root)
    manifest = root / "relu_git" / "Cargo.toml"
    manifest.write_text(manifest.read_text().replace('name = "relu_git"', 'name = "relu_other"'))
    message = nix_error(kernel_expr(stub, "relu_git"), root, build=True)
    assert "kernel relu_git: the crate did not build librelu_git.a" in message, message
    assert "it built: librelu_other.a" in message
    assert "render again (nixgen render)" in message


@needs_nix
@needs_cargo
@pytest.mark.build
def test_a_crate_missing_from_the_lock_file_names_it_and_the_fix(
    stub: Path, tmp_path: Path
) -> None:
    root = git_dependency_project(tmp_path / "p", tmp_path / "relu-helper")
    lock = root / "Cargo.lock"
    lock.write_text(lock.read_text().split('\n[[package]]\nname = "relu-helper"')[0])
    lock.write_text(lock.read_text().replace(' "relu-helper",\n', ""))
    rendered(root)
    message = nix_error(kernel_expr(stub, "relu_git"), root, build=True)
    assert "kernel relu_git: Cargo.lock does not lock every crate" in message, message
    assert "(missing: relu-helper)" in message
    assert "cargo generate-lockfile" in message


# ------------------------------------------------------ a Rust crate that IS the binding


@needs_nix
@needs_cargo
@pytest.mark.build
def test_tvm_ffi_crate_is_the_binding_builds_loads_and_matches_torch(
    stub: Path, tmp_path: Path
) -> None:
    """`nixgen init --language rust-cpu --binding tvm-ffi`: a crate with no external crates
    exporting `relu` with the TVM FFI C ABI, `[tvm-ffi]` without sources. Built through the
    stand-in, loaded by the `kernels` client (its `_ops.py` calls `tvm_ffi.load_module`),
    and compared with `torch.relu`."""
    torch = pytest.importorskip("torch")
    import kernels as client  # locked (requirements/dev.txt): never skipped

    tvm_ffi = pytest.importorskip("tvm_ffi")
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    root = tmp_path / "relu-tvm"
    done = CliRunner().invoke(
        main,
        ["init", "relu-tvm", "--language", "rust-cpu", "--binding", "tvm-ffi", "--dir", str(root)],
    )
    assert done.exit_code == 0, done.output
    assert tomli.loads((root / "build.toml").read_text())["tvm-ffi"] == {}
    [variant] = [
        v
        for v in variants.variants(project.read(root).build, system=SYSTEM)
        if v.backend == "cpu" and v.bundle
    ]
    expr = f"""
      let
        p = import ./nix;
        v = builtins.head (builtins.filter (v: v.name == "{variant.name}") (p.variants "{SYSTEM}"));
      in p.variantPackage {{
        nixpkgs = {stub}; kernel-builder = {toolchain_input(stub)}; system = "{SYSTEM}";
      }} v
    """
    out = nix_build(expr, cwd=root, timeout=900)
    [module] = out.glob("*.abi3.so")
    # linked whole and not hidden: the crate's function is an exported dynamic symbol
    dynamic = subprocess.run(
        ["nm", "-D", "--defined-only", str(module)], capture_output=True, text=True, check=True
    ).stdout
    assert " T __tvm_ffi_relu" in dynamic
    assert "tvm_ffi.load_module" in (out / "_ops.py").read_text()
    layout = tmp_path / "build"
    layout.mkdir()
    (layout / variant.name).symlink_to(out)
    kernel = client.get_local_kernel(layout, backend="cpu")
    generator = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        for shape in [(0,), (1,), (1000,), (17, 33, 9)]:
            x = torch.randn(shape, dtype=dtype, generator=generator)
            torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0)
    x = torch.tensor([float("nan"), -0.0, -1.0, 2.5, float("-inf")])
    torch.testing.assert_close(kernel.relu(x), torch.relu(x), rtol=0, atol=0, equal_nan=True)
    x = torch.randn(64, 48, generator=generator)[:, ::3].t()
    out_t = torch.full((64, 16), 42.0).t()
    kernel.relu(x, out=out_t)
    torch.testing.assert_close(out_t, torch.relu(x), rtol=0, atol=0)
    # errors from the crate surface as Python exceptions through TVM FFI
    with pytest.raises(TypeError, match="float32 or float64"):
        ints = tvm_ffi.from_dlpack(torch.zeros(3, dtype=torch.int32))
        kernel.ops.relu(ints, ints)
