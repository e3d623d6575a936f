"""Stage 5 — plan: one finished, typed plan of a project (`make` → `Plan`).

Everything the later stages need is computed in `nixgen.planning` and only there: the
build variants and the pull-request selection (`nixgen.planning.variants`), each kernel's
`KernelPlan` (`nixgen.planning.kernels`), the CI matrices (`nixgen.planning.ci`) and,
here, the planning problems. The render stage only lays the plan out, and the static Nix
library only reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from nixgen.core import contract, tables
from nixgen.core.errors import Problem, error, one_of, warning
from nixgen.planning import ci
from nixgen.planning.kernels import KernelPlan, cuda_capabilities, cuda_minver, kernel_plan
from nixgen.planning.project import ProjectPlan, project_plan
from nixgen.planning.settings import NO_SETTINGS, ProjectSettings
from nixgen.planning.variants import (
    SYSTEMS,
    Variant,
    accepted,
    build_configs,
    default_variants,
    select_ci,
    variants,
)
from nixgen.reading import model


@attrs.frozen(kw_only=True)
class Plan:
    """Everything the render stage lays out: the project, its variants and pull-request
    selection, each kernel's finished plan, the CI rows and the planning problems."""

    build: model.Build
    #: The systems variants are planned for.
    systems: tuple[str, ...]
    variants: tuple[Variant, ...]
    #: One variant per (system, backend), for quick pull-request builds (`select_ci`).
    pull_request: tuple[Variant, ...]
    #: The variant of each system's default dev shell (`default_variants`).
    defaults: tuple[Variant, ...]
    #: What each derivation of the project is, by the exact name the library gives it
    #: (`derivation_labels`): the words `nixgen build` prints for it.
    labels: Mapping[str, str]
    #: The pure-Python package (`noarch.nix`'s data).
    noarch: NoarchPlan
    #: The compiled framework's extension (`extension.nix`'s data); None without one.
    extension: ExtensionPlan | None
    kernels: tuple[KernelPlan, ...]
    #: What `project.nix` holds (`nixgen.planning.project`): among it the GitHub Actions
    #: matrices of every variant and of `pull_request`, and every header the project lists.
    project: ProjectPlan
    problems: tuple[Problem, ...]
    #: nixgen.toml's settings the plan applied (`nixgen.planning.settings`).
    settings: ProjectSettings = NO_SETTINGS

    def for_system(self, system: str) -> list[Variant]:
        """The variants of `system` (what `variants.variants(build, system=system)` gives)."""
        return [v for v in self.variants if v.system == system]


def make(build: model.Build, *, settings: ProjectSettings = NO_SETTINGS) -> Plan:
    """The finished plan of `build` with nixgen.toml's `settings`: computed here once,
    only laid out by `nixgen.rendering.render`."""
    all_variants = variants(build, settings=settings)
    pull_request = select_ci(all_variants)
    kernels = tuple(kernel_plan(build, n, k) for n, k in sorted(build.kernels.items()))
    noarch, extension = noarch_plan(build), extension_plan(build)
    defaults = default_variants(all_variants)
    return Plan(
        build=build,
        systems=SYSTEMS,
        variants=tuple(all_variants),
        pull_request=tuple(pull_request),
        defaults=tuple(defaults),
        labels=derivation_labels(kernels, extension, noarch),
        noarch=noarch,
        extension=extension,
        kernels=kernels,
        project=project_plan(
            build,
            variants=all_variants,
            pull_request=pull_request,
            defaults=defaults,
            kernels=kernels,
            headers=model.shared_headers(build),
            systems=SYSTEMS,
            github_matrix=ci.github(all_variants),
            pull_request_matrix=ci.github(pull_request),
            test_python=settings.test_python,
        ),
        problems=tuple(problems(build, all_variants, settings)),
        settings=settings,
    )


@attrs.frozen(kw_only=True)
class NoarchPlan:
    """The pure-Python package: what `noarch.nix` passes to `nixgen.kernel.build`, by the
    library's names."""

    language: str = "noarch"
    #: The derivation's name and version.
    pname: str
    version: str
    #: The kernel's Python package, relative to the project root, and its module's name.
    module_dir: str = attrs.field(metadata=contract.nix("moduleDir"))
    module_name: str = attrs.field(metadata=contract.nix("moduleName"))
    #: The file extensions the package holds (`pyext`).
    pyext: tuple[str, ...]


def noarch_plan(build: model.Build) -> NoarchPlan:
    """The pure-Python package of `build` (its derivation ``<name>-noarch``)."""
    return NoarchPlan(
        pname=f"{build.general.name}-noarch",
        version=str(build.general.version),
        module_dir=model.python_package_dir(build),
        module_name=build.general.module_name,
        pyext=_pyext(build),
    )


