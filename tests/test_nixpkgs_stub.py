"""The stub nixpkgs (tests/nixpkgs) behaves like the nixpkgs interfaces it stands in for.

Evaluation tests check the strictness generated code is tested against (argument names,
env checks, cargoLock resolution, the unfree gate, CUDA capabilities, callPackage, overlays,
file sets, flakes). Build tests (marked ``build``) really compile tiny derivations through
the stub with the host toolchains: g++, cargo --offline, nvcc and the host torch headers.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.nixtools import (
    NixError,
    flake_build,
    flake_check,
    flake_eval,
    flake_show,
    have_nix,
    host_facts,
    kernel_builder,
    make_stub,
    nix_build,
    nix_eval_json,
    nix_parse,
)

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

CUDA_EULA = "because it has an unfree license (‘CUDA EULA’)"


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def pkgs(
    stub: Path, *, system: str = "x86_64-linux", config: str = "{ }", overlays: str = "[ ]"
) -> str:
    return f'(import {stub} {{ system = "{system}"; config = {config}; overlays = {overlays}; }})'


def eval_error(expr: str, cwd: Path | None = None) -> str:
    with pytest.raises(NixError) as caught:
        nix_eval_json(expr, cwd=cwd)
    return caught.value.stderr


def drv_path(expr: str) -> str:
    return f"({expr}).drvPath"


def needs(*what: str) -> None:
    """Skip unless this machine has each of `what`: a host.nix section (cc, rust, cuda,
    torch) or an executable on PATH (cmake, ninja)."""
    facts = host_facts()
    for w in what:
        present = facts.get(w) is not None if w in facts else shutil.which(w) is not None
        if not present:
            pytest.skip(f"{w} is not available on this machine")


# -- strictness of stdenv.mkDerivation and buildRustPackage -------------------------------


def test_mkderivation_rejects_a_misspelt_argument_and_suggests_the_real_one(stub: Path) -> None:
    err = eval_error(
        drv_path(f'{pkgs(stub)}.stdenv.mkDerivation {{ name = "k"; nativeBuildInput = [ ]; }}')
    )
    assert (
        "stdenv.mkDerivation called with unexpected argument 'nativeBuildInput', "
        "did you mean 'nativeBuildInputs'?"
    ) in err
    assert "Put custom environment variables in `env`" in err


def test_structured_attrs_take_string_data_but_still_reject_a_misspelt_input(stub: Path) -> None:
    # With __structuredAttrs, real nixpkgs hands every argument to the builder as data
    # (.attrs.json): strings and lists of strings (nixgen's kernel flags) are accepted.
    mk = f"{pkgs(stub)}.stdenv.mkDerivation"
    data = f'{mk} {{ name = "k"; __structuredAttrs = true; cxxFlags = [ "-O2" "a b" ]; k = "k"; }}'
    assert nix_eval_json(drv_path(data)).endswith("-k.drv")
    ninja = f"{pkgs(stub)}.ninja"
    typo = f'{mk} {{ name = "k"; __structuredAttrs = true; nativeBuildInput = [ {ninja} ]; }}'
    assert "called with unexpected argument 'nativeBuildInput'" in eval_error(drv_path(typo))
    # Without structured attrs such a name would be an environment variable: refused.
    plain = f'{mk} {{ name = "k"; cxxFlags = [ ]; }}'
    assert "called with unexpected argument 'cxxFlags'" in eval_error(drv_path(plain))


def test_build_rust_package_rejects_a_misspelt_argument(stub: Path, tmp_path: Path) -> None:
    (tmp_path / "Cargo.lock").write_text("version = 4\n")
    err = eval_error(
        drv_path(
            f"{pkgs(stub)}.rustPlatform.buildRustPackage {{"
            ' pname = "k"; version = "1"; src = ./.; cargoLock.lockFile = ./Cargo.lock;'
            " buildFeature = [ ]; }"
        ),
        cwd=tmp_path,
    )
    assert (
        "rustPlatform.buildRustPackage called with unexpected argument 'buildFeature', "
        "did you mean 'buildFeatures'?"
    ) in err


def test_env_may_not_overlap_derivation_arguments(stub: Path) -> None:
    err = eval_error(
        drv_path(
            f'{pkgs(stub)}.stdenv.mkDerivation {{ name = "k"; NIX_CFLAGS_COMPILE = "-O2";'
            ' env.NIX_CFLAGS_COMPILE = "-O3"; }'
        )
    )
    assert (
        "The `env` attribute set cannot contain any attributes passed to derivation. "
        "The following attributes are overlapping:\n"
    ) in err
    assert '- NIX_CFLAGS_COMPILE: in `env`: "-O3"; in derivation arguments: "-O2"' in err


def test_env_values_must_be_strings_bools_ints_or_derivations(stub: Path) -> None:
    err = eval_error(drv_path(f'{pkgs(stub)}.stdenv.mkDerivation {{ name = "k"; env.L = [ 1 ]; }}'))
    assert "The `env` attribute set can only contain derivation, string, boolean or integer" in err
    assert "The `L` attribute is of type list." in err


def test_dependencies_must_be_derivations_strings_or_paths(stub: Path) -> None:
    err = eval_error(
        drv_path(f'{pkgs(stub)}.stdenv.mkDerivation {{ name = "k"; buildInputs = [ 1 ]; }}')
    )
    assert "Dependency is not of a valid type: element 1 of buildInputs for k" in err


def test_finalattrs_meta_and_passthru_are_handled_like_nixpkgs(stub: Path) -> None:
    got = nix_eval_json(
        f"let d = {pkgs(stub)}.stdenv.mkDerivation (finalAttrs: {{"
        ' pname = "k"; version = "1.2"; env.K = finalAttrs.pname;'
        ' passthru.tag = "t"; meta.description = "d"; }); in {'
        " inherit (d) name version tag; desc = d.meta.description;"
        " hasMeta = d.drvAttrs ? meta; hasPassthru = d.drvAttrs ? passthru; k = d.drvAttrs.K;"
        ' over = (d.overrideAttrs (old: { version = "2"; })).name; }'
    )
    assert got == {
        "name": "k-1.2",
        "version": "1.2",
        "tag": "t",
        "desc": "d",
        "hasMeta": False,
        "hasPassthru": False,
        "k": "k",
        "over": "k-2",
    }


def test_cargo_deps_must_be_set(stub: Path) -> None:
    err = eval_error(
        drv_path(
            f"{pkgs(stub)}.rustPlatform.buildRustPackage"
            ' { pname = "k"; version = "1"; src = ./.; }'
        )
    )
    assert "error: cargoHash, cargoVendorDir, cargoDeps, or cargoLock must be set" in err


def test_cargo_lock_takes_the_import_cargo_lock_arguments(stub: Path, tmp_path: Path) -> None:
    (tmp_path / "Cargo.lock").write_text("version = 4\n")
    base = f'{pkgs(stub)}.rustPlatform.buildRustPackage {{ pname = "k"; version = "1"; src = ./.; '
    err = eval_error(drv_path(base + "cargoLock.lockfile = ./Cargo.lock; }"), cwd=tmp_path)
    assert (
        "importCargoLock called with unexpected argument 'lockfile', did you mean 'lockFile'?"
        in err
    )
    err = eval_error(drv_path(base + "cargoLock = { }; }"), cwd=tmp_path)
    assert "exactly one of `lockFile` or `lockFileContents` must be set" in err


# -- CUDA -----------------------------------------------------------------------------------


def test_cuda_is_refused_without_allow_unfree(stub: Path) -> None:
    err = eval_error(f"{pkgs(stub)}.cudaPackages_13_0.cuda_nvcc.drvPath")
    assert "Refusing to evaluate package 'cuda13.0-cuda_nvcc-13.0.88'" in err
    assert CUDA_EULA in err
    allowed = nix_eval_json(
        f"{pkgs(stub, config='{ allowUnfree = true; }')}.cudaPackages_13_0.cuda_nvcc.drvPath"
    )
    assert allowed.endswith("-cuda13.0-cuda_nvcc-13.0.88.drv")
    predicate = '{ allowUnfreePredicate = p: builtins.elem (p.pname or "") [ "cuda_nvcc" ]; }'
    assert nix_eval_json(
        f"{pkgs(stub, config=predicate)}.cudaPackages_13_0.cuda_nvcc.drvPath"
    ).endswith(".drv")


def test_cuda_package_sets_and_flags(stub: Path) -> None:
    config = '{ allowUnfree = true; cudaSupport = true; cudaCapabilities = [ "8.0" "9.0" ]; }'
    got = nix_eval_json(
        f"let p = {pkgs(stub, config=config)}; in {{"
        ' sets = map (s: p.${s}.cudaMajorMinorVersion) [ "cudaPackages" "cudaPackages_12"'
        ' "cudaPackages_13" "cudaPackages_12_6" "cudaPackages_12_9" "cudaPackages_13_0"'
        ' "cudaPackages_13_2" ];'
        " inherit (p.cudaPackages.flags) gencode cmakeCudaArchitecturesString realArches;"
        ' atLeast = p.cudaPackages.cudaAtLeast "12.8";'
        ' older = p.cudaPackages_12_6.cudaOlder "12.8";'
        " caps = p.cudaPackages.backendStdenv.cudaCapabilities;"
        " cublas = p.cudaPackages.libcublas.name; }"
    )
    assert got == {
        # the defaults of all-packages.nix at the pin: cudaPackages = cudaPackages_12 =
        # cudaPackages_12_9, cudaPackages_13 = cudaPackages_13_2
        "sets": ["12.9", "12.9", "13.2", "12.6", "12.9", "13.0", "13.2"],
        "gencode": [
            "-gencode=arch=compute_80,code=sm_80",
            "-gencode=arch=compute_90,code=sm_90",
            "-gencode=arch=compute_90,code=compute_90",
        ],
        "cmakeCudaArchitecturesString": "80;90",
        "realArches": ["sm_80", "sm_90"],
        "atLeast": True,
        "older": True,
        "caps": ["8.0", "9.0"],
        "cublas": "cuda12.9-libcublas-12.9.0",
    }


def test_backend_stdenv_checks_capabilities_per_cuda_version(stub: Path) -> None:
    config = '{ allowUnfree = true; cudaCapabilities = [ "7.0" ]; }'
    p = pkgs(stub, config=config)
    assert nix_eval_json(f"{p}.cudaPackages_12_6.backendStdenv.cudaCapabilities") == ["7.0"]
    err = eval_error(f"{p}.cudaPackages_13_0.backendStdenv.cudaCapabilities")
    assert "cudaPackages_13_0.backendStdenv has failed assertions:" in err
    assert 'Requested CUDA capabilities which are too old for CUDA 13.0: ["7.0"]' in err


# -- package set mechanics -----------------------------------------------------------------


def test_callpackage_fills_arguments_and_reports_missing_ones(stub: Path) -> None:
    got = nix_eval_json(
        f"let p = {pkgs(stub)}; f = {{ lib, stdenv, x ? 1, cudaPackages }}: {{ inherit x; }}; in"
        " [ (p.callPackage f { }).x (p.callPackage f { x = 2; }).x"
        "   ((p.callPackage f { }).override { x = 3; }).x ]"
    )
    assert got == [1, 2, 3]
    err = eval_error(f"{pkgs(stub)}.callPackage ({{ stdenv, cudaPackage }}: stdenv) {{ }}")
    assert 'Function called without required argument "cudaPackage"' in err
    assert 'did you mean "cudaPackages"' in err


def test_overlays_are_a_fixed_point(stub: Path) -> None:
    overlays = (
        '[ (final: prev: { greeting = "a"; shout = final.greeting + "!"; })'
        '  (final: prev: { greeting = prev.greeting + "b";'
        "    cudaPackages = final.cudaPackages_12_6; }) ]"
    )
    got = nix_eval_json(
        f"let p = {pkgs(stub, overlays=overlays)}; in"
        " [ p.shout p.cudaPackages.cudaMajorMinorVersion ]"
    )
    assert got == ["ab!", "12.6"]


def test_unknown_import_arguments_are_rejected(stub: Path) -> None:
    err = eval_error(f'(import {stub} {{ system = "x86_64-linux"; cudaSupport = true; }}).stdenv')
    assert "called with unexpected argument 'cudaSupport' (it belongs in `config`)" in err


def test_fileset_to_source_copies_exactly_the_listed_files(stub: Path, tmp_path: Path) -> None:
    for rel in ("a.txt", "sub/b.txt", "sub/deep/c.txt", "skip.txt", "other/d.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    fs = f"{pkgs(stub)}.lib.fileset"
    src = nix_eval_json(
        f"builtins.toString ({fs}.toSource {{ root = ./.; fileset = {fs}.unions"
        f" [ ./a.txt ./sub ({fs}.maybeMissing ./absent.txt) ]; }})",
        cwd=tmp_path,
        read_write=True,
    )
    files = sorted(str(p.relative_to(src)) for p in Path(src).rglob("*") if p.is_file())
    assert files == ["a.txt", "sub/b.txt", "sub/deep/c.txt"]
    assert Path(src).name.endswith("-source")
    err = eval_error(
        f"{fs}.toSource {{ root = ./.; fileset = {fs}.unions [ ./a.txt ./nope.cu ]; }}",
        cwd=tmp_path,
    )
    assert (
        f"lib.fileset.unions: Element 1 ({tmp_path.resolve()}/nope.cu)"
        " is a path that does not exist." in err
    )


def with_toolchain(stub: Path, *, system: str = "x86_64-linux", config: str = "{ }") -> str:
    """The stub nixpkgs with the kernels toolchain stand-in's overlay, as a build set."""
    overlay = f"(import {kernel_builder(stub)}/nix-builder/overlay.nix {{ }})"
    return pkgs(stub, system=system, config=config, overlays=f"[ {overlay} ]")


