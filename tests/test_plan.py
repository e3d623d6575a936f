"""The plan stage: which variants a project builds, and what they are called.

The rules are the anchor's (reference/anchor-hf-kernels.md §3.2–3.3) plus nixgen's few
additions (documented on `variants.variants`). The plan is made here only: `project.nix` carries
it and the Nix library (nix/variants.nix) reads it; the flakes' outputs are compared with
`nixgen variants` / `nixgen matrix` for the examples and the corpus in test_variants_cli.py
and test_matrix.py.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nixgen.checking import project
from nixgen.core import tables
from nixgen.planning import kernels, plan, variants
from nixgen.reading import model
from nixgen.rendering import nixlit, render
from tests.nixtools import have_nix, nix_eval_json

from . import client
from .test_real_toolchain import ANCHOR

REPO = Path(__file__).resolve().parent.parent
#: The anchor's own list of the variants its bundle builds (a copy of huggingface/kernels at
#: the pin, where test_real_toolchain.py finds one: ../shared/anchor or NIXGEN_ANCHOR).
ANCHOR_VARIANTS = ANCHOR / "nix-builder" / "build-variants.json"


def parse_variant(name: str) -> client.Parsed:
    """The locked client's parse of a variant name (the names' oracle, `tests/client.py`),
    imported on first use: the client takes a third of a second to import."""
    return client.parse_variant(name)


HEADER = """\
[general]
name = "demo"
version = 1
edition = 6
license = "Apache-2.0"
backends = {backends}
{general}
"""

KERNEL_SOURCES = {
    "cpp-cpu": "k_cpu/k.cpp",
    "cpp-cuda": "k_cuda/k.cu",
    "cpp-rocm": "k_rocm/k.hip",
    "cpp-xpu": "k_xpu/k.cpp",
    "cpp-metal": "k_metal/k.mm",
}


def kernel(name: str, language: str, extra: str = "") -> str:
    return (
        f'[kernel.{name}]\nlanguage = "{language}"\ndepends = []\n'
        f'src = ["{KERNEL_SOURCES[language]}"]\n{extra}\n'
    )


@pytest.fixture
def build_of(make_project: Callable[..., Path]) -> Callable[..., model.Build]:
    """A Build from build.toml text: `backends`, extra [general] lines, then the rest."""

    def make(backends: list[str], rest: str, general: str = "") -> model.Build:
        text = HEADER.format(backends=json.dumps(backends), general=general) + rest
        return project.read(make_project(text, files=False), check_files=False).build

    return make


TORCH = '[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'


def names(variants: list[variants.Variant], system: str | None = None) -> list[str]:
    return [v.name for v in variants if system is None or v.system == system]


# ------------------------------------------------------------------------------ names


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (variants.torch_variant_name("2.13", "cuda", "13.0", "x86_64-linux"),
         "torch213-cxx11-cu130-x86_64-linux"),
        (variants.torch_variant_name("2.13", "cpu", None, "aarch64-darwin"),
         "torch213-cpu-aarch64-darwin"),
        (variants.torch_variant_name("2.12", "xpu", "2025.3.2", "x86_64-linux"),
         "torch212-cxx11-xpu20253-x86_64-linux"),
        (variants.torch_variant_name("2.13", "rocm", "7.1", "x86_64-linux"),
         "torch213-cxx11-rocm71-x86_64-linux"),
        (variants.stable_abi_variant_name("2.11", "cuda", "12.6", "x86_64-linux"),
         "torch-stable-abi211-cu126-x86_64-linux"),
        (variants.tvm_ffi_variant_name("0.1", "cuda", "12.6", "x86_64-linux"),
         "tvm-ffi01-cu126-x86_64-linux"),
        (variants.noarch_variant_name("cuda"), "torch-cuda"),
        (variants.noarch_variant_name("metal", "mlx-noarch"), "mlx-metal"),
        (variants.torch_variant_name("2", "cuda", "13", "x86_64-linux"),
         "torch20-cxx11-cu130-x86_64-linux"),
    ],
)  # fmt: skip
def test_names_follow_the_anchor(name: str, expected: str) -> None:
    assert name == expected
    assert parse_variant(name).name == expected


#: The anchor's bundle builds by system and backend (its nix-builder/build-variants.json,
#: compared with the file itself below where a copy of the anchor is at hand).
ANCHOR_BUNDLE = {
    "aarch64-darwin": {
        "cpu": ["torch212-cpu-aarch64-darwin", "torch213-cpu-aarch64-darwin"],
        "metal": ["torch212-metal-aarch64-darwin", "torch213-metal-aarch64-darwin"],
    },
    "aarch64-linux": {
        "cpu": ["torch212-cxx11-cpu-aarch64-linux", "torch213-cxx11-cpu-aarch64-linux"],
        "cuda": [f"torch21{t}-cxx11-cu{c}-aarch64-linux" for t in (2, 3) for c in (126, 130, 132)],
    },
    "x86_64-linux": {
        "cpu": ["torch212-cxx11-cpu-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux"],
        "cuda": [f"torch21{t}-cxx11-cu{c}-x86_64-linux" for t in (2, 3) for c in (126, 130, 132)],
        "rocm": [f"torch21{t}-cxx11-rocm{r}-x86_64-linux" for t in (2, 3) for r in (71, 72)],
        "xpu": ["torch212-cxx11-xpu20253-x86_64-linux", "torch213-cxx11-xpu20260-x86_64-linux"],
    },
}


def test_the_anchors_default_bundle_matrix() -> None:
    """A project with a kernel for every backend builds the anchor's bundle list exactly."""
    build = model.Build(
        general=model.General(
            name="all", version=1, edition=6, license="MIT",
            backends=["cpu", "cuda", "metal", "rocm", "xpu"],
        ),
        framework=model.Torch(src=["b.cpp"]),
        kernels={
            f"k_{language}": model.KERNEL_CLASSES[language](
                language=language, depends=[], src=["k"]
            )
            for language in ("cpp-cpu", "cpp-cuda", "cpp-rocm", "cpp-xpu", "cpp-metal")
        },
    )  # fmt: skip
    got: dict[str, dict[str, list[str]]] = {}
    for v in variants.variants(build):
        if v.bundle:
            got.setdefault(v.system, {}).setdefault(v.backend, []).append(v.name)
    assert got == ANCHOR_BUNDLE


