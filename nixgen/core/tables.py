"""The data tables nixgen ships (``nixgen/data/*.json``), read by the planner.

nixgen plans from them in Python (`nixgen.planning.plan`) and writes the results into the generated
files, which the Nix library only reads. The tables the library reads at evaluation time
(the ABI policies, the backends and languages, the pins, the source kinds) are the library's
own `data/` (`nix/data` is a link here), and a vendored tree gets a copy of them
(`nixgen.rendering.library.LIB_DATA`).
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from typing import Any, cast

#: The installed package directory.
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def is_header(path: str) -> bool:
    """Whether `path` names a header (by its extension)."""
    return path.rpartition(".")[2].lower() in HEADER_EXTENSIONS if "." in path else False


_CAPABILITY = re.compile(r"^(\d+)\.(\d+)([af]?)$")


def read_text(name: str) -> str:
    # A plain path, not importlib.resources: importing that costs more than reading all
    # the tables (nixgen is always installed as files).
    with open(os.path.join(PACKAGE, "data", name), encoding="utf-8") as handle:
        return handle.read()


@cache
def table(name: str) -> Any:
    return json.loads(read_text(name))


#: The revisions generated flakes pin and the toolchain's binary cache: one table, read by the
#: Nix library too (`data/pins.json`); the render writes them into flake.nix, and `nixgen
#: build` passes the cache to a `nix build` that reads no flake.
_PINS: dict[str, str] = table("pins.json")
NIXPKGS_URL = _PINS["nixpkgs"]
KERNEL_BUILDER_URL = _PINS["kernel-builder"]
SUBSTITUTER = _PINS["substituter"]
SUBSTITUTER_KEY = _PINS["substituter-key"]
#: The format of the generated data, which the library checks first (`data/format.json`).
FORMAT: int = table("format.json")["format"]

#: The backends and kernel languages: one table, read by the Nix library too
#: (`data/languages.json`: its toolchains, `backendConfig`, `backendDefines` and builders).
_LANGUAGE_TABLE: dict[str, Any] = table("languages.json")
BACKENDS: tuple[str, ...] = tuple(sorted(_LANGUAGE_TABLE["backends"]))
#: The backends the kernels toolchain has a build set for (a nixpkgs `config`); the others
#: (neuron, cann) are accepted in build.toml but nothing is planned for them.
BUILD_SET_BACKENDS: tuple[str, ...] = tuple(
    b for b in BACKENDS if _LANGUAGE_TABLE["backends"][b]["buildSet"] is not None
)
LANGUAGES: tuple[str, ...] = tuple(_LANGUAGE_TABLE["languages"])
LANGUAGE_BACKEND: dict[str, str] = {
    language: row["backend"] for language, row in _LANGUAGE_TABLE["languages"].items()
}
#: The languages built as Cargo crates (`nixgen.rust.kernel`), and the C++ ones.
RUST_LANGUAGES: tuple[str, ...] = tuple(
    language for language, row in _LANGUAGE_TABLE["languages"].items() if row["builder"] == "rust"
)
CPP_LANGUAGES: tuple[str, ...] = tuple(
    language for language, row in _LANGUAGE_TABLE["languages"].items() if row["builder"] == "cpp"
)


#: The families' prefixes (`cpp-`, `rust-`): what marks an edition-6 `language` value, even
#: one misspelt after its prefix.
LANGUAGE_PREFIXES: tuple[str, ...] = tuple(
    dict.fromkeys(language.split("-", 1)[0] + "-" for language in LANGUAGES)
)


def is_rust(language: str) -> bool:
    """Whether `language` is a Rust kernel language (`rust-cpu`, `rust-cuda`)."""
    return language in RUST_LANGUAGES


#: A language's backend flag field, by its build.toml key and by the library's argument
#: name (`cuda-flags` / `cudaFlags`), for the languages that have one.
LANGUAGE_FLAGS: dict[str, tuple[str, str]] = {
    language: (row["flags"]["toml"], row["flags"]["nix"])
    for language, row in _LANGUAGE_TABLE["languages"].items()
    if row["flags"] is not None
}


#: Source kinds by extension, one table read by Python and by the Nix library's compile rules
#: (`data/source-kinds.json`). A kernel's compile inputs hold every header the project lists
#: anywhere (a kernel may include a sibling's or the binding's header, as real projects
#: compiled in one tree do), while only its own translation units are compiled.
SOURCE_KINDS: dict[str, tuple[str, ...]] = {
    kind: tuple(extensions) for kind, extensions in table("source-kinds.json")["kinds"].items()
}
HEADER_EXTENSIONS = SOURCE_KINDS["header"]
#: The extensions of the sources each C++-family language compiles, in its rules' order
#: (`data/languages.json`'s `compiled` kinds).
COMPILED_EXTENSIONS: dict[str, tuple[str, ...]] = {
    language: tuple(dict.fromkeys(e for kind in kinds for e in SOURCE_KINDS[kind]))
    for language, row in _LANGUAGE_TABLE["languages"].items()
    if (kinds := row["compiled"])
}


@cache
def library_files() -> tuple[str, ...]:
    """The static Nix library's files (`nix/`, installed as `nixgen/nixlib/`), relative to it:
    the directory is the one list, so a new module is vendored without naming it twice.
    Its unit tests and data tables (copied separately, stamped) are not library files."""
    root = os.path.join(PACKAGE, "nixlib")
    out = []
    for folder, dirs, files in os.walk(root):  # noqa: TID251 (nixgen's own package, not a project)
        rel = os.path.relpath(folder, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in ("tests", "data")]
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if not name.endswith(".pyc"):
                out.append(name if rel == "." else f"{rel}/{name}")
    return tuple(sorted(out))


#: The library's directory that the Nix library puts on the include path of every framework
#: binding it compiles (`nix/extension.nix`, `bindingPlan`: ``-I${./support/torch}``).
BINDING_INCLUDE_DIR = "support/torch"


def binding_headers() -> frozenset[str]:
    """The headers nixgen supplies to a framework binding (`registration.h`), by the name a
    quoted `#include` gives them: the headers of `BINDING_INCLUDE_DIR`."""
    prefix = BINDING_INCLUDE_DIR + "/"
    return frozenset(
        rel.removeprefix(prefix)
        for rel in library_files()
        if rel.startswith(prefix) and rel.rpartition(".")[2] in HEADER_EXTENSIONS
    )


#: The macros each backend's compiles get from nixgen (``-DNAME`` or ``-DNAME=VALUE``; the
#: Nix library's `compile.backendDefines`, from the same table).
BACKEND_DEFINES: dict[str, tuple[str, ...]] = {
    backend: tuple(row["defines"]) for backend, row in _LANGUAGE_TABLE["backends"].items()
}


def _at(name: str, *path: str) -> Any:
    """The value at `path` (keys) in data table `name`."""
    value = table(name)
    for key in path:
        value = value[key]
    return value


# Typed views of the tables: they are nixgen's own files, so the shape is known.
def _strings(name: str, *path: str) -> list[str]:
    """A list of strings in data table `name`."""
    return cast("list[str]", _at(name, *path))


def _string_map(name: str, *path: str) -> dict[str, str]:
    """A table of strings by string in data table `name`."""
    return cast("dict[str, str]", _at(name, *path))


def version_key(version: str) -> tuple[int, ...]:
    """``"12.10"`` → ``(12, 10)`` with trailing zeros dropped, so ``2.10.0 == 2.10``."""
    parts = [int(p) for p in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def build_configs() -> list[dict[str, Any]]:
    return cast("list[dict[str, Any]]", _at("build-configs.json", "configs"))


@cache
def builder_cuda_capabilities(cuda_version: str) -> tuple[str, ...]:
    """The capabilities a kernel that lists none is built for with CUDA `cuda_version`:
    the anchor's default list for that toolkit (``+PTX`` entries included)."""
    have = version_key(cuda_version)
    for row in table("builder-cuda-capabilities.json")["defaults"]:
        if version_key(row["from"]) <= have:
            return tuple(row["capabilities"])
    return ()


