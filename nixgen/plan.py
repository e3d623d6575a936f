"""Stage 5 — plan: the build variants of a project (torch × backend version × system).

Variants are computed from the build-configuration table (``data/build-configs.json``)
and the project's constraints, in Python and without Nix. The static Nix library
(``nix/variants.nix``) computes the same list from the same table; tests keep the two
equal. Names follow the anchor's scheme exactly, so the PyPI ``kernels`` client's
``parse_variant`` accepts every one.
"""

from __future__ import annotations

from typing import Any

import attrs

from nixgen import model, tables
from nixgen.errors import Problem, error, one_of, warning

SYSTEMS = ("x86_64-linux", "aarch64-linux", "aarch64-darwin")
#: Preference when one variant must stand for a system (default builds, PR CI).
BACKEND_PREFERENCE = ("cuda", "rocm", "xpu", "metal", "cpu", "tpu", "neuron", "cann")
CONFIG_BACKENDS = ("cuda", "rocm", "xpu", "metal", "cpu", "tpu")
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
    system: str | None
    backend: str
    framework: str
    torch: str | None
    backend_version: str | None
    tvm_ffi: str | None
    stable_abi: str | None
    bundle: bool
    kernels: tuple[str, ...]

    @property
    def compute(self) -> str:
        return compute_name(self.backend, self.backend_version)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "system": self.system,
            "backend": self.backend,
            "framework": self.framework,
            "torch": self.torch,
            "backendVersion": self.backend_version,
            "tvmFfi": self.tvm_ffi,
            "stableAbi": self.stable_abi,
            "bundle": self.bundle,
            "kernels": list(self.kernels),
        }


def build_configs() -> list[BuildConfig]:
    return [BuildConfig.from_json(row) for row in tables.build_configs()]


def short(version: str, parts: int = 2) -> str:
    """``"2.13"`` → ``"213"``, ``"2025.3.2"`` → ``"20253"`` (major and minor, no dots)."""
    pieces = (version.split(".") + ["0"] * parts)[:parts]
    return "".join(pieces)


def compute_name(backend: str, version: str | None) -> str:
    if backend == "cuda":
        return f"cu{short(version or '')}"
    if backend in ("rocm", "xpu"):
        return f"{backend}{short(version or '')}"
    return backend


def torch_variant_name(torch: str, backend: str, version: str | None, system: str) -> str:
    cxx11 = "" if system.endswith("-darwin") else "-cxx11"
    return f"torch{short(torch)}{cxx11}-{compute_name(backend, version)}-{system}"


def stable_abi_variant_name(abi: str, backend: str, version: str | None, system: str) -> str:
    return f"torch-stable-abi{short(abi)}-{compute_name(backend, version)}-{system}"


def tvm_ffi_variant_name(tvm_ffi: str, backend: str, version: str | None, system: str) -> str:
    return f"tvm-ffi{short(tvm_ffi)}-{compute_name(backend, version)}-{system}"


def noarch_variant_name(backend: str) -> str:
    return f"torch-{backend}"


def _within(version: str, low: str | None, high: str | None) -> bool:
    key = tables.version_key(version)
    if low is not None and key < tables.version_key(low):
        return False
    return high is None or key <= tables.version_key(high)


def _kernels_for(build: model.Build, config: BuildConfig) -> tuple[str, ...]:
    names = []
    for name, kernel in sorted(build.kernels.items()):
        if model.backend_of(kernel) != config.backend:
            continue
        minver = getattr(kernel, "cuda_minver", None)
        if (
            minver is not None
            and config.backend_version is not None
            and tables.version_key(config.backend_version) < tables.version_key(minver)
        ):
            continue
        names.append(name)
    return tuple(names)


