"""The build variants of a project: the build-configuration table (``data/build-configs.json``)
filtered by the project's constraints (torch × backend version × system), their names (the
anchor's scheme exactly, so the PyPI ``kernels`` client's ``parse_variant`` accepts every
one) and the pull-request selection (`select_ci`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import attrs

from nixgen.core import contract, tables
from nixgen.planning.kernels import cuda_minver
from nixgen.planning.settings import NO_SETTINGS, ProjectSettings
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
    #: The CUDA version whose ptxas, nvlink and NVVM this CUDA variant's toolkit uses
    #: (nixgen.toml's ``[backend.cuda.ptxas]``), None for its own.
    ptxas: str | None = attrs.field(default=None, metadata=contract.nix("ptxasVersion"))

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


def noarch_variant_name(backend: str, framework: str = "torch-noarch") -> str:
    """``torch-cuda``, ``mlx-metal``: pure Python, the same on every system (named as the
    `kernels` client parses a noarch variant, `{framework}-{backend}`)."""
    return f"{framework.removesuffix('-noarch')}-{backend}"


def _within(version: str, low: str | None, high: str | None) -> bool:
    key = tables.version_key(version)
    if low is not None and key < tables.version_key(low):
        return False
    return high is None or key <= tables.version_key(high)


def accepted(
    build: model.Build, config: BuildConfig, settings: ProjectSettings = NO_SETTINGS
) -> bool:
    """The anchor's bounds filter, plus: a torch older than the stable ABI its kernels
    must target cannot build for it (the anchor would name such a build after the newer
    ABI). Pure-Python variants do not target an ABI. `settings` (nixgen.toml) may bound
    a backend's torch versions too."""
    return rejection(build, config, settings) is None


def rejection(
    build: model.Build, config: BuildConfig, settings: ProjectSettings = NO_SETTINGS
) -> str | None:
    """Why `accepted` leaves `config` out (None: it does not), in a few words."""
    fw = build.framework
    cuda = build.general.cuda
    if config.backend not in build.general.backends:
        return f"backend `{config.backend}` is not in general.backends"
    own = settings.backend(config.backend)
    if not _within(config.torch, own.torch_minver, own.torch_maxver):
        return (
            f"torch {config.torch} is outside nixgen.toml's [backend.{config.backend}] "
            f"(torch-minver {own.torch_minver or '-'}, torch-maxver {own.torch_maxver or '-'})"
        )
    if (
        config.backend == "cuda"
        and cuda is not None
        and not _within(config.backend_version or "0", cuda.minver, cuda.maxver)
    ):
        return (
            f"CUDA {config.backend_version} is outside general.cuda "
            f"(minver {cuda.minver or '-'}, maxver {cuda.maxver or '-'})"
        )
    if isinstance(fw, model.TvmFfi) and config.tvm_ffi is None:
        return "the configuration has no tvm-ffi version"
    if isinstance(fw, model.Torch):
        if not _within(config.torch, fw.minver, fw.maxver):
            return (
                f"torch {config.torch} is outside [torch] (minver {fw.minver or '-'}, "
                f"maxver {fw.maxver or '-'})"
            )
        abi = fw.stable_abi_for(config.backend)
        if (
            abi is not None
            and build.kernels_for(config.backend)
            and tables.version_key(config.torch) < tables.version_key(abi)
        ):
            return f"torch {config.torch} is older than the stable ABI {abi} its kernels target"
    return None


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


def variants(
    build: model.Build,
    *,
    system: str | None = None,
    settings: ProjectSettings = NO_SETTINGS,
) -> list[Variant]:
    """Every variant of `build` (for one `system`, or all), sorted by system then name,
    with nixgen.toml's `settings` (`nixgen.planning.settings`): a verb passes the
    project's (`nixgen.app.config.read(root).project`).

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

    nixgen.toml may restrict a backend to some systems and torch versions (what a
    kernel-builder flake's `torchVersions` did), and pin a CUDA toolkit's ptxas.

    nixgen adds: a CUDA kernel is left out of configurations older than its
    ``cuda-minver``, and a configuration left with no kernel of a backend that has
    kernels is not built at all (there would be nothing to bind); a torch older than the
    stable ABI its kernels target is not used; a ``[tvm-ffi]`` backend without kernels
    builds nothing.
    """
    return planned_variants(build, system=system, settings=settings)[0]