#: Attributes only the kernels toolchain's overlay defines (huggingface/kernels
#: nix-builder/overlay.nix); real nixpkgs at the pin has none of them.
OVERLAY_ONLY = [
    "rocmPackages_7_1",
    "rocmPackages_7_2",
    "xpuPackages_2025_3_2",
    "xpuPackages_2026_0_0",
    "xpuPackages",
    "cutlass_2_10",
    "cutlass_3_5",
    "cutlass_3_6",
    "cutlass_3_8",
    "cutlass_3_9",
    "cutlass_4_0",
    "cutlass_4_4",
    "cutlass_4_5",
    "manylinux_2_28",
    "metal-cpp",
    "kernel-builder",
]
OVERLAY_ONLY_PYTHON = ["torch-bin_2_11", "torch-bin_2_12", "torch-bin_2_13", "tvm-ffi"]


def test_stub_nixpkgs_alone_has_no_toolchain_only_names(stub: Path) -> None:
    """A generated file that names an overlay-only attribute on plain nixpkgs fails here,
    as it would with real nixpkgs; the toolchain stand-in's overlay provides them all."""
    names = " ".join(f'"{n}"' for n in OVERLAY_ONLY)
    py_names = " ".join(f'"{n}"' for n in OVERLAY_ONLY_PYTHON)
    expr = (
        "let has = p: { top = builtins.filter (n: p ? ${n}) [ NAMES ];"
        " python = builtins.filter (n: p.python3.pkgs ? ${n}) [ PY ]; }; in"
        " { plain = has PLAIN; toolchain = has TOOLCHAIN; }"
    )
    expr = (
        expr.replace("NAMES", names)
        .replace("PY", py_names)
        .replace("PLAIN", pkgs(stub))
        .replace("TOOLCHAIN", with_toolchain(stub))
    )
    got = nix_eval_json(expr)
    assert got["plain"] == {"top": [], "python": []}
    assert got["toolchain"] == {"top": OVERLAY_ONLY, "python": OVERLAY_ONLY_PYTHON}


