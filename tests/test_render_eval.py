"""Generated Nix, evaluated against the strict test nixpkgs (`tests/nixpkgs`).

Every corpus file that loads, every example and the synthetic projects of
`test_render` are materialised, rendered and evaluated with one
``nix-instantiate --eval --strict --json --read-write-mode`` per project. The evaluation
instantiates every variant of every system and returns a summary: for each variant its
drvPath and builder, and for each kernel its builder, inputs, build phase, CUDA
capabilities or ROCm targets, Cargo settings and `src` store path. The tests then assert,
per language, what a user of real nixpkgs would get.

The builder is observed, not trusted: an overlay wraps `stdenv.mkDerivation`,
`manylinux_2_28.{stdenv,cudaBackendStdenv}.mkDerivation` (the kernels toolchain's portable
stdenvs, tests/kernel-builder), `stdenvNoCC.mkDerivation` and
`rustPlatform.buildRustPackage` so each records (in `passthru`, which does not change a
drvPath) the outermost one that was called. Projects evaluate with both stand-ins: the
nixpkgs one (`tests/nixpkgs`) and the kernels toolchain one (`tests/kernel-builder`).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nixgen.checking import project
from nixgen.core import tables
from nixgen.planning import kernels, variants
from nixgen.reading import model
from nixgen.reading.model import shared_headers

from .conftest import (
    EXAMPLES,
    UNKNOWN_CAPABILITY,
    copy_out,
    materialize,
    unknown_capability_project,
)
from .corpus_table import LOADING
from .goldens import SYNTHETIC
from .nixtools import kernel_builder, make_stub, nix_env, nix_eval_json
from .projects import render_into

#: The nixpkgs stand-in's `lib`, for the library's functions that need one (`withLib`).
STAND_IN_LIB = Path(__file__).resolve().parent / "nixpkgs" / "lib"

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(
        shutil.which("nix-instantiate") is None, reason="nix-instantiate is not installed"
    ),
]

#: Records the outermost builder function in `passthru.nixgenTest.builder`.
SPY = """
final: prev:
let
  tag = name: args: args // {
    passthru = (args.passthru or { }) // {
      nixgenTest.builder = args.passthru.nixgenTest.builder or name;
    };
  };
  wrap = name: mk: args:
    mk (if builtins.isFunction args then (fa: tag name (args fa)) else tag name args);
  wrapStdenv = name: s: s // { mkDerivation = wrap name s.mkDerivation; };
in
{
  stdenv = wrapStdenv "stdenv" prev.stdenv;
  stdenvNoCC = wrapStdenv "stdenvNoCC" prev.stdenvNoCC;
  manylinux_2_28 = prev.manylinux_2_28 // {
    stdenv = wrapStdenv "manylinux_2_28.stdenv" prev.manylinux_2_28.stdenv;
    cudaBackendStdenv =
      wrapStdenv "manylinux_2_28.cudaBackendStdenv" prev.manylinux_2_28.cudaBackendStdenv;
  };
  rustPlatform = prev.rustPlatform // {
    buildRustPackage = wrap "rustPlatform.buildRustPackage" prev.rustPlatform.buildRustPackage;
  };
}
"""

SUMMARY = """
let
  p = import ./nix;
  nixpkgs = STUB;
  kernel-builder = KERNEL_BUILDER;
  spy = SPY;
  input = d:
    if builtins.isString d then { name = d; pname = d; }
    else { name = d.name; pname = d.pname or d.name; };
  builderOf = d: d.passthru.nixgenTest.builder or null;
  kernel = k: {
    drvPath = k.drvPath;
    builder = builderOf k;
    stdenv = k.stdenv.name;
    pname = k.pname;
    nativeBuildInputs = map input (k.nativeBuildInputs or [ ]);
    buildInputs = map input (k.buildInputs or [ ]);
    # The build plan's commands: one per object, then the extra steps (Metal shaders).
    commands =
      if k.passthru.nixgen ? plan
      then map (o: o.command) k.passthru.nixgen.plan.objects
        ++ map (e: e.command) k.passthru.nixgen.plan.extraEdges
      else null;
    src = "${k.src}";
    capabilities = k.passthru.nixgen.capabilities or null;
    archs = k.passthru.nixgen.archs or null;
    library = k.passthru.nixgen.library;
    platforms = k.meta.platforms or null;
    cargo = if k ? cargoDeps then {
      features = k.cargoBuildFeatures;
      lockFile = toString k.cargoDeps.lockFile;
      lockFileText = k.cargoDeps.lockFileText;
      cargoRoot = k.cargoRoot or null;
      buildAndTestSubdir = k.buildAndTestSubdir or null;
      prePatch = k.prePatch or null;
    } else null;
  };
  variant = v:
    let
      d = p.variantPackage {
        inherit nixpkgs kernel-builder; inherit (v) system; overlays = [ spy ];
      } v;
    in {
      inherit (v) name system backend framework backendVersion torch;
      variantKernels = v.kernels;
      drvPath = d.drvPath;
      builder = builderOf d;
      buildInputs = map input (d.buildInputs or [ ]);
      nativeBuildInputs = map input (d.nativeBuildInputs or [ ]);
      src = "${d.src}";
      # The binding's objects (`nixgen.extension.bindingObjects`): their source tree.
      bindingSrc =
        let b = d.nixgen.binding or null; in if b == null then null else "${b.src}";
      bindingDrvPath =
        let b = d.nixgen.binding or null; in if b == null then null else b.drvPath;
      bindingBuilder =
        let b = d.nixgen.binding or null; in if b == null then null else builderOf b;
      kernels = builtins.mapAttrs (n: kernel) (d.nixgen.kernels or { });
    };
