"""The edition-6 model: the only view of a project that later stages see.

Its classes are the field's edition 6 (the `kernels` client's `config/v6.rs`: what
kernel-builder, the client and the Hub read in build.toml), plus what nixgen builds beyond
that format, which lives in nixgen.toml (a field whose metadata says `file` =
`NIXGEN_TOML`): a Rust kernel's Cargo features, a cuda-oxide device crate, Rust kernels
linked into a ``[torch]`` extension. Kernels are a union tagged by ``language``: each class
carries exactly the fields that are possible for its language and backend, so an impossible
combination (``cuda-flags`` on a CPU kernel, ``depends`` on a Rust kernel) is a type error
when structuring, not a runtime check. An edition-6 build.toml is structured into these
classes (``nixgen.reading.schema.v6``); older editions are read by their own schemas
(``nixgen.reading.schema``) and converted into them (``nixgen.reading.upgrade``).

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


@attrs.frozen
class Allowlist:
    """`Annotated` metadata of an allowlist (a Literal type) narrower than the field's
    format: the format takes any of `format_values` (any string when None); nixgen takes
    only the Literal's values and says why in `reason` (a refusal beyond the format,
    `Problem.beyond_format`)."""

    format_values: tuple[str, ...] | None
    reason: str


#: The file of nixgen's own settings beside build.toml: a model field whose metadata says
#: ``file = NIXGEN_TOML`` is read there (`[kernel.<name>]`), never from build.toml.
NIXGEN_TOML = "nixgen.toml"
#: A model field whose metadata says ``file = DERIVED`` is read from no file: nixgen works it
#: out (a Rust crate's library name, from the crate's `Cargo.toml`).
DERIVED = "derived"


def in_build_toml(field: attrs.Attribute[Any]) -> bool:
    """Whether `field` is a key of build.toml (not one of nixgen.toml, not derived)."""
    return field.metadata.get("file") is None


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
Version.__doc__ = "``major.minor``: two dot-separated unsigned integers, e.g. ``2.12`` or ``12.8``."
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
    return Annotated[
        _allowlist(tables.python_dependencies(backend), name, doc),
        Allowlist(
            None,
            "the `kernels` client's table of Python dependencies has no such name for "
            "these variants; its builds refuse it",
        ),
    ]


def _cpp_deps(name: str, language: str) -> Any:
    doc = f"A library a `{language}` kernel may compile against."
    return Annotated[
        _allowlist(tables.cpp_dependencies(language), name, doc),
        Allowlist(
            tables.field_cpp_dependencies(),
            f"nixgen builds `{language}` kernels against "
            + ", ".join(f"`{d}`" for d in tables.cpp_dependencies(language))
            + " only",
        ),
    ]


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
    TpuPythonDep = Annotated[
        _allowlist(tables.python_dependencies("tpu")),
        Allowlist(None, "the `kernels` client's table has no Python dependency for TPU variants"),
    ]
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


def _nixgen_list(doc: str) -> Any:
    """A list of nixgen.toml's ``[kernel.<name>]`` (never of build.toml), empty by default."""
    return attrs.field(factory=list, metadata={"doc": doc, "file": NIXGEN_TOML})


def _nixgen_unset(doc: str) -> Any:
    """A value of nixgen.toml's ``[kernel.<name>]`` (never of build.toml), None by default."""
    return attrs.field(default=None, metadata={"doc": doc, "file": NIXGEN_TOML})


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

    repo_id: RepoId | None = _unset(
        "The Hub repository the built kernel is uploaded to (`nixgen upload`'s default)."
    )
    branch: HubBranch | None = _unset(
        "The branch to upload to (`nixgen upload`'s default; else `v<version>`)."
    )


@attrs.frozen(kw_only=True)
class KernelDependency:
    """A kernel this kernel needs at run time: a Hub repo at a version or a revision
    (exactly one of the two)."""

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