def test_eval_only_backends_evaluate(stub: Path) -> None:
    linux = pkgs(stub, config="{ allowUnfree = true; }")
    tool = with_toolchain(stub, config="{ allowUnfree = true; }")
    darwin = with_toolchain(stub, system="aarch64-darwin", config="{ allowUnfree = true; }")
    got = nix_eval_json(
        f"let l = {linux}; t = {tool}; d = {darwin}; drv = x: builtins.isString x.drvPath; in {{"
        " rocm = [ (let r = l.rocmPackages; in drv r.clr && drv r.hipcub && drv r.rocprim"
        "   && drv r.rocthrust && drv r.rocm-core && drv r.hipcc) ]"
        " ++ map (s: drv t.${s}.clr && drv t.${s}.hipcub-devel && drv t.${s}.rocprim-devel"
        "   && drv t.${s}.rocthrust-devel && drv t.${s}.rocm-core && drv t.${s}.hipcc)"
        '   [ "rocmPackages_7_1" "rocmPackages_7_2" ];'
        ' xpu = drv (l.intelLlvmStdenv.mkDerivation { name = "x"; })'
        "   && drv l.level-zero && drv l.onetbb && drv l.oneDNN && drv l.onednn"
        "   && drv t.xpuPackages_2025_3_2.oneapi-torch-dev && drv t.xpuPackages_2026_0_0.sycl-tla;"
        " darwin = [ d.stdenv.hostPlatform.isDarwin d.stdenv.cc.isClang (drv d.apple-sdk_26)"
        "   (drv d.apple-sdk) (drv d.metal-cpp.dev) ];"
        ' cutlass = map (v: t."cutlass_${v}".version)'
        '   [ "2_10" "3_5" "3_6" "3_8" "3_9" "4_0" "4_4" "4_5" ];'
        ' torch = map (v: t.python3Packages."torch-bin_${v}".version) [ "2_12" "2_13" ];'
        " torchDefault = l.python3.pkgs.torch-bin.version;"
        " manylinux = [ (drv t.manylinux_2_28.stdenv.cc)"
        " (drv t.manylinux_2_28.cudaBackendStdenv.cc) ];"
        " python = [ l.python3.sitePackages l.python3.pythonVersion ]; }"
    )
    needs("python")
    py_version = ".".join(host_facts()["python"]["version"].split(".")[:2])
    assert got == {
        "rocm": [True, True, True],
        "xpu": True,
        "darwin": [True, True, True, True, True],
        "cutlass": ["2.10.0", "3.5.1", "3.6.0", "3.8.0", "3.9.2", "4.0.0", "4.4.2", "4.5.2"],
        "torch": ["2.12.0", "2.13.0"],
        "torchDefault": "2.13.0",
        "manylinux": [True, True],
        "python": [f"lib/python{py_version}/site-packages", py_version],
    }
    err = eval_error(f"{tool}.metal-cpp.drvPath")
    assert "is not available on the requested hostPlatform" in err


