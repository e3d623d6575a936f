"""One table of backends and languages (`nixgen/data/languages.json`), read by nixgen and by
the Nix library, and every planned backend usable in Nix.

A `backends = ["tpu"]` project used to plan and render a `torch-tpu` variant whose dev shell
and check failed with `attribute 'tpu' missing`: the backends nixgen plans and the library's
per-backend tables (`toolchains`, `backendConfig`, `backendDefines`) were separate lists. Here
a project of each framework that lists every backend is rendered, and the dev shell, the
check and the package of every planned variant of every system are evaluated through the
stand-ins (tests/nixpkgs, tests/kernel-builder).
"""

from __future__ import annotations

import json
import subprocess
import typing
from pathlib import Path

import pytest

from nixgen.core import tables
from nixgen.planning import plan, variants
from nixgen.reading import model
from nixgen.rendering import render

from .conftest import REPO, materialize
from .nixtools import kernel_builder, make_stub, needs_nix, nix_env, nix_eval_json
from .projects import render_into

TABLE = json.loads((REPO / "nixgen" / "data" / "languages.json").read_text())


def test_python_reads_the_one_table() -> None:
    """The allowlists, each language's backend and flag field, and the kernel classes are
    the table's: build.toml accepts exactly its backends and languages."""
    literal = typing.get_args(typing.get_args(model.Backend)[0])
    assert literal == tables.BACKENDS == tuple(sorted(TABLE["backends"]))
    assert tuple(model.KERNEL_CLASSES) == tables.LANGUAGES == tuple(TABLE["languages"])
    assert {k: r["backend"] for k, r in TABLE["languages"].items()} == tables.LANGUAGE_BACKEND
    assert {k: r["flags"]["nix"] for k, r in TABLE["languages"].items() if r["flags"]} == {
        language: nix for language, (_, nix) in tables.LANGUAGE_FLAGS.items()
    }
    assert set(variants.CONFIG_BACKENDS) == {
        b for b, r in TABLE["backends"].items() if r["buildSet"] is not None
    }
    for language, row in TABLE["languages"].items():
        # the flag field is the kernel class's field of that build.toml key
        fields = {f.name for f in model.KERNEL_CLASSES[language].__attrs_attrs__}
        if row["flags"]:
            assert row["flags"]["toml"].replace("-", "_") in fields, language
        assert tables.is_rust(language) == (row["builder"] == "rust")


def test_a_kernels_backend_flags_come_from_its_flag_field(tmp_path: Path) -> None:
    toml = """[general]
name = "flags"
version = 1
edition = 6
license = "Apache-2.0"
backends = ["cuda", "rocm"]

[torch]
src = ["b.cpp"]

[kernel.c]
language = "cpp-cuda"
src = ["c/k.cu"]
cuda-flags = ["-DC=1"]

[kernel.r]
language = "cpp-rocm"
src = ["r/k.hip"]
hip-flags = ["-DR=1"]
"""
    from nixgen.checking import project

    build = project.read(materialize(toml, tmp_path), check_files=False).build
    kernels = {k.name: k for k in plan.make(build).kernels}
    assert kernels["c"].backend_flags == ("-DC=1",)
    assert kernels["r"].backend_flags == ("-DR=1",)
    assert render.kernel_data(kernels["c"])["cudaFlags"] == ["-DC=1"]
    assert render.kernel_data(kernels["r"])["hipFlags"] == ["-DR=1"]


