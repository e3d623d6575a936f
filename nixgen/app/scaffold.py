"""``nixgen init``: a new kernel project that builds as it is.

A project holds one ReLU kernel per requested language (`relu_cpu`, `relu_cuda`, …,
`relu_rs` for Rust), the torch binding that registers them (``torch-ext/torch_binding.cpp``
with the `registration.h` macros), the Python package, tests that compare the built kernels
with ``torch.relu``, and an edition-6 ``build.toml``. The Nix files (``flake.nix``,
``nix/``) are not templated here: the caller renders them from the new build.toml through
the normal render stage, so a new project is exactly what ``nixgen render`` would make.

Templates live in ``nixgen/templates/init``. They produce C++, Rust, Python and TOML, never
Nix; values reach TOML and Python through the ``toml`` filter (a JSON string or list is a
valid TOML and Python literal).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from nixgen.checking import project as project_mod
from nixgen.checking import spdx
from nixgen.core import jinja, paths, tables, writer
from nixgen.core.errors import OutputError
from nixgen.reading import load, options, values
from nixgen.rendering import jsonschema

if TYPE_CHECKING:
    import jinja2

#: The languages `init` can scaffold: all but `rust-cuda-oxide` and `rust-cutile`, whose
#: toolchains (cuda-oxide: a nightly and a codegen backend fetched from GitHub; cuTile: a
#: crate from crates.io and the CUDA toolkit's `tileiras`) no example here could build.
LANGUAGES = tuple(
    lang for lang in tables.LANGUAGES if lang not in ("rust-cuda-oxide", "rust-cutile")
)
DEFAULT_LICENSE = "Apache-2.0"

#: The Rust crate's manifest and lock file (its `lib.rs` differs by binding).
_CRATE = (
    ("relu_rs/Cargo.toml", "rust-cpu/Cargo.toml.j2"),
    ("relu_rs/Cargo.lock", "rust-cpu/Cargo.lock.j2"),
)
#: Kernel table name and (path, template) of each source, per language.
SOURCES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "cpp-cpu": ("relu_cpu", (("relu_cpu/relu_cpu.cpp", "cpp-cpu/relu_cpu.cpp.j2"),)),
    "cpp-cuda": ("relu_cuda", (("relu_cuda/relu_cuda.cu", "cpp-cuda/relu_cuda.cu.j2"),)),
    "cpp-rocm": ("relu_rocm", (("relu_rocm/relu_rocm.hip", "cpp-rocm/relu_rocm.hip.j2"),)),
    "cpp-xpu": ("relu_xpu", (("relu_xpu/relu_xpu.cpp", "cpp-xpu/relu_xpu.cpp.j2"),)),
    "cpp-metal": ("relu_metal", (("relu_metal/relu_metal.mm", "cpp-metal/relu_metal.mm.j2"),)),
    "rust-cpu": ("relu_rs", (*_CRATE, ("relu_rs/src/lib.rs", "rust-cpu/lib.rs.j2"))),
}

#: The shapes of a project: a `[torch]` C++ binding calling the kernels (every language), or
#: a `[tvm-ffi]` project: one rust-cpu kernel whose crate IS the binding, or one cpp-cpu
#: kernel on TVM FFI tensor views that a C++ binding exports.
BINDINGS = ("torch", "tvm-ffi")
#: The crate of the tvm-ffi shape (it exports `relu` through the TVM FFI C ABI).
TVM_FFI_SOURCES = (*_CRATE, ("relu_rs/src/lib.rs", "rust-cpu-tvm-ffi/lib.rs.j2"))
#: The C++ kernel of the tvm-ffi shape, and the languages that shape takes.
TVM_FFI_CPP_SOURCES = (("relu_cpu/relu_cpu.cpp", "cpp-cpu-tvm-ffi/relu_cpu.cpp.j2"),)
TVM_FFI_LANGUAGES = ("rust-cpu", "cpp-cpu")
#: `--language noarch`: a `[torch-noarch]` project, a pure-Python package and no kernel.
NOARCH = "noarch"
#: What `init --language` takes.
INIT_LANGUAGES = (*LANGUAGES, NOARCH)

#: The torch dispatch key and device of each backend's tensors.
DISPATCH_KEYS = {"cpu": "kCPU", "cuda": "kCUDA", "rocm": "kCUDA", "xpu": "kXPU", "metal": "kMPS"}
DEVICES = {"cpu": "cpu", "cuda": "cuda", "rocm": "cuda", "xpu": "xpu", "metal": "mps"}


@attrs.frozen(kw_only=True)
class Kernel:
    """One scaffolded kernel."""

    name: str
    language: str
    #: The torch op it implements: `relu`, or its own name when another kernel of the
    #: same backend already implements `relu` (cpp-cpu and rust-cpu together).
    op: str
    sources: tuple[tuple[str, str], ...]

    @property
    def backend(self) -> str:
        return tables.LANGUAGE_BACKEND[self.language]

    @property
    def src(self) -> list[str]:
        return [path for path, _ in self.sources]

    @property
    def dir(self) -> str:
        return self.src[0].split("/", 1)[0]

    @property
    def lib(self) -> str:
        return self.name.replace("-", "_")

    @property
    def depends(self) -> list[str]:
        return [] if self.rust else ["torch"]

    @property
    def rust(self) -> bool:
        return tables.is_rust(self.language)

    @property
    def manifest(self) -> str:
        """A Rust kernel's `cargo-manifest`."""
        return next(path for path in self.src if path.endswith("/Cargo.toml"))


