"""Stage 4 — validate: rules that span fields, and rules about the project's files.

Single values were checked while structuring; here the model is complete, so rules can
compare fields (a CUDA kernel in a project without the `cuda` backend, minver > maxver)
and look at the file system (every listed file exists and stays inside the project).
Every problem is collected; nothing stops at the first one.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import attrs

from nixgen.checking import conditionals
from nixgen.core import paths, tables
from nixgen.core.errors import Problem, error, one_of, warning
from nixgen.reading import model, values

#: The `[general.<backend>]` sub-tables: the fields of [general] named after a backend.
BACKEND_SECTIONS = tuple(f.name for f in attrs.fields(model.General) if f.name in tables.BACKENDS)


def validate(build: model.Build, root: Path | None, *, includes: bool = True) -> list[Problem]:
    """All problems of `build`; file rules run only when the project `root` is given, and
    the scan of quoted includes (a warning only; it reads every source) with `includes`."""
    problems = [*_general(build), *_framework(build)]
    for name, kernel in sorted(build.kernels.items()):
        problems.extend(_kernel(build, name, kernel))
    problems.extend(_name_collisions(build))
    if root is not None:
        problems.extend(files(build, root, includes=includes))
    return problems


def _general(build: model.Build) -> list[Problem]:
    g = build.general
    out: list[Problem] = []
    if not g.backends:
        out.append(
            warning("no backends are listed, so nothing will be built", ("general", "backends"))
        )
    for backend, count in Counter(g.backends).items():
        if count > 1:
            # Harmless (the anchor builds such files too), but usually a slip.
            out.append(
                warning(
                    f"backend `{backend}` is listed {count} times; the repeats have no effect",
                    ("general", "backends"),
                )
            )
    for section in BACKEND_SECTIONS:
        if getattr(g, section) is not None and section not in g.backends:
            out.append(
                warning(
                    f"[general.{section}] has no effect because `{section}` is not in "
                    "general.backends",
                    ("general", section),
                )
            )
    if g.cuda is not None:
        out.extend(_bounds(g.cuda.minver, g.cuda.maxver, ("general", "cuda")))
    return out


def _bounds(low: str | None, high: str | None, path: tuple[str, ...]) -> list[Problem]:
    if low is not None and high is not None and tables.version_key(low) > tables.version_key(high):
        return [error(f"minver {low} is greater than maxver {high}", (*path, "minver"))]
    return []


def _framework(build: model.Build) -> list[Problem]:
    fw = build.framework
    out: list[Problem] = []
    if build.kernels and not isinstance(fw, model.COMPILED_FRAMEWORKS):
        where = (fw.table,) if fw is not None else ("kernel",)
        out.append(
            error(
                "compiled kernels need a framework to bind them: add a [torch] or [tvm-ffi] "
                f"table (this project is `{build.framework_table}`)",
                where,
            )
        )
    if isinstance(fw, model.Torch):
        out.extend(_bounds(fw.minver, fw.maxver, ("torch",)))
        if isinstance(fw.stable_abi, dict):
            for backend in sorted(fw.stable_abi):
                if backend not in build.general.backends:
                    out.append(
                        warning(
                            f"stable-abi entry for `{backend}` is ignored: it is not in "
                            "general.backends",
                            ("torch", "stable-abi", backend),
                        )
                    )
    if isinstance(fw, model.COMPILED_FRAMEWORKS):
        out.extend(_duplicates(fw.src, (fw.table, "src")))
        # A Rust crate under tvm-ffi is the binding itself: it exports its functions
        # through TVM FFI (`nixgen init --language rust-cpu --binding tvm-ffi`).
        crates_bind = isinstance(fw, model.TvmFfi) and all(
            tables.is_rust(k.language) for k in build.kernels.values()
        )
        if build.kernels and not fw.src and not crates_bind:
            out.append(
                warning(
                    "`src` is empty, so the extension has no binding sources: nothing "
                    "registers the kernels' ops with the framework unless a kernel source "
                    "does it itself",
                    (fw.table, "src"),
                    hint=f'list the binding, e.g. `src = ["{_BINDING_EXAMPLE[fw.table]}"]`',
                )
            )
    return out


#: The binding source of each compiled framework, for hints.
_BINDING_EXAMPLE = {
    "torch": "torch-ext/torch_binding.cpp",
    "tvm-ffi": "tvm-ffi-ext/tvm_ffi_binding.cpp",
}


def _duplicates(items: Sequence[str], path: tuple[str | int, ...]) -> list[Problem]:
    """Repeated entries are harmless (file sets are unions) but usually a mistake."""
    seen: dict[str, int] = {}
    out = []
    for index, item in enumerate(items):
        if item in seen:
            out.append(
                warning(f"`{item}` is listed twice (first at index {seen[item]})", (*path, index))
            )
        seen.setdefault(item, index)
    return out


def _nothing_to_compile(kernel: model.Kernel, path: tuple[str | int, ...]) -> list[Problem]:
    """A C++-family kernel whose `src` holds no file its language compiles (only headers, a
    `.py` file, …) would build an empty archive: harmless to the build, surely a slip."""
    compiled = tables.COMPILED_EXTENSIONS.get(kernel.language)
    if compiled is None:
        return []  # Rust kernels: their own rule (`.rs` sources) is in `_rust`
    if any(p.rpartition(".")[2] in compiled for p in kernel.src if "." in p):
        return []
    return [
        warning(
            f"nothing to compile: a {kernel.language} kernel compiles "
            f"{', '.join('.' + e for e in compiled)} files, and `src` lists none "
            f"({one_of(kernel.src)}); the kernel would build an empty archive",
            path,
        )
    ]


def _ptx_repeats(capabilities: Sequence[str], path: tuple[str | int, ...]) -> list[Problem]:
    """A capability listed both with and without `+PTX` is built once, with its PTX (the
    anchor's intersection merges them too); harmless, but usually a slip."""
    first: dict[str, str] = {}
    out = []
    for index, capability in enumerate(capabilities):
        base = tables.split_ptx(capability)[0]
        seen = first.setdefault(base, capability)
        if seen != capability and tables.split_ptx(seen)[1] != tables.split_ptx(capability)[1]:
            out.append(
                warning(
                    f"`{capability}` repeats `{seen}`: {base} is built once, with its PTX "
                    f"(`{base}{tables.PTX}`)",
                    (*path, index),
                )
            )
    return out


def _kernel(build: model.Build, name: str, kernel: model.Kernel) -> list[Problem]:
    path = ("kernel", name)
    backend = model.backend_of(kernel)
    out: list[Problem] = []
    if backend not in build.general.backends:
        out.append(
            error(
                f"`{kernel.language}` kernels build for the `{backend}` backend, which is not in "
                f"general.backends ({one_of(build.general.backends) or 'none'}); add it or "
                "remove the kernel",
                (*path, "language"),
            )
        )
    if not kernel.src:
        out.append(error("a kernel needs at least one source file in `src`", (*path, "src")))
    else:
        out.extend(_nothing_to_compile(kernel, (*path, "src")))
    out.extend(_duplicates(kernel.src, (*path, "src")))
    if isinstance(kernel, model.RUST_KERNELS):
        out.extend(_rust(name, kernel, path))
    if isinstance(kernel, (model.CppCudaKernel, model.RustCudaOxideKernel)):
        capabilities, where = kernel.cuda_capabilities, (*path, "cuda-capabilities")
        if capabilities == []:
            out.append(error("`cuda-capabilities` is empty; omit it to build for all", where))
        if isinstance(kernel, model.CppCudaKernel):
            out.extend(_duplicates(capabilities or [], where))
        out.extend(_ptx_repeats(capabilities or [], where))
    if isinstance(kernel, model.CppRocmKernel):
        if kernel.rocm_archs == []:
            out.append(
                error("`rocm-archs` is empty; omit it to build for all", (*path, "rocm-archs"))
            )
        elif kernel.rocm_archs is not None:
            supported = tables.supported_rocm_archs()
            if not set(kernel.rocm_archs) & set(supported):
                out.append(
                    error(
                        "none of the listed ROCm architectures is supported by the builder "
                        f"({one_of(supported)})",
                        (*path, "rocm-archs"),
                    )
                )
    return out


RUST_META = ("Cargo.toml", "Cargo.lock", "rust-toolchain.toml")


RustKernel = model.RustCpuKernel | model.RustCudaOxideKernel | model.RustCutileKernel


def _lock_search(kernel: RustKernel) -> list[str]:
    """Where a crate's `Cargo.lock` may be, nearest first: next to its manifest
    (`cargo-manifest`), then each directory above it up to the project root (`""`), as
    Cargo looks for a workspace root."""
    crate = kernel.cargo_manifest.rpartition("/")[0]
    dirs = [crate]
    while dirs[-1]:
        dirs.append(dirs[-1].rpartition("/")[0])
    return [f"{d}/Cargo.lock" if d else "Cargo.lock" for d in dirs]


def lock_search_paths(build: model.Build) -> list[str]:
    """Every path where `listed_lock_files` looks for a Rust kernel's `Cargo.lock`: what
    `nixgen watch` watches besides the listed files, so a lock that appears nearer the
    crate is rendered at once."""
    out: dict[str, None] = {}
    for _, kernel in sorted(build.kernels.items()):
        if isinstance(kernel, model.RUST_KERNELS):
            out.update(dict.fromkeys(_lock_search(kernel)))
    return list(out)


def listed_lock_files(build: model.Build, root: Path) -> tuple[model.Build, list[Problem]]:
    """`build` with each Rust kernel's `Cargo.lock` in its `src`: one that `src` omits is
    found as the anchor finds it (it reads the lock from the source tree, listed or not),
    next to the crate's manifest or in the nearest directory above it up to the project
    root, and is added with a warning telling to list it. A kernel with no lock file
    anywhere is left as it is: `validate` reports it, naming the fix."""
    kernels = dict(build.kernels)
    out: list[Problem] = []
    for name, kernel in sorted(build.kernels.items()):
        if not isinstance(kernel, model.RUST_KERNELS) or any(
            p.rsplit("/", 1)[-1] == "Cargo.lock" for p in kernel.src
        ):
            continue
        found = next((c for c in _lock_search(kernel) if (root / c).is_file()), None)
        if found is None:
            continue
        kernels[name] = attrs.evolve(kernel, src=[*kernel.src, model.RelPath(found)])
        out.append(
            warning(
                f"`src` does not list the crate's lock file; using `{found}`, the nearest "
                f"`Cargo.lock` at or above the crate: add `{found}` to `src` (`nixgen "
                "migrate` does)",
                ("kernel", name, "src"),
            )
        )
    return (attrs.evolve(build, kernels=kernels) if out else build), out


def _rust(name: str, kernel: RustKernel, path: tuple[str, ...]) -> list[Problem]:
    out = []
    language = kernel.language
    basenames = [p.rsplit("/", 1)[-1] for p in kernel.src]
    locks = basenames.count("Cargo.lock")
    if kernel.cargo_manifest.rsplit("/", 1)[-1] != "Cargo.toml":
        out.append(
            error(
                f"`cargo-manifest` names the crate's `Cargo.toml`, got `{kernel.cargo_manifest}`",
                (*path, "cargo-manifest"),
            )
        )
    if locks == 0:
        searched = _lock_search(kernel)
        out.append(
            error(
                f"a {language} kernel builds offline from its crate's `Cargo.lock`, and there "
                f"is none: not in `src`, not at {one_of(searched)}; run `cargo "
                f"generate-lockfile` next to the crate's manifest and add `{searched[0]}` to "
                "`src`",
                (*path, "src"),
            )
        )
    elif locks != 1:
        out.append(
            error(
                f"a {language} kernel lists exactly one `Cargo.lock` in `src` (found {locks})",
                (*path, "src"),
            )
        )
    else:
        lock_dir = kernel.lock_dir()
        others = [m for m in kernel.manifests() if m != kernel.cargo_manifest]
        workspace = kernel.workspace_manifest()
        crate_dir = kernel.cargo_manifest.rpartition("/")[0]
        inside = not lock_dir or crate_dir == lock_dir or crate_dir.startswith(lock_dir + "/")
        if [m for m in others if m != workspace] or not inside:
            where = f"`{lock_dir}/`" if lock_dir else "the project root"
            out.append(
                error(
                    f"a {language} kernel's `src` lists at most one `Cargo.toml` besides "
                    f"`cargo-manifest`: the workspace's, next to `Cargo.lock` (in {where}), "
                    f"with the crate below it; found {one_of(kernel.manifests())}",
                    (*path, "src"),
                )
            )
    if not any(b not in RUST_META for b in basenames):
        out.append(
            error(
                f"a {language} kernel lists its `.rs` sources in `src` (files or directories)",
                (*path, "src"),
            )
        )
    if isinstance(kernel, model.RustCudaOxideKernel):
        toolchains = basenames.count("rust-toolchain.toml")
        if toolchains != 1:
            out.append(
                error(
                    "a rust-cuda-oxide kernel lists one `rust-toolchain.toml` in `src` "
                    f"(cuda-oxide needs the nightly toolchain it names; found {toolchains})",
                    (*path, "src"),
                )
            )
        device = kernel.device_manifest
        if device is None:
            out.append(
                error(
                    "nixgen builds a rust-cuda-oxide kernel's device crate from the "
                    f"`device-manifest` that nixgen.toml's `[kernel.{name}]` names (the "
                    "device crate's `Cargo.toml`); set it there",
                    path,
                )
            )
        elif device.rsplit("/", 1)[-1] != "Cargo.toml":
            out.append(
                error(
                    "`device-manifest` names the device crate's `Cargo.toml`",
                    (*path, "device-manifest"),
                )
            )
        elif not _covered(device, kernel.src):
            out.append(
                error(
                    f"`device-manifest` `{device}` is not in `src`; list it (and the device "
                    "crate's sources) there",
                    (*path, "device-manifest"),
                )
            )
    return out


#: The largest `Cargo.toml` nixgen reads (real ones are a few KiB).
MAX_MANIFEST = 1024 * 1024


class CrateError(Exception):
    """A crate manifest nixgen cannot take its library name from."""


def crate_library(root: Path, manifest: str) -> str | None:
    """The library name the crate's `Cargo.toml` (`manifest`, relative to the project
    `root`) declares: `[lib] name`, else the package name with `-` turned into `_`
    (Cargo's rule); None when the file is absent or declares neither.

    The manifest is read by the path rule of every input (`nixgen.core.paths`): no link
    followed, no FIFO or device opened, at most `MAX_MANIFEST` bytes, TOML parser limits.
    A manifest that cannot be read so, or that declares a name that is no Rust
    identifier, raises `CrateError`."""
    import tomli

    data = paths.read_under(root, manifest, limit=MAX_MANIFEST)
    if data is None:
        return None
    if isinstance(data, paths.Blocked):
        raise CrateError(
            f"`{manifest}` cannot be read: {data}; nixgen reads the crate's Cargo.toml for "
            "its library name (replace it by a regular file inside the project)"
        )
    try:
        parsed = tomli.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CrateError(f"`{manifest}` is not valid UTF-8") from None
    except tomli.TOMLDecodeError as exc:
        raise CrateError(f"`{manifest}` is not valid TOML: {exc}") from None
    except (RecursionError, ValueError):
        raise CrateError(
            f"`{manifest}` is past the TOML parser's limits (nesting, key parts, digits)"
        ) from None
    lib, package = parsed.get("lib"), parsed.get("package")
    if isinstance(lib, dict) and isinstance(lib.get("name"), str):
        name = str(lib["name"])
    elif isinstance(package, dict) and isinstance(package.get("name"), str):
        name = str(package["name"]).replace("-", "_")
    else:
        return None
    problem = values.rust_lib_name(name)
    if problem is not None:
        raise CrateError(f"`{manifest}` declares the {problem}; fix the crate")
    return name


def crate_libraries(build: model.Build, root: Path) -> tuple[model.Build, list[Problem]]:
    """`build` with each Rust kernel's library name read from its crate (`crate_library`)
    where no earlier file named it; an unreadable manifest is an error."""
    kernels = dict(build.kernels)
    out: list[Problem] = []
    for name, kernel in sorted(build.kernels.items()):
        if not isinstance(kernel, model.RUST_KERNELS) or kernel.library is not None:
            continue
        try:
            library = crate_library(root, kernel.cargo_manifest)
        except CrateError as exc:
            out.append(error(str(exc), ("kernel", name, "cargo-manifest")))
            continue
        if library is not None:
            kernels[name] = attrs.evolve(kernel, library=model.RustLibName(library))
    return (attrs.evolve(build, kernels=kernels) if kernels != build.kernels else build), out


def _covered(file: str, src: Sequence[str]) -> bool:
    """Whether `file` is listed in `src` or lies under a directory listed there."""
    return any(file == p or file.startswith(p.rstrip("/") + "/") for p in src)


def _name_collisions(build: model.Build) -> list[Problem]:
    by_lib: dict[str, list[str]] = {}
    for name in build.kernels:
        by_lib.setdefault(name.replace("-", "_").lower(), []).append(name)
    return [
        error(
            f"kernel names {one_of(sorted(names))} collide once `-` becomes `_` "
            "(library and file names must differ)",
            ("kernel", sorted(names)[1]),
        )
        for names in by_lib.values()
        if len(names) > 1
    ]


# ------------------------------------------------------------------------ file system


def files(build: model.Build, root: Path, *, includes: bool = True) -> list[Problem]:
    """Every declared path exists and, symlinks resolved, stays inside `root`; with
    `includes`, quoted includes of unlisted project files are warnings."""
    out: list[Problem] = []
    resolver = paths.Resolver(os.path.realpath(root))
    fw = build.framework
    if isinstance(fw, model.COMPILED_FRAMEWORKS):
        out.extend(_paths(resolver, fw.src, (fw.table, "src"), want_dir=False))
        out.extend(_paths(resolver, fw.include, (fw.table, "include"), want_dir=True))
    for name, kernel in sorted(build.kernels.items()):
        rust = isinstance(kernel, model.RUST_KERNELS)
        out.extend(
            _paths(resolver, kernel.src, ("kernel", name, "src"), want_dir=None if rust else False)
        )
        if isinstance(kernel, model.RUST_KERNELS) and not _covered(
            kernel.cargo_manifest, kernel.src
        ):
            manifest = _paths(resolver, [kernel.cargo_manifest], ("kernel", name), want_dir=False)
            out.extend(attrs.evolve(p, path=("kernel", name, "cargo-manifest")) for p in manifest)
        out.extend(
            _paths(
                resolver,
                model.kernel_includes(kernel),
                ("kernel", name, "include"),
                want_dir=True,
            )
        )
    if includes:
        out.extend(unlisted_includes(build, resolver))
    package = model.python_package_dir(build)
    where = (build.framework_table,) if build.framework is not None else ("general", "name")
    real, info = resolver.resolve(f"{package}/__init__.py")
    linked = _through_link(resolver, f"{package}/__init__.py")
    if not resolver.inside(real) or linked:
        out.append(
            error(
                f"the Python package `{package}` "
                + (
                    f"resolves outside the project (to {os.path.dirname(real)})"
                    if not resolver.inside(real)
                    else f"is reached through the symbolic link `{linked}`"
                )
                + "; the build copies the package directory without following links, so "
                "make it a real directory inside the project",
                where,
            )
        )
    elif info is None and (why := resolver.errors.get(real)) in _UNREADABLE:
        out.append(
            error(
                f"the Python package's `{package}/__init__.py` {_UNREADABLE[why]}",
                where,
            )
        )
    elif info is None or not stat.S_ISREG(info.st_mode):
        found = _dashed_package(resolver.root, package)
        out.append(
            error(
                f"the Python package `{package}/__init__.py` is missing; the kernel's Python "
                "module lives there"
                + (
                    f" (found `{found}/`: a Python module's name cannot hold `-`, so the "
                    f"package of `{build.general.name}` is `{package.rsplit('/', 1)[-1]}`; "
                    f"rename the directory to `{package}`)"
                    if found is not None
                    else ""
                ),
                where,
            )
        )
    else:
        out.extend(_package_links(resolver.root, package, where))
    return out


def _dashed_package(root: str, package: str) -> str | None:
    """The directory beside `package` (relative to `root`) named like it with `-` for its
    `_`, as a project named with a dash writes its package (`torch-ext/attention-int8/`
    for `attention_int8`), when there is one: what the missing-package error names."""
    parent, _, name = package.rpartition("/")
    if "_" not in name:
        return None
    try:
        entries = os.listdir(os.path.join(root, parent))
    except OSError:
        return None
    dashed = sorted(
        e
        for e in entries
        if e != name
        and e.replace("-", "_") == name
        and os.path.isdir(os.path.join(root, parent, e))
    )
    return f"{parent}/{dashed[0]}" if dashed else None


def _package_links(root: str, package: str, where: tuple[str | int, ...]) -> list[Problem]:
    """Every symbolic link inside the Python package: the build copies the package without
    following links, so a link would reach the wheel as a link (to a file outside the
    project, or to nothing)."""
    out = []
    top = os.path.join(root, package)
    for rel_dir, _, names in paths.walk(top):
        for name in names:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            full = os.path.join(top, rel)
            try:
                target = os.readlink(full)
            except OSError:
                continue  # not a link
            out.append(
                error(
                    f"`{package}/{rel}` in the Python package is a symbolic link (to "
                    f"`{target}`); the build copies the package without following links, so "
                    "the wheel would hold a link, not the file",
                    where,
                    hint="replace the link by the file itself",
                )
            )
    return out


def listed_files(build: model.Build) -> list[tuple[tuple[str | int, ...], str]]:
    """Every file the project lists (framework and kernel `src`), with its key path."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    fw = build.framework
    if isinstance(fw, model.COMPILED_FRAMEWORKS):
        out += [((fw.table, "src", i), rel) for i, rel in enumerate(fw.src)]
    for name, kernel in sorted(build.kernels.items()):
        out += [(("kernel", name, "src", i), rel) for i, rel in enumerate(kernel.src)]
    return out


#: Sources scanned for quoted includes: every source kind (`data/source-kinds.json`).
_SCANNED = {ext for extensions in tables.SOURCE_KINDS.values() for ext in extensions}
#: Compiled on first use (`re`'s own cache): only `nixgen validate` scans includes.
_QUOTED_INCLUDE = rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"'
#: Only the head of a file is scanned: includes come first, and this keeps `validate` cheap.
_SCAN_BYTES = 256 * 1024


def unlisted_includes(build: model.Build, resolver: paths.Resolver) -> list[Problem]:
    """Warnings for quoted `#include "x.h"` lines that name a file of the project which no
    list names: the build would not see it (each derivation holds only listed files).

    An include is resolved as the compiler does: next to the including file, then in the
    include directories of the kernel (or the binding), and, for a binding, the headers
    nixgen supplies (`registration.h`, `tables.binding_headers`). A name found nowhere in
    the project is left alone (a dependency's header, written with quotes). An include
    under a conditional that no compile of the file can take (`#ifdef USE_ROCM` in a CUDA
    kernel: `_compiles`, `conditionals`) is never compiled, and gets no warning; one under
    a condition nixgen cannot decide keeps its warning, which names the condition."""
    listed = {rel for _, rel in listed_files(build)}
    fw = build.framework
    dirs: dict[tuple[str | int, ...], list[str]] = {}
    if isinstance(fw, model.COMPILED_FRAMEWORKS):
        dirs[(fw.table,)] = list(fw.include)
    for name, kernel in build.kernels.items():
        dirs[("kernel", name)] = list(model.kernel_includes(kernel))
    supplied = tables.binding_headers()
    heads: dict[str, bytes] = {}
    for _, rel in listed_files(build):
        if rel.rpartition(".")[2].lower() in _SCANNED and rel not in heads:
            real, info = resolver.resolve(rel)
            if info is not None and stat.S_ISREG(info.st_mode) and resolver.inside(real):
                heads[rel] = paths.head(real, _SCAN_BYTES)  # never blocks: a FIFO reads empty
    unsure: set[str] | None = None  # the macros the project's files set themselves
    out: list[Problem] = []
    for where, rel in listed_files(build):
        head = heads.get(rel)
        if head is None:
            continue
        reached: dict[int, conditionals.Reach] | None = None
        for match in re.finditer(_QUOTED_INCLUDE, head, re.MULTILINE):
            included = match.group(1).decode("utf-8", "replace")
            line = head.count(b"\n", 0, match.start()) + 1
            if where[0] != "kernel" and posixpath.normpath(included) in supplied:
                continue  # the binding's include path has nixgen's own
            bases = [rel.rpartition("/")[0], *dirs.get(where[:-2], [])]
            candidates = [posixpath.normpath(posixpath.join(b, included)) for b in bases]
            candidates = [
                c for c in candidates if not c.startswith(("../", "/")) and c not in ("..", ".")
            ]
            if any(c in listed for c in candidates):
                continue
            present = [
                c
                for c in candidates
                if (found := resolver.resolve(c))[1] is not None and resolver.inside(found[0])
            ]
            if not present:
                continue
            if reached is None:  # read the conditionals only for a file that needs it
                if unsure is None:
                    unsure = set().union(*map(conditionals.defined_names, heads.values()))
                reached = conditionals.reach(head, _compiles(build, where, unsure))
            at = reached.get(line)
            if at is None:
                continue  # under a branch no compile of this file takes
            owner = ".".join(str(part) for part in where[:-1])
            under = (
                f" (under `{at.condition[0]}`, line {at.condition[1]}: when that branch is "
                "compiled)"
                if at.condition is not None
                else ""
            )
            out.append(
                warning(
                    f'{rel}:{line}: `#include "{included}"` names `{present[0]}`, which no '
                    f"`src` list names, so the build will not see it{under}",
                    where,
                    hint=f'add "{present[0]}" to {owner}',
                )
            )
    return out


def _compiles(
    build: model.Build, where: tuple[str | int, ...], unsure: set[str]
) -> list[conditionals.Macros]:
    """What is known of the macros of each compile of the file listed at `where`: a
    kernel's one backend with its flags; a binding's every backend it is built for (those
    with kernels, else all) with the framework's `cxx-flags`."""
    every = {d[2:].partition("=")[0] for ds in tables.BACKEND_DEFINES.values() for d in ds}

    def known(backend: str, flags: Sequence[str]) -> conditionals.Macros:
        defines = tables.BACKEND_DEFINES.get(backend, ())
        return conditionals.known_macros(defines, every, flags, unsure)

    if where[0] == "kernel":
        kernel = build.kernels[model.KernelName(str(where[1]))]
        own = [*model.kernel_cxx_flags(kernel), *model.kernel_backend_flags(kernel)]
        return [known(model.backend_of(kernel), [str(f) for f in own])]
    backends = [b for b in build.general.backends if build.kernels_for(b)]
    framework = build.framework
    binding = framework.cxx_flags if isinstance(framework, model.COMPILED_FRAMEWORKS) else []
    flags = [str(f) for f in binding]
    return [known(b, flags) for b in backends or build.general.backends]


def _is_loop(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _through_link(resolver: paths.Resolver, rel: str) -> str | None:
    """The first component of `rel` (itself included) that is a symbolic link, if any
    (`nixgen.core.paths.check_dirs`, over the resolver's cached modes)."""
    blocked = paths.check_dirs(resolver.root, rel, last=True, mode_of=resolver.mode)
    return blocked.where if blocked is not None and blocked.link else None


#: Why an existing path cannot be checked, by errno (anything else reads "does not exist").
_UNREADABLE = {
    errno.EACCES: "cannot be read: permission denied (a directory on the way cannot be "
    "searched; `chmod u+x` it)",
    errno.EPERM: "cannot be read: operation not permitted",
    errno.ENAMETOOLONG: "cannot be checked: its path is too long for the file system (over "
    "PATH_MAX, 4096 bytes, from the root, or a name over 255 bytes); move the project to a "
    "shorter path",
    errno.EIO: "cannot be read: input/output error",
}


def _paths(
    resolver: paths.Resolver,
    paths: Sequence[str],
    base: tuple[str | int, ...],
    *,
    want_dir: bool | None,
) -> list[Problem]:
    """Each of `paths` exists, is a file (or a directory with `want_dir`; either with None)
    and stays inside the project. A directory accepted as a source stands for every file
    under it: none of its symlinks may lead out of the project."""
    out = []
    for index, rel in enumerate(paths):
        where = (*base, index)
        real, info = resolver.resolve(rel.rstrip("/") if rel != "." else "")
        if not resolver.inside(real):
            out.append(
                error(
                    f"`{rel}` resolves outside the project (to {real}); symlinks must stay "
                    "inside it",
                    where,
                )
            )
        elif info is None and _is_loop(os.path.join(resolver.root, rel)):
            out.append(
                error(f"`{rel}` is a symbolic link loop: following it never reaches a file", where)
            )
        elif info is None and (why := resolver.errors.get(real)) in _UNREADABLE:
            out.append(error(f"`{rel}` {_UNREADABLE[why]}", where))
        elif info is None:
            kind = {True: "directory", False: "file", None: "file or directory"}[want_dir]
            if want_dir is None and "." in rel.rsplit("/", 1)[-1]:
                kind = "file"
            out.append(error(f"{kind} `{rel}` does not exist", where))
        elif linked := _through_link(resolver, rel):
            out.append(
                error(
                    f"`{rel}` is reached through the symbolic link `{linked}`; Nix copies the "
                    "sources with `lib.fileset`, which keeps a link as a link and does not "
                    "follow it, so the build would not see this "
                    + ("directory" if want_dir else "file"),
                    where,
                    hint="replace the link by the file or directory itself",
                )
            )
        elif want_dir and not stat.S_ISDIR(info.st_mode):
            out.append(error(f"`{rel}` is not a directory", where))
        elif want_dir is False and not stat.S_ISREG(info.st_mode):
            out.append(error(f"`{rel}` is not a regular file", where))
        elif want_dir is None and stat.S_ISDIR(info.st_mode):
            out.extend(_tree(resolver, rel.rstrip("/"), real, where))
        elif want_dir is None and not stat.S_ISREG(info.st_mode):
            out.append(error(f"`{rel}` is neither a regular file nor a directory", where))
    return out


def _tree(
    resolver: paths.Resolver, rel: str, real: str, where: tuple[str | int, ...]
) -> list[Problem]:
    """Problems of the files under the listed source directory `rel` (sorted walk)."""
    out = []
    for below, dirs, names in paths.walk(real):  # links are listed as files, not followed
        for name in sorted([*dirs, *names]):
            full = os.path.join(real, below, name)
            target = paths.link_target(full)
            if target is None:
                continue
            inner = f"{rel}/{os.path.join(below, name)}"
            if not resolver.inside(target):
                out.append(
                    error(
                        f"`{inner}` (under `{rel}`) is a symlink leading out of the project (to "
                        f"{target}); a source directory may only hold files of the project",
                        where,
                    )
                )
            elif not os.path.exists(full):
                out.append(error(f"`{inner}` (under `{rel}`) is a broken symlink", where))
    return out


def license_problems(build: model.Build) -> list[Problem]:
    """A warning when general.license is no SPDX license expression (`nixgen.checking.spdx`);
    `nixgen validate` runs it (loading the SPDX list costs more than a render, so the
    module is imported here)."""
    from nixgen.checking import spdx

    why = spdx.problem(build.general.license)
    return [warning(why, ("general", "license"))] if why else []