@attrs.frozen(kw_only=True)
class LeftOut:
    """A build configuration `variants` did not build on a system, and why."""

    config: BuildConfig
    system: str
    reason: str

    @property
    def label(self) -> str:
        """``torch 2.12, cuda 12.6`` (the configuration, in words)."""
        version = f" {self.config.backend_version}" if self.config.backend_version else ""
        return f"torch {self.config.torch}, {self.config.backend}{version}"


def planned_variants(
    build: model.Build, *, system: str | None = None, settings: ProjectSettings = NO_SETTINGS
) -> tuple[list[Variant], list[LeftOut]]:
    """`variants`, and the configurations (per system) it left out, each with its reason,
    by system then in table order (what `nixgen variants -vv` prints)."""
    fw = build.framework
    compiled = isinstance(fw, model.COMPILED_FRAMEWORKS)
    left: list[LeftOut] = []
    rows = []
    for config in build_configs():
        reason = rejection(build, config, settings)
        for sys in config.systems:
            if system is not None and sys != system:
                continue
            why = reason
            if why is None and not settings.allows(config.backend, None, sys):
                why = f"nixgen.toml's [backend.{config.backend}] systems leave out {sys}"
            if why is None:
                rows.append((config, sys))
            else:
                left.append(LeftOut(config=config, system=sys, reason=why))
    newest: dict[tuple[str, str | None, str], str] = {}
    for config, sys in rows:
        key = (config.backend, config.backend_version, sys)
        if key not in newest or tables.version_key(config.torch) > tables.version_key(newest[key]):
            newest[key] = config.torch
    out: dict[tuple[str, str], Variant] = {}
    for config, sys in rows:
        abi = _stable_abi(build, config.backend)
        kept = newest[(config.backend, config.backend_version, sys)]
        if abi is not None and config.torch != kept:
            reason = f"the stable ABI {abi} is built with the newest torch only ({kept})"
            left.append(LeftOut(config=config, system=sys, reason=reason))
            continue
        if not compiled or not build.kernels_for(config.backend):
            if isinstance(fw, model.TvmFfi):
                reason = f"a [tvm-ffi] project builds nothing for `{config.backend}` (no kernel)"
                left.append(LeftOut(config=config, system=sys, reason=reason))
                continue
            _add(out, _noarch(config, sys, fw), left, config)
            continue
        kernels = _kernels_for(build, config)
        if not kernels:
            reason = (
                f"no kernel of `{config.backend}` builds with {config.backend} "
                f"{config.backend_version} (cuda-minver)"
            )
            left.append(LeftOut(config=config, system=sys, reason=reason))
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
                ptxas=settings.ptxas_for(config.backend, config.backend_version),
            ),
            left,
            config,
        )
    order = {config: i for i, config in enumerate(build_configs())}
    left.sort(key=lambda item: (item.system, order[item.config]))
    return sorted(out.values(), key=lambda v: (v.system, v.name)), left


def _noarch(config: BuildConfig, system: str, fw: model.Framework | None) -> Variant:
    framework = "mlx-noarch" if isinstance(fw, model.MlxNoarch) else "torch-noarch"
    return Variant(
        name=noarch_variant_name(config.backend, framework),
        system=system,
        backend=config.backend,
        framework=framework,
        torch=None,
        backend_version=None,
        tvm_ffi=None,
        stable_abi=None,
        bundle=config.bundle,
        kernels=(),
    )


def _add(
    out: dict[tuple[str, str], Variant], variant: Variant, left: list[LeftOut], config: BuildConfig
) -> None:
    # The first configuration of a name wins, as in the anchor's `listToAttrs`; the
    # anchor's bundle is built from bundle configurations only, so any of them counts.
    key = (variant.name, variant.system)
    first = out.setdefault(key, variant)
    if first is not variant:
        reason = f"the same variant as an earlier configuration ({variant.name}), built once"
        left.append(LeftOut(config=config, system=variant.system, reason=reason))
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
