"""The edition-6 model: the only view of a build.toml that later stages see.

Kernels are a union tagged by ``language``: each class carries exactly the fields that are
possible for its language and backend, so an impossible combination (``cuda-flags`` on a
CPU kernel, ``features`` on a C++ kernel) is a type error when structuring, not a runtime
check. Older editions are read by their own schemas (``nixgen.reading.schema``) and upgraded into
these classes (``nixgen.reading.upgrade``).

Field names are snake_case in Python and kebab-case in TOML; `nixgen.reading.convert.key_of` gives
the TOML spelling (a field may override it with ``metadata={"key": ...}``). A field's
description (in the JSON Schema and docs/build-toml.md) is its ``doc`` metadata.
"""

from __future__ import annotations

import functools
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Generic,
    Literal,
    NewType,
    TypeAlias,
    TypeVar,
    Union,
)

import attrs

from nixgen.core import tables


@attrs.frozen
class Named:
    """`Annotated` metadata naming and describing an allowlist (a Literal type), which the
    JSON Schema lists under its name: two allowlists may hold the same values."""

    name: str
    doc: str


if TYPE_CHECKING:
    Backend: TypeAlias = str
else:
    # The backends of `data/languages.json` (a Literal built from the table, as below).
    Backend = Annotated[
        Literal[tables.BACKENDS],
        Named("Backend", "A backend: the kind of device a variant runs on."),
    ]

# Each NewType's `__doc__` is its description in the JSON Schema and docs/build-toml.md.
ProjectName = NewType("ProjectName", str)
ProjectName.__doc__ = "``general.name``: lowercase letters, digits and dashes (the anchor's rule)."
KernelName = NewType("KernelName", str)
KernelName.__doc__ = (
    "A kernel table name: used for Nix attributes, file names and (Rust) library names."
)
Version = NewType("Version", str)
Version.__doc__ = "Dot-separated unsigned integers, e.g. ``2.12`` or ``12.8``."
GitUrl = NewType("GitUrl", str)
GitUrl.__doc__ = (
    "A git URL (https, http, git, ssh, git+ssh, git+https, git+http or ``git@host:org/repo``)."
)
RelPath = NewType("RelPath", str)
RelPath.__doc__ = (
    "A path relative to the project root, with ``/`` separators, that stays inside the project."
)
RelDir = NewType("RelDir", str)
RelDir.__doc__ = "A directory relative to the project root (``.`` is the root itself)."
Flag = NewType("Flag", str)
Flag.__doc__ = "A compiler flag (any string a Nix string can carry)."
CudaCapability = NewType("CudaCapability", str)
CudaCapability.__doc__ = (
    "``8.0``, ``9.0a``, ``10.0f``, ``9.0+PTX``: a CUDA compute capability (``major.minor``, "
    "optional ``a``/``f``); ``+PTX`` embeds its PTX besides the machine code, for newer GPUs."
)
RocmArch = NewType("RocmArch", str)
RocmArch.__doc__ = "``gfx942``, ``gfx1100``: an AMD GPU target."
RepoId = NewType("RepoId", str)
RepoId.__doc__ = "A ``org/name`` Hub repository id."
HubBranch = NewType("HubBranch", str)
HubBranch.__doc__ = "A branch of a Hub repository (``v1``, ``dev``; not ``refs/…``)."
CargoFeature = NewType("CargoFeature", str)
CargoFeature.__doc__ = "A Cargo feature name."
RustLibName = NewType("RustLibName", str)
RustLibName.__doc__ = "A Rust library name (an identifier: `[lib] name` of a crate)."
Extension = NewType("Extension", str)
Extension.__doc__ = "A file extension without the dot (``py``, ``json``)."


def _allowlist(values: list[str], name: str | None = None, doc: str = "") -> Any:
    """A Literal type built from a data table, so allowlists live in one JSON file; `name`d
    for the JSON Schema when it allows anything."""
    literal = Literal[tuple(values)] if values else Literal[()]
    return Annotated[literal, Named(name, doc)] if name and values else literal


def _python_deps(name: str, backend: str, who: str) -> Any:
    doc = f"A Python package {who} may depend on."
    return _allowlist(tables.python_dependencies(backend), name, doc)