def variants(build: model.Build, *, system: str | None = None) -> list[Variant]:
    """Every variant of `build` (for one `system`, or all), sorted by name then system."""
    out: dict[tuple[str, str | None], Variant] = {}
    backends = build.general.backends
    fw = build.framework
    if not isinstance(fw, (model.Torch, model.TvmFfi)):
        for config in build_configs():
            if config.backend in backends:
                for sys in config.systems:
                    if system is None or sys == system:
                        _add(out, _noarch(config.backend, sys, ()))
        return _sorted(out)
    cuda = build.general.cuda
    newest_stable: dict[tuple[str, str | None, str], str] = {}
    candidates: list[tuple[BuildConfig, str, tuple[str, ...]]] = []
    for config in build_configs():
        if config.backend not in backends:
            continue
        if (
            config.backend == "cuda"
            and cuda is not None
            and not _within(config.backend_version or "0", cuda.minver, cuda.maxver)
        ):
            continue
        if isinstance(fw, model.TvmFfi) and config.tvm_ffi is None:
            continue
        if isinstance(fw, model.Torch):
            if not _within(config.torch, fw.minver, fw.maxver):
                continue
            abi = fw.stable_abi_for(config.backend)
            if abi is not None and tables.version_key(config.torch) < tables.version_key(abi):
                continue
        for sys in config.systems:
            if system is not None and sys != system:
                continue
            kernels = _kernels_for(build, config)
            candidates.append((config, sys, kernels))
            key = (config.backend, config.backend_version, sys)
            if not newest_stable.get(key) or tables.version_key(config.torch) > tables.version_key(
                newest_stable[key]
            ):
                newest_stable[key] = config.torch
    for config, sys, kernels in candidates:
        if not kernels:
            # A backend without any kernel ships pure Python; one whose kernels all need a
            # newer toolkit (cuda-minver) is not built for this configuration at all.
            if isinstance(fw, model.Torch) and not build.kernels_for(config.backend):
                _add(out, _noarch(config.backend, sys, ()))
            continue
        abi = fw.stable_abi_for(config.backend) if isinstance(fw, model.Torch) else None
        if abi is not None:
            if config.torch != newest_stable[(config.backend, config.backend_version, sys)]:
                continue
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
                framework=fw.table,
                torch=config.torch,
                backend_version=config.backend_version,
                tvm_ffi=config.tvm_ffi if isinstance(fw, model.TvmFfi) else None,
                stable_abi=abi,
                bundle=config.bundle,
                kernels=kernels,
            ),
        )
    return _sorted(out)


def _noarch(backend: str, system: str, kernels: tuple[str, ...]) -> Variant:
    return Variant(
        name=noarch_variant_name(backend),
        system=system,
        backend=backend,
        framework="torch-noarch",
        torch=None,
        backend_version=None,
        tvm_ffi=None,
        stable_abi=None,
        bundle=True,
        kernels=kernels,
    )


def _add(out: dict[tuple[str, str | None], Variant], variant: Variant) -> None:
    # Two configurations can map to one name (tvm-ffi 0.1 with torch 2.12 and 2.13): the
    # first one in table order wins, as in the anchor's `listToAttrs`.
    out.setdefault((variant.name, variant.system), variant)


def _sorted(out: dict[tuple[str, str | None], Variant]) -> list[Variant]:
    return sorted(out.values(), key=lambda v: (v.system or "", v.name))


def select_ci(variants_: list[Variant]) -> list[Variant]:
    """One variant per (system, backend): bundle first, newest torch, oldest backend version
    (the anchor's default-variant rule), for quick pull-request builds."""
    best: dict[tuple[str | None, str], Variant] = {}
    for variant in variants_:
        key = (variant.system, variant.backend)
        if key not in best or _rank(variant) > _rank(best[key]):
            best[key] = variant
    return sorted(best.values(), key=lambda v: (v.system or "", v.name))


def _rank(variant: Variant) -> tuple[Any, ...]:
    torch = tables.version_key(variant.torch) if variant.torch else ()
    backend = tables.version_key(variant.backend_version) if variant.backend_version else ()
    padded = (*backend, *(0,) * (4 - len(backend)))
    return (variant.bundle, torch, tuple(-x for x in padded))


def check(build: model.Build) -> list[Problem]:
    """Planning problems: a CUDA kernel whose capabilities no toolkit in the matrix supports."""
    problems: list[Problem] = []
    all_variants = variants(build)
    if not all_variants and build.general.backends:
        problems.append(
            warning(
                "no build configuration matches this project (check backends and version "
                "bounds), so nothing will be built",
                ("general", "backends"),
            )
        )
    for name, kernel in sorted(build.kernels.items()):
        if not isinstance(kernel, model.CppCudaKernel):
            continue
        versions = sorted(
            {v.backend_version for v in all_variants if name in v.kernels and v.backend_version},
            key=tables.version_key,
        )
        for version in versions:
            if not cuda_capabilities(kernel, version):
                problems.append(
                    error(
                        f"kernel `{name}`: none of its CUDA capabilities "
                        f"({one_of(kernel.cuda_capabilities or [])}) can be built with CUDA "
                        f"{version}; add a supported capability or raise cuda-minver",
                        ("kernel", name, "cuda-capabilities"),
                    )
                )
    return problems


def cuda_capabilities(kernel: model.CppCudaKernel, cuda_version: str) -> list[str]:
    """The capabilities `kernel` is compiled for with CUDA `cuda_version`.

    The kernel's list (or the builder's default list) intersected with what the toolkit
    supports, in the kernel's order. ``nix/cuda.nix`` computes the same.
    """
    wanted = kernel.cuda_capabilities or tables.builder_cuda_capabilities()
    return [c for c in wanted if tables.cuda_capability_supported(c, cuda_version)]