#: How a built variant holds its Python package: `files` (a directory) or `zip` (the
#: package in `<id>.zip`, which the `kernels` client 0.19 and later import).
BuildLayout = Literal["files", "zip"]


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
    build_layout: BuildLayout = attrs.field(
        default="files",
        metadata=_doc(
            "How each built variant holds the Python package: `files` (a directory) or "
            "`zip` (the package in `<id>.zip`, loaded by the `kernels` client 0.19 and "
            "later; metadata.json's `kernels-minver` says so)."
        ),
    )
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

    def all_kernel_depends(self, backend: str) -> list[KernelDependency]:
        """The kernels a `backend` variant needs: [general]'s, then its backend table's
        (the client's `General::all_kernel_depends`)."""
        section = {"cuda": self.cuda, "xpu": self.xpu, "neuron": self.neuron}.get(backend)
        return [*self.kernel_depends, *(section.kernel_depends if section is not None else [])]

    def all_python_depends(self, backend: str) -> list[str]:
        """The Python packages a `backend` variant needs: [general]'s, then its backend
        table's (metadata.json's `python-depends`, as the toolchain writes it)."""
        section = {"cuda": self.cuda, "xpu": self.xpu, "neuron": self.neuron, "tpu": self.tpu}
        own = section.get(backend)
        return [*self.python_depends, *(own.python_depends if own is not None else [])]


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
    """``[torch-noarch]``: a pure-Python (JIT, Triton, …) Torch kernel. Its keys are
    spelt with `_` (`cuda_capabilities`, `rocm_archs`), as the format has them."""

    table: ClassVar[str] = "torch-noarch"
    pyext: list[Extension] = _pyext("torch-ext")
    cuda_capabilities: list[CudaCapability] = attrs.field(
        factory=list,
        metadata={
            **_doc("The CUDA capabilities the kernel supports (metadata.json)."),
            "key": "cuda_capabilities",
        },
    )
    rocm_archs: list[RocmArch] = attrs.field(
        factory=list,
        metadata={
            **_doc("The ROCm targets the kernel supports (metadata.json)."),
            "key": "rocm_archs",
        },
    )


@attrs.frozen(kw_only=True)
class TvmFfi:
    """``[tvm-ffi]``: an extension bound through the TVM FFI C ABI (Rust kernels need it)."""

    table: ClassVar[str] = "tvm-ffi"
    src: list[RelPath] = _list(
        "The binding sources (under `tvm-ffi-ext/`); none when a Rust crate exports the "
        "functions itself."
    )
    include: list[RelDir] = _list("Include directories for the binding sources.")
    pyext: list[Extension] = _pyext("tvm-ffi-ext")
    cxx_flags: list[Flag] = _list("Extra compiler flags for the binding sources.")


@attrs.frozen(kw_only=True)
class MlxNoarch:
    """``[mlx-noarch]``: a pure-Python MLX kernel (Metal only; variant `mlx-metal`)."""

    table: ClassVar[str] = "mlx-noarch"
    pyext: list[Extension] = _pyext("mlx-ext")


