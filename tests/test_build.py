"""Real builds: the repository flake's `kernels` through the stub nixpkgs and the kernels
toolchain stand-in (tests/kernel-builder).

One build is shared by every test: each bundled variant of each buildable example that the
stand-ins can build (`nix build <example>#<variant> … --override-input nixpkgs path:<stub>
--override-input kernel-builder path:<toolchain>`, in a copy of the repository as a commit
holds it), laid out as `.#kernels` lays it out, with the host's g++ and cargo and NVIDIA's
PyPI wheels for CUDA 13.0 and 13.2 (scripts/cuda_wheels.py). CUDA 12.x variants evaluate
only: PyPI has no CUDA 12 compiler, so the stand-in's cudaPackages_12_6.cuda_nvcc fails. The
CPU kernels are loaded with the PyPI `kernels` client and checked against torch; the CUDA
ones (no GPU here) are checked for device code per capability and for linking against
torch's real CUDA build. Every build is in the Nix sandbox (tests/nixtools.py); one
derivation of each kind is rebuilt with `nix-build --check`, which fails unless every
output byte is the same, from another client environment: the CPU kinds (C++ and Rust
kernels, binding objects, an extension) outside the sandbox, in another build directory; a
CUDA 13.0 kernel, binding and extension in it (nvcc's objects depend on the build
directory). The examples copied to another path evaluate to the very derivations built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from nixgen.checking import project
from nixgen.planning import plan
from nixgen.planning import variants as variants_mod
from tests import client as oracle

from . import fatbin_archs
from .conftest import EXAMPLES, UNKNOWN_CAPABILITY, copy_out, unknown_capability_project
from .cudatools import (
    HAVE_WHEELS,
    SKIP_REASON,
    cuobjdump,
    is_cuda12,
    needed,
    torch_cuda_symbols,
    unresolved,
)
from .nixtools import (
    NixError,
    copy_worktree,
    flake_build,
    flake_build_each,
    flake_eval,
    have_nix,
    kernel_builder,
    make_stub,
    nix_build,
    nix_env,
)

pytestmark = [
    pytest.mark.build,
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
]

SYSTEM = "x86_64-linux"
BUILDABLE = ["relu-cpu", "relu-cuda", "relu-mixed", "relu-rust"]
#: The host torch (2.13, CPU) loads only this variant of each CPU example.
CPU_VARIANT = f"torch213-cxx11-cpu-{SYSTEM}"
CUDA_CAPABILITIES = ["8.0", "9.0"]
SHAPES = [(0,), (1,), (7,), (1000,), (3, 5), (17, 33, 9), (2, 3, 4, 5)]


def _dtypes(torch: Any) -> dict[str, list[Any]]:
    """The dtypes each example's CPU `relu` supports (its binding's dispatch)."""
    return {
        "relu-cpu": [torch.float32, torch.float64, torch.float16, torch.bfloat16],
        "relu-rust": [torch.float32, torch.float64],
        "relu-mixed": [torch.float32, torch.float64],
    }


def _non_contiguous(torch: Any, generator: Any) -> list[Any]:
    def randn(*shape: int) -> Any:
        return torch.randn(*shape, generator=generator)

    return [
        randn(64, 48)[:, ::3],
        randn(32, 40).t(),
        randn(5, 1).expand(5, 9),
        randn(4, 6, 8).permute(2, 0, 1)[1:, :, 2:],
    ]


def _variants(
    name: str, *, backend: str | None = None, buildable: bool = True
) -> list[variants_mod.Variant]:
    """The bundled variants of an example on SYSTEM, as `nixgen variants` lists them; with
    `buildable`, those the stand-ins can build (not CUDA 12.x)."""
    return [
        v
        for v in variants_mod.variants(project.read(EXAMPLES / name).build, system=SYSTEM)
        if v.bundle
        and (backend is None or v.backend == backend)
        and not (buildable and v.backend == "cuda" and is_cuda12(v.backend_version))
    ]


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False, **kwargs)


# ----------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_worktree(tmp_path_factory.mktemp("worktree") / "nixgen")


#: Whether the CUDA wheels are unpacked (scripts/cuda_wheels.py). Without them, the CUDA
#: variants cannot be built: the CPU variants are built on their own and the CUDA tests are
#: skipped.
HAVE_CUDA = HAVE_WHEELS
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason=SKIP_REASON)
CPU_EXAMPLES = ["relu-cpu", "relu-mixed", "relu-rust"]


@pytest.fixture(scope="module")
def kernels(repo: Path, stub: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every bundled variant of every buildable example that the stand-ins can build, laid
    out as `.#kernels` (`<example>/<variant>/`), all in one `nix build`.

    Without the CUDA wheels: the CPU examples' CPU variants only."""
    layout = tmp_path_factory.mktemp("kernels")
    wanted = [
        (name, variant)
        for name in (BUILDABLE if HAVE_CUDA else CPU_EXAMPLES)
        for variant in (_variants(name) if HAVE_CUDA else _variants(name, backend="cpu"))
    ]
    # Where each variant lands (evaluated per example), then one build of them all.
    outs: dict[tuple[str, str], Path] = {}
    for name in dict.fromkeys(name for name, _ in wanted):
        names = [v.name for n, v in wanted if n == name]
        paths = flake_eval(
            repo / "examples" / name,
            f"packages.{SYSTEM}",
            stub=stub,
            apply="ps: map (n: ps.${n}.outPath) [ " + " ".join(f'"{n}"' for n in names) + " ]",
        )
        outs.update({(name, n): Path(p) for n, p in zip(names, paths, strict=True)})
    built = flake_build_each(
        [(repo / "examples" / name, variant.name) for name, variant in wanted],
        stub=stub,
        timeout=3600,
    )
    assert sorted(built) == sorted(outs.values())
    for (name, variant_name), out in outs.items():
        (layout / name).mkdir(exist_ok=True)
        (layout / name / variant_name).symlink_to(out)
    return layout