in map variant (p.variants null)
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def summarize(root: Path, stub: Path) -> list[dict[str, Any]]:
    """Evaluate every variant of the rendered project at `root` (one Nix process)."""
    expr = (
        SUMMARY.replace("STUB", str(stub))
        .replace("KERNEL_BUILDER", str(kernel_builder(stub)))
        .replace("SPY", SPY)
    )
    return nix_eval_json(expr, cwd=root, read_write=True)


def parse_all(root: Path) -> None:
    """Every generated Nix file parses (one `nix-instantiate --parse` for all of them)."""
    files = [root / "flake.nix", *sorted((root / "nix").rglob("*.nix"))]
    done = subprocess.run(
        ["nix-instantiate", "--parse", *map(str, files)],
        env=nix_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def files_under(path: str | Path) -> list[str]:
    base = Path(path)
    return sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())


# ------------------------------------------------------------- what each kernel is


SUPPORTED_ROCM = tables.supported_rocm_archs()
_CXX = {"cpp", "cc", "cxx", "c++"}
#: The source extensions each language compiles (everything else is an input only).
COMPILED = {
    "cpp-cpu": _CXX | {"c"},
    "cpp-cuda": _CXX | {"c", "cu"},
    "cpp-rocm": _CXX | {"c", "cu", "hip"},
    "cpp-xpu": _CXX,
    "cpp-metal": _CXX | {"c", "mm"},
}


def _is_dependency(dep: str, got: dict[str, str]) -> bool:
    """Whether build input `got` is the nixpkgs package of `depends` entry `dep`."""
    if dep.startswith("cutlass_"):
        return got["name"].startswith("cutlass-" + dep.removeprefix("cutlass_").replace("_", "."))
    return got["pname"] == tables.dependency_attrs().get(dep, dep).rpartition(".")[2]


def _commands(commands: list[str]) -> list[list[str]]:
    """The compile commands of a build plan, split the way a shell splits them."""
    return [
        shlex.split(command)
        for command in commands
        if " -c " in command and not command.startswith("xcrun")  # Metal shaders: see metal
    ]


def _ends_with(argv: list[str], flags: list[str]) -> bool:
    before_c = argv[: argv.index("-c")]
    return not flags or before_c[-len(flags) :] == flags


def _has_run(argv: list[str], run: list[str]) -> bool:
    return not run or any(argv[i : i + len(run)] == run for i in range(len(argv)))


