"""The edition-6 model: the only view of a build.toml that later stages see.

Kernels are a union tagged by ``language``: each class carries exactly the fields that are
possible for its language and backend, so an impossible combination (``cuda-flags`` on a
CPU kernel, ``features`` on a C++ kernel) is a type error when structuring, not a runtime
check. Older editions are read by their own schemas (``nixgen.schema``) and upgraded into
these classes (``nixgen.upgrade``).

Field names are snake_case in Python and kebab-case in TOML; `nixgen.convert.key_of` gives
the TOML spelling (a field may override it with ``metadata={"key": ...}``).
"""

from __future__ import annotations

import functools
from typing import (
    TYPE_CHECKING,
    Any,
    ClassVar,
    Literal,
    NewType,
    TypeAlias,
    Union,
    cast,
)

import attrs

from nixgen import tables
from nixgen.record import record

EDITION = 6

#: A backend: the kind of device a variant runs on.
Backend = Literal["cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu"]
#: A kernel language: the source language and the backend it builds for.
Language = Literal[
    "cpp-cpu", "cpp-cuda", "cpp-rocm", "cpp-xpu", "cpp-metal", "rust-cpu", "rust-cuda"
]

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
#: ``8.0``, ``9.0a``, ``10.0f``, ``9.0+PTX``: a CUDA compute capability (``major.minor``,
#: optional ``a``/``f``); ``+PTX`` embeds its PTX besides the machine code, for newer GPUs.
CudaCapability = NewType("CudaCapability", str)
#: ``gfx942``, ``gfx1100``: an AMD GPU target.
RocmArch = NewType("RocmArch", str)
#: A ``org/name`` Hub repository id.
RepoId = NewType("RepoId", str)
#: A Cargo feature name.
CargoFeature = NewType("CargoFeature", str)
#: A Rust library name (an identifier: `[lib] name` of a crate).
RustLibName = NewType("RustLibName", str)
#: A file extension without the dot (``py``, ``json``).
Extension = NewType("Extension", str)


def _lit(values: list[str]) -> Any:
    """A Literal type built from a data table, so allowlists live in one JSON file."""
    return Literal[tuple(values)] if values else Literal[()]


# The allowlists below are Literal types built at run time from the data tables: cattrs
# validates values against them and nixgen.jsonschema lists them. A static type checker cannot
# evaluate a Literal built from data, so it sees each of them as `str`; the runtime objects are
# unchanged. (nixgen.jsonschema reads the `#:` comments of the runtime assignments.)
if TYPE_CHECKING:
    GeneralPythonDep: TypeAlias = str
    CudaPythonDep: TypeAlias = str
    XpuPythonDep: TypeAlias = str
    NeuronPythonDep: TypeAlias = str
    TpuPythonDep: TypeAlias = str
    CpuDep: TypeAlias = str
    CudaDep: TypeAlias = str
    RocmDep: TypeAlias = str
    XpuDep: TypeAlias = str
    MetalDep: TypeAlias = str
else:
    #: A Python package every variant may depend on.
    GeneralPythonDep = _lit(tables.python_dependencies("general"))
    #: A Python package the CUDA variants may depend on.
    CudaPythonDep = _lit(tables.python_dependencies("cuda"))
    #: A Python package the XPU variants may depend on.
    XpuPythonDep = _lit(tables.python_dependencies("xpu"))
    #: A Python package the Neuron variants may depend on.
    NeuronPythonDep = _lit(tables.python_dependencies("neuron"))
    TpuPythonDep = _lit(tables.python_dependencies("tpu"))
    #: A library a `cpp-cpu` kernel may compile against.
    CpuDep = _lit(tables.cpp_dependencies("cpp-cpu"))
    #: A library a `cpp-cuda` kernel may compile against.
    CudaDep = _lit(tables.cpp_dependencies("cpp-cuda"))
    #: A library a `cpp-rocm` kernel may compile against.
    RocmDep = _lit(tables.cpp_dependencies("cpp-rocm"))
    #: A library a `cpp-xpu` kernel may compile against.
    XpuDep = _lit(tables.cpp_dependencies("cpp-xpu"))
    #: A library a `cpp-metal` kernel may compile against.
    MetalDep = _lit(tables.cpp_dependencies("cpp-metal"))


def _list() -> Any:
    return attrs.field(factory=list)


# --------------------------------------------------------------------------- general