def _cpp_deps(name: str, language: str) -> Any:
    doc = f"A library a `{language}` kernel may compile against."
    return _allowlist(tables.cpp_dependencies(language), name, doc)


# The allowlists below are Literal types built at run time from the data tables: cattrs
# validates values against them and nixgen.rendering.jsonschema lists them. A static type checker
# cannot evaluate a Literal built from data, so it sees each of them as `str`; the runtime objects
# are unchanged.
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
    GeneralPythonDep = _python_deps("GeneralPythonDep", "general", "every variant")
    CudaPythonDep = _python_deps("CudaPythonDep", "cuda", "the CUDA variants")
    XpuPythonDep = _python_deps("XpuPythonDep", "xpu", "the XPU variants")
    NeuronPythonDep = _python_deps("NeuronPythonDep", "neuron", "the Neuron variants")
    TpuPythonDep = _allowlist(tables.python_dependencies("tpu"))
    CpuDep = _cpp_deps("CpuDep", "cpp-cpu")
    CudaDep = _cpp_deps("CudaDep", "cpp-cuda")
    RocmDep = _cpp_deps("RocmDep", "cpp-rocm")
    XpuDep = _cpp_deps("XpuDep", "cpp-xpu")
    MetalDep = _cpp_deps("MetalDep", "cpp-metal")


def _doc(text: str) -> dict[str, str]:
    """A field's metadata: its description in the JSON Schema and docs/build-toml.md."""
    return {"doc": text}


def _list(doc: str) -> Any:
    """A field that defaults to an empty list."""
    return attrs.field(factory=list, metadata=_doc(doc))


def _unset(doc: str) -> Any:
    """A field that defaults to None (not given)."""
    return attrs.field(default=None, metadata=_doc(doc))


#: The extensions a framework ships from its package directory when build.toml's `pyext`
#: is not given, and those of the pure-Python variants of a project without a framework.
DEFAULT_PYEXT = ("py", "pyi")


def _pyext(package_dir: str) -> Any:
    """A framework's `pyext` field (default: `DEFAULT_PYEXT`)."""
    return attrs.field(
        factory=lambda: list(DEFAULT_PYEXT),
        metadata=_doc(
            f"Extensions of the files under `{package_dir}/<module>/` that ship with the kernel."
        ),
    )


# --------------------------------------------------------------------------- general


@attrs.frozen(kw_only=True)
class Hub:
    """``[general.hub]``: where the built kernel is uploaded."""

    repo_id: RepoId | None = _unset("The Hub repository the built kernel is uploaded to.")
    branch: HubBranch | None = _unset("The branch to upload to (default: `v<version>`).")


@attrs.frozen(kw_only=True)
class KernelDependency:
    """A kernel this kernel needs at run time: a Hub repo at a version or a revision."""

    repo_id: RepoId = attrs.field(metadata=_doc("The Hub repository of the kernel needed."))
    version: int | None = _unset("Its major version (the `v<version>` branch).")
    revision: str | None = _unset("Or a git revision of it.")


@attrs.frozen(kw_only=True)
class CudaGeneral:
    """``[general.cuda]``: bounds on the CUDA toolkit versions to build for."""

    minver: Version | None = _unset(
        "The oldest CUDA toolkit to build for (inclusive). Fewer variants mean fewer "
        "systems the kernel runs on: set it only when needed."
    )
    maxver: Version | None = _unset("The newest CUDA toolkit to build for (inclusive).")
    python_depends: list[CudaPythonDep] = _list("Python packages the CUDA variants need.")
    kernel_depends: list[KernelDependency] = _list("Kernels the CUDA variants need at run time.")


@attrs.frozen(kw_only=True)
class XpuGeneral:
    python_depends: list[XpuPythonDep] = _list("Python packages the XPU variants need.")
    kernel_depends: list[KernelDependency] = _list("Kernels the XPU variants need at run time.")


@attrs.frozen(kw_only=True)
class NeuronGeneral:
    python_depends: list[NeuronPythonDep] = _list("Python packages the Neuron variants need.")
    kernel_depends: list[KernelDependency] = _list("Kernels the Neuron variants need at run time.")