@pytest.mark.skipif(
    not ANCHOR_VARIANTS.is_file(),
    reason=f"no copy of the anchor here ({ANCHOR}; set NIXGEN_ANCHOR to huggingface/kernels"
    " at 8ac69fc5)",
)
def test_the_bundle_matrix_is_the_anchors_own_list() -> None:
    assert json.loads(ANCHOR_VARIANTS.read_text()) == ANCHOR_BUNDLE


# -------------------------------------------------------------------------- filtering


def test_only_listed_backends(build_of: Callable[..., model.Build]) -> None:
    build = build_of(["cpu"], TORCH + kernel("k", "cpp-cpu"))
    assert {v.backend for v in variants.variants(build)} == {"cpu"}
    # torch 2.11 cpu exists (x86_64-linux only) but is not part of the bundle.
    by_name = {(v.name, v.system): v for v in variants.variants(build)}
    assert by_name[("torch211-cxx11-cpu-x86_64-linux", "x86_64-linux")].bundle is False
    assert names(variants.variants(build), "aarch64-darwin") == [
        "torch212-cpu-aarch64-darwin",
        "torch213-cpu-aarch64-darwin",
    ]


def test_torch_bounds(build_of: Callable[..., model.Build]) -> None:
    """The anchor's own check: minver = maxver = 2.12 keeps only torch 2.12."""
    build = build_of(
        ["cuda"],
        '[torch]\nsrc = ["b.cpp"]\nminver = "2.12"\nmaxver = "2.12"\n' + kernel("k", "cpp-cuda"),
    )
    assert {v.torch for v in variants.variants(build)} == {"2.12"}
    assert names(variants.variants(build), "x86_64-linux") == [
        "torch212-cxx11-cu126-x86_64-linux",
        "torch212-cxx11-cu130-x86_64-linux",
        "torch212-cxx11-cu132-x86_64-linux",
    ]


def test_cuda_bounds(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cpu", "cuda"],
        TORCH + kernel("k", "cpp-cuda") + kernel("c", "cpp-cpu"),
        general='[general.cuda]\nminver = "12.8"\nmaxver = "13.0"\n',
    )
    cuda = {v.backend_version for v in variants.variants(build) if v.backend == "cuda"}
    assert cuda == {"13.0"}
    # CUDA bounds never touch other backends.
    assert "torch213-cxx11-cpu-x86_64-linux" in names(variants.variants(build))