@record
class Hub:
    """``[general.hub]``: where the built kernel is uploaded."""

    #: The Hub repository the built kernel is uploaded to.
    repo_id: RepoId | None = None
    #: The branch to upload to (default: `v<version>`).
    branch: str | None = None


@record
class KernelDependency:
    """A kernel this kernel needs at run time: a Hub repo at a version or a revision."""

    #: The Hub repository of the kernel needed.
    repo_id: RepoId
    #: Its major version (the `v<version>` branch).
    version: int | None = None
    #: Or a git revision of it.
    revision: str | None = None


@record
class CudaGeneral:
    """``[general.cuda]``: bounds on the CUDA toolkit versions to build for."""

    #: The oldest CUDA toolkit to build for (inclusive). Fewer variants mean fewer systems the
    #: kernel runs on: set it only when needed.
    minver: Version | None = None
    #: The newest CUDA toolkit to build for (inclusive).
    maxver: Version | None = None
    #: Python packages the CUDA variants need.
    python_depends: list[CudaPythonDep] = _list()
    #: Kernels the CUDA variants need at run time.
    kernel_depends: list[KernelDependency] = _list()


@record
class XpuGeneral:
    #: Python packages the XPU variants need.
    python_depends: list[XpuPythonDep] = _list()
    #: Kernels the XPU variants need at run time.
    kernel_depends: list[KernelDependency] = _list()


@record
class NeuronGeneral:
    #: Python packages the Neuron variants need.
    python_depends: list[NeuronPythonDep] = _list()
    #: Kernels the Neuron variants need at run time.
    kernel_depends: list[KernelDependency] = _list()


@record
class TpuGeneral:
    #: Python packages the TPU variants need (none are allowed yet).
    python_depends: list[TpuPythonDep] = _list()


@record
class General:
    """``[general]``."""

    #: The kernel's name; its Python module is the name with `-` turned into `_`.
    name: ProjectName
    #: The kernel's major (API) version, written to metadata.json; uploads go to the Hub branch
    #: `v<version>`.
    version: int
    #: The format edition.
    edition: Literal[6]
    #: The license, as a Hub (SPDX) identifier such as `Apache-2.0`.
    license: str
    #: The backends to build for. A kernel is built only when the backend of its language is listed;
    #: a listed backend without kernels ships pure Python.
    backends: list[Backend]
    #: The git URL of the code this kernel comes from.
    upstream: GitUrl | None = None
    #: The git URL of this kernel project.
    source: GitUrl | None = None
    #: The oldest `kernels` client that can load this kernel.
    minver: Version | None = None
    #: Python packages every variant needs (an allowlist shared with the `kernels` client).
    python_depends: list[GeneralPythonDep] = _list()
    #: Kernels this kernel needs at run time, on every backend.
    kernel_depends: list[KernelDependency] = _list()
    #: Where the kernel is uploaded.
    hub: Hub | None = None
    #: Settings for the CUDA variants only.
    cuda: CudaGeneral | None = None
    #: Settings for the XPU variants only.
    xpu: XpuGeneral | None = None
    #: Settings for the Neuron variants only.
    neuron: NeuronGeneral | None = None
    #: Settings for the TPU variants only.
    tpu: TpuGeneral | None = None

    @property
    def module_name(self) -> str:
        """The Python module name: the project name with ``-`` turned into ``_``."""
        return self.name.replace("-", "_")


# ------------------------------------------------------------------------ frameworks


@record
class Torch:
    """``[torch]``: an ahead-of-time compiled Torch extension."""

    table: ClassVar[str] = "torch"
    #: The binding sources (`torch-ext/torch_binding.cpp`, `.h`): they register the ops with torch
    #: and call the kernels.
    src: list[RelPath] = _list()
    #: Include directories for the binding sources.
    include: list[RelDir] = _list()
    #: Extensions of the files under `torch-ext/<module>/` that ship with the kernel.
    pyext: list[Extension] = attrs.field(factory=lambda: ["py", "pyi"])
    #: The oldest torch version to build for (inclusive).
    minver: Version | None = None
    #: The newest torch version to build for (inclusive).
    maxver: Version | None = None
    #: Build against torch's stable ABI from this torch version on (one build per backend version
    #: instead of one per torch version); one version for every backend or a table of backend =
    #: version.
    stable_abi: Version | dict[Backend, Version] | None = None
    #: Extra compiler flags for the binding sources.
    cxx_flags: list[Flag] = _list()

    def stable_abi_for(self, backend: str) -> Version | None:
        if isinstance(self.stable_abi, dict):
            # Backend names are strings; one the table lacks has no stable ABI.
            return cast("dict[str, Version]", self.stable_abi).get(backend)
        return self.stable_abi