def test_flake_input_override_uses_the_stub(stub: Path, tmp_path: Path) -> None:
    flake = textwrap.dedent(
        """\
        {
          inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
          outputs = { self, nixpkgs }: {
            probe = nixpkgs.lib.genAttrs [ "x86_64-linux" "aarch64-darwin" ] (system:
              let p = import nixpkgs { inherit system; config.allowUnfree = true; }; in {
                darwin = p.stdenv.hostPlatform.isDarwin;
                cuda = p.cudaPackages.cudaMajorMinorVersion;
                legacy = nixpkgs.legacyPackages.${system}.stdenv.hostPlatform.system;
              });
          };
        }
        """
    )
    nix_parse(flake)
    (tmp_path / "flake.nix").write_text(flake)
    got = flake_eval(tmp_path, "probe", stub=stub)
    assert got == {
        "x86_64-linux": {"darwin": False, "cuda": "12.9", "legacy": "x86_64-linux"},
        "aarch64-darwin": {"darwin": True, "cuda": "12.9", "legacy": "aarch64-darwin"},
    }
    assert not (tmp_path / "flake.lock").exists()


def test_symlink_join_and_link_farm_check_their_arguments(stub: Path) -> None:
    err = eval_error(drv_path(f'{pkgs(stub)}.symlinkJoin {{ name = "k"; path = [ ]; }}'))
    assert "symlinkJoin called with unexpected argument 'path', did you mean 'paths'?" in err
    err = eval_error(
        drv_path(f'{pkgs(stub)}.linkFarm "k" [ {{ name = "a"; path = ./.; mode = "x"; }} ]')
    )
    assert (
        "linkFarm k: each list element must be an attribute set with exactly `name` and `path`"
        in err
    )