def check_kernel(name: str, kernel: model.Kernel, got: dict[str, Any], v: dict[str, Any]) -> None:
    """Assert what the derivation of `kernel` is in variant `v`."""
    inputs = {i["pname"] for i in got["buildInputs"]}
    depends = list(getattr(kernel, "depends", []))
    if "torch" in depends:
        # The variant's own torch, not just any.
        torch = next(i for i in got["buildInputs"] if i["pname"] == "torch")
        version = torch["name"].removeprefix("torch-")
        assert tables.version_key(version) == tables.version_key(v["torch"]), (name, v["name"])
    else:
        assert "torch" not in inputs, name
    for dep in depends:
        if dep != "torch":
            assert any(_is_dependency(dep, i) for i in got["buildInputs"]), (name, dep, inputs)
    library = kernel.library_name(name) if isinstance(kernel, model.RUST_KERNELS) else name
    assert got["library"] == library
    if isinstance(kernel, model.RUST_KERNELS):
        _check_rust(kernel, got)
        return
    commands = _commands(got["commands"])
    compiled = [c[c.index("-c") + 1] for c in commands]
    assert compiled == [
        s for s in dict.fromkeys(kernel.src) if s.rpartition(".")[2] in COMPILED[kernel.language]
    ], (name, compiled)
    includes = [f"-I{d}" for d in kernel.include]
    for argv in commands:
        assert _has_run(argv, includes), (name, argv)
    _CHECKS[kernel.language](kernel, got, v, commands)


def _check_rust(
    kernel: model.RustCpuKernel | model.RustCudaOxideKernel | model.RustCutileKernel,
    got: dict[str, Any],
) -> None:
    assert got["builder"] == "rustPlatform.buildRustPackage"
    cargo = got["cargo"]
    assert cargo["features"] == kernel.features
    assert cargo["lockFile"].endswith("/" + kernel.lockfile())
    crate = kernel.manifest().rpartition("/")[0] or None
    workspace = kernel.workspace_manifest() is not None
    # A workspace builds from its root (where the lock file is), in the member's directory.
    assert cargo["cargoRoot"] == ((kernel.lock_dir() or None) if workspace else crate)
    assert cargo["buildAndTestSubdir"] == crate
    if not workspace and kernel.lock_dir() != (crate or ""):
        # The lock file is copied next to the manifest before Cargo runs.
        copy = ["cp", kernel.lockfile(), f"{crate}/Cargo.lock"]
        assert shlex.split(cargo["prePatch"]) == copy
    else:
        assert cargo["prePatch"] is None


def _gencode(capability: str) -> str:
    """The anchor's flag for a capability: SASS, and PTX too for `+PTX`."""
    base, ptx = tables.split_ptx(capability)
    arch = base.replace(".", "")
    code = f"[sm_{arch},compute_{arch}]" if ptx else f"sm_{arch}"
    return f"-gencode=arch=compute_{arch},code={code}"


def _check_cuda(kernel: Any, got: dict[str, Any], v: dict[str, Any], commands: Any) -> None:
    assert got["builder"] == "manylinux_2_28.cudaBackendStdenv"
    assert "cuda_nvcc" in {i["pname"] for i in got["nativeBuildInputs"]}
    assert {"cuda_cudart", "cuda_cccl"} <= {i["pname"] for i in got["buildInputs"]}
    # The variant's toolkit: cuda_nvcc is named after its CUDA version.
    nvcc_input = next(i for i in got["nativeBuildInputs"] if i["pname"] == "cuda_nvcc")
    assert nvcc_input["name"].startswith(f"cuda{v['backendVersion']}-"), nvcc_input
    expected = kernels.cuda_capabilities(kernel, v["backendVersion"])
    assert got["capabilities"] == expected, v["name"]
    for argv in commands:
        if argv[0] != "nvcc":
            assert argv[0] in ("$CXX", "$CC") and _ends_with(argv, kernel.cxx_flags)
            continue
        # PTX only where a capability asks for it (`9.0+PTX`), as the anchor builds it.
        assert [a for a in argv if a.startswith("-gencode=")] == [_gencode(c) for c in expected]
        assert _ends_with(argv, kernel.cuda_flags), argv


def _check_rocm(kernel: Any, got: dict[str, Any], v: dict[str, Any], commands: Any) -> None:
    assert got["builder"] == "manylinux_2_28.stdenv"
    # `clr`, whose real pname is rocm-clr (nix-builder/pkgs/rocm-packages/clr.nix).
    assert "rocm-clr" in {i["pname"] for i in got["nativeBuildInputs"]}
    expected = [a for a in (kernel.rocm_archs or SUPPORTED_ROCM) if a in SUPPORTED_ROCM]
    assert got["archs"] == expected
    for argv in commands:
        if argv[0] != "hipcc":
            assert _ends_with(argv, kernel.cxx_flags)
            continue
        offload = [a for a in argv if a.startswith("--offload-arch=")]
        assert offload == [f"--offload-arch={a}" for a in expected]
        assert _ends_with(argv, kernel.hip_flags), argv


