"""Drawn `build.toml` documents for the differential test against the field's own parser.

`documents()` draws whole TOML texts of editions 6, 5 and the edition-less 4 over every
framework table, kernel language, key and kind of value, valid and not: most values are
ones both parsers take, some break the format (a wrong type, an unknown key, a missing one,
a version of three parts, a Rust kernel under `[torch]`), some are the format's but not
nixgen's (a path out of the project, an unknown Python dependency), some are what nixgen's
earlier edition 6 wrote. `verdicts()` reads one text with both parsers: the `kernels`
client's compiled `Build.open` (the field's) and nixgen's reader.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import attrs
from hypothesis import strategies as st

from nixgen.checking import project
from nixgen.core import tables
from nixgen.core.errors import Problem, ProblemError
from nixgen.reading import load

BACKENDS = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")
CPP = ("cpp-cpu", "cpp-cuda", "cpp-rocm", "cpp-xpu", "cpp-metal")
RUST = ("rust-cpu", "rust-cuda-oxide", "rust-cutile")
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi", "mlx-noarch")

#: Values of the wrong kind, for any key (TOML's kinds).
WRONG: tuple[Any, ...] = (3, -1, 1.5, True, [], {}, ["x", 1], {"a": 1})
PATHS = ("k/k.cpp", "k/k.cu", "a.hip", "src/lib.rs", "x/y/z.mm", "k.h", "é/ü.cpp")
BAD_PATHS = ("../out.cpp", "/abs.cpp", "k/*.cpp", "", "a\\b.cpp", "a//b.cpp", "a\u0000b")
VERSIONS = ("12.8", "2.11", "13.0", "2.12", "12.6", "13.2", "13.10")
BAD_VERSIONS = ("12.8.1", "13", "x.y", "", " 2.11", "+2.11", "02.11", "2.1234567890", "-1.0")
CAPABILITIES = ("8.0", "9.0", "9.0a", "10.0f", "9.0+PTX", "11.8", "12.0")
BAD_CAPABILITIES = ("sm_80", "8", "")
ROCM = ("gfx942", "gfx90a", "gfx1100", "gfx1250")
URLS = ("https://github.com/org/relu", "git@github.com:org/relu.git", "ssh://git@host.org/r")
BAD_URLS = ("ftp://host/x", "not a url", "https://", "file:///x", "https://999.1/x", "git@h:/x")
REPOS = ("org/relu", "kernels-community/activation")
NAMES = ("relu", "relu-cpu", "flash-attn3", "ab")
BAD_NAMES = ("Relu", "relu_cpu", "r", "-r", "relu-", "a" * 70)
KERNEL_NAMES = ("relu", "relu_cpu", "k-1", "K", "_x", "activation")
BAD_KERNEL_NAMES = ("a b", "1x", "__x", "outPath", "a.b")
LICENSES = ("Apache-2.0", "MIT", "BSD-3-Clause")


class Draw:
    """One document's choices, from a seeded `random.Random` (so that each value is mostly
    valid and now and then not, at the rates given, which Hypothesis's own draws, biased
    towards their bounds, would not keep)."""

    def __init__(self, rnd: random.Random, bad: float):
        self.rnd = rnd
        #: How often a value is one the format refuses (or nixgen does, or of the wrong kind).
        self.bad = bad

    def chance(self, p: float) -> bool:
        return self.rnd.random() < p

    def pick(self, values: Any) -> Any:
        return self.rnd.choice(list(values))

    def value(self, good: Any, bad: Any = ()) -> Any:
        """One of `good`, or now and then one of `bad` or a value of the wrong kind."""
        if self.chance(self.bad):
            return self.pick([*bad, *WRONG]) if bad and self.chance(0.7) else self.pick(WRONG)
        return self.pick(good)

    def some(self, good: Any, most: int = 2, bad: Any = ()) -> Any:
        """A list of `good` values (now and then with a bad one, or of the wrong kind)."""
        items = [self.pick(good) for _ in range(self.rnd.randint(0, most))]
        if self.chance(self.bad):
            if bad and self.chance(0.7):
                items.append(self.pick(bad))
            else:
                return self.pick(WRONG)
        return items

    def maybe(self, table: dict[str, Any], key: str, p: float, make: Any) -> None:
        if self.chance(p):
            table[key] = make()

    # -- tables ------------------------------------------------------------------------
    def kernel_depends(self) -> list[Any]:
        entries = []
        for _ in range(self.rnd.randint(0, 2)):
            entry: dict[str, Any] = {"repo-id": self.value(REPOS, ("relu", "a/b/c"))}
            shape = self.pick(
                ["version", "revision", "both", "neither"]
                if self.chance(self.bad)
                else ["version", "revision"]
            )
            if shape in ("version", "both"):
                entry["version"] = self.value(range(5), (-1, "1"))
            if shape in ("revision", "both"):
                entry["revision"] = self.value(["main", "abc123"])
            if self.chance(self.bad / 4):
                entry["branch"] = "main"
            entries.append(entry)
        return entries

    def general(self, edition: int | None, framework: str | None = None) -> dict[str, Any]:
        g: dict[str, Any] = {}
        for key, make in (
            ("name", lambda: self.value(NAMES, BAD_NAMES)),
            ("version", lambda: self.value(range(5), (-1, "1"))),
            ("edition", lambda: self.value([edition], ("6", 7)) if edition else None),
            ("license", lambda: self.value(LICENSES, ("a\u0000b", ""))),
            (
                "backends",
                lambda: (
                    ["metal"]
                    if framework == "mlx-noarch" and not self.chance(self.bad)
                    else self.some(BACKENDS, 3, ("CPU", "gpu"))
                ),
            ),
        ):
            if key == "edition" and edition is None:
                continue
            if not self.chance(self.bad / 4):  # a required key left out, now and then
                g[key] = make()
        self.maybe(g, "upstream", 0.2, lambda: self.value(URLS, BAD_URLS))
        self.maybe(g, "source", 0.1, lambda: self.value(URLS, BAD_URLS))
        if edition == 6:
            self.maybe(g, "build-layout", 0.3, lambda: self.value(["files", "zip"], ("ZIP",)))
        if self.chance(0.2):
            hub: dict[str, Any] = {}
            self.maybe(hub, "repo-id", 0.7, lambda: self.value(REPOS, ("relu",)))
            self.maybe(hub, "branch", 0.5, lambda: self.value(["main", "v1"]))
            if self.chance(self.bad / 4):
                hub["token"] = "x"
            g["hub"] = hub
        self.maybe(
            g,
            "python-depends",
            0.2,
            lambda: self.some(["einops", "tvm-ffi", "helion"], 2, ("numpy",)),
        )
        if edition != 4:
            self.maybe(g, "kernel-depends", 0.3, self.kernel_depends)
        for section in ("cuda", "xpu", "neuron", "tpu"):
            if not self.chance(0.15):
                continue
            table: dict[str, Any] = {}
            if section == "cuda":
                self.maybe(table, "minver", 0.5, lambda: self.value(VERSIONS, BAD_VERSIONS))
                self.maybe(table, "maxver", 0.5, lambda: self.value(VERSIONS, BAD_VERSIONS))
            allowed = {"cuda": "nvidia-cutlass-dsl", "xpu": "onednn", "neuron": "nki"}.get(
                section, "x"
            )
            if self.chance(0.3):
                table["python-depends"] = self.some([allowed], 1, ("x",))
            if edition != 4 and (section != "tpu" or self.chance(self.bad)):
                self.maybe(table, "kernel-depends", 0.4, self.kernel_depends)
            g[section] = table
        # a key of nixgen's earlier edition 6, or of nothing
        if self.chance(self.bad / 4):
            g["minver"] = self.pick(["0.19", "0.19.0"])
        if self.chance(self.bad / 6):
            g[self.pick(["licence", "universal", "description"])] = "x"
        return g

    def framework(self, name: str, edition: int | None) -> dict[str, Any]:
        table: dict[str, Any] = {}
        if name in ("torch", "tvm-ffi"):
            self.maybe(table, "src", 0.7, lambda: self.some(PATHS, 2, BAD_PATHS))
            self.maybe(table, "include", 0.2, lambda: self.some([".", "inc"]))
            self.maybe(table, "cxx-flags", 0.2, lambda: self.some(["-O3", "-DX=1"]))
        if name == "tvm-ffi" and edition in (4, 5) and "src" not in table:
            table["src"] = []  # the format's editions 4 and 5 require it
        self.maybe(table, "pyext", 0.2, lambda: self.some(["py", "json", "metal"], 2, (".json",)))
        if name == "torch":
            self.maybe(table, "minver", 0.2, lambda: self.value(["2.11", "2.12"], BAD_VERSIONS))
            self.maybe(table, "maxver", 0.2, lambda: self.value(["2.12", "2.13"], BAD_VERSIONS))
            self.maybe(
                table,
                "stable-abi",
                0.15,
                lambda: self.value(
                    ["2.11", "2.12", {"cpu": "2.11"}, {"cuda": "2.12", "cpu": "2.11"}],
                    ({"gpu": "2.11"}, {"cpu": "2"}),
                ),
            )
        if name == "torch-noarch":
            key = "cuda-capabilities" if self.chance(self.bad / 2) else "cuda_capabilities"
            self.maybe(table, key, 0.3, lambda: self.some(CAPABILITIES, 2, BAD_CAPABILITIES))
            self.maybe(table, "rocm_archs", 0.2, lambda: self.some(ROCM, 2))
        if self.chance(self.bad / 6):
            table["flavour"] = "x"
        return table

    def cpp_kernel(self, language: str, tag: tuple[str, Any]) -> dict[str, Any]:
        kernel: dict[str, Any] = {tag[0]: tag[1]}
        if not self.chance(self.bad / 3):
            others = [*tables.field_cpp_dependencies(), "tvm-ffi", "cutlass_sycl", "bogus"]
            kernel["depends"] = self.some(tables.cpp_dependencies(language), 2, others)
        if not self.chance(self.bad / 4):
            kernel["src"] = self.some(PATHS, 2, BAD_PATHS)
        self.maybe(kernel, "include", 0.2, lambda: self.some([".", "inc"]))
        self.maybe(kernel, "cxx-flags", 0.2, lambda: self.some(["-O3"]))
        if language == "cpp-cuda":
            self.maybe(kernel, "cuda-flags", 0.2, lambda: self.some(["-lineinfo"]))
            self.maybe(
                kernel,
                "cuda-capabilities",
                0.4,
                lambda: self.some(CAPABILITIES, 3, BAD_CAPABILITIES),
            )
            self.maybe(kernel, "cuda-minver", 0.2, lambda: self.value(VERSIONS, BAD_VERSIONS))
        if language == "cpp-rocm":
            self.maybe(kernel, "hip-flags", 0.2, lambda: self.some(["-O3"]))
            self.maybe(kernel, "rocm-archs", 0.3, lambda: self.some(ROCM, 2, ("mi300",)))
        if language == "cpp-xpu":
            self.maybe(kernel, "sycl-flags", 0.2, lambda: self.some(["-O3"]))
        return kernel

    def rust_kernel(self, language: str) -> dict[str, Any]:
        kernel: dict[str, Any] = {"language": language}
        if not self.chance(self.bad / 3):
            kernel["cargo-manifest"] = self.value(["r/Cargo.toml", "Cargo.toml"], ("../C.toml",))
        if not self.chance(self.bad / 4):
            files = ["r/Cargo.toml", "r/Cargo.lock", "r/src/lib.rs", "r/src", "Cargo.lock"]
            kernel["src"] = self.some(files, 3, BAD_PATHS)
        if language == "rust-cuda-oxide":
            self.maybe(
                kernel,
                "cuda-capabilities",
                0.4,
                lambda: self.some(CAPABILITIES, 2, BAD_CAPABILITIES),
            )
        if language == "rust-cutile" and not self.chance(self.bad / 3):
            kernel["tileiras-minver"] = self.value(
                ["13.2", "13.3", "14.0", "13.10"], ("13.1", "12.8", "13", "13.2.0")
            )
        # what nixgen's earlier edition 6 wrote, and keys of C++ kernels
        if self.chance(self.bad / 2):
            kernel[self.pick(["depends", "features", "lib-name"])] = self.pick([[], ["x"], "x"])
        if self.chance(self.bad / 6):
            kernel[self.pick(["cxx-flags", "include"])] = []
        return kernel

    def kernels(self, edition: int, framework: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for _ in range(self.rnd.randint(0, 3)):
            name = self.pick(BAD_KERNEL_NAMES if self.chance(self.bad / 4) else KERNEL_NAMES)
            if edition == 6:
                # Rust kernels belong to a [tvm-ffi] project (now and then elsewhere)
                rust = RUST if framework == "tvm-ffi" or self.chance(self.bad) else ()
                language = self.value([*CPP, *CPP, *rust, *rust], ("cpp-tpu", "rust-cuda"))
                if language in RUST:
                    out[name] = self.rust_kernel(language)
                elif language in CPP:
                    out[name] = self.cpp_kernel(language, ("language", language))
                else:
                    out[name] = {"language": language, "src": [], "depends": []}
            else:
                language = self.pick(CPP)
                backend = self.value([language.removeprefix("cpp-")], ("gpu",))
                out[name] = self.cpp_kernel(language, ("backend", backend))
            if self.chance(self.bad / 6):
                out[name]["colour"] = "x"
        return out

    def document(self, edition: int | None) -> dict[str, Any]:
        choices = FRAMEWORKS if edition == 6 else FRAMEWORKS[:3]
        present = [self.pick([*choices, "torch", "tvm-ffi", "tvm-ffi"])]
        document: dict[str, Any] = {"general": self.general(edition, present[0])}
        if self.chance(self.bad / 4):
            present = []  # no framework table
        elif self.chance(self.bad / 4):
            present.append(self.pick([c for c in choices if c not in present]))
        for name in present:
            document[name] = self.framework(name, edition)
        found = self.kernels(6 if edition == 6 else 5, present[0] if present else None)
        if found or self.chance(0.1):
            document["kernel"] = found
        if self.chance(self.bad / 8):
            document["kernels"] = {}
        return document


#: Values that break a rule (the format's or nixgen's), by the key they are put under.
BAD_VALUES: dict[str, tuple[Any, ...]] = {
    "name": BAD_NAMES,
    "version": (-1, "1", 1.5),
    "edition": ("6", 7, 5, 4),
    "license": ("", "a\u0000b"),
    "backends": (["CPU"], ["gpu"], ["metal", "cuda"]),
    "upstream": BAD_URLS,
    "source": BAD_URLS,
    "build-layout": ("ZIP", "tar"),
    "repo-id": ("relu", "a/b/c", ""),
    "branch": (1,),
    "revision": (1,),
    "python-depends": (["numpy"], ["nki"]),
    "minver": BAD_VERSIONS,
    "maxver": BAD_VERSIONS,
    "cuda-minver": BAD_VERSIONS,
    "stable-abi": (*BAD_VERSIONS, {"gpu": "2.11"}),
    "tileiras-minver": ("13.1", "12.8", "13", "13.2.0", " 13.2"),
    "src": BAD_PATHS,
    "include": BAD_PATHS,
    "depends": (
        "tvm-ffi",
        "cutlass_sycl",
        "bogus",
        "torch-stable-abi-shim",
        "cutlass_3_8",
        "sycl_tla",
        "metal-cpp",
    ),
    "cuda-capabilities": BAD_CAPABILITIES,
    "cuda_capabilities": BAD_CAPABILITIES,
    "rocm-archs": ("mi300", "gfx94"),
    "rocm_archs": ("mi300",),
    "cargo-manifest": ("../x/Cargo.toml", "r/crate.toml", ""),
    "language": ("cpp-tpu", "rust-cuda", *CPP, *RUST),
    "backend": ("gpu", "CPU"),
    "pyext": (".json", "a b"),
}
#: Keys a table may be given that belong elsewhere (another language, another edition,
#: nixgen's earlier edition 6, nixgen.toml) or nowhere.
FOREIGN = (
    "features",
    "lib-name",
    "depends",
    "minver",
    "cuda-flags",
    "tileiras-minver",
    "cargo-manifest",
    "cuda-capabilities",
    "rocm_archs",
    "build-layout",
    "colour",
    "device-manifest",
    "kernel-depends",
    "dsl",
    "universal",
    "language",
    "backend",
)


def _tables(document: dict[str, Any]) -> list[dict[str, Any]]:
    """Every table of `document` (inline ones too), the document first."""
    out = [document]
    for value in document.values():
        if isinstance(value, dict):
            out += _tables(value)
        elif isinstance(value, list):
            out += [t for item in value if isinstance(item, dict) for t in _tables(item)]
    return out


def mutate(document: dict[str, Any], rnd: random.Random) -> None:
    """Break `document` in one place: a value of a bad kind or of a bad value, a key left
    out, one added from elsewhere, a framework table swapped, added or left out."""
    tables = _tables(document)
    keyed = [(t, k) for t in tables for k in t if t is not document]
    kind = rnd.choice(["wrong", "bad", "bad", "bad", "drop", "add", "add", "framework"])
    if kind == "framework":
        present = [k for k in document if k in FRAMEWORKS]
        if present and rnd.random() < 0.5:
            body = document.pop(present[0])
            if rnd.random() < 0.6:
                document[rnd.choice([f for f in FRAMEWORKS if f != present[0]])] = body
        else:
            document[rnd.choice(FRAMEWORKS)] = {}
        return
    if kind == "add" or not keyed:
        table = rnd.choice(tables[1:] or tables)
        table[rnd.choice(FOREIGN)] = rnd.choice(["x", [], ["x"], "13.2", "r/Cargo.toml", 1])
        return
    if kind == "bad":
        # a key name first (each rule as likely as the next), then one of its places
        name = rnd.choice(sorted({k for _, k in keyed if k in BAD_VALUES} or {"-"}))
        keyed = [(t, k) for t, k in keyed if k == name] or keyed
    table, key = rnd.choice(keyed)
    if kind == "drop":
        del table[key]
    elif kind == "wrong":
        table[key] = rnd.choice(WRONG)
    else:
        bad = BAD_VALUES.get(key) or WRONG
        value = rnd.choice(bad)
        if isinstance(table[key], list) and not isinstance(value, list):
            table[key] = [*table[key][: rnd.randint(0, len(table[key]))], value]
        else:
            table[key] = value


#: One rule each: a key and a value that breaks it (or None: the key left out; `WRONG`: a
#: value of the wrong kind), every bad value of `BAD_VALUES` among them.
FOCUS: list[tuple[str, Any]] = [
    *((key, value) for key, values in BAD_VALUES.items() for value in values),
    *((key, None) for key in BAD_VALUES),
    *((key, WRONG) for key in BAD_VALUES),
]


def focused(rnd: random.Random, edition: int | None, key: str, value: Any) -> dict[str, Any]:
    """A document drawn valid, holding `key`, with one place of `key` set to `value` (None:
    left out; `WRONG`: a value of the wrong kind); a valid one if no draw holds the key."""
    for _ in range(60):
        document = Draw(rnd, 0.0).document(edition)
        places = [(t, k) for t in _tables(document)[1:] for k in t if k == key]
        if places:
            break
    else:
        return document
    table, key = rnd.choice(places)
    if value is None:
        del table[key]
    elif value is WRONG:
        table[key] = rnd.choice(WRONG)
    elif isinstance(table[key], list) and not isinstance(value, list):
        table[key] = [*table[key][: rnd.randint(0, len(table[key]))], value]
    else:
        table[key] = value
    return document


@st.composite
def documents(draw: st.DrawFn, editions: tuple[int | None, ...] = (6,)) -> dict[str, Any]:
    """A whole build.toml document (as data) of one of `editions` (None: the edition-less
    edition 4): a third break one rule of `FOCUS` each (every rule as likely as the next);
    the others are drawn valid and then broken in one or two places (`mutate`), or left
    valid, or drawn with a bad value anywhere (0 to 10% of them)."""
    rnd = draw(st.randoms(use_true_random=True))
    if rnd.random() < 1 / 3:
        key, value = rnd.choice(FOCUS)
        return focused(rnd, rnd.choice(editions), key, value)
    noisy = rnd.random() < 0.2
    bad = rnd.choice([0.01, 0.03, 0.06, 0.1]) if noisy else 0.0
    document = Draw(rnd, bad).document(rnd.choice(editions))
    if not noisy:
        for _ in range(rnd.choice([0, 1, 1, 1, 2])):
            mutate(document, rnd)
    return document


# ---------------------------------------------------------------------------- TOML text


def _key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else _value(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def toml(document: dict[str, Any]) -> str:
    """`document` as TOML text: each table a `[header]`, sub-tables of tables inline."""
    lines: list[str] = []

    def table(path: list[str], body: dict[str, Any]) -> None:
        lines.append("[" + ".".join(_key(p) for p in path) + "]")
        nested = []
        for key, value in body.items():
            if isinstance(value, dict) and path[0] in ("general", "kernel") and value:
                nested.append((key, value))
            else:
                lines.append(f"{_key(key)} = {_value(value)}")
        lines.append("")
        for key, value in nested:
            table([*path, key], value)

    for name, body in document.items():
        if isinstance(body, dict):
            table([name], body)
        else:
            lines.insert(0, f"{_key(name)} = {_value(body)}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- verdicts


@attrs.frozen
class Field:
    """The field's reading: accepted (with what `Build` exposes), or the message."""

    accepted: bool
    backends: tuple[str, ...] = ()
    kernel_depends: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    message: str = ""


