"""The data `project.nix` holds (`ProjectPlan`), made from the finished plan: the planned
variants (every system; `ci` marks the pull-request selection, `default` each system's
default dev shell), the CI matrices, the project's index of kernels and what the static
library needs to build them. Each class is written out as it is, by the library's names
(`nixgen.core.contract`); the Nix library only reads it and never recomputes it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from nixgen import __version__
from nixgen.core import contract, nixpath
from nixgen.core.tables import BACKENDS, FORMAT
from nixgen.planning import metadata
from nixgen.planning.kernels import KernelPlan
from nixgen.planning.variants import Variant
from nixgen.reading import convert, model


@attrs.frozen(kw_only=True)
class TorchBounds:
    """`project.torch`: the torch bounds and each backend's stable ABI."""

    minver: str | None
    maxver: str | None
    stable_abi: dict[str, str] = attrs.field(metadata=contract.nix("stableAbi"))


@attrs.frozen(kw_only=True)
class CudaBounds:
    """`project.cuda`: the CUDA toolkit bounds."""

    minver: str | None
    maxver: str | None


@attrs.frozen(kw_only=True)
class GithubActions:
    """`project.githubActions`: the CI matrices (`nix eval .#githubActions`)."""

    matrix: dict[str, Any]
    pull_request_matrix: dict[str, Any] = attrs.field(metadata=contract.nix("pullRequestMatrix"))


@attrs.frozen(kw_only=True)
class KernelEntry:
    """`project.kernels.<name>`: a kernel's language, backend and CUDA lower bound (what
    the variants and the extension ask of it without building it), and its file."""

    language: str
    backend: str
    cuda_minver: str | None = attrs.field(metadata=contract.nix("cudaMinver"))
    file: nixpath.Path


@attrs.frozen(kw_only=True)
class ProjectVariant:
    """`project.variants`: a planned variant, as `nixgen variants --json` prints it, and
    whether the pull-request selection holds it (`ci`) and whether it is its system's
    default dev shell (`default`)."""

    variant: Variant = attrs.field(metadata=contract.nix(flatten=True))
    ci: bool
    default: bool


@attrs.frozen(kw_only=True)
class ProjectPlan:
    """The data `project.nix` holds, by the library's names; the library reads
    `formatVersion` first (`project.checkFormat`)."""

    format_version: int = attrs.field(metadata=contract.nix("formatVersion"))
    nixgen_version: str = attrs.field(metadata=contract.nix("nixgenVersion"))
    name: str
    module_name: str = attrs.field(metadata=contract.nix("moduleName"))
    version: Any
    license: str
    upstream: str | None
    source: Any
    #: `kernels-minver` of each listed backend's variants (`nixgen.planning.metadata`).
    kernels_minver: dict[str, str] = attrs.field(metadata=contract.nix("kernelsMinver"))
    #: `files` or `zip`: how each variant holds its Python package.
    build_layout: str = attrs.field(metadata=contract.nix("buildLayout"))
    framework: str
    backends: list[str]
    torch: TorchBounds
    cuda: CudaBounds
    #: Each backend's variants' Python packages and kernels: [general]'s, then the backend
    #: table's (`General.all_python_depends`, `all_kernel_depends`), for every backend.
    python_depends: dict[str, list[Any]] = attrs.field(metadata=contract.nix("pythonDepends"))
    kernel_depends: dict[str, list[Any]] = attrs.field(metadata=contract.nix("kernelDepends"))
    #: Every header the project lists anywhere: compile inputs of every C++ kernel and of
    #: the binding (written once here, not into each kernel's file).
    headers: list[str]
    systems: list[str]
    #: `general.hub.repo-id`: what the shells and checks name the build in `LOCAL_KERNELS`
    #: (as kernel-builder's test shell does), so that `kernels.get_kernel("<repo-id>")`
    #: loads it; null when build.toml names no Hub repository.
    hub_repo_id: str | None = attrs.field(metadata=contract.nix("hubRepoId"))
    #: nixgen.toml's `[test] python-depends`: python3.pkgs names every shell and check adds.
    test_python_depends: list[str] = attrs.field(metadata=contract.nix("testPythonDepends"))
    variants: list[ProjectVariant]
    github_actions: GithubActions = attrs.field(metadata=contract.nix("githubActions"))
    kernels: dict[str, KernelEntry]
    #: `[torch-noarch]`'s listed GPU targets, for every backend (empty where none).
    noarch_archs: dict[str, list[str]] = attrs.field(metadata=contract.nix("noarchArchs"))


def project_plan(
    build: model.Build,
    *,
    variants: Sequence[Variant],
    pull_request: Sequence[Variant],
    defaults: Sequence[Variant],
    kernels: Sequence[KernelPlan],
    headers: Sequence[str],
    systems: Sequence[str],
    github_matrix: Mapping[str, Any],
    pull_request_matrix: Mapping[str, Any],
    test_python: Sequence[str],
) -> ProjectPlan:
    """What `project.nix` holds, from the plan's parts (`plan.make` assembles it)."""
    g = build.general
    selected = {(v.system, v.name) for v in pull_request}
    default = {(v.system, v.name) for v in defaults}
    fw = build.framework
    torch = TorchBounds(minver=None, maxver=None, stable_abi={})
    if isinstance(fw, model.Torch):
        torch = TorchBounds(
            minver=fw.minver,
            maxver=fw.maxver,
            stable_abi={b: abi for b in g.backends if (abi := fw.stable_abi_for(b)) is not None},
        )
    # `[torch-noarch]` lists the GPU targets its kernel supports; they go to metadata.json
    # as written (nothing is compiled, so nothing is intersected).
    listed: dict[str, list[str]] = (
        {"cuda": list(fw.cuda_capabilities or []), "rocm": list(fw.rocm_archs or [])}
        if isinstance(fw, model.TorchNoarch)
        else {}
    )
    return ProjectPlan(
        format_version=FORMAT,
        nixgen_version=__version__,
        name=g.name,
        module_name=g.module_name,
        version=g.version,
        license=g.license,
        upstream=g.upstream,
        source=g.source,
        kernels_minver={b: metadata.kernels_minver(g, b) for b in sorted(set(g.backends))},
        build_layout=g.build_layout,
        framework=build.framework_table,
        backends=list(g.backends),
        torch=torch,
        cuda=CudaBounds(
            minver=g.cuda.minver if g.cuda else None,
            maxver=g.cuda.maxver if g.cuda else None,
        ),
        python_depends={b: g.all_python_depends(b) for b in BACKENDS},
        # As build.toml writes them (`convert.to_table`: TOML keys, unset ones left out).
        kernel_depends={
            b: [convert.to_table(d) for d in g.all_kernel_depends(b)] for b in BACKENDS
        },
        headers=list(headers),
        systems=list(systems),
        hub_repo_id=g.hub.repo_id if g.hub is not None else None,
        test_python_depends=list(test_python),
        variants=[
            ProjectVariant(
                variant=v,
                ci=(v.system, v.name) in selected,
                default=(v.system, v.name) in default,
            )
            for v in variants
        ],
        github_actions=GithubActions(
            matrix=dict(github_matrix),
            pull_request_matrix=dict(pull_request_matrix),
        ),
        kernels={
            kernel.name: KernelEntry(
                language=kernel.language,
                backend=kernel.backend,
                cuda_minver=kernel.cuda_minver,
                file=nixpath.path(f"./{kernel.file}"),
            )
            for kernel in kernels
        },
        noarch_archs={b: listed.get(b, []) for b in BACKENDS},
    )