@needs_nix
def test_the_librarys_per_backend_tables_are_keyed_from_the_table() -> None:
    """`toolchains`, `backendConfig`, `backendDefines` and the kernel builders have an entry
    for every backend and language of the table; every backend with a build set has a
    toolchain (a backend added to the table without one fails here), with the anchor's
    nixpkgs `config` (`tpuSupport` for tpu)."""
    got = nix_eval_json(
        "let l = (import ./nix/default.nix).withLib (import ./tests/nixpkgs/lib); in {"
        " toolchains = builtins.attrNames l.toolchains;"
        " defines = l.compile.backendDefines;"
        " languages = builtins.attrNames l.kernel.languages;"
        " hasToolchain = builtins.mapAttrs (b: _: (builtins.tryEval"
        " (builtins.isFunction l.toolchains.${b})).success) l.toolchains;"
        " config = builtins.listToAttrs (map (b: { name = b; value = l.project.backendConfig b; })"
        f" {_nix_list(tables.BUILD_SET_BACKENDS)}); }}",
        cwd=REPO,
    )
    assert got["toolchains"] == list(tables.BACKENDS)
    assert got["defines"] == {b: r["defines"] for b, r in TABLE["backends"].items()}
    assert got["languages"] == sorted([*tables.LANGUAGES, "noarch"])
    assert got["hasToolchain"] == dict.fromkeys(tables.BACKENDS, True)
    assert got["config"]["tpu"] == {"allowUnfree": True, "tpuSupport": True}
    assert got["config"]["cuda"] == {"allowUnfree": True, "cudaSupport": True}
    assert got["config"]["cpu"] == {"allowUnfree": True}


@needs_nix
@pytest.mark.parametrize("backend", ["neuron", "cann"])
def test_a_backend_without_a_build_set_fails_naming_it(backend: str) -> None:
    """neuron and cann have no build set in the kernels toolchain (its mk-build-set.nix has
    no `backendConfig` for them): nothing is planned for them, and asking the library for
    their toolchain or package set fails with a message that names the backend."""
    assert backend not in tables.BUILD_SET_BACKENDS
    for expr in (f"l.toolchains.{backend} {{ }}", f'l.project.backendConfig "{backend}"'):
        done = subprocess.run(
            [
                "nix-instantiate",
                "--eval",
                "--strict",
                "--expr",
                "let l = (import ./nix/default.nix).withLib (import ./tests/nixpkgs/lib); "
                f"in {expr}",
            ],
            cwd=REPO,
            env=nix_env(),
            capture_output=True,
            text=True,
        )
        assert done.returncode != 0
        assert f"backend `{backend}` has no build set in the kernels toolchain" in done.stderr


def _nix_list(values: typing.Iterable[str]) -> str:
    return "[ " + " ".join(json.dumps(v) for v in values) + " ]"


_GENERAL = """[general]
name = "every-{name}"
version = 1
edition = 6
license = "Apache-2.0"
backends = {backends}
"""
_KERNELS = """
[kernel.k_cpu]
language = "cpp-cpu"
src = ["k_cpu/k.cpp"]

[kernel.k_cuda]
language = "cpp-cuda"
src = ["k_cuda/k.cu"]

[kernel.k_rocm]
language = "cpp-rocm"
src = ["k_rocm/k.hip"]

[kernel.k_xpu]
language = "cpp-xpu"
src = ["k_xpu/k.cpp"]

[kernel.k_metal]
language = "cpp-metal"
src = ["k_metal/k.metal", "k_metal/k.mm"]
"""
#: A project of each framework that lists every backend of the table (C++ kernels of every
#: backend that has a language; the others get pure-Python variants, or none for tvm-ffi).
PROJECTS = {
    "torch": '\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n' + _KERNELS,
    "tvm-ffi": '\n[tvm-ffi]\nsrc = ["tvm-ffi-ext/binding.cpp"]\n' + _KERNELS,
    "torch-noarch": "\n[torch-noarch]\n",
}