@pytest.fixture(scope="module")
def torch() -> ModuleType:
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def loaded(kernels: Path, torch: ModuleType) -> dict[str, ModuleType]:
    """The CPU examples, loaded from the build by the `kernels` client."""
    import kernels as client  # locked (requirements/dev.txt): never skipped

    return {
        name: client.get_local_kernel(kernels / name, backend="cpu")
        for name in ("relu-cpu", "relu-rust", "relu-mixed")
    }


def _extension(variant_dir: Path) -> Path:
    meta = json.loads((variant_dir / "metadata.json").read_text())
    return variant_dir / f"{meta['id']}.abi3.so"


# -------------------------------------------------------------------------- layout


@needs_cuda
def test_cuda12_variants_evaluate_and_fail_to_build_saying_no_compiler_exists(
    repo: Path, stub: Path
) -> None:
    cuda12 = [v for v in _variants("relu-cuda", buildable=False) if is_cuda12(v.backend_version)]
    assert cuda12
    example = repo / "examples" / "relu-cuda"
    for variant in cuda12:
        drv = flake_eval(example, f"packages.{SYSTEM}.{variant.name}.drvPath", stub=stub)
        assert drv.endswith(".drv")
    with pytest.raises(NixError) as failed:
        flake_build(example, cuda12[0].name, stub=stub, timeout=1800)
    assert "no CUDA 12.6 compiler exists here" in failed.value.stderr


@needs_cuda
def test_kernels_holds_every_bundled_variant_of_every_buildable_example(kernels: Path) -> None:
    assert sorted(p.name for p in kernels.iterdir()) == BUILDABLE
    for name in BUILDABLE:
        variants = _variants(name)
        assert sorted(p.name for p in (kernels / name).iterdir()) == sorted(
            v.name for v in variants
        )
        for variant in variants:
            vdir = kernels / name / variant.name
            meta = json.loads((vdir / "metadata.json").read_text())
            assert meta["name"] == name
            assert meta["backend"]["type"] == variant.backend
            assert {"__init__.py", "_ops.py", "metadata.json"} <= {p.name for p in vdir.iterdir()}
            assert _extension(vdir).is_file()


# ------------------------------------------------------- what the client trusts (issue 45)