def check_license(value: str) -> str | None:
    """Why `value` (a ``--license`` argument) cannot be written as general.license, or
    None: printable text (no control character, valid UTF-8) that is a valid SPDX license
    expression (`nixgen.checking.spdx`)."""
    if not value:
        return "must be a license identifier such as `Apache-2.0`"
    for c in value:
        if 0xD800 <= ord(c) <= 0xDFFF:
            return "is not valid UTF-8; use a license identifier such as `Apache-2.0`"
        if not c.isprintable() and c != " ":
            return (
                f"contains the control character U+{ord(c):04X}; use a license identifier "
                "such as `Apache-2.0`"
            )
    return spdx.problem(value)


def toml_string(value: str) -> str:
    """`value` as a TOML basic string (JSON's escapes, plus DEL, which TOML forbids raw)."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def check_binding(languages: list[str], binding: str) -> str | None:
    """Why a project in `languages` cannot have the `binding` shape, or None."""
    if binding not in BINDINGS:
        return f"unknown binding `{binding}`; expected one of {', '.join(BINDINGS)}"
    if NOARCH in languages and (len(languages) != 1 or binding != "torch"):
        return (
            "--language noarch makes a pure-Python package with no compiled kernel: use it "
            "alone, without --binding"
        )
    if binding == "tvm-ffi" and (len(languages) != 1 or languages[0] not in TVM_FFI_LANGUAGES):
        return (
            "--binding tvm-ffi makes one CPU kernel exported through TVM FFI: use it with "
            "`--language rust-cpu` (a crate that is its own binding) or `--language cpp-cpu` "
            "(a C++ kernel and binding) alone"
        )
    return None


def kernels(languages: list[str], binding: str = "torch") -> list[Kernel]:
    """The kernels of a project in `languages`, in canonical language order."""
    if list(languages) == [NOARCH]:
        return []
    unknown = [lang for lang in languages if lang not in SOURCES]
    if unknown:
        raise ValueError(f"unknown language(s): {', '.join(unknown)}")
    if binding == "tvm-ffi" and list(languages) == ["cpp-cpu"]:
        return [Kernel(name="relu_cpu", language="cpp-cpu", op="relu", sources=TVM_FFI_CPP_SOURCES)]
    if binding == "tvm-ffi":
        return [Kernel(name="relu_rs", language="rust-cpu", op="relu", sources=TVM_FFI_SOURCES)]
    out: list[Kernel] = []
    has_relu: set[str] = set()
    for language in LANGUAGES:
        if language not in languages:
            continue
        name, sources = SOURCES[language]
        backend = tables.LANGUAGE_BACKEND[language]
        op = "relu" if backend not in has_relu else name
        has_relu.add(backend)
        out.append(Kernel(name=name, language=language, op=op, sources=sources))
    return out


@cache
def _environment() -> jinja2.Environment:  # noqa: TID251 (a type: core/jinja makes it)
    import jinja2

    env = jinja.environment(jinja2.PackageLoader("nixgen", "templates/init"))
    env.filters["toml"] = toml_string
    return env


#: The JSON Schema file a new project's build.toml names in its `#:schema` line.
SCHEMA_FILE = "build-toml.schema.json"


def files(
    name: str, languages: list[str], *, license: str = DEFAULT_LICENSE, binding: str = "torch"
) -> dict[str, str]:
    """Every file of a new project, by path relative to its root (Nix files excepted)."""
    problem = values.project_name(name) or check_binding(languages, binding)
    if problem:
        raise ValueError(problem)
    plan = kernels(languages, binding)
    module = name.replace("-", "_")
    noarch = list(languages) == [NOARCH]
    # A noarch package runs on every backend torch has; `init` starts it on the CPU.
    backends = ["cpu"] if noarch else sorted({k.backend for k in plan})
    # `relu` is implemented by one kernel per backend; a second kernel of a backend (Rust
    # next to C++ on the CPU) gets an op of its own, named after it.
    ops = [{"name": "relu", "doc": ""}] + [
        {
            "name": k.op,
            "doc": f"\n\n    Computed by the {k.language} kernel, for {k.backend} tensors "
            "only.\n    ",
        }
        for k in plan
        if k.op != "relu"
    ]
    context = {
        "name": name,
        "module": module,
        "license": license,
        "languages": [k.language for k in plan],
        "backends": backends,
        "kernels": plan,
        "ops": ops,
        "exports": sorted(["add_op_namespace_prefix", "ops", *(op["name"] for op in ops)]),
        "op_names": [op["name"] for op in ops],
        "only_on": {k.op: k.backend for k in plan if k.op != "relu"},
        "devices": {b: DEVICES[b] for b in backends},
        "dispatch_keys": DISPATCH_KEYS,
        "binding": binding,
        "noarch": noarch,
    }
    env = _environment()

    def render(template: str, **extra: Any) -> str:
        return env.get_template(template).render(**context, **extra)

    out = {
        "README.md": render("README.md.j2"),
        ".gitignore": render("gitignore.j2"),
        # What the `#:schema` line of build.toml points editors to (`nixgen schema`).
        SCHEMA_FILE: json.dumps(jsonschema.schema(), indent=2, sort_keys=True, ensure_ascii=False)
        + "\n",
        f"tests/test_{module}.py": render("test.py.j2"),
    }
    if noarch:
        out["build.toml"] = render("noarch/build.toml.j2")
        out[f"torch-ext/{module}/__init__.py"] = render("noarch/__init__.py.j2")
    elif binding == "tvm-ffi" and plan[0].language == "cpp-cpu":
        out["build.toml"] = render("cpp-cpu-tvm-ffi/build.toml.j2")
        out["tvm-ffi-ext/tvm_ffi_binding.cpp"] = render("cpp-cpu-tvm-ffi/tvm_ffi_binding.cpp.j2")
        out[f"tvm-ffi-ext/{module}/__init__.py"] = render("rust-cpu-tvm-ffi/__init__.py.j2")
    elif binding == "tvm-ffi":
        out["build.toml"] = render("rust-cpu-tvm-ffi/build.toml.j2")
        out[f"tvm-ffi-ext/{module}/__init__.py"] = render("rust-cpu-tvm-ffi/__init__.py.j2")
    else:
        out["build.toml"] = render("build.toml.j2")
        if any(k.rust for k in plan):
            # A Rust crate linked into [torch] is nixgen's own: the format cannot say it.
            out[options.FILE] = render("nixgen.toml.j2")
        out["torch-ext/torch_binding.cpp"] = render("torch_binding.cpp.j2")
        out["torch-ext/torch_binding.h"] = render("torch_binding.h.j2")
        out[f"torch-ext/{module}/__init__.py"] = render("__init__.py.j2")
    for kernel in plan:
        for path, template in kernel.sources:
            out[path] = render(template, kernel=kernel)
    return dict(sorted(out.items()))


def create(
    directory: Path,
    name: str,
    languages: list[str],
    *,
    license: str = DEFAULT_LICENSE,
    force: bool = False,
    binding: str = "torch",
    then: Callable[[Path], object] | None = None,
) -> list[str]:
    """Write a new project into `directory`, then call `then(root)` on it (the render of
    its Nix files, `root` being where the project is being made); returns the paths
    written, relative to it.

    Refuses a directory that exists and is not empty unless `force`; with `force`, the
    project's files replace files of the same name and everything else stays. Nothing is
    written through a symbolic link: a link where a directory of the project goes is
    refused, and a link where one of its files goes is replaced by the file.

    A new directory is one transaction: the project is made (and `then` run) in a hidden
    directory next to it, renamed into place at the end, so Ctrl-C or a failure leaves
    nothing and the same `init` can run again. In an empty directory, what was written is
    removed again on failure; with `force`, files already replaced stay replaced.
    """
    contents = files(name, languages, license=license, binding=binding)
    # The new build.toml (and nixgen.toml) must be what nixgen accepts, before anything is
    # written: a refused argument must not leave a half-made project behind.
    nixgen_toml = None
    if options.FILE in contents:
        nixgen_toml = load.parse(contents[options.FILE], directory / options.FILE, options.FILE)
    project_mod.structure(
        load.parse(contents["build.toml"], directory / load.BUILD_TOML, load.BUILD_TOML),
        nixgen_toml,
    )
    if directory.exists() and not directory.is_dir():
        raise OutputError(f"{directory} exists and is not a directory")
    existing = directory.is_dir()
    if existing and any(directory.iterdir()) and not force:
        raise OutputError(
            f"{directory} is not empty; choose another directory, or pass --force to write "
            "the new project's files into it (files of the same name are replaced)"
        )
    if existing:
        _write_into(directory, contents, then, undo=not force)
        return list(contents)
    with writer.new_directory(directory) as staging:
        _write_into(staging, contents, then, undo=False)
    return list(contents)


def _write_into(
    root: Path, contents: dict[str, str], then: Callable[[Path], object] | None, *, undo: bool
) -> None:
    """Write `contents` under `root` by the path rule (`nixgen.core.writer`: no link
    followed on the way; a link where a file goes is replaced by the file), then run
    `then`; with `undo`, remove every entry made here when anything fails (`root` was
    empty)."""
    before = set(os.listdir(root)) if undo else set()
    try:
        for rel, text in contents.items():
            blocked = paths.check_dirs(root, rel)
            if blocked is not None:
                raise OutputError(
                    f"{root / blocked.where}: {blocked.reason}; nixgen init writes only into "
                    "real directories inside the project (remove it, or choose another --dir)"
                )
            writer.write_file(root, rel, text.encode("utf-8"), replace_link=True)
        if then is not None:
            then(root)
    except BaseException:
        if undo:
            writer.remove_new_entries(root, before)
        raise