def test_stable_abi_keeps_the_newest_torch_per_backend_version(
    build_of: Callable[..., model.Build],
) -> None:
    build = build_of(
        ["cuda", "xpu"],
        '[torch]\nsrc = ["b.cpp"]\nstable-abi = "2.11"\n'
        + kernel("k", "cpp-cuda")
        + kernel("x", "cpp-xpu"),
    )
    found = variants.variants(build, system="x86_64-linux")
    assert names(found) == [
        "torch-stable-abi211-cu126-x86_64-linux",
        "torch-stable-abi211-cu130-x86_64-linux",
        "torch-stable-abi211-cu132-x86_64-linux",
        "torch-stable-abi211-xpu20253-x86_64-linux",
        "torch-stable-abi211-xpu20260-x86_64-linux",
    ]
    # Built with the newest torch that has the toolkit (xpu 2025.3.2 exists only for 2.12).
    assert [v.torch for v in found] == ["2.13", "2.13", "2.13", "2.12", "2.13"]
    assert all(v.stable_abi == "2.11" for v in found)


def test_stable_abi_per_backend(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cpu", "cuda"],
        '[torch]\nsrc = ["b.cpp"]\n[torch.stable-abi]\ncuda = "2.12"\n'
        + kernel("k", "cpp-cuda")
        + kernel("c", "cpp-cpu"),
    )
    found = names(variants.variants(build), "x86_64-linux")
    assert "torch-stable-abi212-cu130-x86_64-linux" in found
    assert "torch212-cxx11-cpu-x86_64-linux" in found  # cpu keeps every torch
    assert not any(n.startswith("torch213-cxx11-cu") for n in found)


def test_a_torch_older_than_the_stable_abi_is_not_built(
    build_of: Callable[..., model.Build],
) -> None:
    build = build_of(
        ["xpu"], '[torch]\nsrc = ["b.cpp"]\nstable-abi = "2.13"\n' + kernel("x", "cpp-xpu")
    )
    # xpu 2025.3.2 only exists with torch 2.12, which cannot target the 2.13 ABI.
    assert names(variants.variants(build)) == ["torch-stable-abi213-xpu20260-x86_64-linux"]


def test_pure_python_variants_target_no_abi(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cuda", "metal"],
        '[torch]\nsrc = ["b.cpp"]\nstable-abi = "2.14"\n' + kernel("k", "cpp-cuda"),
    )
    # No torch in the table reaches ABI 2.14, so no CUDA variant; metal has no kernel,
    # its pure-Python variant needs no ABI and stays.
    assert [(v.name, v.system) for v in variants.variants(build)] == [
        ("torch-metal", "aarch64-darwin")
    ]


def test_cuda_minver_leaves_a_kernel_out(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cuda"],
        TORCH + kernel("new", "cpp-cuda", 'cuda-minver = "13.0"') + kernel("old", "cpp-cuda"),
    )
    by_version = {
        v.backend_version: v.kernels
        for v in variants.variants(build, system="x86_64-linux")
        if v.torch == "2.13"
    }
    assert by_version == {"12.6": ("old",), "13.0": ("new", "old"), "13.2": ("new", "old")}


def test_a_configuration_without_any_kernel_is_not_built(
    build_of: Callable[..., model.Build],
) -> None:
    build = build_of(["cuda"], TORCH + kernel("new", "cpp-cuda", 'cuda-minver = "13.0"'))
    assert {v.backend_version for v in variants.variants(build)} == {"13.0", "13.2"}


def test_a_backend_without_kernels_is_noarch(build_of: Callable[..., model.Build]) -> None:
    build = build_of(["cpu", "metal", "tpu"], TORCH + kernel("c", "cpp-cpu"))
    found = variants.variants(build)
    noarch = {(v.name, v.system): v for v in found if v.framework == "torch-noarch"}
    assert sorted(noarch) == [("torch-metal", "aarch64-darwin"), ("torch-tpu", "x86_64-linux")]
    metal = noarch[("torch-metal", "aarch64-darwin")]
    assert (metal.torch, metal.kernels, metal.bundle) == (None, (), True)
    # The anchor builds torch 2.11 tpu but does not bundle it.
    assert noarch[("torch-tpu", "x86_64-linux")].bundle is False