#: The suffix of a capability whose PTX is embedded besides its machine code (the
#: anchor's spelling: `9.0+PTX`; the kernel then also runs on newer GPUs, by JIT).
PTX = "+PTX"


def split_ptx(capability: str) -> tuple[str, bool]:
    """``"9.0+PTX"`` → ``("9.0", True)``; ``"9.0"`` → ``("9.0", False)``."""
    if capability.endswith(PTX):
        return capability[: -len(PTX)], True
    return capability, False


@cache
def cuda_capability_ranges() -> dict[str, tuple[str, str | None]]:
    return {
        row["capability"]: (row["min"], row["max"])
        for row in table("cuda-capabilities.json")["capabilities"]
    }


@cache
def known_cuda_capabilities() -> tuple[str, ...]:
    """Every capability name accepted in ``cuda-capabilities`` (with `a`/`f` suffixes)."""
    db = table("cuda-capabilities.json")
    names: list[str] = []
    for base in cuda_capability_ranges():
        names.append(base)
        if version_key(base) >= version_key(db["arch_specific_from"]):
            names.append(base + "a")
        if version_key(base) >= version_key(db["family_specific_from"]):
            names.append(base + "f")
    return tuple(names)


@cache
def cuda_capability_supported(capability: str, cuda_version: str) -> bool:
    """Whether CUDA `cuda_version` can compile for `capability` (e.g. ``"9.0a"``).

    A capability nixgen does not know (``11.8``, ``8.0a``) is built by no toolkit. A
    ``+PTX`` capability is supported where its base is.
    """
    capability = split_ptx(capability)[0]
    match = _CAPABILITY.match(capability)
    if not match or capability not in known_cuda_capabilities():
        return False
    base = f"{match[1]}.{match[2]}"
    suffix = match[3]
    if base not in cuda_capability_ranges():
        return False
    low, high = cuda_capability_ranges()[base]
    db = table("cuda-capabilities.json")
    if suffix == "a":
        low = max(low, db["arch_specific_min"], key=version_key)
    elif suffix == "f":
        low = max(low, db["family_specific_min"], key=version_key)
    have = version_key(cuda_version)
    return version_key(low) <= have and (high is None or have <= version_key(high))


