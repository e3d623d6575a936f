"""Each kernel's finished plan (`KernelPlan`): CUDA capabilities per toolkit, ROCm targets,
dependencies by the Nix library's names, OpenMP link flags, a Rust crate's layout, and the
sources built one derivation per object.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from nixgen.core import contract, tables
from nixgen.reading import model


def rocm_archs(kernel: model.CppRocmKernel) -> list[str]:
    """The GPU targets `kernel` is compiled for: its `rocm-archs` (or every supported
    target) restricted to the builder's supported set, in the kernel's order."""
    supported = tables.supported_rocm_archs()
    wanted = kernel.rocm_archs if kernel.rocm_archs is not None else supported
    return [arch for arch in wanted if arch in supported]


def cuda_capabilities(
    kernel: model.CppCudaKernel | model.RustCudaOxideKernel, cuda_version: str
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
    """The oldest CUDA a kernel builds with: a C++ kernel's `cuda-minver`, a cuTile
    kernel's `tileiras-minver` (`tileiras` ships with the CUDA toolkit)."""
    if isinstance(kernel, model.CppCudaKernel):
        return kernel.cuda_minver
    if isinstance(kernel, model.RustCutileKernel):
        return kernel.tileiras_minver
    return None


# ------------------------------------------------------------------------- the plan


#: Compile flags that turn OpenMP on, and the flag the extension's link then needs (the
#: compiler driver adds its OpenMP runtime, libgomp for GCC, as a dependency).
_OPENMP_FLAGS = {
    "-fopenmp": "-fopenmp",
    "-Xcompiler=-fopenmp": "-fopenmp",
    "-fiopenmp": "-fiopenmp",
    "-qopenmp": "-qopenmp",
}


def _optional_arg(name: str | None = None) -> Any:
    """An optional argument of the library's kernel functions: left out when unset (None),
    so the library's default holds."""
    return attrs.field(default=None, metadata=contract.nix(name, omit=True))


@attrs.frozen(kw_only=True)
class RustPlan:
    """How a Rust kernel's crate is built: the arguments `nixgen.rust.kernel` reads (by
    the library's names, written beside the kernel's own: `KernelPlan.rust`)."""

    #: The static library the extension links (`lib<library>.a`).
    library: str
    #: The crate's `Cargo.toml` and the `Cargo.lock` listed in `src`.
    manifest: str
    lockfile: str
    #: The crate's directory (`buildAndTestSubdir`); None at the project root.
    crate_dir: str | None = _optional_arg("crateDir")
    #: Where cargo runs (`cargoRoot`): a workspace's root, else the crate's directory.
    cargo_root: str | None = _optional_arg("cargoRoot")
    #: The lock file sits elsewhere than the crate: copy it next to the manifest.
    copy_lock: bool = attrs.field(metadata=contract.nix("copyLock"))
    features: tuple[str, ...]
    #: rust-cuda-oxide only: the `rust-toolchain.toml`, the device crate, where its PTX goes.
    toolchain_file: str | None = _optional_arg("toolchainFile")
    device_manifest: str | None = _optional_arg("deviceManifest")
    ptx_dir: str | None = _optional_arg("ptxDir")


@attrs.frozen(kw_only=True)
class PlannedObject:
    """One object of a kernel built one derivation per object: its key in the flake
    output ``objects`` (`object_key`) and its derivation's name (`object_pname`)."""

    key: str
    pname: str


@attrs.frozen(kw_only=True)
class KernelPlan:
    """One kernel, finished: the data its generated file passes to `nixgen.kernel.build`
    (lib/kernel.nix `cpp`, lib/rust.nix `kernel`), written out as it is (`contract`):
    each field by the library's argument name, an unset optional one left out (the
    library's default). A C++ kernel sets the C++ fields and its language's flag field
    (`tables.LANGUAGE_FLAGS`); a Rust kernel sets `rust`, whose fields are written beside
    these."""

    name: str
    language: str
    #: The kernel's backend: the project's index of kernels (`project.kernels`) holds it.
    backend: str = attrs.field(metadata=contract.nix(skip=True))
    #: Where the kernel's generated file lives, relative to the output directory (the
    #: renderer writes it there; the project's index names it).
    file: str = attrs.field(metadata=contract.nix(skip=True))
    #: The derivation's name and version.
    pname: str
    version: str
    sources: tuple[str, ...]
    # C++ kernels
    includes: tuple[str, ...] | None = _optional_arg()
    cxx_flags: tuple[str, ...] | None = _optional_arg("cxxFlags")
    #: Dependencies by the library's names (`torch`, `tvm-ffi`, package-set attributes).
    depends: tuple[str, ...] | None = _optional_arg()
    #: What the extension's link adds for this kernel (OpenMP's runtime).
    link_flags: tuple[str, ...] | None = _optional_arg("linkFlags")
    #: The language's flag field (`data/languages.json` `flags`): set for the language
    #: that has it (`cuda-flags`, `hip-flags`, `sycl-flags`), None for the others.
    cuda_flags: tuple[str, ...] | None = _optional_arg("cudaFlags")
    hip_flags: tuple[str, ...] | None = _optional_arg("hipFlags")
    sycl_flags: tuple[str, ...] | None = _optional_arg("syclFlags")
    #: The CUDA lower bound of the kernel's variants: the project's index holds it.
    cuda_minver: str | None = attrs.field(default=None, metadata=contract.nix(skip=True))
    #: CUDA kernels: the capabilities each CUDA toolkit of the build table can compile for.
    capabilities: Mapping[str, tuple[str, ...]] | None = _optional_arg()
    #: ROCm kernels: the GPU targets the builder supports, in the kernel's order.
    archs: tuple[str, ...] | None = _optional_arg()
    #: Rust kernels: how the crate is built.
    rust: RustPlan | None = attrs.field(default=None, metadata=contract.nix(flatten=True))
    #: Each compiled source's object (its key and derivation name), in the kernel's order,
    #: when the kernel builds one derivation per object (`object_sources`); None when it
    #: builds in one derivation. The Nix library's `compile.withObjects` and the flake
    #: output ``objects`` read it (the kernel file's `plannedObjects`), as `nixgen matrix
    #: --shards` and the progress lines do.
    objects: Mapping[str, PlannedObject] | None = _optional_arg("plannedObjects")

    @property
    def backend_flags(self) -> tuple[str, ...]:
        """The backend's own flags, whichever language field holds them (none: empty)."""
        return self.cuda_flags or self.hip_flags or self.sycl_flags or ()

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


