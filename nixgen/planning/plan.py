"""Stage 5 — plan: one finished, typed plan of a project (`make` → `Plan`).

Everything the later stages need is computed here and only here, from the
build-configuration table (``data/build-configs.json``) and the project's constraints: the
build variants (torch × backend version × system) and the pull-request selection, each
kernel's `KernelPlan` (CUDA capabilities per toolkit, ROCm targets, dependencies by the
Nix library's names, OpenMP link flags, a Rust crate's layout), the CI matrices and the
planning problems. The render stage only lays the plan out, and the static Nix library only
reads it. Names follow the anchor's scheme exactly, so the PyPI ``kernels`` client's
``parse_variant`` accepts every one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

import attrs

from nixgen.core import contract, tables
from nixgen.core.errors import Problem, error, one_of, warning
from nixgen.reading import model

SYSTEMS = ("x86_64-linux", "aarch64-linux", "aarch64-darwin")
#: The backends a build-configuration row may name: those with a build set.
CONFIG_BACKENDS = tables.BUILD_SET_BACKENDS
VERSION_KEYS = {"cuda": "cudaVersion", "rocm": "rocmVersion", "xpu": "xpuVersion"}


@attrs.frozen(kw_only=True)
class BuildConfig:
    """One row of the build-configuration table."""

    torch: str
    backend: str
    backend_version: str | None
    systems: tuple[str, ...]
    bundle: bool
    tvm_ffi: str | None

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> BuildConfig:
        backend = next(b for b in CONFIG_BACKENDS if row.get(VERSION_KEYS.get(b, b)))
        version = row.get(VERSION_KEYS[backend]) if backend in VERSION_KEYS else None
        return cls(
            torch=row["torchVersion"],
            backend=backend,
            backend_version=version,
            systems=tuple(row["systems"]),
            bundle=bool(row.get("bundleBuild", False)),
            tvm_ffi=row.get("tvmFfiVersion"),
        )


@attrs.frozen(kw_only=True)
class Variant:
    """One thing to build: a framework extension for one backend version on one system."""

    name: str
    system: str
    backend: str
    framework: str
    torch: str | None
    backend_version: str | None = attrs.field(metadata=contract.nix("backendVersion"))
    tvm_ffi: str | None = attrs.field(metadata=contract.nix("tvmFfi"))
    stable_abi: str | None = attrs.field(metadata=contract.nix("stableAbi"))
    bundle: bool
    kernels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The variant as `nixgen variants --json` prints it and project.nix holds it (the
        Nix library's field names, every key: the library reads them without defaults)."""
        return cast("dict[str, Any]", contract.unstructure(self))


def build_configs() -> list[BuildConfig]:
    """The build-configuration table, in table order (the order decides name clashes)."""
    return [BuildConfig.from_json(row) for row in tables.build_configs()]


def short(version: str, parts: int = 2) -> str:
    """``"2.13"`` → ``"213"``, ``"2025.3.2"`` → ``"20253"`` (major and minor, no dots)."""
    pieces = (version.split(".") + ["0"] * parts)[:parts]
    return "".join(pieces)


def compute_name(backend: str, version: str | None) -> str:
    """The compute part of a variant name: ``cu130``, ``rocm71``, ``xpu20253``, ``cpu``."""
    if backend == "cuda":
        return f"cu{short(version or '')}"
    if backend in ("rocm", "xpu"):
        return f"{backend}{short(version or '')}"
    return backend


def torch_variant_name(torch: str, backend: str, version: str | None, system: str) -> str:
    """``torch213-cxx11-cu130-x86_64-linux``; macOS names carry no ``cxx11`` tag."""
    cxx11 = "" if system.endswith("-darwin") else "-cxx11"
    return f"torch{short(torch)}{cxx11}-{compute_name(backend, version)}-{system}"


def stable_abi_variant_name(abi: str, backend: str, version: str | None, system: str) -> str:
    """``torch-stable-abi211-cu126-x86_64-linux`` (named for the ABI, not the torch)."""
    return f"torch-stable-abi{short(abi)}-{compute_name(backend, version)}-{system}"


def tvm_ffi_variant_name(tvm_ffi: str, backend: str, version: str | None, system: str) -> str:
    """``tvm-ffi01-cu126-x86_64-linux``."""
    return f"tvm-ffi{short(tvm_ffi)}-{compute_name(backend, version)}-{system}"