def test_host_nix_is_the_only_place_with_machine_paths() -> None:
    facts = host_facts()
    sections = [facts.get(k) or {} for k in ("cc", "rust", "cuda", "python", "torch")]
    machine = {facts["shell"], *(v for sec in sections for v in sec.values() if isinstance(v, str))}
    machine = {m for m in machine if m and m.startswith("/")}
    stub_dir = Path(__file__).parent / "nixpkgs"
    for path in stub_dir.rglob("*"):
        if path.is_file() and path.suffix in {".nix", ".sh", ".md"} and path.name != "host.nix":
            text = path.read_text()
            for m in machine:
                assert m not in text, f"{path} mentions the machine path {m}"


# -- real builds ----------------------------------------------------------------------------

GXX_SOURCE = 'extern "C" int stub_add(int a, int b) { return a + b; }\n'

GXX_EXPR = """
let p = {pkgs}; in
p.stdenv.mkDerivation {{
  pname = "stub-add"; version = "1.0";
  src = p.lib.fileset.toSource {{ root = ./.; fileset = ./add.cpp; }};
  buildPhase = ''
    runHook preBuild
    $CXX -O2 -g -fPIC -shared add.cpp -o libstubadd.so
    runHook postBuild
  '';
  installPhase = ''
    runHook preInstall
    install -Dm755 libstubadd.so $out/lib/libstubadd.so
    runHook postInstall
  '';
}}
"""