@record
class TorchNoarch:
    """``[torch-noarch]``: a pure-Python (JIT, Triton, …) Torch kernel."""

    table: ClassVar[str] = "torch-noarch"
    #: Extensions of the files under `torch-ext/<module>/` that ship with the kernel.
    pyext: list[Extension] = attrs.field(factory=lambda: ["py", "pyi"])
    #: The CUDA capabilities the kernel supports (metadata.json).
    cuda_capabilities: list[CudaCapability] = _list()
    #: The ROCm targets the kernel supports (metadata.json).
    rocm_archs: list[RocmArch] = _list()


@record
class TvmFfi:
    """``[tvm-ffi]``: an extension bound through the TVM FFI C ABI."""

    table: ClassVar[str] = "tvm-ffi"
    #: The binding sources (under `tvm-ffi-ext/`).
    src: list[RelPath] = _list()
    #: Include directories for the binding sources.
    include: list[RelDir] = _list()
    #: Extensions of the files under `tvm-ffi-ext/<module>/` that ship with the kernel.
    pyext: list[Extension] = attrs.field(factory=lambda: ["py", "pyi"])
    #: Extra compiler flags for the binding sources.
    cxx_flags: list[Flag] = _list()


Framework = Union[Torch, TorchNoarch, TvmFfi]  # noqa: UP007 - cattrs needs the runtime union
FRAMEWORKS: dict[str, type] = {cls.table: cls for cls in (Torch, TorchNoarch, TvmFfi)}

# --------------------------------------------------------------------------- kernels


@record
class CppCpuKernel:
    """``language = "cpp-cpu"``: C++ for the CPU, built with ``stdenv``."""

    #: The kernel's source language and backend; decides which other keys are allowed.
    language: Literal["cpp-cpu"]
    #: The kernel's files, headers included; only listed files enter the build.
    src: list[RelPath]
    #: Libraries to compile against (`torch`: the ATen and c10 headers).
    depends: list[CpuDep] = _list()
    #: Include directories, relative to the project root.
    include: list[RelDir] = _list()
    #: Extra flags for the C++ compiler, after nixgen's own.
    cxx_flags: list[Flag] = _list()


@record
class CppCudaKernel:
    """``language = "cpp-cuda"``: CUDA C++, built with ``cudaPackages.backendStdenv``."""

    #: The kernel's source language and backend; decides which other keys are allowed.
    language: Literal["cpp-cuda"]
    #: The kernel's files, headers included; only listed files enter the build.
    src: list[RelPath]
    #: Libraries to compile against: `torch`, a CUTLASS version.
    depends: list[CudaDep] = _list()
    #: Include directories, relative to the project root.
    include: list[RelDir] = _list()
    #: Extra flags for the C++ compiler, after nixgen's own.
    cxx_flags: list[Flag] = _list()
    #: Extra flags for nvcc, after nixgen's own.
    cuda_flags: list[Flag] = _list()
    #: The CUDA capabilities to compile for (default: the builder's list for each toolkit),
    #: intersected with what each toolkit can build; PTX is embedded for `+PTX` ones only.
    cuda_capabilities: list[CudaCapability] | None = None
    #: Leave this kernel out of variants whose CUDA toolkit is older.
    cuda_minver: Version | None = None


@record
class CppRocmKernel:
    """``language = "cpp-rocm"``: HIP C++, built with ``rocmPackages``."""

    #: The kernel's source language and backend; decides which other keys are allowed.
    language: Literal["cpp-rocm"]
    #: The kernel's files, headers included; only listed files enter the build.
    src: list[RelPath]
    #: Libraries to compile against (`torch`).
    depends: list[RocmDep] = _list()
    #: Include directories, relative to the project root.
    include: list[RelDir] = _list()
    #: Extra flags for the C++ compiler, after nixgen's own.
    cxx_flags: list[Flag] = _list()
    #: Extra flags for hipcc, after nixgen's own.
    hip_flags: list[Flag] = _list()
    #: The ROCm targets to compile for (default: every one the builder supports).
    rocm_archs: list[RocmArch] | None = None