def noarch_variant_name(backend: str) -> str:
    """``torch-cuda``: pure Python, the same on every system."""
    return f"torch-{backend}"


def _within(version: str, low: str | None, high: str | None) -> bool:
    key = tables.version_key(version)
    if low is not None and key < tables.version_key(low):
        return False
    return high is None or key <= tables.version_key(high)


def _accepted(build: model.Build, config: BuildConfig) -> bool:
    """The anchor's bounds filter, plus: a torch older than the stable ABI its kernels
    must target cannot build for it (the anchor would name such a build after the newer
    ABI). Pure-Python variants do not target an ABI."""
    fw = build.framework
    cuda = build.general.cuda
    if config.backend not in build.general.backends:
        return False
    if (
        config.backend == "cuda"
        and cuda is not None
        and not _within(config.backend_version or "0", cuda.minver, cuda.maxver)
    ):
        return False
    if isinstance(fw, model.TvmFfi) and config.tvm_ffi is None:
        return False
    if isinstance(fw, model.Torch):
        if not _within(config.torch, fw.minver, fw.maxver):
            return False
        abi = fw.stable_abi_for(config.backend)
        if (
            abi is not None
            and build.kernels_for(config.backend)
            and tables.version_key(config.torch) < tables.version_key(abi)
        ):
            return False
    return True


def _stable_abi(build: model.Build, backend: str) -> str | None:
    fw = build.framework
    return fw.stable_abi_for(backend) if isinstance(fw, model.Torch) else None


def _kernels_for(build: model.Build, config: BuildConfig) -> tuple[str, ...]:
    """The kernels a configuration links: its backend's, minus CUDA kernels whose
    `cuda-minver` is newer than the configuration's toolkit."""
    names = []
    for name, kernel in build.kernels_for(config.backend).items():
        minver = cuda_minver(kernel)
        if (
            minver is not None
            and config.backend_version is not None
            and tables.version_key(config.backend_version) < tables.version_key(minver)
        ):
            continue
        names.append(name)
    return tuple(names)


def default_shell_variant(variants: Sequence[Variant]) -> str:
    """The variant of the flake's `devShells.<system>.default` and `.test` among `variants`
    (one system's, non-empty): the best one (`best_variant`). The plan writes it into the
    project's data (each variant's `default`), which nix/project.nix's `devShells` reads."""
    return best_variant(variants).name


#: The anchor's order of backends when it picks its best variant (`frameworkOrder` in
#: huggingface/kernels nix-builder/lib/gen-flake-outputs.nix): CUDA, ROCm, XPU, Metal, then
#: every other backend.
_BACKEND_ORDER = {"cuda": 0, "rocm": 1, "xpu": 2, "metal": 3}


def best_variant(variants_: Sequence[Variant]) -> Variant:
    """The best of `variants_` (non-empty), by the anchor's rule (`bestBuildSet` in
    huggingface/kernels nix-builder/lib/gen-flake-outputs.nix): bundled first, then the
    backend (`_BACKEND_ORDER`), the newest torch, the oldest backend version; ties go to
    the earlier variant. The one rule of "the best variant": `select_ci` takes the best of
    each (system, backend), the default dev shell the best of a system."""
    best = variants_[0]
    for variant in variants_[1:]:
        if _rank(variant) > _rank(best):
            best = variant
    return best