def symbols(path: Path, *, dynamic: bool = False) -> str:
    args = ["nm", "-D", str(path)] if dynamic else ["nm", str(path)]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def gxx_project(stub: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    needs("cc")
    root = tmp_path_factory.mktemp("gxx")
    (root / "add.cpp").write_text(GXX_SOURCE)
    return root, GXX_EXPR.format(pkgs=pkgs(stub))


@pytest.mark.build
def test_build_gxx_shared_library(gxx_project: tuple[Path, str]) -> None:
    root, expr = gxx_project
    out = nix_build(expr, cwd=root)
    assert " T stub_add" in symbols(out / "lib" / "libstubadd.so", dynamic=True)


@pytest.mark.build
def test_gxx_output_is_bit_for_bit_reproducible(gxx_project: tuple[Path, str]) -> None:
    root, expr = gxx_project
    nix_build(expr, cwd=root)
    # Rebuilt outside the sandbox (a different /tmp build dir) and inside it (/build).
    nix_build(expr, cwd=root, check=True, sandbox=False)
    nix_build(expr, cwd=root, check=True)


RUST_CARGO_TOML = """\
[package]
name = "tiny_kernel"
version = "0.1.0"
edition = "2021"

[lib]
crate-type = ["staticlib"]

[features]
default = []
double = []
"""

RUST_LIB = """\
#[no_mangle]
pub extern "C" fn tiny_scale(x: f32) -> f32 {
    if cfg!(feature = "double") { x * 2.0 } else { x }
}

#[cfg(feature = "double")]
#[no_mangle]
pub extern "C" fn tiny_double_enabled() -> i32 {
    1
}
"""

RUST_LOCK = """\
# This file is automatically @generated by Cargo.
# It is not intended for manual editing.
version = 4

[[package]]
name = "tiny_kernel"
version = "0.1.0"
"""


@pytest.mark.build
def test_build_rust_staticlib_with_features(stub: Path, tmp_path: Path) -> None:
    needs("rust")
    (tmp_path / "src").mkdir()
    (tmp_path / "Cargo.toml").write_text(RUST_CARGO_TOML)
    (tmp_path / "Cargo.lock").write_text(RUST_LOCK)
    (tmp_path / "src" / "lib.rs").write_text(RUST_LIB)
    expr = f"""
    let p = {pkgs(stub)}; in
    p.rustPlatform.buildRustPackage (finalAttrs: {{
      pname = "tiny_kernel"; version = "0.1.0";
      src = p.lib.fileset.toSource {{
        root = ./.;
        fileset = p.lib.fileset.unions [ ./Cargo.toml ./Cargo.lock ./src ];
      }};
      cargoLock.lockFile = ./Cargo.lock;
      buildFeatures = [ "double" ];
      doCheck = false;
    }})
    """
    out = nix_build(expr, cwd=tmp_path)
    archive = out / "lib" / "libtiny_kernel.a"
    assert archive.is_file()
    syms = symbols(archive)
    assert " T tiny_scale" in syms
    assert " T tiny_double_enabled" in syms  # the feature reached cargo


def fatbin_targets(obj: bytes) -> list[str]:
    """SASS/PTX targets in the `.nv_fatbin` sections of an ELF object (no cuobjdump here)."""
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", obj, 0x3A)
    hdr = lambda i: struct.unpack_from("<IIQQQQ", obj, shoff + i * shentsize)  # noqa: E731
    strtab = hdr(shstrndx)
    names = obj[strtab[4] : strtab[4] + strtab[5]]
    found: list[str] = []
    for i in range(shnum):
        name_off, _, _, _, offset, size = hdr(i)
        if names[name_off : names.index(b"\0", name_off)] != b".nv_fatbin":
            continue
        blob, pos = obj[offset : offset + size], 0
        while pos + 16 <= len(blob):
            magic, _, header_size, total = struct.unpack_from("<IHHQ", blob, pos)
            if magic != 0xBA55ED50:
                pos += 8
                continue
            entry, end = pos + header_size, pos + header_size + total
            while entry + 32 <= end:
                kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
                (arch,) = struct.unpack_from("<I", blob, entry + 28)
                found.append(f"sm_{arch}" if kind == 2 else f"compute_{arch}")
                entry += entry_header + payload
            pos = end
    return found


@pytest.mark.build
def test_build_cuda_static_archive_for_sm80_and_sm90(stub: Path, tmp_path: Path) -> None:
    needs("cuda", "cc")
    (tmp_path / "relu.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "__global__ void relu_kernel(float* x, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n && x[i] < 0) x[i] = 0;\n"
        "}\n"
        'extern "C" void stub_relu(float* x, int n) {\n'
        "  relu_kernel<<<(n + 255) / 256, 256>>>(x, n);\n"
        "}\n"
    )
    config = '{ allowUnfree = true; cudaSupport = true; cudaCapabilities = [ "8.0" "9.0" ]; }'
    expr = f"""
    let p = {pkgs(stub, config=config)}; cudaPackages = p.cudaPackages_13_0; in
    cudaPackages.backendStdenv.mkDerivation {{
      pname = "stub-relu-cuda"; version = "1.0";
      src = p.lib.fileset.toSource {{ root = ./.; fileset = ./relu.cu; }};
      __structuredAttrs = true;
      strictDeps = true;
      nativeBuildInputs = [ cudaPackages.cuda_nvcc ];
      buildInputs = [ cudaPackages.cuda_cudart cudaPackages.cccl cudaPackages.libcublas ];
      env.GENCODE = cudaPackages.flags.gencodeString;
      buildPhase = ''
        runHook preBuild
        nvcc -ccbin "$(command -v "$CXX")" $GENCODE -Xcompiler -fPIC -c relu.cu -o relu.o
        ar rcs librelu.a relu.o
        runHook postBuild
      '';
      installPhase = ''
        runHook preInstall
        install -Dm644 librelu.a $out/lib/librelu.a
        install -Dm644 relu.o $out/share/relu.o
        runHook postInstall
      '';
    }}
    """
    out = nix_build(expr, cwd=tmp_path)
    assert " T stub_relu" in symbols(out / "lib" / "librelu.a")
    targets = fatbin_targets((out / "share" / "relu.o").read_bytes())
    assert sorted(set(targets)) == ["compute_90", "sm_80", "sm_90"]


@pytest.mark.build
def test_build_cpp_against_the_torch_stand_in(stub: Path, tmp_path: Path) -> None:
    needs("torch", "python", "cc")
    (tmp_path / "op.cpp").write_text(
        "#include <torch/library.h>\n"
        "int64_t stub_add(int64_t a, int64_t b) { return a + b; }\n"
        'TORCH_LIBRARY(stubtest, m) { m.def("stub_add(int a, int b) -> int", &stub_add); }\n'
    )
    expr = f"""
    let p = {pkgs(stub)}; torch = p.python3Packages.torch-bin; in
    p.stdenv.mkDerivation {{
      pname = "stub-torch-op"; version = "1.0";
      src = p.lib.fileset.toSource {{ root = ./.; fileset = ./op.cpp; }};
      strictDeps = true;
      buildInputs = [ torch p.python3 ];
      buildPhase = ''
        runHook preBuild
        echo '#include <Python.h>' \\
          | $CXX -I${{p.python3}}/include/${{p.python3.libPrefix}} -fsyntax-only -x c++ -
        test -e ${{torch}}/${{p.python3.sitePackages}}/torch/__init__.py
        $CXX -std=c++20 -fPIC -shared op.cpp -ltorch -ltorch_cpu -lc10 -o libstubop.so
        runHook postBuild
      '';
      installPhase = "install -Dm755 libstubop.so $out/lib/libstubop.so";
    }}
    """
    out = nix_build(expr, cwd=tmp_path)
    lib = out / "lib" / "libstubop.so"
    needed = subprocess.run(
        ["readelf", "-d", str(lib)], capture_output=True, text=True, check=True
    ).stdout
    assert "libc10.so" in needed
    assert "stub_add" in symbols(lib, dynamic=True)


@pytest.mark.build
def test_rocm_builds_fail_with_a_clear_message(stub: Path) -> None:
    with pytest.raises(NixError) as caught:
        nix_build(f"{pkgs(stub)}.rocmPackages.clr")
    assert "is not available on this machine" in caught.value.stderr
    assert "ROCm" in caught.value.stderr


@pytest.mark.build
def test_trivial_builders(stub: Path) -> None:
    out = nix_build(
        f"""
        let p = {pkgs(stub)};
          a = p.writeText "a.txt" "alpha";
          tool = p.writeShellScriptBin "hello-stub" "echo hi";
          made = p.runCommand "made" {{ GREETING = "hey"; }}
            "mkdir -p $out/share; echo $GREETING > $out/share/greeting";
          joined = p.symlinkJoin {{
            name = "joined"; paths = [ tool made ]; postBuild = "echo extra > $out/extra";
          }};
          farm = p.linkFarm "farm" [
            {{ name = "x/a.txt"; path = a; }}
            {{ name = "joined"; path = joined; }}
          ];
          farm2 = p.linkFarm "farm2" {{ b = a; }};
        in p.linkFarm "all" {{ inherit farm farm2; }}
        """
    )
    assert (out / "farm" / "x" / "a.txt").read_text() == "alpha"
    joined = out / "farm" / "joined"
    assert (joined / "share" / "greeting").read_text() == "hey\n"
    assert (joined / "extra").read_text() == "extra\n"
    assert (
        subprocess.run([joined / "bin" / "hello-stub"], capture_output=True, text=True).stdout
        == "hi\n"
    )
    assert (out / "farm2" / "b").read_text() == "alpha"


@pytest.mark.build
def test_cmake_and_ninja_setup_hooks(stub: Path, tmp_path: Path) -> None:
    needs("cc", "cmake", "ninja")
    (tmp_path / "add.cpp").write_text(GXX_SOURCE)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\n"
        "project(stubadd CXX)\n"
        "add_library(stubadd SHARED add.cpp)\n"
        "install(TARGETS stubadd LIBRARY DESTINATION lib)\n"
    )
    out = nix_build(
        f"""
        let p = {pkgs(stub)}; in
        p.stdenv.mkDerivation {{
          pname = "stubadd-cmake"; version = "1";
          src = p.lib.fileset.toSource {{
            root = ./.;
            fileset = p.lib.fileset.unions [ ./CMakeLists.txt ./add.cpp ];
          }};
          nativeBuildInputs = [ p.cmake p.ninja ];
          cmakeFlags = [ (p.lib.cmakeBool "BUILD_TESTING" false) ];
        }}
        """,
        cwd=tmp_path,
    )
    assert " T stub_add" in symbols(out / "lib" / "libstubadd.so", dynamic=True)