def test_every_built_variant_records_the_clients_digest(kernels: Path) -> None:
    """Every variant's `digest` is the client's `Digest.hash_variant`, file for file (CUDA
    ones too); the CPU ones were loaded in their builds and carry symbols.json, the others
    were checked without loading and carry none (`nixgen.trust.loadable`)."""
    rust = oracle.rust()
    variants = sorted(kernels.glob("*/*"))
    assert variants
    for vdir in variants:
        metadata = rust.Metadata.read_from_file(vdir / "metadata.json")
        actual = rust.Digest.hash_variant(rust.DigestAlgorithm.SHA256, vdir)
        assert metadata.digest is not None, vdir
        assert dict(metadata.digest.files) == dict(actual.files), vdir
        assert metadata.digest.validate(actual) is None
        backend = json.loads((vdir / "metadata.json").read_text())["backend"]["type"]
        assert (vdir / "symbols.json").is_file() == (backend == "cpu"), vdir


def test_kernels_describe_api_lists_the_mixed_examples_functions_and_layer(
    kernels: Path,
) -> None:
    cli = Path(sys.executable).parent / "kernels"
    if not cli.exists():
        pytest.skip("the kernels client's CLI is not installed")
    done = _run(
        [str(cli), "describe-api", "--json", str(kernels / "relu-mixed")],
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    described = json.loads(done.stdout)
    assert described["variant"] == CPU_VARIANT
    assert [f["name"] for f in described["functions"]] == [
        "add_op_namespace_prefix",
        "leaky_relu",
        "relu",
    ]
    assert described["layers"] == [
        {"name": "ReLU", "attributes": {"has_backward": True, "can_torch_compile": False}}
    ]


# ---------------------------------------------------------------------- CPU numbers


@pytest.mark.parametrize("name", ["relu-cpu", "relu-rust", "relu-mixed"])
def test_client_loads_the_torch213_cpu_variant(
    loaded: dict[str, ModuleType], kernels: Path, name: str
) -> None:
    module_dir = Path(loaded[name].__file__).resolve().parent
    assert module_dir == (kernels / name / CPU_VARIANT).resolve()


@pytest.mark.parametrize("name", ["relu-cpu", "relu-rust", "relu-mixed"])
def test_cpu_relu_matches_torch_relu(
    loaded: dict[str, ModuleType], torch: ModuleType, name: str
) -> None:
    generator = torch.Generator().manual_seed(1234)
    for dtype in _dtypes(torch)[name]:
        for shape in SHAPES:
            x = torch.randn(shape, generator=generator).to(dtype)
            y = loaded[name].relu(x)
            assert y.dtype == dtype and y.shape == x.shape
            torch.testing.assert_close(y, torch.relu(x), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["relu-cpu", "relu-rust", "relu-mixed"])
def test_cpu_relu_of_non_contiguous_input(
    loaded: dict[str, ModuleType], torch: ModuleType, name: str
) -> None:
    generator = torch.Generator().manual_seed(99)
    for x in _non_contiguous(torch, generator):
        assert not x.is_contiguous()
        before = x.clone()
        torch.testing.assert_close(loaded[name].relu(x), torch.relu(x), rtol=0, atol=0)
        torch.testing.assert_close(x, before, rtol=0, atol=0)


def test_mixed_rust_leaky_relu_matches_torch(
    loaded: dict[str, ModuleType], torch: ModuleType
) -> None:
    generator = torch.Generator().manual_seed(7)
    leaky_relu = torch.nn.functional.leaky_relu
    for slope in (0.01, 0.2, 1.5):
        for shape in SHAPES:
            x = torch.randn(shape, generator=generator)
            torch.testing.assert_close(
                loaded["relu-mixed"].leaky_relu(x, slope), leaky_relu(x, slope), rtol=0, atol=0
            )
    x = torch.randn(40, 30, generator=generator).t()[::2]
    torch.testing.assert_close(
        loaded["relu-mixed"].leaky_relu(x, 0.1), leaky_relu(x, 0.1), rtol=0, atol=0
    )


# ------------------------------------------------------------------------- CUDA


@needs_cuda
@pytest.mark.parametrize("name", ["relu-cuda", "relu-mixed"])
def test_cuda_variants_hold_device_code_for_each_capability(kernels: Path, name: str) -> None:
    fatbin = fatbin_archs
    # SASS for every listed capability and nothing else: no PTX, since none is listed as
    # `+PTX` (the anchor embeds PTX only where asked; tests/test_ptx_build.py builds some).
    want = fatbin.expected_targets(CUDA_CAPABILITIES)
    variants = _variants(name, backend="cuda")
    assert variants
    for variant in variants:
        vdir = kernels / name / variant.name
        assert fatbin.targets(_extension(vdir)) == want, variant.name
        meta = json.loads((vdir / "metadata.json").read_text())
        assert meta["backend"]["archs"] == CUDA_CAPABILITIES


@needs_cuda
def test_cuobjdump_lists_a_cubin_per_capability(kernels: Path) -> None:
    tool = cuobjdump()
    for variant in _variants("relu-cuda", backend="cuda"):
        so = _extension(kernels / "relu-cuda" / variant.name)
        elf = _run([tool, "--list-elf", str(so)])
        assert elf.returncode == 0, elf.stderr
        cubins = sorted(line.rsplit(".", 2)[-2] for line in elf.stdout.splitlines() if line)
        assert cubins == [f"sm_{c.replace('.', '')}" for c in CUDA_CAPABILITIES]


@needs_cuda
def test_cuda_extension_links_against_torchs_cuda_build(kernels: Path) -> None:
    # No GPU and no CUDA torch to import here: every symbol the extension takes from torch
    # must be defined by the torch it was linked against (torch 2.11.0's real CUDA build,
    # c10/torch_cpu/c10_cuda/torch_cuda), and it needs the CUDA runtime.
    torch_symbols = torch_cuda_symbols()
    for variant in _variants("relu-cuda", backend="cuda"):
        library = _extension(kernels / "relu-cuda" / variant.name)
        assert {"libc10.so", "libtorch_cpu.so", "libcudart.so.13"} <= set(needed(library))
        assert unresolved(library, torch_symbols) == [], variant.name


# ---------------------------------------------------------------- reproducibility


def _deriver(path: Path) -> str:
    done = _run(["nix-store", "--query", "--deriver", str(path)], env=nix_env())
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _extension_deriver(path: Path) -> str:
    """The derivation of the extension of the variant built at `path`: its deriver, or, for
    a variant whose `metadata.json` got the flake's provenance (`nixgen.provenance.stamp`,
    a copy of the extension under the same name), the extension's derivation."""
    drv = _deriver(path)
    refs = _run(["nix-store", "--query", "--references", drv], env=nix_env())
    assert refs.returncode == 0, refs.stderr
    name = drv.split("-", 1)[1]
    same = [ref for ref in refs.stdout.split() if ref.split("-", 1)[1] == name]
    return same[0] if len(same) == 1 else drv


def _kernel_derivations(extension_drv: str, name: str) -> list[str]:
    """The derivations of `name`'s kernels and of its binding's objects that the extension
    links."""
    done = _run(["nix-store", "--query", "--references", extension_drv], env=nix_env())
    assert done.returncode == 0, done.stderr
    build = project.read(EXAMPLES / name).build
    parts = [*build.kernels, "torch-binding"]
    suffixes = [f"-{name}-{part}-{build.general.version}.drv" for part in parts]
    return [line for line in done.stdout.split() if line.endswith(tuple(suffixes))]


#: A client environment unlike the one the build ran under: another TMPDIR (so, outside the
#: sandbox, another build directory), HOME, umask and locale, and no SOURCE_DATE_EPOCH.
def _elsewhere_env(tmp: Path) -> dict[str, str]:
    env = nix_env()
    env.pop("SOURCE_DATE_EPOCH", None)
    for name in ("HOME", "TMPDIR"):
        (tmp / f"another-{name.lower()}-directory").mkdir(parents=True, exist_ok=True)
        env[name] = str(tmp / f"another-{name.lower()}-directory")
    env.update(LANG="C.UTF-8", LC_ALL="C.UTF-8")
    return env


def _umask_077() -> None:
    os.umask(0o077)


def _cpu_derivations(kernels: Path) -> list[str]:
    """One derivation of each kind the CPU examples build (already built)."""
    # relu-mixed's CPU variant covers every kind of CPU output: a C++ kernel archive, a
    # Rust staticlib, the binding's objects and the extension linking them all; relu-rust's
    # kernel adds features.
    mixed = _extension_deriver((kernels / "relu-mixed" / CPU_VARIANT).resolve())
    rust = _extension_deriver((kernels / "relu-rust" / CPU_VARIANT).resolve())
    drvs = [
        mixed,
        *_kernel_derivations(mixed, "relu-mixed"),
        *_kernel_derivations(rust, "relu-rust"),
    ]
    # relu-mixed: extension, binding, 2 kernels; relu-rust: its kernel and its binding.
    assert len(drvs) == 6, drvs
    return drvs


def _check(drvs: list[str], tmp_path: Path, *, sandbox: bool) -> None:
    """Rebuild `drvs` with `nix-build --check` (which fails unless every output byte is
    the same) from a client with another TMPDIR, HOME, umask and locale; outside the
    sandbox, in a build directory under that TMPDIR instead of /build."""
    done = subprocess.run(
        ["nix-build", "--check", "--no-out-link", "--max-jobs", "2", "--keep-going",
         "--option", "sandbox", "true" if sandbox else "false", *drvs],
        env=_elsewhere_env(tmp_path), capture_output=True, text=True, check=False,
        timeout=1800, preexec_fn=_umask_077,
    )  # fmt: skip
    assert done.returncode == 0, f"not reproducible:\n{done.stderr[-4000:]}"


def test_cpu_outputs_are_bit_for_bit_reproducible_in_another_build_directory(
    kernels: Path, tmp_path: Path
) -> None:
    # Built in the sandbox (in /build), rebuilt outside it in another directory.
    _check(_cpu_derivations(kernels), tmp_path, sandbox=False)


@needs_cuda
def test_cuda_outputs_are_bit_for_bit_reproducible_in_the_sandbox(
    kernels: Path, tmp_path: Path
) -> None:
    # A CUDA 13.0 extension, its kernel's device code (fatbinaries) and its binding, rebuilt
    # in the sandbox: nvcc writes a hash of the source's absolute path into the names of
    # anonymous-namespace symbols (cudafe++ --orig_src_path_name, from the working
    # directory) and its own process id into the objects (tmpxft_<pid>_… file symbols), so
    # its objects are the same only in the same build directory (the sandbox's /build) and
    # PID namespace: outside the sandbox every rebuild differs.
    cuda_variants = _variants("relu-cuda", backend="cuda")
    cu130 = min(v.name for v in cuda_variants if v.backend_version == "13.0")
    cuda = _extension_deriver((kernels / "relu-cuda" / cu130).resolve())
    drvs = [cuda, *_kernel_derivations(cuda, "relu-cuda")]
    assert len(drvs) == 3, drvs
    _check(drvs, tmp_path, sandbox=True)


def test_the_project_at_another_path_gives_the_same_derivations(
    kernels: Path, repo: Path, stub: Path, tmp_path: Path
) -> None:
    # The same example in a copy of the repository at another path (another depth, another
    # name; the same commit, so the same provenance), evaluated from a client with another
    # TMPDIR, HOME, umask and locale: the very derivations already built, so the same
    # outputs (store paths), whose bytes the rebuild above checks. (The example imports the
    # repository's nix/ in place, `path:../../nix`, so it moves with its repository.)
    names = ["relu-mixed", *(["relu-cuda"] if HAVE_CUDA else [])]
    env = _elsewhere_env(tmp_path)
    elsewhere = copy_worktree(tmp_path / "somewhere" / "else" / "nixgen-copy")
    for name in names:
        moved = elsewhere / "examples" / name
        variants = [v.name for v in _variants(name)]
        apply = "ps: map (n: ps.${n}.drvPath) [ " + " ".join(f'"{n}"' for n in variants) + " ]"
        ref = f"git+file://{elsewhere}?dir=examples/{name}"
        done = subprocess.run(
            ["nix", "eval", "--json", f"{ref}#packages.{SYSTEM}", "--apply", apply,
             "--override-input", "nixpkgs", f"path:{stub}",
             "--override-input", "kernel-builder", f"path:{kernel_builder(stub)}"],
            cwd=moved, env=env, capture_output=True, text=True, check=False, timeout=300,
            preexec_fn=_umask_077,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        built = [_deriver((kernels / name / v).resolve()) for v in variants]
        assert json.loads(done.stdout) == built, name


# ------------------------------------------------------------------- more builds


def test_rust_kernel_with_the_lock_file_at_the_project_root_builds(
    tmp_path: Path, stub: Path
) -> None:
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    root = tmp_path / "relu-rust"
    copy_out(EXAMPLES / "relu-rust", root, "nix", "build")
    (root / "relu_rs" / "Cargo.lock").rename(root / "Cargo.lock")
    # the example's Rust kernel is nixgen.toml's (a crate linked into its [torch] extension)
    toml = root / "nixgen.toml"
    assert '"relu_rs/Cargo.lock"' in toml.read_text()
    toml.write_text(toml.read_text().replace('"relu_rs/Cargo.lock"', '"Cargo.lock"'))
    rendered = CliRunner().invoke(main, ["render", str(root)])
    assert rendered.exit_code == 0, rendered.output
    out = nix_build(
        textwrap.dedent(
            f"""
            let
              p = import ./nix;
              variant = builtins.head (p.variants "{SYSTEM}");
              pkgs = p.nixgen.project.pkgsFor {{
                nixpkgs = {stub};
                kernel-builder = {kernel_builder(stub)};
                system = "{SYSTEM}";
              }} variant;
            in
            # The kernel file called as `mkProject` calls it (its Rust crate needs no torch).
            p.nixgen.project.callWith pkgs p.project.kernels.relu_rs.file {{
              nixgen = p.nixgen.withLib pkgs.lib;
              root = ./.;
              toolchain = p.nixgen.toolchains.${{variant.backend}} pkgs;
              torch = null;
              inherit variant;
              inherit (p.project) headers;
            }}
            """
        ),
        cwd=root,
    )
    symbols = _run(["nm", "--defined-only", "--extern-only", str(out / "lib" / "librelu_rs.a")])
    assert symbols.returncode == 0, symbols.stderr
    exported = {line.split()[-1] for line in symbols.stdout.splitlines() if " T " in line}
    assert {"relu_rs_f32", "relu_rs_f64"} <= exported


def test_project_with_an_unknown_capability_builds_its_cpu_variant(
    tmp_path: Path, stub: Path, torch: ModuleType
) -> None:
    """A CUDA capability nixgen does not know only warns: the project renders and its
    CPU variant builds and runs (the CUDA side is checked by test_render_eval)."""
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    root = unknown_capability_project(tmp_path / "relu-mixed")
    rendered = CliRunner().invoke(main, ["render", str(root)])
    assert rendered.exit_code == 0, rendered.output
    assert (
        "warning: kernel.relu_cuda.cuda-capabilities[1]: unknown CUDA capability "
        f"`{UNKNOWN_CAPABILITY}`" in rendered.output
    )
    variants = {v.name for v in variants_mod.variants(project.read(root).build, system=SYSTEM)}
    assert CPU_VARIANT in variants and any("-cu" in name for name in variants)
    [out] = flake_build(root, CPU_VARIANT, stub=stub, timeout=3600)
    layout = tmp_path / "built"
    layout.mkdir()
    (layout / CPU_VARIANT).symlink_to(out)
    import kernels as client  # locked (requirements/dev.txt): never skipped

    module = client.get_local_kernel(layout, backend="cpu")
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(15))
    torch.testing.assert_close(module.relu(x), torch.relu(x), rtol=0, atol=0)


def test_nixgen_package_renders_what_the_work_tree_renders(
    repo: Path, stub: Path, tmp_path: Path
) -> None:
    from nixgen.rendering import render

    def installed() -> tuple[str, bool] | None:
        """The host interpreter's installed nixgen (version, console script present)."""
        done = _run(
            [sys.executable, "-c", "import importlib.metadata as m; print(m.version('nixgen'))"]
        )
        if done.returncode != 0:
            return None
        return done.stdout.strip(), (Path(sys.executable).parent / "nixgen").exists()

    before = installed()
    [out] = flake_build(repo, "nixgen", stub=stub)
    # The stand-in's pip installs into $out with the host interpreter; it must leave that
    # interpreter's own nixgen (the checkout's .venv) installed.
    assert installed() == before, "building .#nixgen uninstalled nixgen from the host venv"
    nixgen = out / "bin" / "nixgen"
    version = _run([str(nixgen), "--version"])
    assert version.returncode == 0, version.stderr
    assert version.stdout.startswith("nixgen, version ")
    root = tmp_path / "relu-mixed"
    copy_out(EXAMPLES / "relu-mixed", root, "nix", "build")
    (root / "flake.nix").unlink()
    done = _run([str(nixgen), "render", str(root)])
    assert done.returncode == 0, done.stdout + done.stderr
    # The packaged CLI (templates, Nix library, data) writes exactly what this checkout does.
    expected = render.render(plan.make(project.read(root).build))
    written = {
        str(p.relative_to(root / "nix")): p.read_bytes()
        for p in (root / "nix").rglob("*")
        if p.is_file()
    }
    assert written == expected.tree
    assert (root / "flake.nix").read_bytes() == expected.root["flake.nix"]


def test_a_two_level_output_directory_builds_and_loads(
    stub: Path, torch: ModuleType, tmp_path: Path
) -> None:
    """`nixgen render --out gen/nix`: the generated tree finds the project root two levels
    up, so the CPU variant builds from the rendered flake and computes like torch.relu."""
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix", "build")
    (root / "flake.nix").unlink()
    result = CliRunner().invoke(main, ["render", str(root), "--out", "gen/nix"])
    assert result.exit_code == 0, result.output
    assert "root = ../..;" in (root / "gen" / "nix" / "default.nix").read_text()
    [out] = flake_build(root, CPU_VARIANT, stub=stub, timeout=1800)
    layout = tmp_path / "layout"
    layout.mkdir()
    (layout / CPU_VARIANT).symlink_to(out)
    import kernels as client  # locked (requirements/dev.txt): never skipped

    relu = client.get_local_kernel(layout, backend="cpu")
    x = torch.randn(257, generator=torch.Generator().manual_seed(7))
    assert torch.equal(relu.relu(x), torch.relu(x))


def test_the_zip_layout_builds_and_the_client_loads_it(
    tmp_path: Path, stub: Path, torch: ModuleType
) -> None:
    """`build-layout = "zip"`: the variant holds its Python package in `<id>.zip`, the
    extension module beside it, and `metadata.json` says so (`build-layout`, and
    `kernels-minver` 0.19.0, the first client that imports it); the 0.19.1 client loads it
    and the op matches `torch.relu`."""
    from click.testing import CliRunner

    from nixgen.cmdline.cli import main

    root = tmp_path / "relu-zip"
    copy_out(EXAMPLES / "relu-cpu", root, "nix", "flake.nix", "result*", "target")
    text = (root / "build.toml").read_text()
    # Another version, so another ops id than the example's: the client refuses a second
    # build of one id in a process, and other tests load relu-cpu's in this one.
    (root / "build.toml").write_text(
        text.replace('backends = ["cpu"]\n', 'backends = ["cpu"]\nbuild-layout = "zip"\n').replace(
            "\nversion = 1\n", "\nversion = 46\n"
        )
    )
    rendered = CliRunner().invoke(main, ["render", str(root)])
    assert rendered.exit_code == 0, rendered.output
    [out] = flake_build(root, CPU_VARIANT, stub=stub, timeout=3600)
    rust = pytest.importorskip("kernels._rust")
    metadata = rust.Metadata.from_bytes((out / "metadata.json").read_bytes())
    assert metadata.build_layout == rust.BuildLayout.ZIP
    assert str(metadata.kernels_minver) == "0.19.0"
    entries = sorted(p.name for p in out.iterdir())
    # symbols.json: the load check in the build (nixgen.trust) loaded the zip layout too.
    expected = ["metadata.json", "symbols.json", f"{metadata.id}.zip", f"{metadata.id}.abi3.so"]
    assert entries == sorted(expected)
    import zipfile

    with zipfile.ZipFile(out / f"{metadata.id}.zip") as archive:
        names = archive.namelist()
        assert {"__init__.py", "_ops.py"} <= set(names)
        assert all(info.date_time == (1980, 1, 1, 0, 0, 0) for info in archive.infolist())
    layout = tmp_path / "built"
    layout.mkdir()
    (layout / CPU_VARIANT).symlink_to(out)
    client = pytest.importorskip("kernels")
    module = client.get_local_kernel(layout, backend="cpu")
    x = torch.randn(9, 4, generator=torch.Generator().manual_seed(16))
    torch.testing.assert_close(module.relu(x), torch.relu(x), rtol=0, atol=0)
