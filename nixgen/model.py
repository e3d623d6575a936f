"""The edition-6 model: the only view of a build.toml that later stages see.

Kernels are a union tagged by ``language``: each class carries exactly the fields that are
possible for its language and backend, so an impossible combination (``cuda-flags`` on a
CPU kernel, ``features`` on a C++ kernel) is a type error when structuring, not a runtime
check. Older editions are read by their own schemas (``nixgen.schema``) and upgraded into
these classes (``nixgen.upgrade``).

Field names are snake_case in Python and kebab-case in TOML; `toml_key` gives the TOML
spelling (a field may override it with ``metadata={"key": ...}``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, NewType, Union

import attrs

from nixgen import tables

EDITION = 6

Backend = Literal["cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu"]
Language = Literal["cpp-cpu", "cpp-cuda", "cpp-rocm", "cpp-xpu", "cpp-metal", "rust-cpu"]

#: ``general.name``: lowercase letters, digits and dashes (the anchor's rule).
ProjectName = NewType("ProjectName", str)
#: A kernel table name: used for Nix attributes, file names and (Rust) library names.
KernelName = NewType("KernelName", str)
#: Dot-separated unsigned integers, e.g. ``2.12`` or ``12.8``.
Version = NewType("Version", str)
#: A git URL (https, http, git, ssh, git+ssh, git+https, git+http or ``git@host:org/repo``).
GitUrl = NewType("GitUrl", str)
#: A path relative to the project root, with ``/`` separators, that stays inside the project.
RelPath = NewType("RelPath", str)
#: A directory relative to the project root (``.`` is the root itself).
RelDir = NewType("RelDir", str)
#: A compiler flag (any string a Nix string can carry).
Flag = NewType("Flag", str)
#: ``8.0``, ``9.0a``, ``10.0f``: a CUDA compute capability known to nvcc.
CudaCapability = NewType("CudaCapability", str)
#: ``gfx942``: an AMD GPU target.
RocmArch = NewType("RocmArch", str)
#: A ``org/name`` Hub repository id.
RepoId = NewType("RepoId", str)
#: A Cargo feature name.
CargoFeature = NewType("CargoFeature", str)
#: A file extension without the dot (``py``, ``json``).
Extension = NewType("Extension", str)


def _lit(values: list[str]) -> Any:
    """A Literal type built from a data table, so allowlists live in one JSON file."""
    return Literal[tuple(values)] if values else Literal[()]  # type: ignore[valid-type]


GeneralPythonDep = _lit(tables.python_dependencies("general"))
CudaPythonDep = _lit(tables.python_dependencies("cuda"))
XpuPythonDep = _lit(tables.python_dependencies("xpu"))
NeuronPythonDep = _lit(tables.python_dependencies("neuron"))
TpuPythonDep = _lit(tables.python_dependencies("tpu"))
CpuDep = _lit(tables.cpp_dependencies("cpp-cpu"))
CudaDep = _lit(tables.cpp_dependencies("cpp-cuda"))
RocmDep = _lit(tables.cpp_dependencies("cpp-rocm"))
XpuDep = _lit(tables.cpp_dependencies("cpp-xpu"))
MetalDep = _lit(tables.cpp_dependencies("cpp-metal"))


def toml_key(field: attrs.Attribute) -> str:
    """The TOML spelling of an attrs field."""
    return field.metadata.get("key", field.name.replace("_", "-"))


def _list() -> Any:
    return attrs.field(factory=list)


# --------------------------------------------------------------------------- general


@attrs.frozen(kw_only=True)
class Hub:
    """``[general.hub]``: where the built kernel is uploaded."""

    repo_id: RepoId | None = None
    branch: str | None = None


@attrs.frozen(kw_only=True)
class KernelDependency:
    """A kernel this kernel needs at run time: a Hub repo at a version or a revision."""

    repo_id: RepoId
    version: int | None = None
    revision: str | None = None


@attrs.frozen(kw_only=True)
class CudaGeneral:
    """``[general.cuda]``: bounds on the CUDA toolkit versions to build for."""

    minver: Version | None = None
    maxver: Version | None = None
    python_depends: list[CudaPythonDep] = _list()
    kernel_depends: list[KernelDependency] = _list()


@attrs.frozen(kw_only=True)
class XpuGeneral:
    python_depends: list[XpuPythonDep] = _list()
    kernel_depends: list[KernelDependency] = _list()


@attrs.frozen(kw_only=True)
class NeuronGeneral:
    python_depends: list[NeuronPythonDep] = _list()
    kernel_depends: list[KernelDependency] = _list()


@attrs.frozen(kw_only=True)
class TpuGeneral:
    python_depends: list[TpuPythonDep] = _list()


@attrs.frozen(kw_only=True)
class General:
    """``[general]``."""

    name: ProjectName
    version: int
    edition: Literal[6]
    license: str
    backends: list[Backend]
    upstream: GitUrl | None = None
    source: GitUrl | None = None
    #: The oldest `kernels` client that can load this kernel.
    minver: Version | None = None
    python_depends: list[GeneralPythonDep] = _list()
    kernel_depends: list[KernelDependency] = _list()
    hub: Hub | None = None
    cuda: CudaGeneral | None = None
    xpu: XpuGeneral | None = None
    neuron: NeuronGeneral | None = None
    tpu: TpuGeneral | None = None

    @property
    def module_name(self) -> str:
        """The Python module name: the project name with ``-`` turned into ``_``."""
        return self.name.replace("-", "_")


# ------------------------------------------------------------------------ frameworks


@attrs.frozen(kw_only=True)
class Torch:
    """``[torch]``: an ahead-of-time compiled Torch extension."""

    table: ClassVar[str] = "torch"
    src: list[RelPath] = _list()
    include: list[RelDir] = _list()
    pyext: list[Extension] = attrs.field(factory=lambda: ["py", "pyi"])
    minver: Version | None = None
    maxver: Version | None = None
    stable_abi: Version | dict[Backend, Version] | None = None
    cxx_flags: list[Flag] = _list()

    def stable_abi_for(self, backend: str) -> str | None:
        if isinstance(self.stable_abi, dict):
            return self.stable_abi.get(backend)
        return self.stable_abi


@attrs.frozen(kw_only=True)
class TorchNoarch:
    """``[torch-noarch]``: a pure-Python (JIT, Triton, …) Torch kernel."""

    table: ClassVar[str] = "torch-noarch"
    pyext: list[Extension] = attrs.field(factory=lambda: ["py", "pyi"])
    cuda_capabilities: list[CudaCapability] = _list()
    rocm_archs: list[RocmArch] = _list()


@attrs.frozen(kw_only=True)
class TvmFfi:
    """``[tvm-ffi]``: an extension bound through the TVM FFI C ABI."""

    table: ClassVar[str] = "tvm-ffi"
    src: list[RelPath] = _list()
    include: list[RelDir] = _list()
    pyext: list[Extension] = attrs.field(factory=lambda: ["py", "pyi"])
    cxx_flags: list[Flag] = _list()


Framework = Union[Torch, TorchNoarch, TvmFfi]  # noqa: UP007 - cattrs needs the runtime union
FRAMEWORKS: dict[str, type] = {cls.table: cls for cls in (Torch, TorchNoarch, TvmFfi)}

# --------------------------------------------------------------------------- kernels


@attrs.frozen(kw_only=True)
class CppCpuKernel:
    """``language = "cpp-cpu"``: C++ for the CPU, built with ``stdenv``."""

    language: Literal["cpp-cpu"]
    src: list[RelPath]
    depends: list[CpuDep] = _list()
    include: list[RelDir] = _list()
    cxx_flags: list[Flag] = _list()


@attrs.frozen(kw_only=True)
class CppCudaKernel:
    """``language = "cpp-cuda"``: CUDA C++, built with ``cudaPackages.backendStdenv``."""

    language: Literal["cpp-cuda"]
    src: list[RelPath]
    depends: list[CudaDep] = _list()
    include: list[RelDir] = _list()
    cxx_flags: list[Flag] = _list()
    cuda_flags: list[Flag] = _list()
    cuda_capabilities: list[CudaCapability] | None = None
    cuda_minver: Version | None = None


@attrs.frozen(kw_only=True)
class CppRocmKernel:
    """``language = "cpp-rocm"``: HIP C++, built with ``rocmPackages``."""

    language: Literal["cpp-rocm"]
    src: list[RelPath]
    depends: list[RocmDep] = _list()
    include: list[RelDir] = _list()
    cxx_flags: list[Flag] = _list()
    hip_flags: list[Flag] = _list()
    rocm_archs: list[RocmArch] | None = None


@attrs.frozen(kw_only=True)
class CppXpuKernel:
    """``language = "cpp-xpu"``: SYCL C++, built with the Intel oneAPI stdenv."""

    language: Literal["cpp-xpu"]
    src: list[RelPath]
    depends: list[XpuDep] = _list()
    include: list[RelDir] = _list()
    cxx_flags: list[Flag] = _list()
    sycl_flags: list[Flag] = _list()


@attrs.frozen(kw_only=True)
class CppMetalKernel:
    """``language = "cpp-metal"``: Objective-C++ and Metal, built with the darwin stdenv."""

    language: Literal["cpp-metal"]
    src: list[RelPath]
    depends: list[MetalDep] = _list()
    include: list[RelDir] = _list()
    cxx_flags: list[Flag] = _list()


@attrs.frozen(kw_only=True)
class RustCpuKernel:
    """``language = "rust-cpu"``: a Cargo crate built with ``rustPlatform.buildRustPackage``.

    Convention over configuration: ``src`` lists exactly one ``Cargo.toml`` and one
    ``Cargo.lock``; the library is the kernel's table name with ``-`` turned into ``_``
    and is built as a ``staticlib`` exporting ``extern "C"`` functions.
    """

    language: Literal["rust-cpu"]
    src: list[RelPath]
    depends: list[Literal[()]] = _list()  # type: ignore[valid-type]
    features: list[CargoFeature] = _list()

    def manifest(self) -> str:
        return next(p for p in self.src if p.rsplit("/", 1)[-1] == "Cargo.toml")

    def lockfile(self) -> str:
        return next(p for p in self.src if p.rsplit("/", 1)[-1] == "Cargo.lock")


Kernel = Union[  # noqa: UP007 - cattrs needs the runtime union
    CppCpuKernel, CppCudaKernel, CppRocmKernel, CppXpuKernel, CppMetalKernel, RustCpuKernel
]
KERNEL_CLASSES: dict[str, type] = {
    "cpp-cpu": CppCpuKernel,
    "cpp-cuda": CppCudaKernel,
    "cpp-rocm": CppRocmKernel,
    "cpp-xpu": CppXpuKernel,
    "cpp-metal": CppMetalKernel,
    "rust-cpu": RustCpuKernel,
}


def backend_of(kernel: Kernel) -> str:
    """The backend a kernel's language builds for."""
    return tables.LANGUAGE_BACKEND[kernel.language]


# ----------------------------------------------------------------------------- build


@attrs.frozen(kw_only=True)
class Build:
    """A whole build.toml in edition 6.

    `framework` is None for a project without a framework section, which means a
    Torch no-arch (pure Python) kernel.
    """

    general: General
    framework: Framework | None = None
    kernels: dict[KernelName, Kernel] = attrs.field(factory=dict)

    @property
    def framework_table(self) -> str:
        return self.framework.table if self.framework is not None else "torch-noarch"

    def kernels_for(self, backend: str) -> dict[str, Kernel]:
        return {n: k for n, k in sorted(self.kernels.items()) if backend_of(k) == backend}

    def source_files(self) -> list[str]:
        """Every file the project declares (framework and kernel sources), sorted."""
        files: set[str] = set()
        if isinstance(self.framework, (Torch, TvmFfi)):
            files.update(self.framework.src)
        for kernel in self.kernels.values():
            files.update(kernel.src)
        return sorted(files)