@pytest.mark.build
def test_flake_builds_and_checks_against_the_stub(stub: Path, tmp_path: Path) -> None:
    needs("cc")
    (tmp_path / "add.cpp").write_text(GXX_SOURCE)
    (tmp_path / "flake.nix").write_text(
        textwrap.dedent(
            """\
            {
              inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";
              outputs = { self, nixpkgs }:
                let
                  forAllSystems = f: nixpkgs.lib.genAttrs [ "x86_64-linux" "aarch64-linux" ]
                    (system: f (import nixpkgs { inherit system; }));
                in {
                  packages = forAllSystems (pkgs: {
                    default = pkgs.symlinkJoin {
                      name = "kernels";
                      paths = [ self.packages.${pkgs.stdenv.hostPlatform.system}.add ];
                    };
                    add = pkgs.stdenv.mkDerivation {
                      pname = "flake-add"; version = "1";
                      src = pkgs.lib.fileset.toSource { root = ./.; fileset = ./add.cpp; };
                      buildPhase = "$CXX -fPIC -shared add.cpp -o libflakeadd.so";
                      installPhase = "install -Dm755 libflakeadd.so $out/lib/libflakeadd.so";
                    };
                  });
                };
            }
            """
        )
    )
    (out,) = flake_build(tmp_path, "packages.x86_64-linux.default", stub=stub)
    assert (out / "lib" / "libflakeadd.so").exists()
    flake_check(tmp_path, stub=stub)
    shown = flake_show(tmp_path, stub=stub)
    assert set(shown["packages"]) == {"x86_64-linux", "aarch64-linux"}
    assert not (tmp_path / "flake.lock").exists()