def test_a_noarch_project(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cpu", "cuda"], "[torch-noarch]\n", general='[general.cuda]\nminver = "99.0"\n'
    )
    # CUDA bounds apply to noarch projects too (as in the anchor): no CUDA variant left.
    assert sorted((v.name, v.system) for v in variants.variants(build)) == [
        ("torch-cpu", "aarch64-darwin"),
        ("torch-cpu", "aarch64-linux"),
        ("torch-cpu", "x86_64-linux"),
    ]
    assert all(v.bundle for v in variants.variants(build))


def test_tvm_ffi(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cuda", "metal"],
        '[tvm-ffi]\nsrc = ["tvm-ffi-ext/b.cpp"]\n' + kernel("k", "cpp-cuda"),
    )
    found = variants.variants(build, system="x86_64-linux")
    assert names(found) == [
        "tvm-ffi01-cu126-x86_64-linux",
        "tvm-ffi01-cu130-x86_64-linux",
        "tvm-ffi01-cu132-x86_64-linux",
    ]
    # cu132 has tvm-ffi 0.1 with torch 2.12 and 2.13: the first in table order wins.
    assert {v.torch for v in found} == {"2.12"}
    assert all(v.tvm_ffi == "0.1" and v.framework == "tvm-ffi" for v in found)
    # metal has no kernel and tvm-ffi has no pure-Python variant: nothing, and a warning.
    assert not [v for v in variants.variants(build) if v.backend == "metal"]
    warnings = [p.message for p in plan.check(build)]
    assert any("backend `metal` has no kernel" in m for m in warnings)


def test_system_filter_is_a_filter(build_of: Callable[..., model.Build]) -> None:
    build = build_of(["cpu", "cuda", "tpu"], TORCH + kernel("k", "cpp-cuda"))
    every = variants.variants(build)
    for system in variants.SYSTEMS:
        assert variants.variants(build, system=system) == [v for v in every if v.system == system]


def test_systems_constant_matches_the_table() -> None:
    assert set(variants.SYSTEMS) == {s for c in variants.build_configs() for s in c.systems}


# ------------------------------------------------------------------------ CI selection


def test_select_ci_one_per_system_and_backend(build_of: Callable[..., model.Build]) -> None:
    build = build_of(["cpu", "cuda"], TORCH + kernel("k", "cpp-cuda") + kernel("c", "cpp-cpu"))
    picked = variants.select_ci(variants.variants(build))
    assert names(picked) == [
        "torch213-cpu-aarch64-darwin",
        "torch213-cxx11-cpu-aarch64-linux",
        "torch213-cxx11-cu126-aarch64-linux",
        "torch213-cxx11-cpu-x86_64-linux",
        "torch213-cxx11-cu126-x86_64-linux",
    ]


def test_select_ci_prefers_bundled_variants(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cpu"], '[torch]\nsrc = ["b.cpp"]\nmaxver = "2.12"\n' + kernel("c", "cpp-cpu")
    )
    picked = variants.select_ci(variants.variants(build, system="x86_64-linux"))
    assert names(picked) == ["torch212-cxx11-cpu-x86_64-linux"]
    # With maxver 2.11 the unbundled torch 2.11 build is all there is, and is picked.
    only_211 = build_of(
        ["cpu"], '[torch]\nsrc = ["b.cpp"]\nmaxver = "2.11"\n' + kernel("c", "cpp-cpu")
    )
    assert names(variants.select_ci(variants.variants(only_211))) == [
        "torch211-cxx11-cpu-x86_64-linux"
    ]


# ------------------------------------------------------------------------------ check


def test_check_warns_when_nothing_is_built(build_of: Callable[..., model.Build]) -> None:
    build = build_of(
        ["cuda"], TORCH + kernel("k", "cpp-cuda"), general='[general.cuda]\nminver = "99.0"\n'
    )
    assert variants.variants(build) == []
    [problem] = plan.check(build)
    assert problem.severity == "warning" and "nothing will be built" in problem.message


def test_check_rejects_capabilities_no_toolkit_builds(
    build_of: Callable[..., model.Build],
) -> None:
    build = build_of(["cuda"], TORCH + kernel("k", "cpp-cuda", 'cuda-capabilities = ["5.0"]'))
    errors = [p for p in plan.check(build) if p.severity == "error"]
    assert errors and all(p.path == ("kernel", "k", "cuda-capabilities") for p in errors)