@attrs.frozen(kw_only=True)
class TpuGeneral:
    python_depends: list[TpuPythonDep] = _list(
        "Python packages the TPU variants need (none are allowed yet)."
    )


@attrs.frozen(kw_only=True)
class General:
    """``[general]``."""

    name: ProjectName = attrs.field(
        metadata=_doc("The kernel's name; its Python module is the name with `-` turned into `_`.")
    )
    version: int = attrs.field(
        metadata=_doc(
            "The kernel's major (API) version, written to metadata.json; uploads go to the "
            "Hub branch `v<version>`."
        )
    )
    edition: Literal[6] = attrs.field(metadata=_doc("The format edition."))
    license: str = attrs.field(
        metadata=_doc("The license, as a Hub (SPDX) identifier such as `Apache-2.0`.")
    )
    backends: list[Backend] = attrs.field(
        metadata=_doc(
            "The backends to build for. A kernel is built only when the backend of its "
            "language is listed; a listed backend without kernels ships pure Python."
        )
    )
    upstream: GitUrl | None = _unset("The git URL of the code this kernel comes from.")
    source: GitUrl | None = _unset("The git URL of this kernel project.")
    minver: Version | None = _unset("The oldest `kernels` client that can load this kernel.")
    python_depends: list[GeneralPythonDep] = _list(
        "Python packages every variant needs (an allowlist shared with the `kernels` client)."
    )
    kernel_depends: list[KernelDependency] = _list(
        "Kernels this kernel needs at run time, on every backend."
    )
    hub: Hub | None = _unset("Where the kernel is uploaded.")
    cuda: CudaGeneral | None = _unset("Settings for the CUDA variants only.")
    xpu: XpuGeneral | None = _unset("Settings for the XPU variants only.")
    neuron: NeuronGeneral | None = _unset("Settings for the Neuron variants only.")
    tpu: TpuGeneral | None = _unset("Settings for the TPU variants only.")

    @property
    def module_name(self) -> str:
        """The Python module name: the project name with ``-`` turned into ``_``."""
        return self.name.replace("-", "_")


# ------------------------------------------------------------------------ frameworks


@attrs.frozen(kw_only=True)
class Torch:
    """``[torch]``: an ahead-of-time compiled Torch extension."""

    table: ClassVar[str] = "torch"
    src: list[RelPath] = _list(
        "The binding sources (`torch-ext/torch_binding.cpp`, `.h`): they register the "
        "ops with torch and call the kernels."
    )
    include: list[RelDir] = _list("Include directories for the binding sources.")
    pyext: list[Extension] = _pyext("torch-ext")
    minver: Version | None = _unset("The oldest torch version to build for (inclusive).")
    maxver: Version | None = _unset("The newest torch version to build for (inclusive).")
    stable_abi: Version | dict[Backend, Version] | None = _unset(
        "Build against torch's stable ABI from this torch version on (one build per "
        "backend version instead of one per torch version); one version for every "
        "backend or a table of backend = version."
    )
    cxx_flags: list[Flag] = _list("Extra compiler flags for the binding sources.")

    def stable_abi_for(self, backend: str) -> Version | None:
        if isinstance(self.stable_abi, dict):
            # A backend the table lacks has no stable ABI.
            return self.stable_abi.get(backend)
        return self.stable_abi


@attrs.frozen(kw_only=True)
class TorchNoarch:
    """``[torch-noarch]``: a pure-Python (JIT, Triton, …) Torch kernel."""

    table: ClassVar[str] = "torch-noarch"
    pyext: list[Extension] = _pyext("torch-ext")
    cuda_capabilities: list[CudaCapability] = _list(
        "The CUDA capabilities the kernel supports (metadata.json)."
    )
    rocm_archs: list[RocmArch] = _list("The ROCm targets the kernel supports (metadata.json).")


@attrs.frozen(kw_only=True)
class TvmFfi:
    """``[tvm-ffi]``: an extension bound through the TVM FFI C ABI."""

    table: ClassVar[str] = "tvm-ffi"
    src: list[RelPath] = _list("The binding sources (under `tvm-ffi-ext/`).")
    include: list[RelDir] = _list("Include directories for the binding sources.")
    pyext: list[Extension] = _pyext("tvm-ffi-ext")
    cxx_flags: list[Flag] = _list("Extra compiler flags for the binding sources.")