def variants(build: model.Build, *, system: str | None = None) -> list[Variant]:
    """Every variant of `build` (for one `system`, or all), sorted by system then name.

    The anchor's rules (``reference/anchor-hf-kernels.md`` §3.3), in order:

    1. a configuration is kept when its backend is in ``general.backends``, its CUDA
       version within ``general.cuda`` bounds, its torch within ``[torch]`` bounds and,
       for ``[tvm-ffi]``, it has a tvm-ffi version;
    2. for a backend built against the torch stable ABI, only the newest torch of each
       (backend version, system) is kept;
    3. a backend without a compiled kernel (or a project without a compiled framework)
       gets the pure-Python variant ``torch-<backend>``;
    4. names that coincide (``torch-cpu`` from several torch versions, tvm-ffi 0.1 with
       two torch versions) are built once, from the first configuration in table order,
       and are in the bundle when any of them is.

    nixgen adds: a CUDA kernel is left out of configurations older than its
    ``cuda-minver``, and a configuration left with no kernel of a backend that has
    kernels is not built at all (there would be nothing to bind); a torch older than the
    stable ABI its kernels target is not used; a ``[tvm-ffi]`` backend without kernels
    builds nothing.
    """
    fw = build.framework
    compiled = isinstance(fw, (model.Torch, model.TvmFfi))
    rows = [
        (config, sys)
        for config in build_configs()
        if _accepted(build, config)
        for sys in config.systems
        if system is None or sys == system
    ]
    newest: dict[tuple[str, str | None, str], str] = {}
    for config, sys in rows:
        key = (config.backend, config.backend_version, sys)
        if key not in newest or tables.version_key(config.torch) > tables.version_key(newest[key]):
            newest[key] = config.torch
    out: dict[tuple[str, str], Variant] = {}
    for config, sys in rows:
        abi = _stable_abi(build, config.backend)
        if (
            abi is not None
            and config.torch != newest[(config.backend, config.backend_version, sys)]
        ):
            continue
        if not compiled or not build.kernels_for(config.backend):
            if isinstance(fw, model.TvmFfi):
                continue
            _add(out, _noarch(config, sys))
            continue
        kernels = _kernels_for(build, config)
        if not kernels:
            continue
        if abi is not None:
            name = stable_abi_variant_name(abi, config.backend, config.backend_version, sys)
        elif isinstance(fw, model.TvmFfi):
            name = tvm_ffi_variant_name(
                config.tvm_ffi or "", config.backend, config.backend_version, sys
            )
        else:
            name = torch_variant_name(config.torch, config.backend, config.backend_version, sys)
        _add(
            out,
            Variant(
                name=name,
                system=sys,
                backend=config.backend,
                framework=build.framework_table,
                torch=config.torch,
                backend_version=config.backend_version,
                tvm_ffi=config.tvm_ffi if isinstance(fw, model.TvmFfi) else None,
                stable_abi=abi,
                bundle=config.bundle,
                kernels=kernels,
            ),
        )
    return sorted(out.values(), key=lambda v: (v.system, v.name))


def _noarch(config: BuildConfig, system: str) -> Variant:
    return Variant(
        name=noarch_variant_name(config.backend),
        system=system,
        backend=config.backend,
        framework="torch-noarch",
        torch=None,
        backend_version=None,
        tvm_ffi=None,
        stable_abi=None,
        bundle=config.bundle,
        kernels=(),
    )


def _add(out: dict[tuple[str, str], Variant], variant: Variant) -> None:
    # The first configuration of a name wins, as in the anchor's `listToAttrs`; the
    # anchor's bundle is built from bundle configurations only, so any of them counts.
    key = (variant.name, variant.system)
    first = out.setdefault(key, variant)
    if variant.bundle and not first.bundle:
        out[key] = attrs.evolve(first, bundle=True)


def select_ci(variants_: list[Variant]) -> list[Variant]:
    """One variant per (system, backend): bundle first, newest torch, oldest backend version
    (the anchor's default-variant rule), for quick pull-request builds.

    Ties go to the earlier variant; the result is sorted like `variants`.
    """
    groups: dict[tuple[str, str], list[Variant]] = {}
    for variant in variants_:
        groups.setdefault((variant.system, variant.backend), []).append(variant)
    return sorted(map(best_variant, groups.values()), key=lambda v: (v.system, v.name))


def default_variants(variants_: Sequence[Variant]) -> list[Variant]:
    """The variant of each system's default dev shell (`default_shell_variant`), sorted by
    system; a system without variants has none."""
    systems: dict[str, list[Variant]] = {}
    for variant in variants_:
        systems.setdefault(variant.system, []).append(variant)
    return [best_variant(found) for _, found in sorted(systems.items())]


def _rank(variant: Variant) -> tuple[Any, ...]:
    torch = tables.version_key(variant.torch) if variant.torch else ()
    backend = tables.version_key(variant.backend_version) if variant.backend_version else ()
    padded = (*backend, *(0,) * (4 - len(backend)))
    order = _BACKEND_ORDER.get(variant.backend, len(_BACKEND_ORDER))
    return (variant.bundle, -order, torch, tuple(-x for x in padded))