# ------------------------------------------------------------- random projects, both ways

BACKENDS_WITH_KERNELS = {"cpu": "cpp-cpu", "cuda": "cpp-cuda", "rocm": "cpp-rocm",
                         "xpu": "cpp-xpu", "metal": "cpp-metal"}  # fmt: skip
VERSIONS = ["2.11", "2.12", "2.13", "12.6", "12.8", "13.0", "13.2"]


@st.composite
def projects(draw: st.DrawFn) -> model.Build:
    """A valid project: backends, bounds, stable ABI, kernels with cuda-minver. Every choice
    is drawn, so a failing project shrinks to the smallest one that fails (one backend, one
    kernel, no bounds)."""
    backends = sorted(
        draw(
            st.lists(
                st.sampled_from([*BACKENDS_WITH_KERNELS, "tpu"]),
                min_size=1,
                max_size=4,
                unique=True,
            )
        )
    )
    framework_kind = draw(st.sampled_from(["torch", "tvm-ffi", "torch-noarch"]))
    kernels: dict[str, Any] = {}
    if framework_kind != "torch-noarch":
        for backend in backends:
            if backend == "tpu" or draw(st.booleans()):  # a backend without a kernel
                continue
            language = BACKENDS_WITH_KERNELS[backend]
            for index in range(draw(st.integers(1, 2))):
                extra: dict[str, Any] = {}
                if backend == "cuda" and draw(st.booleans()):
                    extra["cuda_minver"] = draw(st.sampled_from(["12.8", "13.0", "13.2"]))
                kernels[f"{backend}_{index}"] = model.KERNEL_CLASSES[language](
                    language=language, depends=[], src=["k"], **extra
                )
    cuda = None
    if draw(st.booleans()):
        pair = draw(
            st.lists(
                st.sampled_from(["12.6", "12.8", "13.0", "13.2"]),
                min_size=2,
                max_size=2,
                unique=True,
            )
        )
        low, high = sorted(pair, key=tables.version_key)
        cuda = model.CudaGeneral(
            minver=draw(st.sampled_from([None, low])), maxver=draw(st.sampled_from([None, high]))
        )
    framework: Any
    if framework_kind == "torch":
        abi: Any = None
        if draw(st.booleans()):
            abi = draw(st.sampled_from(["2.11", "2.12", "2.13", "2.14"]))
            if draw(st.booleans()):
                abi = {b: abi for b in backends if draw(st.booleans())}
        low = draw(st.sampled_from([None, "2.11", "2.12"]))
        high = draw(st.sampled_from([None, "2.12", "2.13"]))
        if low and high and tables.version_key(low) > tables.version_key(high):
            low, high = high, low
        framework = model.Torch(src=["b.cpp"], minver=low, maxver=high, stable_abi=abi)
    elif framework_kind == "tvm-ffi":
        framework = model.TvmFfi(src=["b.cpp"])
    else:
        framework = model.TorchNoarch()
    general = model.General(
        name="demo", version=1, edition=6, license="MIT", backends=backends, cuda=cuda
    )
    return model.Build(general=general, framework=framework, kernels=kernels)


def nix_project(build: model.Build) -> dict[str, Any]:
    """What `project.nix` holds (`render.project_data`), as JSON: without the kernel file
    paths, which are Nix path literals and not needed for variants."""
    data = render.project_data(plan.make(build))
    data["kernels"] = {
        name: {k: v for k, v in kernel.items() if k != "file"}
        for name, kernel in data["kernels"].items()
    }
    return data


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(build=projects())
@pytest.mark.slow
def test_random_projects_keep_the_invariants(build: model.Build) -> None:
    found = variants.variants(build)
    assert len({(v.name, v.system) for v in found}) == len(found)
    for v in found:
        parsed = parse_variant(v.name)
        assert parsed.name == v.name
        assert v.backend in build.general.backends
        if v.framework == "torch-noarch":
            assert v.name == f"torch-{v.backend}" and not v.kernels
        else:
            assert v.kernels and all(
                model.backend_of(build.kernels[k]) == v.backend for k in v.kernels
            )
    fw = build.framework
    if isinstance(fw, model.Torch):
        abi_groups = Counter(
            (v.backend, v.backend_version, v.system) for v in found if v.stable_abi
        )
        assert all(n == 1 for n in abi_groups.values())


