"""Stage 6 — render: the model as Nix text, in memory.

Every template is dumb: values are computed here and passed ready to lay out. The Jinja2
environment uses `StrictUndefined`, and every ``{{ value }}`` goes through the Nix
literal module (`nixgen.nixlit`), so a string from build.toml can only ever become a
quoted Nix string. nixgen's own Nix text reaches a template only through the named
filters `raw` (nixgen's strings), `ident` (checked identifiers) and `at` (a literal laid
out at an indentation).
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from typing import Any

import attrs

from nixgen import __version__, matrix, model, nixlit, plan, tables
from nixgen.errors import EXIT_INVALID, NixgenError
from nixgen.marker import MARKER
from nixgen.model import python_package_dir, shared_headers

#: Where the generated tree goes, relative to the project root.
DEFAULT_OUT = "nix"
#: The revisions generated flakes pin and the toolchain's binary cache: one table, read by the
#: Nix library too (`data/pins.json`).
_PINS: dict[str, str] = tables.table("pins.json")
NIXPKGS_URL = _PINS["nixpkgs"]
KERNEL_BUILDER_URL = _PINS["kernel-builder"]
SUBSTITUTER = _PINS["substituter"]
SUBSTITUTER_KEY = _PINS["substituter-key"]

#: Static library files copied into every generated tree (`<out>/lib/`): the library
#: directory itself is the list (`tables.library_files`).
LIB_FILES = tables.library_files()
#: Data tables the static library reads at evaluation time (`./data/<name>` in its files).
#: nixgen plans in Python and writes the results into the generated files; the ABI policies
#: are the toolchain's, the pins and source kinds one table for both languages.
LIB_DATA: tuple[str, ...] = ("abi-policies.json", "pins.json", "source-kinds.json")

#: The backend's own flags of a C++ kernel language: the argument of `nixgen.kernel.cpp`
#: that takes them, and the kernel's field.
BACKEND_FLAGS = {
    "cpp-cuda": ("cudaFlags", "cuda_flags"),
    "cpp-rocm": ("hipFlags", "hip_flags"),
    "cpp-xpu": ("syclFlags", "sycl_flags"),
}
#: Package-set attribute of each C++ dependency (`depends`); `torch` is the variant's torch.
#: A dotted path is taken from the set its first part names (the kernels toolchain keeps
#: sycl-tla in each oneAPI set, `xpuPackages.sycl-tla`, not at the top level).
DEPENDENCY_ATTRS = {"sycl_tla": "xpuPackages.sycl-tla"}
#: The arguments a framework's `extension.nix` declares besides the common ones: what
#: `nixgen.extension.frameworks.<name>` reads (`torch`: the variant's torch; tvm-ffi comes
#: from `python3`).
FRAMEWORK_ARGS: dict[str, tuple[str, ...]] = {"torch": ("torch",), "tvm-ffi": ()}
_OUT_DIR = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$")


@attrs.frozen(kw_only=True)
class Rendered:
    """The generated files: `tree` under the output directory, `root` at the project root."""

    out_dir: str
    tree: dict[str, bytes]
    root: dict[str, bytes]


# ------------------------------------------------------------------------- jinja setup


def _ident(name: str) -> nixlit.Raw:
    if not nixlit.is_identifier(name):
        raise ValueError(f"not a plain Nix identifier: {name!r}")
    return nixlit.raw(name)


def _raw(text: str) -> nixlit.Raw:
    """nixgen's own text (version numbers, comment fragments) — never build.toml data."""
    if "\n" in text or "\r" in text:
        raise ValueError("raw template text must be one line")
    return nixlit.raw(text)


def _at(value: Any, indent: int) -> nixlit.Raw:
    return nixlit.raw(nixlit.value(value, indent))