@attrs.frozen
class Nixgen:
    """nixgen's reading: its edition, whether it read the format or a dialect (or an edition
    the format no longer reads), what it exposes like `Build`, or its errors."""

    accepted: bool
    edition: int = 0
    dialect: bool = False
    backends: tuple[str, ...] = ()
    kernel_depends: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    errors: tuple[Problem, ...] = ()
    warnings: tuple[Problem, ...] = ()


def _dependency(dep: Any) -> tuple[Any, ...]:
    return (dep.repo_id, dep.version, dep.revision)


def field_reads(text: str) -> Field:
    """`kernels._rust.Build.open` on a directory holding only `text` as build.toml."""
    import kernels._rust as rust  # the locked client's compiled parser

    with tempfile.TemporaryDirectory(prefix="field-") as tmp:
        Path(tmp, "build.toml").write_text(text, encoding="utf-8")
        try:
            build = rust.Build.open(tmp)
        except ValueError as exc:
            return Field(accepted=False, message=str(exc))
    depends = []
    for name in BACKENDS:
        found = []
        for dep in build.all_kernel_depends(rust.Backend.from_str(name)):
            version = dep.version
            number = getattr(version, "version", None)
            revision = getattr(version, "revision", None)
            found.append((dep.repo_id, number, revision))
        depends.append((name, tuple(found)))
    return Field(
        accepted=True,
        backends=tuple(str(b).rpartition(".")[2].lower() for b in build.general.backends),
        kernel_depends=tuple(depends),
    )