@record
class CppXpuKernel:
    """``language = "cpp-xpu"``: SYCL C++, built with the Intel oneAPI stdenv."""

    #: The kernel's source language and backend; decides which other keys are allowed.
    language: Literal["cpp-xpu"]
    #: The kernel's files, headers included; only listed files enter the build.
    src: list[RelPath]
    #: Libraries to compile against: `torch`, `sycl_tla`.
    depends: list[XpuDep] = _list()
    #: Include directories, relative to the project root.
    include: list[RelDir] = _list()
    #: Extra flags for the C++ compiler, after nixgen's own.
    cxx_flags: list[Flag] = _list()
    #: Extra flags for the SYCL compiler (`icpx -fsycl`).
    sycl_flags: list[Flag] = _list()


@record
class CppMetalKernel:
    """``language = "cpp-metal"``: Objective-C++ and Metal, built with the darwin stdenv."""

    #: The kernel's source language and backend; decides which other keys are allowed.
    language: Literal["cpp-metal"]
    #: The kernel's files, headers included; only listed files enter the build.
    src: list[RelPath]
    #: Libraries to compile against: `torch`, `metal-cpp`.
    depends: list[MetalDep] = _list()
    #: Include directories, relative to the project root.
    include: list[RelDir] = _list()
    #: Extra flags for the C++ compiler, after nixgen's own.
    cxx_flags: list[Flag] = _list()


class _RustCrate:
    """What every Rust kernel shares: the crate found by convention in `src`.

    ``src`` lists files and directories (a directory stands for every file under it). Among
    them: one ``Cargo.lock``; the crate's ``Cargo.toml``; and, for a Cargo workspace, the
    workspace's ``Cargo.toml`` next to the lock file. Parsing build.toml never reads them.
    """

    src: list[RelPath]
    lib_name: str | None

    def lockfile(self) -> str:
        """The ``Cargo.lock`` listed in `src`."""
        return next(p for p in self.src if p.rsplit("/", 1)[-1] == "Cargo.lock")

    def manifests(self) -> list[str]:
        """Every ``Cargo.toml`` listed in `src`."""
        return [p for p in self.src if p.rsplit("/", 1)[-1] == "Cargo.toml"]

    def lock_dir(self) -> str:
        """The directory of the lock file (`""` for the project root)."""
        return self.lockfile().rpartition("/")[0]

    def workspace_manifest(self) -> str | None:
        """The workspace's ``Cargo.toml``: the one next to the lock file, when there are two."""
        manifests = self.manifests()
        if len(manifests) < 2:
            return None
        return next((m for m in manifests if m.rpartition("/")[0] == self.lock_dir()), None)

    def manifest(self) -> str:
        """The crate's ``Cargo.toml`` (for a workspace, the member's, not the workspace's)."""
        workspace = self.workspace_manifest()
        return next(m for m in self.manifests() if m != workspace)

    def library(self, name: str) -> str:
        """The crate's library name: `lib-name`, else the kernel name with `-` → `_`."""
        return self.lib_name or default_library(name)


def default_library(name: str) -> str:
    """The library name of a Rust kernel called `name` by convention."""
    return name.replace("-", "_")


@record
class RustCpuKernel(_RustCrate):
    """``language = "rust-cpu"``: a Cargo crate built with ``rustPlatform.buildRustPackage``.

    Convention over configuration: ``src`` lists the crate's ``Cargo.toml`` and one
    ``Cargo.lock`` (at the crate or at a workspace root, next to the workspace's
    ``Cargo.toml``; one that ``src`` omits is found next to the manifest or in the nearest
    directory above it, with a warning); the crate builds a ``staticlib`` named after the
    kernel (``-`` turned into ``_``) exporting ``extern "C"`` functions, or tvm-ffi functions
    when the crate is the `[tvm-ffi]` binding itself.
    """

    #: The kernel's source language and backend; decides which other keys are allowed.
    language: Literal["rust-cpu"]
    #: The crate's `Cargo.toml`, a `Cargo.lock` and its sources; a directory stands for every
    #: file under it.
    src: list[RelPath]
    #: Always empty: a Rust kernel links no C++ library.
    depends: list[Literal[()]] = _list()  # type: ignore[valid-type]
    #: Cargo features to enable.
    features: list[CargoFeature] = _list()
    #: The crate's library name (`[lib] name`), when it is not the kernel's name with `-`
    #: turned into `_`.
    lib_name: RustLibName | None = None