#: Each project's variants as the Nix library reads them: all, the CI ones, one system's.
_NIX_VARIANTS = f"""
  let
    lib = import {REPO / "nix/variants.nix"};
    projects = import PROJECTS;
    plain = map (v: removeAttrs v [ "ci" "default" ]);
  in map (p: {{
    all = plain (lib.variants p null);
    ci = plain (builtins.filter (v: v.ci) (lib.variants p null));
    defaults = plain (builtins.filter (v: v.default) (lib.variants p null));
    x86 = plain (lib.variants p "x86_64-linux");
  }}) projects
"""


@pytest.mark.nix
@pytest.mark.skipif(not have_nix(), reason="nix is not installed")
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(builds=st.lists(projects(), min_size=1, max_size=12))
def test_nix_library_reads_the_plan_unchanged(builds: list[model.Build]) -> None:
    """The Nix library only reads the plan `project.nix` carries: for each batch of
    projects (one nix-instantiate run) its variants (all, one system) and CI selection are
    plan.py's, field for field, after the trip through nixlit and Nix."""
    with tempfile.TemporaryDirectory() as scratch:
        projects_nix = Path(scratch) / "projects.nix"
        projects_nix.write_text(nixlit.value([nix_project(b) for b in builds]))
        got = nix_eval_json(_NIX_VARIANTS.replace("PROJECTS", str(projects_nix)))
    for build, nix in zip(builds, got, strict=True):
        found = variants.variants(build)
        assert nix["all"] == [v.to_json() for v in found], nix_project(build)
        assert nix["ci"] == [v.to_json() for v in variants.select_ci(found)]
        assert nix["defaults"] == [v.to_json() for v in variants.default_variants(found)]
        assert nix["x86"] == [v.to_json() for v in variants.variants(build, system="x86_64-linux")]


# --------------------------------------------- CUDA capabilities and ROCm targets


@pytest.mark.parametrize(
    ("capability", "cuda", "supported"),
    [
        ("7.0", "12.6", True),  # Volta: last supported by 12.9
        ("7.0", "13.0", False),
        ("7.5", "13.2", True),  # Turing: no upper bound
        ("8.0", "11.1", False),  # Ampere: from 11.2
        ("8.0", "11.2", True),
        ("10.1", "12.9", True),  # renamed to 11.0 in CUDA 13
        ("10.1", "13.0", False),
        ("11.0", "12.9", False),
        ("11.0", "13.0", True),
        ("12.1", "12.8", False),
        ("9.0a", "11.8", False),  # architecture-specific code needs CUDA 12
        ("9.0a", "12.0", True),
        ("10.0a", "12.6", False),  # ... and the base capability's own minimum
        ("10.0a", "12.8", True),
        ("10.0f", "12.8", False),  # family-specific code needs CUDA 12.9
        ("10.0f", "12.9", True),
        ("12.0f", "13.0", True),
        ("99.0", "13.0", False),  # anything unknown or malformed is never supported
        ("11.8", "13.0", False),
        ("8.0a", "13.0", False),  # no architecture-specific code before 9.0
        ("8.6a", "12.8", False),
        ("9.0f", "13.0", False),  # no family-specific code before 10.0
        ("8.0x", "13.0", False),
        ("sm_80", "13.0", False),
        ("8", "13.0", False),
        ("9.0+PTX", "12.6", True),
        ("7.0+PTX", "13.0", False),
        ("9.0a+PTX", "12.6", True),
        ("9.0+ptx", "12.6", False),
    ],
)
def test_cuda_capability_support_follows_the_table(
    capability: str, cuda: str, supported: bool
) -> None:
    assert tables.cuda_capability_supported(capability, cuda) is supported


def _cuda(capabilities: list[str] | None) -> model.CppCudaKernel:
    return model.CppCudaKernel(
        language="cpp-cuda", depends=[], src=["k.cu"], cuda_capabilities=capabilities
    )


def test_cuda_capabilities_keep_the_kernels_order_and_drop_per_toolkit() -> None:
    assert kernels.cuda_capabilities(_cuda(["9.0", "7.0", "8.0"]), "13.0") == ["9.0", "8.0"]
    assert kernels.cuda_capabilities(_cuda(["7.0", "8.0", "9.0a"]), "12.6") == [
        "7.0",
        "8.0",
        "9.0a",
    ]
    assert kernels.cuda_capabilities(_cuda(["7.0", "7.2"]), "13.0") == []