def object_pname(kernel_pname: str, source: str) -> str:
    """The derivation name of `source`'s object: the kernel's name, `-`, and the source's
    base name with each run of characters a store name cannot hold made one `-` (as
    nixpkgs' `lib.strings.sanitizeDerivationName` does: leading dots go, the last 207
    characters are kept, nothing left is `unknown`), cut to 120 characters so that the
    kernel's name before it and the version after it still fit a store name."""
    base = source.rpartition("/")[2]
    name = "-".join(re.split(r"[^A-Za-z0-9+._?=-]+", base.lstrip(".")))[-207:] or "unknown"
    return f"{kernel_pname}-{name[:120]}"


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


def kernel_plan(build: model.Build, name: str, kernel: model.Kernel) -> KernelPlan:
    """The finished plan of one kernel of `build`."""
    general = build.general
    capabilities: dict[str, tuple[str, ...]] | None = None
    if isinstance(kernel, (model.CppCudaKernel, model.RustCudaOxideKernel)):
        capabilities = {
            version: tuple(cuda_capabilities(kernel, version)) for version in tables.cuda_versions()
        }
    pname = f"{general.name}-{name}"
    rust = _rust_plan(name, kernel) if isinstance(kernel, model.RUST_KERNELS) else None
    cpp = rust is None
    split = object_sources(kernel)
    planned = KernelPlan(
        name=name,
        language=kernel.language,
        backend=model.backend_of(kernel),
        file=f"kernels/{name}.nix",
        pname=pname,
        version=str(general.version),
        sources=tuple(model.kernel_sources(kernel)),
        includes=tuple(model.kernel_includes(kernel)) if cpp else None,
        cxx_flags=tuple(model.kernel_cxx_flags(kernel)) if cpp else None,
        depends=_depends(build, kernel) if cpp else None,
        link_flags=tuple(openmp_link_flags(kernel)) if cpp else None,
        cuda_minver=cuda_minver(kernel),
        capabilities=capabilities,
        archs=tuple(rocm_archs(kernel)) if isinstance(kernel, model.CppRocmKernel) else None,
        rust=rust,
        objects={s: PlannedObject(key=object_key(s), pname=object_pname(pname, s)) for s in split}
        or None,
    )
    if kernel.language not in tables.LANGUAGE_FLAGS:
        return planned
    # The language's flag field, named by the table (`cuda-flags` → `cuda_flags`).
    field = tables.LANGUAGE_FLAGS[kernel.language][0].replace("-", "_")
    flags: dict[str, Any] = {field: tuple(_backend_flags(kernel))}
    return attrs.evolve(planned, **flags)


def _backend_flags(kernel: model.Kernel) -> Sequence[str]:
    """The kernel's backend flag field (`data/languages.json`'s `flags`: `cuda-flags`…)."""
    return [str(f) for f in model.kernel_backend_flags(kernel)]


def _depends(build: model.Build, kernel: model.Kernel) -> tuple[str, ...]:
    """A C++ kernel's dependencies by the library's names, in build.toml's order; a
    `[tvm-ffi]` project's C++ kernels all see the tvm-ffi headers (listed or not)."""
    if isinstance(kernel, model.RUST_KERNELS):
        return ()  # narrows the type: only C++ kernels are asked
    attrs_of = tables.dependency_attrs()
    names = [attrs_of.get(str(d), str(d)) for d in kernel.depends]
    if isinstance(build.framework, model.TvmFfi) and "tvm-ffi" not in names:
        names.append("tvm-ffi")
    return tuple(names)


def _rust_plan(
    name: str,
    kernel: model.RustCpuKernel | model.RustCudaOxideKernel | model.RustCutileKernel,
) -> RustPlan:
    # Directories the cargo hooks `cd` into: one that starts with `-` gets `./`.
    crate_dir = _dir_arg(kernel.manifest().rpartition("/")[0])
    lock_dir = _dir_arg(kernel.lock_dir())
    workspace = kernel.workspace_manifest() is not None
    cuda = kernel if isinstance(kernel, model.RustCudaOxideKernel) else None
    return RustPlan(
        library=kernel.library_name(name),
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