Framework = Union[Torch, TorchNoarch, TvmFfi]  # noqa: UP007 - cattrs needs the runtime union
FRAMEWORKS: dict[str, type] = {cls.table: cls for cls in (Torch, TorchNoarch, TvmFfi)}

# --------------------------------------------------------------------------- kernels


#: What a kernel's `language` field says, whatever the language.
_LANGUAGE = "The kernel's source language and backend; decides which other keys are allowed."

_Language = TypeVar("_Language")
_Dep = TypeVar("_Dep")


@attrs.frozen(kw_only=True)
class _CppKernel(Generic[_Language, _Dep]):
    """What every C++ kernel has; each language's class adds its backend's own keys.

    Generic in the two fields that differ only in their allowed values (the `language` tag
    and the `depends` allowlist): a field redefined in a subclass would move to the end of
    the table (in the schema, the docs and ``nixgen show``)."""

    language: _Language = attrs.field(metadata=_doc(_LANGUAGE))
    src: list[RelPath] = attrs.field(
        metadata=_doc("The kernel's files, headers included; only listed files enter the build.")
    )
    depends: list[_Dep] = _list(
        "Libraries to compile against, among those the kernel's language allows (`torch`: "
        "the ATen and c10 headers)."
    )
    include: list[RelDir] = _list("Include directories, relative to the project root.")
    cxx_flags: list[Flag] = _list("Extra flags for the C++ compiler, after nixgen's own.")


@attrs.frozen(kw_only=True)
class CppCpuKernel(_CppKernel[Literal["cpp-cpu"], CpuDep]):
    """``language = "cpp-cpu"``: C++ for the CPU, built with ``stdenv``."""


@attrs.frozen(kw_only=True)
class CppCudaKernel(_CppKernel[Literal["cpp-cuda"], CudaDep]):
    """``language = "cpp-cuda"``: CUDA C++, built with ``cudaPackages.backendStdenv``."""

    cuda_flags: list[Flag] = _list(
        "Extra flags for nvcc, after nixgen's own and, in a torch variant, those torch's CMake"
        " config gives (`--expt-relaxed-constexpr`, `--expt-extended-lambda`, …)."
    )
    cuda_capabilities: list[CudaCapability] | None = _unset(
        "The CUDA capabilities to compile for (default: the builder's list for each "
        "toolkit), intersected with what each toolkit can build; PTX is embedded for "
        "`+PTX` ones only."
    )
    cuda_minver: Version | None = _unset(
        "Leave this kernel out of variants whose CUDA toolkit is older."
    )


@attrs.frozen(kw_only=True)
class CppRocmKernel(_CppKernel[Literal["cpp-rocm"], RocmDep]):
    """``language = "cpp-rocm"``: HIP C++, built with ``rocmPackages``."""

    hip_flags: list[Flag] = _list("Extra flags for hipcc, after nixgen's own.")
    rocm_archs: list[RocmArch] | None = _unset(
        "The ROCm targets to compile for (default: every one the builder supports)."
    )


@attrs.frozen(kw_only=True)
class CppXpuKernel(_CppKernel[Literal["cpp-xpu"], XpuDep]):
    """``language = "cpp-xpu"``: SYCL C++, built with the Intel oneAPI stdenv."""

    sycl_flags: list[Flag] = _list("Extra flags for the SYCL compiler (`icpx -fsycl`).")


@attrs.frozen(kw_only=True)
class CppMetalKernel(_CppKernel[Literal["cpp-metal"], MetalDep]):
    """``language = "cpp-metal"``: Objective-C++ and Metal, built with the darwin stdenv."""


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