def check(build: model.Build) -> list[Problem]:
    """Planning problems: nothing to build, a [tvm-ffi] backend without kernels, a CUDA
    kernel whose capabilities no toolkit in the matrix supports."""
    return list(make(build).problems)


def _problems(build: model.Build, all_variants: list[Variant]) -> list[Problem]:
    problems: list[Problem] = []
    if not all_variants and build.general.backends:
        problems.append(
            warning(
                "no build configuration matches this project (check backends and version "
                "bounds), so nothing will be built",
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
        problems.extend(_unbuilt_kernels(build, all_variants))
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
        if not isinstance(kernel, (model.CppCudaKernel, model.RustCudaKernel)):
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


def _unbuilt_kernels(build: model.Build, all_variants: list[Variant]) -> list[Problem]:
    """A warning for each kernel of a listed backend that no variant builds, saying why:
    the anchor drops such a kernel without a word, and the Hub then lacks its builds."""
    if not isinstance(build.framework, (model.Torch, model.TvmFfi)):
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
                f"variant: {_why_unbuilt(build, kernel, backend)}",
                ("kernel", name),
            )
        )
    return out


def _why_unbuilt(build: model.Build, kernel: model.Kernel, backend: str) -> str:
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
    accepted = [c for c in rows if _accepted(build, c)]
    if not accepted:
        return (
            f"no {table} × {backend} build configuration is within the project's version "
            "bounds ([torch] minver/maxver, [general.cuda] minver/maxver, stable-abi)"
        )
    minver = cuda_minver(kernel)
    versions = sorted({c.backend_version or "" for c in accepted}, key=tables.version_key)
    if minver is not None and all(
        tables.version_key(v) < tables.version_key(minver) for v in versions
    ):
        return (
            f"its `cuda-minver` {minver} is newer than every CUDA toolkit it could be built "
            f"with ({', '.join(versions)})"
        )
    return f"no {table} × {backend} build configuration links it"


def rocm_archs(kernel: model.CppRocmKernel) -> list[str]:
    """The GPU targets `kernel` is compiled for: its `rocm-archs` (or every supported
    target) restricted to the builder's supported set, in the kernel's order."""
    supported = tables.supported_rocm_archs()
    wanted = kernel.rocm_archs if kernel.rocm_archs is not None else supported
    return [arch for arch in wanted if arch in supported]


def cuda_capabilities(
    kernel: model.CppCudaKernel | model.RustCudaKernel, cuda_version: str
) -> list[str]:
    """The capabilities `kernel` is compiled for with CUDA `cuda_version`.

    The kernel's list (or the anchor's default list for that toolkit) intersected with what
    the toolkit supports, in the kernel's order. A ``+PTX`` capability stays one while the
    toolkit supports its base, and a base listed both ways is built once, with its PTX (as
    the anchor's intersection does). The render stage writes the result, per toolkit of the
    build table, into the kernel's Nix file; metadata.json's `backend.archs` holds it too.
    """
    wanted = kernel.cuda_capabilities or tables.builder_cuda_capabilities(cuda_version)
    ptx: dict[str, bool] = {}
    for capability in wanted:
        base, with_ptx = tables.split_ptx(capability)
        if tables.cuda_capability_supported(base, cuda_version):
            ptx[base] = ptx.get(base, False) or with_ptx
    return [base + (tables.PTX if with_ptx else "") for base, with_ptx in ptx.items()]


def cuda_minver(kernel: model.Kernel) -> str | None:
    """The kernel's `cuda-minver` (only C++ CUDA kernels have one)."""
    return kernel.cuda_minver if isinstance(kernel, model.CppCudaKernel) else None


# ------------------------------------------------------------------------- the plan

#: Package-set attribute of each C++ dependency (`depends`) whose name differs: a dotted
#: path is taken from the set its first part names (the kernels toolchain keeps sycl-tla
#: in each oneAPI set, `xpuPackages.sycl-tla`, not at the top level). `torch` (the
#: variant's torch) and `tvm-ffi` (`python3.pkgs.tvm-ffi`) are the library's own names.
DEPENDENCY_ATTRS = {"sycl_tla": "xpuPackages.sycl-tla"}