Framework = Union[Torch, TorchNoarch, TvmFfi, MlxNoarch]  # noqa: UP007 - cattrs needs the runtime union
FRAMEWORKS: dict[str, type] = {cls.table: cls for cls in (Torch, TorchNoarch, TvmFfi, MlxNoarch)}
#: The frameworks whose variants compile nothing (pure Python).
NOARCH_FRAMEWORKS = (TorchNoarch, MlxNoarch)
#: The frameworks with a compiled extension (a binding's `src`, `cxx-flags`, `include`):
#: the one spelling of "is the framework compiled" (`isinstance(fw, COMPILED_FRAMEWORKS)`).
COMPILED_FRAMEWORKS = (Torch, TvmFfi)

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
    depends: list[_Dep] = attrs.field(
        metadata=_doc(
            "Libraries to compile against (`[]` for none), among those the kernel's language "
            "allows (`torch`: the ATen and c10 headers)."
        )
    )
    src: list[RelPath] = attrs.field(
        metadata=_doc("The kernel's files, headers included; only listed files enter the build.")
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
    """What every Rust kernel shares: the crate its `cargo-manifest` names.

    ``src`` lists files and directories (a directory stands for every file under it). Among
    them: one ``Cargo.lock``; and, for a Cargo workspace, the workspace's ``Cargo.toml``
    next to the lock file. The crate's own manifest enters the build whether `src` lists it
    or not. Parsing build.toml never reads them.
    """

    cargo_manifest: str
    src: list[RelPath]
    library: str | None

    def lockfile(self) -> str:
        """The ``Cargo.lock`` listed in `src`."""
        return next(p for p in self.src if p.rsplit("/", 1)[-1] == "Cargo.lock")

    def manifests(self) -> list[str]:
        """Every ``Cargo.toml`` of the crate's build: its own and those listed in `src` (a
        cuda-oxide device crate's is its own build's)."""
        device = getattr(self, "device_manifest", None)
        listed = [p for p in self.src if p.rsplit("/", 1)[-1] == "Cargo.toml" and p != device]
        return list(dict.fromkeys([self.cargo_manifest, *listed]))

    def lock_dir(self) -> str:
        """The directory of the lock file (`""` for the project root)."""
        return self.lockfile().rpartition("/")[0]

    def workspace_manifest(self) -> str | None:
        """The workspace's ``Cargo.toml``: one listed next to the lock file that is not the
        crate's."""
        return next(
            (
                m
                for m in self.manifests()
                if m != self.cargo_manifest and m.rpartition("/")[0] == self.lock_dir()
            ),
            None,
        )

    def manifest(self) -> str:
        """The crate's ``Cargo.toml`` (for a workspace, the member's)."""
        return self.cargo_manifest

    def sources(self) -> list[str]:
        """What enters the build: `src`, and the crate's manifest when `src` omits it."""
        covered = any(
            self.cargo_manifest == p or self.cargo_manifest.startswith(p.rstrip("/") + "/")
            for p in self.src
        )
        return [*self.src, *([] if covered else [self.cargo_manifest])]

    def library_name(self, name: str) -> str:
        """The crate's library name (read from its manifest), else the kernel name with
        `-` → `_` (a project read without its files)."""
        return self.library or default_library(name)


def default_library(name: str) -> str:
    """The library name of a Rust kernel called `name` when its crate was not read."""
    return name.replace("-", "_")


def _cargo_manifest() -> Any:
    return attrs.field(
        metadata=_doc(
            "The crate's `Cargo.toml`, relative to the project root; the crate builds a "
            "`staticlib` whose library name (`[lib] name`, else the package name) the "
            "extension links."
        )
    )


def _rust_src() -> Any:
    return attrs.field(
        metadata=_doc(
            "The crate's files: its sources, a `Cargo.lock` (the crate's or its workspace's, "
            "next to the workspace's `Cargo.toml`); a directory stands for every file under it."
        )
    )


def _library() -> Any:
    return attrs.field(
        default=None,
        metadata={
            "doc": "The crate's library name, read from its `Cargo.toml`.",
            "file": DERIVED,
        },
    )


_FEATURES = "Cargo features to enable when nixgen builds the crate."


@attrs.frozen(kw_only=True)
class RustCpuKernel(_RustCrate):
    """``language = "rust-cpu"``: a Cargo crate built with ``rustPlatform.buildRustPackage``
    into a ``staticlib`` exporting ``extern "C"`` functions, or tvm-ffi functions when the
    crate is the `[tvm-ffi]` binding itself."""

    language: Literal["rust-cpu"] = attrs.field(metadata=_doc(_LANGUAGE))
    cargo_manifest: RelPath = _cargo_manifest()
    src: list[RelPath] = _rust_src()
    features: list[CargoFeature] = _nixgen_list(_FEATURES)
    library: RustLibName | None = _library()


@attrs.frozen(kw_only=True)
class RustCudaOxideKernel(_RustCrate):
    """``language = "rust-cuda-oxide"``: a host crate and a device crate compiled to PTX by
    the cuda-oxide ``rustc`` codegen backend. ``src`` lists a ``rust-toolchain.toml``
    (cuda-oxide needs a nightly toolchain); nixgen.toml names the device crate. The device
    crate is built first and writes its PTX into `ptx-dir`, which the host crate embeds."""

    language: Literal["rust-cuda-oxide"] = attrs.field(metadata=_doc(_LANGUAGE))
    cargo_manifest: RelPath = _cargo_manifest()
    src: list[RelPath] = _rust_src()
    cuda_capabilities: list[CudaCapability] | None = _unset(
        "The CUDA capabilities to build for (default: the builder's list for each "
        "toolkit); the PTX targets the lowest (without `+PTX`), newer GPUs JIT it."
    )
    features: list[CargoFeature] = _nixgen_list(_FEATURES + " (host crate)")
    device_manifest: RelPath | None = _nixgen_unset(
        "The device crate's `Cargo.toml` (compiled to PTX), relative to the project root."
    )
    ptx_dir: RelDir | None = _nixgen_unset(
        "Where the device build writes its PTX, relative to the project root (default: "
        "`kernels-ptx`)."
    )
    library: RustLibName | None = _library()

    def toolchain_file(self) -> str | None:
        """The ``rust-toolchain.toml`` listed in `src`."""
        return next((p for p in self.src if p.rsplit("/", 1)[-1] == "rust-toolchain.toml"), None)


@attrs.frozen(kw_only=True)
class RustCutileKernel(_RustCrate):
    """``language = "rust-cutile"``: a Rust crate of cuTile kernels, compiled by the CUDA
    toolkit's Tile IR assembler (`tileiras`, CUDA 13.2 and later)."""

    language: Literal["rust-cutile"] = attrs.field(metadata=_doc(_LANGUAGE))
    cargo_manifest: RelPath = _cargo_manifest()
    src: list[RelPath] = _rust_src()
    tileiras_minver: Version = attrs.field(
        metadata=_doc(
            "The oldest `tileiras` (CUDA toolkit) the kernel needs, at least 13.2 (the first "
            "with cuTile); variants with an older CUDA leave the kernel out."
        )
    )
    features: list[CargoFeature] = _nixgen_list(_FEATURES)
    library: RustLibName | None = _library()


RUST_KERNELS = (RustCpuKernel, RustCudaOxideKernel, RustCutileKernel)
#: The first CUDA version whose toolkit ships `tileiras`, cuTile's compiler (the format's
#: least `tileiras-minver`).
MIN_TILEIRAS_VERSION = "13.2"


def kernel_includes(
    kernel: RustCpuKernel | RustCudaOxideKernel | RustCutileKernel | _CppKernel[Any, Any],
) -> list[RelDir]:
    """A kernel's include directories: a C++ kernel's `include`; a crate has none."""
    return [] if isinstance(kernel, RUST_KERNELS) else kernel.include


def kernel_sources(
    kernel: RustCpuKernel | RustCudaOxideKernel | RustCutileKernel | _CppKernel[Any, Any],
) -> list[str]:
    """What enters a kernel's build: its `src` (and a crate's manifest, listed or not)."""
    return kernel.sources() if isinstance(kernel, RUST_KERNELS) else list(kernel.src)


def kernel_cxx_flags(
    kernel: RustCpuKernel | RustCudaOxideKernel | RustCutileKernel | _CppKernel[Any, Any],
) -> list[Flag]:
    """A C++ kernel's `cxx-flags`; a crate has none."""
    return [] if isinstance(kernel, RUST_KERNELS) else kernel.cxx_flags


def kernel_backend_flags(
    kernel: RustCpuKernel | RustCudaOxideKernel | RustCutileKernel | _CppKernel[Any, Any],
) -> list[Flag]:
    """A kernel's flags for its backend's compiler (the language table's `flags` field:
    `cuda-flags`, `hip-flags`, `sycl-flags`); none for the other languages."""
    if isinstance(kernel, CppCudaKernel):
        return kernel.cuda_flags
    if isinstance(kernel, CppRocmKernel):
        return kernel.hip_flags
    if isinstance(kernel, CppXpuKernel):
        return kernel.sycl_flags
    return []


Kernel = Union[  # noqa: UP007 - cattrs needs the runtime union
    CppCpuKernel,
    CppCudaKernel,
    CppRocmKernel,
    CppXpuKernel,
    CppMetalKernel,
    RustCpuKernel,
    RustCudaOxideKernel,
    RustCutileKernel,
]
KERNEL_CLASSES: dict[str, type] = {
    "cpp-cpu": CppCpuKernel,
    "cpp-cuda": CppCudaKernel,
    "cpp-rocm": CppRocmKernel,
    "cpp-xpu": CppXpuKernel,
    "cpp-metal": CppMetalKernel,
    "rust-cpu": RustCpuKernel,
    "rust-cuda-oxide": RustCudaOxideKernel,
    "rust-cutile": RustCutileKernel,
}


def backend_of(kernel: Kernel) -> str:
    """The backend a kernel's language builds for."""
    return tables.LANGUAGE_BACKEND[kernel.language]


# ----------------------------------------------------------------------------- build


@attrs.frozen(kw_only=True)
class Build:
    """A whole project in edition 6: build.toml, and the kernels nixgen.toml adds.

    `framework` is None for a project without a framework section (an older edition's),
    which means a Torch no-arch (pure Python) kernel. `nixgen_kernels` names the kernels
    that nixgen.toml defines because the format cannot say them (Rust kernels linked into
    a `[torch]` extension); every other kernel is build.toml's.
    """

    general: General
    framework: Framework | None = None
    kernels: dict[KernelName, Kernel] = attrs.field(factory=dict)
    nixgen_kernels: frozenset[str] = frozenset()

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
        if isinstance(self.framework, COMPILED_FRAMEWORKS):
            files.update(self.framework.src)
        for kernel in self.kernels.values():
            files.update(kernel_sources(kernel))
        return sorted(files)


#: The source folder of each framework's Python package (`<dir>/<module>/`).
PACKAGE_DIRS = {
    "torch": "torch-ext",
    "torch-noarch": "torch-ext",
    "tvm-ffi": "tvm-ffi-ext",
    "mlx-noarch": "mlx-ext",
}


def python_package_dir(build: Build) -> str:
    """Where the kernel's Python package lives, relative to the project root."""
    return f"{PACKAGE_DIRS[build.framework_table]}/{build.general.module_name}"


def shared_headers(build: Build) -> list[str]:
    """Every header the project lists anywhere, sorted: the compile inputs each C++ kernel
    and the binding get besides their own sources (real projects include a sibling's or
    the binding's header, as the anchor compiles every kernel in one tree)."""
    return [rel for rel in build.source_files() if tables.is_header(rel)]