def nixgen_reads(text: str) -> Nixgen:
    """nixgen's reader (`project.read_document`: detect, structure, convert) on `text`."""
    document = load.parse(text, Path("build.toml"), "build.toml")
    try:
        read = project.read_document(document)
    except ProblemError as exc:
        return Nixgen(accepted=False, errors=tuple(exc.errors))
    g = read.build.general
    return Nixgen(
        accepted=True,
        edition=read.edition,
        dialect=read.dialect,
        backends=tuple(g.backends),
        kernel_depends=tuple(
            (name, tuple(_dependency(d) for d in g.all_kernel_depends(name))) for name in BACKENDS
        ),
        warnings=tuple(read.warnings),
    )


def agree(field: Field, nixgen: Nixgen) -> str | None:
    """Why the two readings disagree, or None.

    The field accepts: nixgen accepts the format (no dialect, no edition it reads beyond the
    format) and exposes the same backends and kernel dependencies, or it refuses only by
    rules of its own, each marked so (`Problem.beyond_format`). The field refuses: nixgen
    refuses, or reads the file only as what the format refuses, saying so in a warning
    (nixgen's earlier edition 6, the anchor's branch, editions 1–3, a name with `_`).
    """
    beyond = [w for w in nixgen.warnings if w.beyond_format]
    if field.accepted:
        if not nixgen.accepted:
            own = [e for e in nixgen.errors if not e.beyond_format]
            if own:
                return f"the field accepts; nixgen refuses: {own[0].render()}"
            return None
        if nixgen.dialect or beyond:
            return f"the field accepts; nixgen reads it as beyond the format: {beyond}"
        if nixgen.backends != field.backends:
            return f"backends: field {field.backends}, nixgen {nixgen.backends}"
        if nixgen.kernel_depends != field.kernel_depends:
            return f"kernel-depends: field {field.kernel_depends}, nixgen {nixgen.kernel_depends}"
        return None
    if nixgen.accepted and not beyond:
        return f"the field refuses ({field.message}); nixgen accepts"
    return None