#: Compile flags that turn OpenMP on, and the flag the extension's link then needs (the
#: compiler driver adds its OpenMP runtime, libgomp for GCC, as a dependency).
_OPENMP_FLAGS = {
    "-fopenmp": "-fopenmp",
    "-Xcompiler=-fopenmp": "-fopenmp",
    "-fiopenmp": "-fiopenmp",
    "-qopenmp": "-qopenmp",
}


@attrs.frozen(kw_only=True)
class RustPlan:
    """How a Rust kernel's crate is built (what `nixgen.rust.kernel` reads)."""

    #: The static library the extension links (`lib<library>.a`).
    library: str
    #: The crate's `Cargo.toml` and the `Cargo.lock` listed in `src`.
    manifest: str
    lockfile: str
    #: The crate's directory (`buildAndTestSubdir`); None at the project root.
    crate_dir: str | None
    #: Where cargo runs (`cargoRoot`): a workspace's root, else the crate's directory.
    cargo_root: str | None
    #: The lock file sits elsewhere than the crate: copy it next to the manifest.
    copy_lock: bool
    features: tuple[str, ...]
    #: rust-cuda only: the `rust-toolchain.toml`, the device crate, where its PTX goes.
    toolchain_file: str | None = None
    device_manifest: str | None = None
    ptx_dir: str | None = None


@attrs.frozen(kw_only=True)
class KernelPlan:
    """One kernel, finished: what its generated file passes to `nixgen.kernel.build`."""

    name: str
    language: str
    backend: str
    #: The derivation's name and version.
    pname: str
    version: str
    sources: tuple[str, ...]
    includes: tuple[str, ...]
    cxx_flags: tuple[str, ...]
    #: The backend's own flags (`cuda-flags`, `hip-flags`, `sycl-flags`; none for others).
    backend_flags: tuple[str, ...]
    #: Dependencies by the library's names (`torch`, `tvm-ffi`, package-set attributes).
    depends: tuple[str, ...]
    #: What the extension's link adds for this kernel (OpenMP's runtime).
    link_flags: tuple[str, ...]
    cuda_minver: str | None
    #: CUDA kernels: the capabilities each CUDA toolkit of the build table can compile for.
    capabilities: Mapping[str, tuple[str, ...]] | None
    #: ROCm kernels: the GPU targets the builder supports, in the kernel's order.
    archs: tuple[str, ...] | None
    rust: RustPlan | None
    #: Each compiled source's object key (`object_key`), in the kernel's order, when the
    #: kernel builds one derivation per object (`object_sources`); None when it builds in
    #: one derivation. The Nix library's `compile.withObjects` and the flake output
    #: ``objects`` read it (the kernel file's `objectKeys`), as `nixgen matrix --shards` does.
    objects: Mapping[str, str] | None = None

    @property
    def per_object(self) -> bool:
        """Whether the kernel builds one derivation per object."""
        return self.objects is not None


#: From this many compiled sources on, a C++-family kernel builds one derivation per
#: object (`KernelPlan.objects`). Below it, the cost of one derivation per object
#: (evaluation, and a builder start per object) outweighs what it saves; see
#: docs/build-performance.md for the measurements behind the number.
OBJECT_THRESHOLD = 32