@attrs.frozen(kw_only=True)
class ExtensionPlan:
    """The compiled framework's extension: what `extension.nix` passes to
    `nixgen.extension.mkExtension`, by the library's names. Its two derivations' names
    (``<name>-<table>-ext`` and ``<name>-<table>-binding``) are made here only."""

    framework: str
    pname: str
    binding_pname: str = attrs.field(metadata=contract.nix("bindingPname"))
    module_dir: str = attrs.field(metadata=contract.nix("moduleDir"))
    pyext: tuple[str, ...]
    #: The binding's sources, flags and include directories (`[torch]`'s `src`…).
    binding_sources: tuple[str, ...] = attrs.field(metadata=contract.nix("bindingSources"))
    cxx_flags: tuple[str, ...] = attrs.field(metadata=contract.nix("cxxFlags"))
    includes: tuple[str, ...]


def extension_plan(build: model.Build) -> ExtensionPlan | None:
    """The extension of a `[torch]` or `[tvm-ffi]` project; None for the frameworks
    without a compiled extension."""
    framework = build.framework
    if not isinstance(framework, model.COMPILED_FRAMEWORKS):
        return None
    base = f"{build.general.name}-{framework.table}"
    return ExtensionPlan(
        framework=framework.table,
        pname=f"{base}-ext",
        binding_pname=f"{base}-binding",
        module_dir=model.python_package_dir(build),
        pyext=_pyext(build),
        binding_sources=tuple(framework.src),
        cxx_flags=tuple(framework.cxx_flags),
        includes=tuple(framework.include),
    )


def _pyext(build: model.Build) -> tuple[str, ...]:
    """The file extensions the kernel's Python package holds (the framework's `pyext`)."""
    fw = build.framework
    return tuple(fw.pyext) if fw is not None else tuple(model.DEFAULT_PYEXT)


def derivation_labels(
    kernels: Sequence[KernelPlan], extension: ExtensionPlan | None, noarch: NoarchPlan
) -> dict[str, str]:
    """What each derivation of the project is, in the project's words (``kernel relu``,
    ``kernel relu: object relu/relu.cpp``, ``extension``, ``extension binding``, ``python
    package``), by the name the Nix library gives it (``<pname>-<version>``), as planned."""
    version = noarch.version
    out: dict[str, str] = {}
    for kernel in kernels:
        for source, obj in (kernel.objects or {}).items():
            out[f"{obj.pname}-{kernel.version}"] = f"kernel {kernel.name}: object {source}"
    for kernel in kernels:
        out[f"{kernel.pname}-{kernel.version}"] = f"kernel {kernel.name}"
    if extension is not None:
        out[f"{extension.pname}-{version}"] = "extension"
        # The binding's objects (nixgen.extension.bindingObjects), compiled before the link.
        out[f"{extension.binding_pname}-{version}"] = "extension binding"
    out[f"{noarch.pname}-{version}"] = "python package"
    return out


def check(build: model.Build, *, settings: ProjectSettings = NO_SETTINGS) -> list[Problem]:
    """Planning problems: nothing to build, a [tvm-ffi] backend without kernels, a CUDA
    kernel whose capabilities no toolkit in the matrix supports."""
    return problems(build, variants(build, settings=settings), settings)


def problems(
    build: model.Build, all_variants: list[Variant], settings: ProjectSettings = NO_SETTINGS
) -> list[Problem]:
    problems: list[Problem] = []
    if not all_variants and build.general.backends:
        problems.append(
            warning(
                "no build configuration matches this project (check backends and version "
                "bounds, and nixgen.toml's [backend.<name>] tables), so nothing will be built",
                ("general", "backends"),
            )
        )
    if isinstance(build.framework, model.TvmFfi):
        for backend in build.general.backends:
            if not build.kernels_for(backend):
                problems.append(
                    warning(
                        f"backend `{backend}` has no kernel, and a [tvm-ffi] project has no "
                        "pure-Python variant: nothing is built for it",
                        ("general", "backends"),
                    )
                )
    if all_variants:  # else the warning above says it all
        problems.extend(_unbuilt_kernels(build, all_variants, settings))
        for backend in build.general.backends:
            if backend not in tables.BUILD_SET_BACKENDS:
                problems.append(
                    warning(
                        f"backend `{backend}` has no build set in the kernels toolchain "
                        "(nix-builder/lib/mk-build-set.nix): nothing is built for it",
                        ("general", "backends"),
                    )
                )
    problems.extend(unbuildable_capabilities(build, all_variants))
    return problems