def _check_xpu(kernel: Any, got: dict[str, Any], v: dict[str, Any], commands: Any) -> None:
    # icpx from the variant's oneAPI (the toolchain's xpuPackages_X_Y_Z), portable stdenv.
    assert got["builder"] == "manylinux_2_28.stdenv"
    oneapi = [i for i in got["nativeBuildInputs"] if i["pname"] == "oneapi-torch-dev"]
    assert oneapi and oneapi[0]["name"].endswith(v["backendVersion"]), got["nativeBuildInputs"]
    # ocloc (ahead-of-time device code) is an input too.
    assert "ocloc" in {i["pname"] for i in got["nativeBuildInputs"]}, got["nativeBuildInputs"]
    for argv in commands:
        if argv[0] == "icx":  # C
            assert _ends_with(argv, kernel.cxx_flags), argv
            continue
        # SYCL C++ with icpx -fsycl.
        assert argv[0] == "icpx" and "-fsycl" in argv, argv
        assert _ends_with(argv, [*kernel.cxx_flags, *kernel.sycl_flags]), argv


def _check_metal(kernel: Any, got: dict[str, Any], v: dict[str, Any], commands: Any) -> None:
    assert got["builder"] == "stdenv"
    assert v["system"].endswith("-darwin") and got["stdenv"] == "stdenv-darwin"
    assert v["system"] in got["platforms"]
    assert "apple-sdk-26.0" in {i["name"] for i in got["buildInputs"]}
    shaders = [s for s in dict.fromkeys(kernel.src) if s.endswith(".metal")]
    metal = [shlex.split(c) for c in got["commands"] if c.startswith("xcrun -sdk macosx metal ")]
    assert [argv[argv.index("-c") + 1] for argv in metal] == shaders
    if shaders:  # the sources see the embedded library through its header
        namespace = f"-DEMBEDDED_METALLIB_NAMESPACE={got['library']}_metal"
        assert all(namespace in argv for argv in commands)
    for argv in commands:
        assert _ends_with(argv, kernel.cxx_flags)


def _check_cpu(kernel: Any, got: dict[str, Any], v: dict[str, Any], commands: Any) -> None:
    linux = v["system"].endswith("-linux")
    if v["backend"] == "cuda":
        assert got["builder"] == "manylinux_2_28.cudaBackendStdenv"
    else:
        assert got["builder"] == ("manylinux_2_28.stdenv" if linux else "stdenv")
    assert got["stdenv"] == ("stdenv-darwin" if v["system"].endswith("-darwin") else "stdenv-linux")
    for argv in commands:
        assert argv[0] in ("$CXX", "$CC") and _ends_with(argv, kernel.cxx_flags), argv


_CHECKS = {
    "cpp-cuda": _check_cuda,
    "cpp-rocm": _check_rocm,
    "cpp-xpu": _check_xpu,
    "cpp-metal": _check_metal,
    "cpp-cpu": _check_cpu,
}


#: The extension's builder on Linux (portable manylinux_2_28 stdenvs); elsewhere `stdenv`.
EXTENSION_BUILDER = {
    "cpu": "manylinux_2_28.stdenv",
    "cuda": "manylinux_2_28.cudaBackendStdenv",
    "rocm": "manylinux_2_28.stdenv",
    "xpu": "manylinux_2_28.stdenv",
    "metal": "stdenv",
}