def object_key(source: str) -> str:
    """The attribute name of `source`'s object derivation in the flake output ``objects``:
    the first 16 hex digits of the SHA-256 of its path (as build.toml lists it). Plain
    ``[0-9a-f]``, so a flake attribute path holds it unquoted whatever the file is called."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def object_sources(kernel: model.Kernel) -> list[str]:
    """The sources of `kernel` that build one derivation each, in its order, or ``[]``
    when it builds in one derivation: a C++-family kernel with at least
    `OBJECT_THRESHOLD` compiled sources (`tables.COMPILED_EXTENSIONS`), unless its
    objects need a file the kernel generates (a Metal kernel's shaders: its embedded
    library)."""
    compiled = tables.COMPILED_EXTENSIONS.get(kernel.language)
    if compiled is None:
        return []
    if kernel.language == "cpp-metal" and any(s.endswith(".metal") for s in kernel.src):
        return []
    sources = [str(s) for s in kernel.src if "." in s and s.rpartition(".")[2] in compiled]
    return sources if len(sources) >= OBJECT_THRESHOLD else []


@attrs.frozen(kw_only=True)
class Plan:
    """Everything the render stage lays out: the project, its variants and pull-request
    selection, each kernel's finished plan, the CI rows and the planning problems."""

    build: model.Build
    #: The systems variants are planned for.
    systems: tuple[str, ...]
    variants: tuple[Variant, ...]
    #: One variant per (system, backend), for quick pull-request builds (`select_ci`).
    ci: tuple[Variant, ...]
    #: The variant of each system's default dev shell (`default_variants`).
    defaults: tuple[Variant, ...]
    #: What each derivation of the project is, by the exact name the library gives it
    #: (`derivation_labels`): the words `nixgen build` prints for it.
    labels: Mapping[str, str]
    #: The derivation name (without its version) of the pure-Python package.
    noarch_pname: str
    kernels: tuple[KernelPlan, ...]
    #: GitHub Actions matrices (`nixgen.planning.matrix.github`) of every variant and of `ci`.
    github_matrix: Mapping[str, Any]
    pull_request_matrix: Mapping[str, Any]
    #: Every header the project lists anywhere (compile inputs of every C++ kernel).
    headers: tuple[str, ...]
    #: The kernel's Python package, relative to the project root.
    module_dir: str
    problems: tuple[Problem, ...]


def make(build: model.Build) -> Plan:
    """The finished plan of `build`: computed here once, only laid out by
    `nixgen.rendering.render`."""
    from nixgen.planning import matrix  # matrix reads `Variant` from this module

    all_variants = variants(build)
    ci = select_ci(all_variants)
    kernels = tuple(kernel_plan(build, n, k) for n, k in sorted(build.kernels.items()))
    return Plan(
        build=build,
        systems=SYSTEMS,
        variants=tuple(all_variants),
        ci=tuple(ci),
        defaults=tuple(default_variants(all_variants)),
        labels=derivation_labels(build, kernels),
        noarch_pname=noarch_pname(build),
        kernels=kernels,
        github_matrix=matrix.github(all_variants),
        pull_request_matrix=matrix.github(ci),
        headers=tuple(model.shared_headers(build)),
        module_dir=model.python_package_dir(build),
        problems=tuple(_problems(build, all_variants)),
    )


def kernel_plan(build: model.Build, name: str, kernel: model.Kernel) -> KernelPlan:
    """The finished plan of one kernel of `build`."""
    general = build.general
    capabilities: dict[str, tuple[str, ...]] | None = None
    if isinstance(kernel, (model.CppCudaKernel, model.RustCudaKernel)):
        capabilities = {
            version: tuple(cuda_capabilities(kernel, version)) for version in tables.cuda_versions()
        }
    rust = None
    includes: tuple[str, ...] = ()
    cxx_flags: tuple[str, ...] = ()
    if isinstance(kernel, model.RUST_KERNELS):
        rust = _rust_plan(name, kernel)
    else:
        includes, cxx_flags = tuple(kernel.include), tuple(kernel.cxx_flags)
    return KernelPlan(
        name=name,
        language=kernel.language,
        backend=model.backend_of(kernel),
        pname=f"{general.name}-{name}",
        version=str(general.version),
        sources=tuple(kernel.src),
        includes=includes,
        cxx_flags=cxx_flags,
        backend_flags=tuple(_backend_flags(kernel)),
        depends=_depends(build, kernel),
        link_flags=tuple(openmp_link_flags(kernel)),
        cuda_minver=cuda_minver(kernel),
        capabilities=capabilities,
        archs=tuple(rocm_archs(kernel)) if isinstance(kernel, model.CppRocmKernel) else None,
        rust=rust,
        objects={s: object_key(s) for s in split} if (split := object_sources(kernel)) else None,
    )


def noarch_pname(build: model.Build) -> str:
    """The derivation name (without its version) of the pure-Python package."""
    return f"{build.general.name}-noarch"


def object_name(source: str) -> str:
    """What the derivation of one object adds to its kernel's name: the source's base name,
    each run of characters a store name cannot hold made one `-`, at most 120 characters
    (`storeName` in nix/compile.nix; tests/test_seam_rows.py evaluates both)."""
    base = source.rpartition("/")[2]
    return "-".join(re.split(r"[^A-Za-z0-9+._?=-]+", base))[:120]