def unbuildable_capabilities(build: model.Build, all_variants: list[Variant]) -> list[Problem]:
    """The one home of the "no buildable CUDA capability" rule, for every CUDA kernel
    language (`cpp-cuda`, `rust-cuda`): an error for each CUDA toolkit a variant builds a
    kernel with that supports none of the kernel's capabilities. The Nix library only reads
    the planned capabilities (`nix/cuda.nix`), it does not check them again."""
    built_with: dict[str, set[str]] = {}  # kernel → CUDA versions: one pass over the variants
    for variant in all_variants:
        if variant.backend == "cuda" and variant.backend_version:
            for name in variant.kernels:
                built_with.setdefault(name, set()).add(variant.backend_version)
    problems = []
    for name, kernel in sorted(build.kernels.items()):
        if not isinstance(kernel, (model.CppCudaKernel, model.RustCudaOxideKernel)):
            continue
        for version in sorted(built_with.get(name, ()), key=tables.version_key):
            if cuda_capabilities(kernel, version):
                continue
            supported = [
                c
                for c in tables.known_cuda_capabilities()
                if tables.cuda_capability_supported(c, version)
            ]
            wanted = kernel.cuda_capabilities or []
            nearest = min(
                supported,
                key=lambda c: min(
                    (abs(_capability_number(c) - _capability_number(w)) for w in wanted),
                    default=0,
                ),
                default=None,
            )
            problems.append(
                error(
                    f"kernel `{name}`: none of its CUDA capabilities ({one_of(wanted)}) can be "
                    f"built with CUDA {version}; add a supported capability or raise cuda-minver",
                    ("kernel", name, "cuda-capabilities"),
                    hint=f"the closest capability CUDA {version} builds is `{nearest}`"
                    if nearest
                    else None,
                )
            )
    return problems


def _capability_number(capability: str) -> float:
    """``"9.0a+PTX"`` → ``9.0``: a capability's distance measure."""
    base = tables.split_ptx(capability)[0].rstrip("af")
    major, _, minor = base.partition(".")
    return int(major) + int(minor or 0) / 10


def _unbuilt_kernels(
    build: model.Build, all_variants: list[Variant], settings: ProjectSettings
) -> list[Problem]:
    """A warning for each kernel of a listed backend that no variant builds, saying why:
    the anchor drops such a kernel without a word, and the Hub then lacks its builds."""
    if not isinstance(build.framework, model.COMPILED_FRAMEWORKS):
        return []  # `[torch-noarch]` with kernels is already an error (validate)
    built = {name for variant in all_variants for name in variant.kernels}
    out = []
    for name, kernel in sorted(build.kernels.items()):
        backend = model.backend_of(kernel)
        if name in built or backend not in build.general.backends:
            continue
        out.append(
            warning(
                f"kernel `{name}` ({kernel.language}, backend `{backend}`) is built by no "
                f"variant: {_why_unbuilt(build, kernel, backend, settings)}",
                ("kernel", name),
            )
        )
    return out


def _why_unbuilt(
    build: model.Build, kernel: model.Kernel, backend: str, settings: ProjectSettings
) -> str:
    """Why no variant builds `kernel` of `backend` (a listed backend)."""
    table = build.framework_table
    tvm_ffi = isinstance(build.framework, model.TvmFfi)
    rows = [c for c in build_configs() if c.backend == backend and (c.tvm_ffi or not tvm_ffi)]
    if not rows:
        return (
            f"the build table has no {table} × {backend} build set (it follows the anchor's "
            f"build sets, which have none); remove the kernel or `{backend}` from "
            "general.backends"
        )
    within = [c for c in rows if accepted(build, c)]
    if not within:
        return (
            f"no {table} × {backend} build configuration is within the project's version "
            "bounds ([torch] minver/maxver, [general.cuda] minver/maxver, stable-abi)"
        )
    allowed = [c for c in within if accepted(build, c, settings)]
    if not any(settings.allows(backend, None, s) for c in allowed for s in c.systems):
        return (
            f"nixgen.toml's [backend.{backend}] leaves out every {table} × {backend} build "
            "configuration (its `systems` and torch bounds)"
        )
    within = allowed
    minver = cuda_minver(kernel)
    versions = sorted({c.backend_version or "" for c in within}, key=tables.version_key)
    if minver is not None and all(
        tables.version_key(v) < tables.version_key(minver) for v in versions
    ):
        return (
            f"its `cuda-minver` {minver} is newer than every CUDA toolkit it could be built "
            f"with ({', '.join(versions)})"
        )
    return f"no {table} × {backend} build configuration links it"