@pytest.mark.build
def test_multiple_outputs_propagate_like_nixpkgs(stub: Path) -> None:
    needs("cc")
    out = nix_build(
        f"""
        let p = {pkgs(stub)};
          dep = p.stdenv.mkDerivation {{
            pname = "mo"; version = "1"; dontUnpack = true; outputs = [ "out" "dev" ];
            buildPhase = ''
              echo 'int mo(void);' > mo.h
              echo 'int mo(void) {{ return 42; }}' > mo.c
              $CC -c mo.c -o mo.o && ar rcs libmo.a mo.o
            '';
            installPhase = ''
              install -Dm644 mo.h $out/include/mo.h
              install -Dm644 libmo.a $out/lib/libmo.a
            '';
          }};
        in p.stdenv.mkDerivation {{
          pname = "use-mo"; version = "1"; dontUnpack = true; strictDeps = true;
          buildInputs = [ dep ];
          buildPhase = ''
            printf '#include <mo.h>\\nint main(void) {{ return mo() == 42 ? 0 : 1; }}\\n' > m.c
            $CC m.c -lmo -o m && ./m
          '';
          installPhase = "install -Dm755 m $out/bin/m";
        }}
        """
    )
    assert subprocess.run([out / "bin" / "m"], check=False).returncode == 0


@pytest.mark.build
def test_registry_crates_fail_to_build_without_network(stub: Path, tmp_path: Path) -> None:
    (tmp_path / "Cargo.lock").write_text(
        'version = 4\n\n[[package]]\nname = "libc"\nversion = "0.2.170"\n'
        'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
        'checksum = "875b3680cb2f8f71bdcf9a30f38d48282f5d3c95cbf9b3fa57269bb5d5c06828"\n'
    )
    expr = (
        f"{pkgs(stub)}.rustPlatform.buildRustPackage"
        ' { pname = "k"; version = "1"; src = ./.; cargoLock.lockFile = ./Cargo.lock; }'
    )
    assert nix_eval_json(drv_path(expr), cwd=tmp_path).endswith("-k-1.drv")
    with pytest.raises(NixError) as caught:
        nix_build(expr, cwd=tmp_path)
    assert "crate libc-0.2.170 from registry+https://github.com/rust-lang/crates.io-index" in (
        caught.value.stderr
    )
    assert "needs the network, which this machine does not have" in caught.value.stderr