def check_project(root: Path, build: model.Build, summary: list[dict[str, Any]]) -> None:
    """Every variant instantiates, is the variant nixgen plans, and is built right."""
    planned = {(v.name, v.system): v for v in variants.variants(build)}
    assert {(v["name"], v["system"]) for v in summary} == set(planned)
    seen_src: set[str] = set()
    for v in summary:
        assert v["drvPath"].startswith("/nix/store/") and v["drvPath"].endswith(".drv")
        expected = planned[(v["name"], v["system"])]
        assert v["variantKernels"] == list(expected.kernels)
        assert sorted(v["kernels"]) == sorted(expected.kernels)
        if v["framework"] in ("torch-noarch", "mlx-noarch"):
            assert v["builder"] == "stdenvNoCC", v["name"]
            assert v["kernels"] == {}
        else:
            linux = v["system"].endswith("-linux")
            assert v["builder"] == (EXTENSION_BUILDER[v["backend"]] if linux else "stdenv"), v[
                "name"
            ]
            # The binding's objects compile with the extension's toolchain.
            assert v["bindingBuilder"] in (None, v["builder"]), v["name"]
            inputs = {i["pname"] for i in v["buildInputs"]}
            assert {k["pname"] for k in v["kernels"].values()} <= inputs
            # Every extension carries the ABI check (nix/support/abi-check-hook.sh: the
            # toolchain's kernel-builder check-abi, on Linux with nixgen's addition).
            hooks = {i["name"] for i in v["nativeBuildInputs"]}
            assert "nixgen-abi-check-hook" in hooks, v["name"]
            # The tvm-ffi package's pname is "apache-tvm-ffi" (nixpkgs and the anchor alike).
            assert ("torch" if v["framework"] == "torch" else "apache-tvm-ffi") in inputs
        for name, got in v["kernels"].items():
            check_kernel(name, build.kernels[name], got, v)
            if got["src"] not in seen_src:
                seen_src.add(got["src"])
                # Its own files, plus every header the project lists (a C++ kernel may
                # include a sibling's or the binding's header).
                want = set(build.kernels[name].src)
                if build.kernels[name].language != "rust-cpu":
                    want |= set(shared_headers(build))
                assert files_under(got["src"]) == sorted(want), name
        if v["src"] not in seen_src:
            seen_src.add(v["src"])
            check_extension_src(root, build, v["src"])
        check_binding_src(build, v["bindingSrc"], compiled=v["framework"] != "torch-noarch")


def check_extension_src(root: Path, build: model.Build, src: str) -> None:
    """The extension (and a pure-Python variant) holds the Python package only: the
    binding reaches the link as the objects of its own derivation."""
    from nixgen.reading.model import python_package_dir

    fw = build.framework
    package = python_package_dir(build)
    pyext = tuple(f".{e}" for e in (fw.pyext if fw is not None else ["py", "pyi"]))
    python = {
        str(p.relative_to(root))
        for p in (root / package).rglob("*")
        if p.is_file() and p.name.endswith(pyext)
    }
    assert files_under(src) == sorted(python)


def check_binding_src(build: model.Build, src: str | None, *, compiled: bool) -> None:
    """The binding's objects compile from its sources and the project's headers; a
    binding without C++ sources (none, or a Rust crate that is the binding) has none."""
    own = list(getattr(build.framework, "src", []))
    if not compiled or not any(s.endswith((".cpp", ".cc", ".cxx", ".c++")) for s in own):
        assert src is None
        return
    assert src is not None
    assert files_under(src) == sorted(set(own) | set(shared_headers(build)))


# ------------------------------------------------------------------------- the corpus


def _corpus_summary(path: Path, root: Path, stub: Path) -> tuple[Any, Any]:
    materialize(path, root)
    build = render_into(root)
    return build, summarize(root, stub)