@cache
def cuda_versions() -> tuple[str, ...]:
    """The CUDA toolkit versions of the build-configuration table, oldest first."""
    found = {row["cudaVersion"] for row in build_configs() if row.get("cudaVersion")}
    return tuple(sorted(found, key=version_key))


def known_rocm_archs() -> list[str]:
    return _strings("rocm-archs.json", "known")


def supported_rocm_archs() -> list[str]:
    return _strings("rocm-archs.json", "supported")


def cpp_dependencies(language: str) -> list[str]:
    """What nixgen builds a C++ `language`'s kernels against (`[]` for other languages)."""
    languages: dict[str, list[str]] = table("cpp-dependencies.json")["languages"]
    return list(languages.get(language, []))


@cache
def field_cpp_dependencies() -> tuple[str, ...]:
    """Every `depends` value of the field's format (the `kernels` client's `Dependency`)."""
    return tuple(table("cpp-dependencies.json")["format"])


def dialect_cpp_dependencies() -> tuple[str, ...]:
    """`depends` values of nixgen's earlier edition 6 that the format lacks (`tvm-ffi`)."""
    return tuple(table("cpp-dependencies.json")["dialect"])


@cache
def all_cpp_dependencies() -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for deps in table("cpp-dependencies.json")["languages"].values():
        seen.update(dict.fromkeys(deps))
    return tuple(seen)


def legacy_dependency_renames() -> dict[str, str]:
    return _string_map("cpp-dependencies.json", "legacy_renames")


def dependency_attrs() -> dict[str, str]:
    """The package-set attribute of each C++ dependency whose name differs from it
    (`cpp-dependencies.json`'s `attrs`: `sycl_tla` → `xpuPackages.sycl-tla`)."""
    return _string_map("cpp-dependencies.json", "attrs")


def python_dependencies(section: str) -> list[str]:
    """Allowed ``python-depends`` in ``general`` or a backend sub-table (cuda, xpu, …)."""
    db = table("python-dependencies.json")
    if section == "general":
        return sorted(db["general"])
    return sorted(db["backends"].get(section, {}))