def test_cuda_capabilities_default_to_the_anchors_list_for_the_toolkit() -> None:
    # kernel-builder/src/pyproject/templates/torch/preamble.cmake, CUDA_DEFAULT_KERNEL_ARCHS
    assert kernels.cuda_capabilities(_cuda(None), "12.6") == [
        "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0+PTX",
    ]  # fmt: skip
    assert kernels.cuda_capabilities(_cuda(None), "12.8") == [
        "7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "12.0+PTX",
    ]  # fmt: skip
    for cuda in ("13.0", "13.2"):
        assert kernels.cuda_capabilities(_cuda(None), cuda) == [
            "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX",
        ]  # fmt: skip


def test_a_ptx_capability_is_planned_where_the_toolkit_supports_its_base() -> None:
    assert kernels.cuda_capabilities(_cuda(["8.0", "9.0+PTX"]), "12.6") == ["8.0", "9.0+PTX"]
    # 7.0 left CUDA 13.0: neither its SASS nor its PTX can be built there (nvcc refuses
    # compute_70), so the entry drops out as a plain 7.0 does; 12.0 came with 12.8.
    assert kernels.cuda_capabilities(_cuda(["7.0+PTX", "8.0"]), "13.0") == ["8.0"]
    assert kernels.cuda_capabilities(_cuda(["8.0", "12.0+PTX"]), "12.6") == ["8.0"]
    assert kernels.cuda_capabilities(_cuda(["9.0a+PTX"]), "12.6") == ["9.0a+PTX"]
    assert kernels.cuda_capabilities(_cuda(["11.8+PTX"]), "13.0") == []


def test_a_capability_listed_with_and_without_ptx_is_planned_once_with_it() -> None:
    # The anchor's cuda_archs_loose_intersection strips `+PTX`, dedupes, then reapplies it.
    assert kernels.cuda_capabilities(_cuda(["9.0", "8.0", "9.0+PTX"]), "13.0") == ["9.0+PTX", "8.0"]
    assert kernels.cuda_capabilities(_cuda(["9.0+PTX", "9.0"]), "13.0") == ["9.0+PTX"]


def test_every_kernel_file_carries_its_capabilities_for_every_toolkit_of_the_table() -> None:
    build = model.Build(
        general=model.General(name="k", version=1, edition=6, license="MIT", backends=["cuda"]),
        framework=model.Torch(src=["b.cpp"]),
        kernels={"k": _cuda(["7.0", "9.0"])},
    )
    text = render.render(plan.make(build)).tree["kernels/k.nix"].decode()
    for version in tables.cuda_versions():
        planned = kernels.cuda_capabilities(_cuda(["7.0", "9.0"]), version)
        listed = "".join(f' "{c}"' for c in planned)
        assert f'"{version}" = [{listed} ];' in text


def test_rocm_archs_are_the_kernels_supported_targets_in_its_order() -> None:
    def rocm(archs: list[str] | None) -> model.CppRocmKernel:
        return model.CppRocmKernel(language="cpp-rocm", depends=[], src=["k.hip"], rocm_archs=archs)

    supported = tables.supported_rocm_archs()
    assert kernels.rocm_archs(rocm(["gfx942", "gfx941", "gfx906"])) == ["gfx942", "gfx906"]
    assert kernels.rocm_archs(rocm(None)) == supported
    assert kernels.rocm_archs(rocm(["gfx900", "gfx941"])) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(build=projects())
def test_select_ci_picks_the_best_of_each_group(build: model.Build) -> None:
    found = variants.variants(build)
    picked = variants.select_ci(found)
    assert len({(v.system, v.backend) for v in picked}) == len(picked)
    assert {(v.system, v.backend) for v in picked} == {(v.system, v.backend) for v in found}
    for choice in picked:
        rivals = [v for v in found if (v.system, v.backend) == (choice.system, choice.backend)]
        if any(v.bundle for v in rivals):
            assert choice.bundle
        same_bundle = [v for v in rivals if v.bundle == choice.bundle and v.torch]
        if choice.torch:
            newest = max(tables.version_key(v.torch) for v in same_bundle)
            assert tables.version_key(choice.torch) == newest