EVERYTHING = """
let
  p = import ./nix;
  args = system: { nixpkgs = STUB; kernel-builder = KERNEL_BUILDER; inherit system; };
in map (v: {
  inherit (v) name system backend;
  shell = (p.devShell (args v.system) v).drvPath;
  check = (p.check (args v.system) v).drvPath;
  package = (p.variantPackage (args v.system) v).drvPath;
}) (p.variants null)
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


@needs_nix
@pytest.mark.nix
@pytest.mark.parametrize("framework", sorted(PROJECTS))
def test_every_planned_backend_and_system_evaluates(
    framework: str, stub: Path, tmp_path: Path
) -> None:
    """Every planned variant's dev shell (`nix develop .#<variant>`), check (`nix flake
    check`) and package evaluate, tpu's included; every backend with a build set is
    planned for a project that lists it (a new backend of the table is held by this test
    once it has a build configuration), neuron and cann for none."""
    backends = json.dumps(list(tables.BACKENDS))
    root = tmp_path / framework
    materialize(_GENERAL.format(name=framework, backends=backends) + PROJECTS[framework], root)
    build = render_into(root)
    expr = EVERYTHING.replace("STUB", str(stub)).replace(
        "KERNEL_BUILDER", str(kernel_builder(stub))
    )
    got = nix_eval_json(expr, cwd=root, read_write=True, timeout=600)
    planned = {(v.system, v.backend) for v in plan.make(build).variants}
    assert {(v["system"], v["backend"]) for v in got} == planned
    for v in got:
        assert all(v[k].endswith(".drv") for k in ("shell", "check", "package")), v
    seen = {backend for _, backend in planned}
    assert not seen & {"neuron", "cann"}
    if framework == "tvm-ffi":
        # no pure-Python variant: the backends with kernels and a tvm-ffi configuration
        assert {"cpu", "cuda"} <= seen
    else:
        assert seen == set(tables.BUILD_SET_BACKENDS)
        assert "tpu" in seen


@pytest.mark.parametrize("backend", ["neuron", "cann"])
def test_a_backend_without_a_build_set_beside_others_is_a_located_warning(
    backend: str, tmp_path: Path
) -> None:
    """`backends = ["cpu", "neuron"]` plans the cpu variants and says, at the key, that
    nothing is built for neuron (it used to be dropped silently)."""
    from nixgen.checking import project

    toml = _GENERAL.format(name="mix", backends=json.dumps(["cpu", backend])) + "\n[torch-noarch]\n"
    build = project.read(materialize(toml, tmp_path), check_files=False).build
    planned = plan.make(build)
    assert {v.backend for v in planned.variants} == {"cpu"}
    messages = [(p.severity, p.path, p.message) for p in planned.problems]
    assert (
        "warning",
        ("general", "backends"),
        f"backend `{backend}` has no build set in the kernels toolchain "
        "(nix-builder/lib/mk-build-set.nix): nothing is built for it",
    ) in messages


def test_the_backend_and_language_lists_are_written_once() -> None:
    """No module of nixgen or of the library restates the backends or the languages: no
    literal holding four backend names or three language names (the legacy editions'
    `ALL_LEGACY_BACKENDS`, what `universal = true` meant, is another rule), and no test of
    a language by its prefix (`startswith("rust-")`, `substring 0 5`).

    Kept as a text search on purpose: it reads Python and Nix alike for restated data (a
    list of names), which neither ruff nor import-linter can see."""
    import re

    backends = "|".join(tables.BACKENDS)
    languages = "|".join(re.escape(language) for language in tables.LANGUAGES)
    many_backends = re.compile(rf'(?:"(?:{backends})"[,\s]+){{3}}"(?:{backends})"')
    many_languages = re.compile(rf'(?:"(?:{languages})"[,\s]+){{2}}"(?:{languages})"')
    prefix = re.compile(r'startswith\(\(?"(?:rust|cpp)-|substring 0 [45] ')
    found = []
    for path in [*(REPO / "nixgen").rglob("*.py"), *(REPO / "nix").glob("*.nix")]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "ALL_LEGACY_BACKENDS = " in line or line.lstrip().startswith(("#", "=>")):
                continue
            if many_backends.search(line) or many_languages.search(line) or prefix.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