@cache
def _bytecode_cache() -> Any:
    """Compiled templates, cached on disk per nixgen version: compiling the templates is
    most of a small render's work. A cache directory that cannot be made is not used."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    directory = os.path.join(base, "nixgen", f"jinja-{__version__}")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return None
    from nixgen import jinja

    return jinja.optional_cache(directory)


@cache
def environment() -> Any:
    """`nixgen.jinja`'s environment over the templates, writing values as Nix literals."""
    import jinja2

    from nixgen import jinja

    env = jinja.environment(
        jinja2.FileSystemLoader(os.path.join(tables.PACKAGE, "templates")),
        finalize=nixlit.finalize,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(raw=_raw, ident=_ident, at=_at)
    return env


def _template(template: str, **context: Any) -> str:
    from nixgen import jinja

    text = environment().get_template(template).render(nixgen_version=__version__, **context)
    return jinja.canonical(text)


# ----------------------------------------------------------------------------- context


def _kernel_context(build: model.Build, name: str, kernel: model.Kernel) -> dict[str, Any]:
    general = build.general
    depends = list(getattr(kernel, "depends", []))
    uses_torch = "torch" in depends
    # A [tvm-ffi] project's C++ kernels all see the tvm-ffi headers (listed or not).
    uses_tvm_ffi = "tvm-ffi" in depends or (
        isinstance(build.framework, model.TvmFfi) and kernel.language != "rust-cpu"
    )
    others = [DEPENDENCY_ATTRS.get(d, d) for d in depends if d not in ("torch", "tvm-ffi")]
    sets = [o.partition(".")[0] for o in others]
    args = (["torch"] if uses_torch else []) + [a for i, a in enumerate(sets) if a not in sets[:i]]
    inputs: list[nixlit.Raw] = []
    flags: list[str] = []
    if uses_torch:
        flags += ["nixgen.torch.includeFlags torch", "nixgen.torch.abiDefines variant"]
    if uses_tvm_ffi:
        flags += ["nixgen.tvmFfi.includeFlags python3.pkgs.tvm-ffi"]
        inputs += [nixlit.raw("python3.pkgs.tvm-ffi")]
    inputs += [_ident("torch")] if uses_torch else []
    inputs += [nixlit.raw(o) if "." in o else _ident(o) for o in others]
    context: dict[str, Any] = {
        "what": f"kernel.{name}, {kernel.language}",
        "name": name,
        "kernel": kernel,
        "pname": f"{general.name}-{name}",
        "version": str(general.version),
        # `variant`: its stable-ABI target (`nixgen.torch.abiDefines`) for torch kernels.
        # python3: tvm-ffi's headers.
        "args": args + (["variant"] if uses_torch else []) + (["python3"] if uses_tvm_ffi else []),
        "build_inputs": inputs,
        "dep_flags": nixlit.raw(" ++ ".join(flags)) if flags else [],
        "link_flags": openmp_link_flags(kernel),
        "backend_flags": {},
    }
    if isinstance(kernel, (model.CppCudaKernel, model.RustCudaKernel)):
        context["capabilities"] = {
            version: plan.cuda_capabilities(kernel, version) for version in tables.cuda_versions()
        }
    if kernel.language in BACKEND_FLAGS:
        arg, field = BACKEND_FLAGS[kernel.language]
        context["backend_flags"] = {arg: list(getattr(kernel, field))}
    if isinstance(kernel, model.CppRocmKernel):
        context["archs"] = plan.rocm_archs(kernel)
    if isinstance(kernel, model.RUST_KERNELS):
        # Directories the cargo hooks `cd` into: one that starts with `-` gets `./`.
        crate_dir = _dir_arg(kernel.manifest().rpartition("/")[0])
        lock_dir = _dir_arg(kernel.lock_dir())
        workspace = kernel.workspace_manifest() is not None
        context.update(
            library=kernel.library(name),
            manifest=kernel.manifest(),
            lockfile=kernel.lockfile(),
            crate_dir=crate_dir,
            # a workspace builds from its root (where Cargo.lock is), in the member's directory
            cargo_root=lock_dir if workspace else crate_dir,
            copy_lock=not workspace and lock_dir != crate_dir,
        )
    if isinstance(kernel, model.RustCudaKernel):
        toolchain = kernel.toolchain_file()
        context.update(
            toolchain_file=toolchain,
            device_manifest=kernel.device_manifest,
            ptx_dir=kernel.ptx_dir or "kernels-ptx",
        )
    return context


def _dir_arg(rel: str) -> str:
    """A project-relative directory as the cargo hooks take it (`pushd "$dir"`): one
    whose name starts with `-` gets `./`, so that it is never read as an option."""
    return f"./{rel}" if rel.startswith("-") else rel


#: Compile flags that turn OpenMP on, and the flag the extension's link then needs (the
#: compiler driver adds its OpenMP runtime, libgomp for GCC, as a dependency).
_OPENMP_FLAGS = {
    "-fopenmp": "-fopenmp",
    "-Xcompiler=-fopenmp": "-fopenmp",
    "-fiopenmp": "-fiopenmp",
    "-qopenmp": "-qopenmp",
}


def openmp_link_flags(kernel: model.Kernel) -> list[str]:
    """The link flags the extension needs for `kernel`'s OpenMP use (none without it):
    code compiled with `-fopenmp` calls the runtime (`GOMP_*`), which only a link with
    `-fopenmp` makes a dependency of the extension."""
    flags = [
        *getattr(kernel, "cxx_flags", []),
        *getattr(kernel, "cuda_flags", []),
        *getattr(kernel, "hip_flags", []),
        *getattr(kernel, "sycl_flags", []),
    ]
    found = [
        _OPENMP_FLAGS.get(f, f) for f in flags if f in _OPENMP_FLAGS or f.startswith("-fopenmp=")
    ]
    return list(dict.fromkeys(found))


def project_data(build: model.Build) -> dict[str, Any]:
    """The data `project.nix` holds: the planned variants (every system; `ci` marks the
    pull-request selection), the CI matrices and what the static library needs to build.
    The Nix library only reads this plan; it never recomputes it."""
    g = build.general
    variants = plan.variants(build)
    selected = {(v.system, v.name) for v in plan.select_ci(variants)}
    fw = build.framework
    torch: dict[str, Any] = {"minver": None, "maxver": None, "stableAbi": {}}
    if isinstance(fw, model.Torch):
        torch = {
            "minver": fw.minver,
            "maxver": fw.maxver,
            "stableAbi": {
                b: fw.stable_abi_for(b) for b in g.backends if fw.stable_abi_for(b) is not None
            },
        }

    def deps(section: str, field: str) -> list[Any]:
        sub = g if section == "general" else getattr(g, section)
        values = getattr(sub, field, []) if sub is not None else []
        return [
            {k: v for k, v in attrs.asdict(d).items() if v is not None} if attrs.has(type(d)) else d
            for d in values
        ]

    # `[torch-noarch]` lists the GPU targets its kernel supports; they go to metadata.json
    # as written (nothing is compiled, so nothing is intersected).
    noarch_archs = (
        {
            backend: archs
            for backend, archs in (("cuda", fw.cuda_capabilities), ("rocm", fw.rocm_archs))
            if archs
        }
        if isinstance(fw, model.TorchNoarch)
        else {}
    )
    return {
        "name": g.name,
        "moduleName": g.module_name,
        "version": g.version,
        "license": g.license,
        "upstream": g.upstream,
        "source": g.source,
        "minver": g.minver,
        "framework": build.framework_table,
        "backends": list(g.backends),
        "torch": torch,
        "cuda": {
            "minver": g.cuda.minver if g.cuda else None,
            "maxver": g.cuda.maxver if g.cuda else None,
        },
        "pythonDepends": {
            section: deps(section, "python_depends")
            for section in ("general", "cuda", "xpu", "neuron", "tpu")
        },
        "kernelDepends": {
            section: [_kernel_dep(d) for d in deps(section, "kernel_depends")]
            for section in ("general", "cuda", "xpu", "neuron")
        },
        # Every header the project lists anywhere: compile inputs of every C++ kernel and of
        # the binding (written once here, not into each kernel's file).
        "headers": shared_headers(build),
        "systems": list(plan.SYSTEMS),
        "variants": [{**v.to_json(), "ci": (v.system, v.name) in selected} for v in variants],
        "githubActions": {
            "matrix": matrix.github(variants),
            "pullRequestMatrix": matrix.github(plan.select_ci(variants)),
        },
        "kernels": {
            name: {
                "language": kernel.language,
                "backend": model.backend_of(kernel),
                "cudaMinver": getattr(kernel, "cuda_minver", None),
                "file": nixlit.raw(f"./kernels/{name}.nix"),
            }
            for name, kernel in sorted(build.kernels.items())
        },
        **({"noarchArchs": noarch_archs} if noarch_archs else {}),
    }


def _kernel_dep(dep: dict[str, Any]) -> dict[str, Any]:
    return {k.replace("_", "-"): v for k, v in dep.items()}


# -------------------------------------------------------------------------- the tree


def _library() -> dict[str, bytes]:
    lib = os.path.join(tables.PACKAGE, "nixlib")
    out: dict[str, bytes] = {}
    for name in LIB_FILES:
        with open(os.path.join(lib, name), encoding="utf-8") as handle:
            text = handle.read()
        out[f"lib/{name}"] = (_comment_header(name) + text).encode()
    for name in LIB_DATA:
        data = json.loads(tables.read_text(name))
        stamped = {"_generated": f"{MARKER} {__version__}; do not edit", **data}
        out[f"lib/data/{name}"] = (json.dumps(stamped, indent=2) + "\n").encode()
    return out


def _comment_header(name: str) -> str:
    line = f"{MARKER} {__version__} (a copy of its static library); do not edit."
    if name.endswith(".h"):
        return f"// {line}\n"
    return f"# {line}\n"


class OutDirError(NixgenError, ValueError):
    """An output directory that is not a plain relative path inside the project."""

    exit_code = EXIT_INVALID

    def render(self) -> str:
        return f"error: --out: {self}"


def check_out_dir(out_dir: str) -> None:
    if not _OUT_DIR.fullmatch(out_dir) or ".." in out_dir.split("/"):
        raise OutDirError(
            f"invalid output directory {out_dir!r}: use a relative path inside the project "
            "made of letters, digits, `.`, `_`, `-` and `/`"
        )


def root_path(out_dir: str) -> str:
    """The project root as a Nix path literal seen from the output directory: `../.` for
    `nix`, `../..` for `gen/nix` (`out_dir` is checked by `check_out_dir`)."""
    depth = len(out_dir.split("/"))
    return "../." if depth == 1 else "/".join([".."] * depth)


def render(build: model.Build, *, out_dir: str = DEFAULT_OUT) -> Rendered:
    """Render every generated file of `build`, in memory."""
    check_out_dir(out_dir)
    g = build.general
    tree: dict[str, bytes] = {}
    for name, kernel in sorted(build.kernels.items()):
        # Rust kernels have a template each; every C++ kernel is data for nixgen.kernel.cpp.
        rust = isinstance(kernel, model.RUST_KERNELS)
        template = f"kernel-{kernel.language}.nix.j2" if rust else "kernel-cpp.nix.j2"
        tree[f"kernels/{name}.nix"] = _template(
            template, **_kernel_context(build, name, kernel)
        ).encode()
    fw = build.framework
    package = python_package_dir(build)
    common = {
        "module_dir": package,
        "module_name": g.module_name,
        "version": str(g.version),
        "pyext": list(fw.pyext) if fw is not None else ["py", "pyi"],
    }
    if isinstance(fw, (model.Torch, model.TvmFfi)):
        tree["extension.nix"] = _template(
            "extension.nix.j2",
            what=f"[{fw.table}]",
            framework=fw.table,
            # The arguments callPackage must inject besides the common ones.
            framework_args=FRAMEWORK_ARGS[fw.table],
            binding_sources=list(fw.src),
            cxx_flags=list(fw.cxx_flags),
            includes=list(fw.include),
            module_dir=package,
            pyext=common["pyext"],
        ).encode()
    else:
        tree["extension.nix"] = _template(
            "no-extension.nix.j2", what="no compiled extension"
        ).encode()
    tree["noarch.nix"] = _template(
        "noarch.nix.j2", what="pure-Python variants", pname=f"{g.name}-noarch", **common
    ).encode()
    tree["project.nix"] = _template(
        "project.nix.j2", what="project data", project=project_data(build)
    ).encode()
    tree["default.nix"] = _template(
        "default.nix.j2", what="entry point", root=root_path(out_dir)
    ).encode()
    tree.update(_library())
    root = {
        "flake.nix": _template(
            "flake.nix.j2",
            what="flake",
            description=f"{g.name} kernels, built by nixgen",
            nixpkgs_url=NIXPKGS_URL,
            kernel_builder_url=KERNEL_BUILDER_URL,
            substituter=SUBSTITUTER,
            public_key=SUBSTITUTER_KEY,
            out_dir=out_dir,
        ).encode()
    }
    return Rendered(out_dir=out_dir, tree=dict(sorted(tree.items())), root=root)