@attrs.frozen(kw_only=True)
class RustCpuKernel(_RustCrate):
    """``language = "rust-cpu"``: a Cargo crate built with ``rustPlatform.buildRustPackage``.

    Convention over configuration: ``src`` lists the crate's ``Cargo.toml`` and one
    ``Cargo.lock`` (at the crate or at a workspace root, next to the workspace's
    ``Cargo.toml``; one that ``src`` omits is found next to the manifest or in the nearest
    directory above it, with a warning); the crate builds a ``staticlib`` named after the
    kernel (``-`` turned into ``_``) exporting ``extern "C"`` functions, or tvm-ffi functions
    when the crate is the `[tvm-ffi]` binding itself.
    """

    language: Literal["rust-cpu"] = attrs.field(metadata=_doc(_LANGUAGE))
    src: list[RelPath] = attrs.field(
        metadata=_doc(
            "The crate's `Cargo.toml`, a `Cargo.lock` and its sources; a directory stands "
            "for every file under it."
        )
    )
    depends: list[Literal[()]] = _list("Always empty: a Rust kernel links no C++ library.")  # type: ignore[valid-type]
    features: list[CargoFeature] = _list("Cargo features to enable.")
    lib_name: RustLibName | None = _unset(
        "The crate's library name (`[lib] name`), when it is not the kernel's name with "
        "`-` turned into `_`."
    )


@attrs.frozen(kw_only=True)
class RustCudaKernel(_RustCrate):
    """``language = "rust-cuda"``: a host crate and a device crate compiled to PTX by the
    cuda-oxide ``rustc`` codegen backend (huggingface/kernels' `dsl = "cuda-oxide"`).

    Like `rust-cpu`, plus: the device crate's manifest (`device-manifest`) and a
    ``rust-toolchain.toml`` in `src` (cuda-oxide needs a nightly toolchain). The device crate
    is built first and writes its PTX into `ptx-dir`, which the host crate embeds.
    """

    language: Literal["rust-cuda"] = attrs.field(metadata=_doc(_LANGUAGE))
    src: list[RelPath] = attrs.field(
        metadata=_doc(
            "The crates' `Cargo.toml` files, a `Cargo.lock`, the `rust-toolchain.toml` and "
            "the sources; a directory stands for every file under it."
        )
    )
    device_manifest: RelPath = attrs.field(
        metadata=_doc("The device crate's `Cargo.toml` (compiled to PTX).")
    )
    depends: list[Literal[()]] = _list("Always empty: a Rust kernel links no C++ library.")  # type: ignore[valid-type]
    features: list[CargoFeature] = _list("Cargo features to enable (host crate).")
    lib_name: RustLibName | None = _unset(
        "The host crate's library name (`[lib] name`), when it is not the kernel's name "
        "with `-` turned into `_`."
    )
    ptx_dir: RelDir | None = _unset(
        "Where the device build writes its PTX, relative to the project root (default: "
        "`kernels-ptx`)."
    )
    cuda_capabilities: list[CudaCapability] | None = _unset(
        "The CUDA capabilities to build for (default: the builder's list for each "
        "toolkit); the PTX targets the lowest (without `+PTX`), newer GPUs JIT it."
    )

    def manifests(self) -> list[str]:
        """Every ``Cargo.toml`` listed in `src` but the device crate's."""
        return [m for m in super().manifests() if m != self.device_manifest]

    def toolchain_file(self) -> str | None:
        """The ``rust-toolchain.toml`` listed in `src`."""
        return next((p for p in self.src if p.rsplit("/", 1)[-1] == "rust-toolchain.toml"), None)


RUST_KERNELS = (RustCpuKernel, RustCudaKernel)


def kernel_includes(kernel: RustCpuKernel | RustCudaKernel | _CppKernel[Any, Any]) -> list[RelDir]:
    """A kernel's include directories: a C++ kernel's `include`; a crate has none."""
    return [] if isinstance(kernel, RUST_KERNELS) else kernel.include


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
        """The kernels that build for `backend`, by name (sorted)."""
        return self._by_backend.get(backend, {})

    @functools.cached_property
    def _by_backend(self) -> dict[str, dict[str, Kernel]]:
        # Planning asks for every variant (27 for the flash-attn3 project); sorting a
        # thousand kernels each time was a visible share of a large render. A Build is
        # immutable, so the answer is computed once (attrs keeps the cached value in a
        # slot of its own, which the model's equality and hash never read).
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