@record
class RustCudaKernel(_RustCrate):
    """``language = "rust-cuda"``: a host crate and a device crate compiled to PTX by the
    cuda-oxide ``rustc`` codegen backend (huggingface/kernels' `dsl = "cuda-oxide"`).

    Like `rust-cpu`, plus: the device crate's manifest (`device-manifest`) and a
    ``rust-toolchain.toml`` in `src` (cuda-oxide needs a nightly toolchain). The device crate
    is built first and writes its PTX into `ptx-dir`, which the host crate embeds.
    """

    #: The kernel's source language and backend; decides which other keys are allowed.
    language: Literal["rust-cuda"]
    #: The crates' `Cargo.toml` files, a `Cargo.lock`, the `rust-toolchain.toml` and the
    #: sources; a directory stands for every file under it.
    src: list[RelPath]
    #: The device crate's `Cargo.toml` (compiled to PTX).
    device_manifest: RelPath
    #: Always empty: a Rust kernel links no C++ library.
    depends: list[Literal[()]] = _list()  # type: ignore[valid-type]
    #: Cargo features to enable (host crate).
    features: list[CargoFeature] = _list()
    #: The host crate's library name (`[lib] name`), when it is not the kernel's name with `-`
    #: turned into `_`.
    lib_name: RustLibName | None = None
    #: Where the device build writes its PTX, relative to the project root (default:
    #: `kernels-ptx`).
    ptx_dir: RelDir | None = None
    #: The CUDA capabilities to build for (default: the builder's list for each toolkit); the
    #: PTX targets the lowest (without `+PTX`), newer GPUs JIT it.
    cuda_capabilities: list[CudaCapability] | None = None

    def manifests(self) -> list[str]:
        """Every ``Cargo.toml`` listed in `src` but the device crate's."""
        return [m for m in super().manifests() if m != self.device_manifest]

    def toolchain_file(self) -> str | None:
        """The ``rust-toolchain.toml`` listed in `src`."""
        return next((p for p in self.src if p.rsplit("/", 1)[-1] == "rust-toolchain.toml"), None)


RUST_KERNELS = (RustCpuKernel, RustCudaKernel)


Kernel = Union[  # noqa: UP007 - cattrs needs the runtime union
    CppCpuKernel,
    CppCudaKernel,
    CppRocmKernel,
    CppXpuKernel,
    CppMetalKernel,
    RustCpuKernel,
    RustCudaKernel,
]
KERNEL_CLASSES: dict[str, type] = {
    "cpp-cpu": CppCpuKernel,
    "cpp-cuda": CppCudaKernel,
    "cpp-rocm": CppRocmKernel,
    "cpp-xpu": CppXpuKernel,
    "cpp-metal": CppMetalKernel,
    "rust-cpu": RustCpuKernel,
    "rust-cuda": RustCudaKernel,
}


def backend_of(kernel: Kernel) -> str:
    """The backend a kernel's language builds for."""
    return tables.LANGUAGE_BACKEND[kernel.language]


# ----------------------------------------------------------------------------- build


@record
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
        """The kernels that build for `backend`, by name (sorted)."""
        return self._by_backend.get(backend, {})

    @functools.cached_property
    def _by_backend(self) -> dict[str, dict[str, Kernel]]:
        # Planning asks for every variant (27 for the flash-attn3 project); sorting a
        # thousand kernels each time was a visible share of a large render. A Build is
        # immutable, so the answer is computed once (in the instance's __dict__, which
        # the model's equality and hash never read).
        out: dict[str, dict[str, Kernel]] = {}
        for name, kernel in sorted(self.kernels.items()):
            out.setdefault(backend_of(kernel), {})[name] = kernel
        return out

    def source_files(self) -> list[str]:
        """Every file the project declares (framework and kernel sources), sorted."""
        files: set[str] = set()
        if isinstance(self.framework, (Torch, TvmFfi)):
            files.update(self.framework.src)
        for kernel in self.kernels.values():
            files.update(kernel.src)
        return sorted(files)


def python_package_dir(build: Build) -> str:
    """Where the kernel's Python package lives, relative to the project root."""
    ext = "tvm-ffi-ext" if isinstance(build.framework, TvmFfi) else "torch-ext"
    return f"{ext}/{build.general.module_name}"


def shared_headers(build: Build) -> list[str]:
    """Every header the project lists anywhere, sorted: the compile inputs each C++ kernel
    and the binding get besides their own sources (real projects include a sibling's or
    the binding's header, as the anchor compiles every kernel in one tree)."""
    return [rel for rel in build.source_files() if tables.is_header(rel)]