@pytest.mark.parametrize("path", LOADING, ids=lambda p: p.stem)
def test_corpus_file_evaluates_to_the_right_derivations(
    path: Path, stub: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = tmp_path_factory.mktemp("corpus") / path.stem
    build, summary = _corpus_summary(path, root, stub)
    parse_all(root)
    check_project(root, build, summary)
    _SEEN.update((v["system"], v["backend"]) for v in summary)
    _SEEN.update(("language", k.language) for k in build.kernels.values())


_SEEN: set[tuple[str, str]] = set()


def test_corpus_evaluation_covered_every_system_and_backend() -> None:
    if not _SEEN:
        pytest.skip("run together with the corpus tests")
    systems = {s for s, _ in _SEEN if s != "language"}
    assert {"x86_64-linux", "aarch64-linux", "aarch64-darwin"} <= systems
    backends = {b for s, b in _SEEN if s != "language"}
    assert {"cpu", "cuda", "rocm", "xpu", "metal"} <= backends
    languages = {b for s, b in _SEEN if s == "language"}
    assert {"cpp-cpu", "cpp-cuda", "cpp-rocm", "cpp-xpu", "cpp-metal"} <= languages


# --------------------------------------------------------- examples and synthetic cases

CARGO_LOCK = '# test\nversion = 3\n\n[[package]]\nname = "{name}"\nversion = "0.1.0"\n'


def _synthetic(case: str, root: Path) -> Path:
    materialize(SYNTHETIC[case], root)
    for lock in root.rglob("Cargo.lock"):
        lock.write_text(CARGO_LOCK.format(name="k"))
    for toolchain in root.rglob("rust-toolchain.toml"):
        toolchain.write_text('[toolchain]\nchannel = "nightly-2026-04-03"\n')
    return root


#: Synthetic cases whose evaluation needs the network: a rust-cuda kernel's codegen backend
#: reads the lock file of its fetched source (tests/test_rust_kernels.py evaluates it up to
#: that fetch).
NEEDS_NETWORK = {"rust-cuda"}


@pytest.mark.parametrize(
    "case",
    [
        *(f"example-{p.name}" for p in sorted(EXAMPLES.iterdir()) if (p / "build.toml").exists()),
        *sorted(set(SYNTHETIC) - NEEDS_NETWORK),
    ],
)
def test_project_evaluates_to_the_right_derivations(case: str, stub: Path, tmp_path: Path) -> None:
    root = tmp_path / "p"
    if case.startswith("example-"):
        copy_out(
            EXAMPLES / case.removeprefix("example-"), root, "nix", "flake.nix", "result*", "target"
        )
    else:
        _synthetic(case, root)
    build = render_into(root)
    parse_all(root)
    summary = summarize(root, stub)
    assert summary, "no variants"
    check_project(root, build, summary)


def test_cuda_capabilities_are_intersected_per_toolkit(stub: Path, tmp_path: Path) -> None:
    build = render_into(_synthetic("cpp-cuda", tmp_path / "p"))
    summary = summarize(tmp_path / "p", stub)
    by_cuda = {v["backendVersion"]: v for v in summary if v["system"] == "x86_64-linux"}
    gemm = {ver: v["kernels"]["gemm"]["capabilities"] for ver, v in by_cuda.items()}
    # 7.0 (Volta) ends with CUDA 12.9; 10.0f needs 12.9.
    assert gemm["12.6"] == ["7.0", "8.0", "9.0a"]
    assert gemm["13.0"] == ["8.0", "9.0a", "10.0f"]
    # general.cuda.maxver = 13.0: no variant of a later toolkit.
    assert sorted(by_cuda) == ["12.6", "13.0"]
    # cuda-minver = 12.8: not built for 12.6 at all.
    assert "fp4" not in by_cuda["12.6"]["kernels"]
    assert by_cuda["13.0"]["kernels"]["fp4"]["capabilities"] == ["10.0", "12.0"]
    # No cuda-capabilities: the builder's default set, intersected.
    assert by_cuda["12.6"]["kernels"]["defaults"]["capabilities"][0] == "7.0"
    assert "7.0" not in by_cuda["13.0"]["kernels"]["defaults"]["capabilities"]
    assert build.kernels["gemm"].cuda_capabilities == ["7.0", "8.0", "9.0a", "10.0f"]


def test_unknown_capability_renders_and_no_toolkit_compiles_it(stub: Path, tmp_path: Path) -> None:
    """`11.8` (not in nixgen's table) is a warning; every CUDA toolkit leaves it out and
    keeps the capabilities it supports, as the anchor's per-toolkit intersection does."""
    root = unknown_capability_project(tmp_path / "p")
    loaded = project.read(root)
    assert [w.key for w in loaded.warnings] == ["kernel.relu_cuda.cuda-capabilities[1]"]
    build = render_into(root)
    parse_all(root)
    summary = summarize(root, stub)
    check_project(root, build, summary)
    cuda = [v for v in summary if v["backend"] == "cuda"]
    assert {v["backendVersion"] for v in cuda} == set(tables.cuda_versions())
    arch = UNKNOWN_CAPABILITY.replace(".", "")
    for v in cuda:
        got = v["kernels"]["relu_cuda"]
        supported = [
            c for c in ("8.0", "9.0") if tables.cuda_capability_supported(c, v["backendVersion"])
        ]
        assert got["capabilities"] == supported, v["name"]
        gencode = [
            a for argv in _commands(got["commands"]) for a in argv if a.startswith("-gencode=")
        ]
        assert gencode and all(f"_{arch}" not in flag for flag in gencode), (v["name"], gencode)
        assert {flag.rsplit("_", 1)[1] for flag in gencode} == {
            c.replace(".", "") for c in supported
        }


def test_torch_noarch_records_its_listed_targets_in_metadata(tmp_path: Path) -> None:
    """As the anchor does: a pure-Python kernel's capabilities, unknown ones included,
    go to metadata.json as written; a backend it lists none for gets no `archs`."""
    root = tmp_path / "p"
    materialize(
        '[general]\nname = "tri"\nversion = 1\nedition = 6\nlicense = "MIT"\n'
        'backends = ["cuda", "rocm", "xpu"]\n\n[torch-noarch]\n'
        'cuda-capabilities = ["9.0", "11.8"]\n',
        root,
    )
    render_into(root)
    expr = (
        f"let p = import ./nix; nixgen = p.nixgen.withLib (import {STAND_IN_LIB}); in "
        "map (v: { inherit (v) backend; metadata = "
        'nixgen.extension.metadata { project = p.project; variant = v; opsName = "x"; }; }) '
        '(p.variants "x86_64-linux")'
    )
    by_backend = {v["backend"]: v["metadata"] for v in nix_eval_json(expr, cwd=root)}
    assert by_backend["cuda"]["backend"] == {"type": "cuda", "archs": ["9.0", "11.8"]}
    assert by_backend["rocm"]["backend"] == {"type": "rocm"}
    assert by_backend["xpu"]["backend"] == {"type": "xpu"}


def test_empty_capability_set_is_refused_by_planning_alone(stub: Path, tmp_path: Path) -> None:
    """The "no buildable CUDA capability" rule has one home, the planner: the generated
    Nix reads the planned table as it is. A kernel file edited to an empty set evaluates
    (its CUDA 13.0 variants ask nvcc for no capability); a second check in the library
    would make this evaluation fail."""
    root = _synthetic("cpp-cuda", tmp_path / "p")
    render_into(root)
    gemm = root / "nix" / "kernels" / "gemm.nix"
    text, edits = re.subn(r'"13\.0" = \[[^]]*\];', '"13.0" = [ ];', gemm.read_text())
    assert edits == 1
    gemm.write_text(text)
    planned = {
        v["backendVersion"]: v["kernels"]["gemm"]["capabilities"]
        for v in summarize(root, stub)
        if v["backend"] == "cuda"
    }
    assert planned["13.0"] == [], planned
    assert all(planned[version] for version in planned if version != "13.0"), planned


# ------------------------------------------------------------- incremental rebuilds

DRVS = """
let
  p = import ./nix;
  nixpkgs = STUB;
  kernel-builder = KERNEL_BUILDER;
  one = v: let d = p.variantPackage { inherit nixpkgs kernel-builder; inherit (v) system; } v; in {
    name = v.name;
    value = { extension = d.drvPath; binding = d.nixgen.binding.drvPath; }
      // builtins.mapAttrs (n: k: k.drvPath) d.nixgen.kernels;
  };
in builtins.listToAttrs (map one (p.variants "x86_64-linux"))
"""


def _drvs_expr(stub: Path) -> str:
    return DRVS.replace("STUB", str(stub)).replace("KERNEL_BUILDER", str(kernel_builder(stub)))


def test_editing_one_kernel_changes_only_it_and_the_extensions_that_link_it(
    stub: Path, tmp_path: Path
) -> None:
    root = tmp_path / "p"
    copy_out(EXAMPLES / "relu-mixed", root, "nix", "flake.nix")
    render_into(root)

    def drvs() -> dict[str, dict[str, str]]:
        return nix_eval_json(_drvs_expr(stub), cwd=root)

    before = drvs()
    cpu_variants = {n for n, d in before.items() if "relu_cpu" in d}
    assert cpu_variants and len(cpu_variants) < len(before)

    source = root / "relu_cpu" / "relu_cpu.cpp"
    source.write_text(source.read_text() + "\n// edited\n")
    after = drvs()
    for variant, paths in before.items():
        for what, drv in paths.items():
            changed = after[variant][what] != drv
            # The binding's objects do not depend on any kernel (see the next test).
            should = (what == "relu_cpu") or (what == "extension" and variant in cpu_variants)
            assert changed == should, (variant, what)

    # A file no kernel declares changes nothing at all.
    (root / "relu_cpu" / "notes.txt").write_text("not a source")
    (root / "README.md").write_text("# readme")
    assert drvs() == after

    # The Python package goes into the extensions only.
    init = next((root / "torch-ext").glob("*/__init__.py"))
    init.write_text(init.read_text() + "\n# edited\n")
    final = drvs()
    for variant, paths in after.items():
        for what, drv in paths.items():
            assert (final[variant][what] != drv) == (what == "extension"), (variant, what)


@pytest.mark.parametrize("example", ["relu-cpu", "relu-mixed"])
def test_a_kernel_edit_relinks_the_extension_without_recompiling_the_binding(
    stub: Path, tmp_path: Path, example: str
) -> None:
    """Two renders that differ only in one kernel source's content: the binding's objects
    are one derivation (and one op namespace), the kernel and the extension are new."""
    roots = []
    for which in ("a", "b"):
        root = tmp_path / which
        copy_out(EXAMPLES / example, root, "nix", "flake.nix")
        roots.append(root)
    build = render_into(roots[0])
    name, kernel = next((n, k) for n, k in sorted(build.kernels.items()) if k.language == "cpp-cpu")
    source = roots[1] / next(s for s in kernel.src if s.endswith(".cpp"))
    source.write_text(source.read_text() + "\n// edited\n")
    render_into(roots[1])
    expr = _drvs_expr(stub).replace(
        "binding = d.nixgen.binding.drvPath;",
        "binding = d.nixgen.binding.drvPath; ops = d.nixgen.opsName;",
    )
    a, b = (nix_eval_json(expr, cwd=root) for root in roots)
    assert a.keys() == b.keys()
    edited = [v for v in a if name in a[v]]
    assert edited
    for variant in edited:
        assert a[variant]["binding"] == b[variant]["binding"], variant
        assert a[variant]["ops"] == b[variant]["ops"], variant
        assert a[variant][name] != b[variant][name], variant
        assert a[variant]["extension"] != b[variant]["extension"], variant


def test_spy_overlay_does_not_change_derivations(stub: Path, tmp_path: Path) -> None:
    root = tmp_path / "p"
    copy_out(EXAMPLES / "relu-mixed", root, "nix", "flake.nix")
    render_into(root)
    plain = nix_eval_json(_drvs_expr(stub), cwd=root)
    spied = {v["name"]: v for v in summarize(root, stub) if v["system"] == "x86_64-linux"}
    for name, paths in plain.items():
        assert paths["extension"] == spied[name]["drvPath"]
        assert paths["binding"] == spied[name]["bindingDrvPath"]
        for kernel, drv in paths.items():
            if kernel not in ("extension", "binding"):
                assert drv == spied[name]["kernels"][kernel]["drvPath"]


# ------------------------------------------------------------------------ a real build


RUST_AT_ROOT = """[general]
name = "rust-root"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_rs]
language = "rust-cpu"
src = ["relu_rs/Cargo.toml", "relu_rs/src/lib.rs", "Cargo.lock"]
features = ["chunked"]
"""


@pytest.mark.build
def test_rust_kernel_with_the_lock_file_at_the_root_builds(stub: Path, tmp_path: Path) -> None:
    """DESIGN's shape: the lock file at the project root, copied next to the manifest."""
    from .nixtools import nix_build

    example = EXAMPLES / "relu-rust" / "relu_rs"
    root = materialize(RUST_AT_ROOT, tmp_path / "p")
    shutil.copy(example / "Cargo.toml", root / "relu_rs" / "Cargo.toml")
    shutil.copy(example / "src" / "lib.rs", root / "relu_rs" / "src" / "lib.rs")
    shutil.copy(example / "Cargo.lock", root / "Cargo.lock")
    render_into(root)
    out = nix_build(
        f"""let p = import ./nix; v = builtins.head (p.variants "x86_64-linux");
        in (p.variantPackage {{
              nixpkgs = {stub};
              kernel-builder = {kernel_builder(stub)};
              system = "x86_64-linux";
            }} v)
           .nixgen.kernels.relu_rs""",
        cwd=root,
    )
    archive = out / "lib" / "librelu_rs.a"
    symbols = subprocess.run(
        ["nm", "--defined-only", str(archive)], capture_output=True, text=True, check=True
    ).stdout
    assert " T relu_rs_f32" in symbols and " T relu_rs_f64" in symbols