def derivation_labels(build: model.Build, kernels: Sequence[KernelPlan]) -> dict[str, str]:
    """What each derivation of the project is, in the project's words (``kernel relu``,
    ``kernel relu: object relu.cpp``, ``extension``, ``extension binding``, ``python
    package``), by the name the Nix library gives it (``<pname>-<version>``)."""
    version = str(build.general.version)
    out: dict[str, str] = {}
    for kernel in kernels:
        for source in kernel.sources:
            out[f"{kernel.pname}-{object_name(source)}-{kernel.version}"] = (
                f"kernel {kernel.name}: object {object_name(source)}"
            )
    for kernel in kernels:
        out[f"{kernel.pname}-{kernel.version}"] = f"kernel {kernel.name}"
    table = build.framework_table
    if table in ("torch", "tvm-ffi"):
        out[f"{build.general.name}-{table}-ext-{version}"] = "extension"
        # The binding's objects (nixgen.extension.bindingObjects), compiled before the link.
        out[f"{build.general.name}-{table}-binding-{version}"] = "extension binding"
    out[f"{noarch_pname(build)}-{version}"] = "python package"
    return out


def _backend_flags(kernel: model.Kernel) -> Sequence[str]:
    """The kernel's backend flag field (`data/languages.json`'s `flags`: `cuda-flags`…)."""
    field = tables.LANGUAGE_FLAGS.get(kernel.language)
    return cast("Sequence[str]", getattr(kernel, field[0].replace("-", "_"))) if field else []


def _depends(build: model.Build, kernel: model.Kernel) -> tuple[str, ...]:
    """The kernel's dependencies by the library's names, in build.toml's order; a
    `[tvm-ffi]` project's C++ kernels all see the tvm-ffi headers (listed or not)."""
    if isinstance(kernel, model.RUST_KERNELS):
        return ()
    names = [DEPENDENCY_ATTRS.get(str(d), str(d)) for d in kernel.depends]
    if isinstance(build.framework, model.TvmFfi) and "tvm-ffi" not in names:
        names.append("tvm-ffi")
    return tuple(names)


def _rust_plan(name: str, kernel: model.RustCpuKernel | model.RustCudaKernel) -> RustPlan:
    # Directories the cargo hooks `cd` into: one that starts with `-` gets `./`.
    crate_dir = _dir_arg(kernel.manifest().rpartition("/")[0])
    lock_dir = _dir_arg(kernel.lock_dir())
    workspace = kernel.workspace_manifest() is not None
    cuda = kernel if isinstance(kernel, model.RustCudaKernel) else None
    return RustPlan(
        library=kernel.library(name),
        manifest=kernel.manifest(),
        lockfile=kernel.lockfile(),
        crate_dir=crate_dir or None,
        # a workspace builds from its root (where Cargo.lock is), in the member's directory
        cargo_root=(lock_dir if workspace else crate_dir) or None,
        copy_lock=not workspace and lock_dir != crate_dir,
        features=tuple(kernel.features),
        toolchain_file=cuda.toolchain_file() if cuda else None,
        device_manifest=cuda.device_manifest if cuda else None,
        ptx_dir=(cuda.ptx_dir or "kernels-ptx") if cuda else None,
    )


def _dir_arg(rel: str) -> str:
    """A project-relative directory as the cargo hooks take it (`pushd "$dir"`): one
    whose name starts with `-` gets `./`, so that it is never read as an option."""
    return f"./{rel}" if rel.startswith("-") else rel


def openmp_link_flags(kernel: model.Kernel) -> list[str]:
    """The link flags the extension needs for `kernel`'s OpenMP use (none without it):
    code compiled with `-fopenmp` calls the runtime (`GOMP_*`), which only a link with
    `-fopenmp` makes a dependency of the extension."""
    if isinstance(kernel, model.RUST_KERNELS):
        return []
    flags = [*kernel.cxx_flags, *_backend_flags(kernel)]
    found = [
        _OPENMP_FLAGS.get(f, f) for f in flags if f in _OPENMP_FLAGS or f.startswith("-fopenmp=")
    ]
    return list(dict.fromkeys(found))
