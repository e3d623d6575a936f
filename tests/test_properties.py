"""Property tests over the whole pipeline: hostile strings in, exactly the same values out.

Any Unicode string placed in any string field of a build.toml (``${``, quotes, ``\\``,
``''``, newlines, control characters, bidi overrides, Nix keywords, very long values) is
either rejected with a clean, located error (``build.toml:LINE:COL`` and the key path of
the field), or rendered to Nix that ``nix-instantiate --eval --strict --json`` turns back
into exactly the same value. Characters no Nix string can carry (NUL) are always rejected.

Each property is a Hypothesis ``@given`` test: a failing example is shrunk to the smallest
document that fails and replayed from the example database on the next run. The Nix
properties draw a batch of documents per example, rendered each to its own directory, and
one ``nix-instantiate`` call evaluates the batch (a failing batch shrinks to the one document
that fails): each project's ``project.nix`` (the whole data set), its
``extension.nix`` and each kernel file, called like ``callPackage`` does with a fake
environment whose builders (``mkDerivation``, ``buildRustPackage``) and library functions
(``nixgen.compile.cppCuda`` …) hand back the arguments they were given. So the test sees
exactly the values the generated code passes on: flags, sources, include directories,
features, names, versions, licenses and URLs.

Budgets (``max_examples``) keep the file under a minute on two cores.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import tomli
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nixgen.checking import project, validate
from nixgen.core import tables as data_tables
from nixgen.core.errors import ProblemError
from nixgen.planning import kernels, plan
from nixgen.reading import load, model, positions
from nixgen.rendering import nixlit, render

from .nixtools import needs_nix

NIX_INSTANTIATE = shutil.which("nix-instantiate")

#: No deadline: an example may render several projects and run Nix once.
PROPERTY = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ------------------------------------------------------------------------ strategies

TRICKY = [
    "${", "$${", "\\${", "''", "''${", "'''", "''\\", '"', "\\", "\\\\", "$", "{", "}",
    "\n", "\r", "\r\n", "\t", "\x00", "\x01", "\x1b[31m", "\x7f", "\u0085", "\u2028",
    "\u202e", "\ufeff", "\U0001f600", "é", "or", "if", "rec", "let", "in", "inherit",
    "__curPos", "builtins.abort 1", "; rm -rf /", "$(id)", "`id`", "'", " ", "/", ".",
    "..", "*", "-", "_", "a", "0",
]  # fmt: skip
hostile_text = st.lists(
    st.one_of(st.sampled_from(TRICKY), st.characters(exclude_categories=["Cs"])), max_size=14
).map("".join)

#: A fixed project with one kernel of every language; each example puts hostile strings
#: into some of its string fields (the key path says where).
KERNELS = {
    "cpu_k": ("cpp-cpu", ["cpu_k/a.cpp"]),
    "cuda_k": ("cpp-cuda", ["cuda_k/a.cu"]),
    "rocm_k": ("cpp-rocm", ["rocm_k/a.hip"]),
    "xpu_k": ("cpp-xpu", ["xpu_k/a.cpp"]),
    "metal_k": ("cpp-metal", ["metal_k/a.mm"]),
    "rust_k": ("rust-cpu", ["rust_k/Cargo.toml", "rust_k/Cargo.lock", "rust_k/src/lib.rs"]),
}
#: Every string field that reaches generated Nix (or that has a rule), by key path.
#: Lists get the hostile value appended after the project's own entries.
FIELDS: list[tuple[str | int, ...]] = [
    ("general", "license"),
    ("general", "upstream"),
    ("general", "source"),
    ("general", "hub", "repo-id"),
    ("general", "kernel-depends", 0, "repo-id"),
    ("general", "kernel-depends", 0, "revision"),
    ("torch", "src"),
    ("torch", "include"),
    ("torch", "cxx-flags"),
    ("kernel", "cpu_k", "src"),
    ("kernel", "cpu_k", "include"),
    ("kernel", "cpu_k", "cxx-flags"),
    ("kernel", "cuda_k", "cxx-flags"),
    ("kernel", "cuda_k", "cuda-flags"),
    ("kernel", "rocm_k", "hip-flags"),
    ("kernel", "xpu_k", "sycl-flags"),
    ("kernel", "metal_k", "cxx-flags"),
    ("kernel", "rust_k", "features"),
    ("kernel", "rust_k", "src"),
    ("kernel", "<name>"),  # a seventh kernel, named by the hostile string
]
LIST_FIELDS = {"src", "include", "cxx-flags", "cuda-flags", "hip-flags", "sycl-flags", "features"}

placements = st.dictionaries(st.sampled_from(FIELDS), hostile_text, min_size=1, max_size=4)


def toml_string(text: str) -> str:
    """A TOML basic string for `text`: every control character escaped, the rest raw."""
    out = []
    for c in text:
        if c in ('"', "\\"):
            out.append("\\" + c)
        elif ord(c) < 0x20 or c == "\x7f":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(toml_string(i) for i in items) + "]"


def document(placed: dict[tuple[str | int, ...], str]) -> str:
    """The build.toml text of the skeleton project with `placed` values in their fields."""
    general = {
        "name": "hostile",
        "version": 1,
        "edition": 6,
        "license": "Apache-2.0",
        "backends": ["cpu", "cuda", "rocm", "xpu", "metal"],
    }
    lines = ["[general]"]
    for key, value in general.items():
        value = placed.get(("general", key), value)
        lines.append(
            f"{key} = {toml_string(value) if isinstance(value, str) else json.dumps(value)}"
        )
    for key in ("upstream", "source"):
        if ("general", key) in placed:
            lines.append(f"{key} = {toml_string(placed['general', key])}")
    if ("general", "hub", "repo-id") in placed:
        lines += [
            "",
            "[general.hub]",
            f"repo-id = {toml_string(placed['general', 'hub', 'repo-id'])}",
        ]
    dep_repo = placed.get(("general", "kernel-depends", 0, "repo-id"))
    dep_rev = placed.get(("general", "kernel-depends", 0, "revision"))
    if dep_repo is not None or dep_rev is not None:
        lines += [
            "",
            "[[general.kernel-depends]]",
            f"repo-id = {toml_string(dep_repo or 'org/dep')}",
        ]
        lines.append(f"revision = {toml_string(dep_rev)}" if dep_rev is not None else "version = 1")

    def with_extra(path: tuple[str | int, ...], base: list[str]) -> list[str]:
        return [*base, placed[path]] if path in placed else base

    lines += ["", "[torch]"]
    lines.append(f"src = {toml_list(with_extra(('torch', 'src'), ['torch-ext/binding.cpp']))}")
    for key in ("include", "cxx-flags"):
        if ("torch", key) in placed:
            lines.append(f"{key} = {toml_list([placed['torch', key]])}")
    for name, (language, src) in KERNELS.items():
        if language in RUST_LANGUAGES:
            continue  # a crate linked into [torch]: nixgen.toml's (`options`)
        lines += ["", f"[kernel.{name}]", f'language = "{language}"', "depends = []"]
        lines.append(f"src = {toml_list(with_extra(('kernel', name, 'src'), src))}")
        for key in sorted(LIST_FIELDS - {"src"}):
            if ("kernel", name, key) in placed:
                lines.append(f"{key} = {toml_list([placed['kernel', name, key]])}")
    if ("kernel", "<name>") in placed:
        lines += ["", f"[kernel.{toml_string(placed['kernel', '<name>'])}]", 'language = "cpp-cpu"']
        lines += ["depends = []", 'src = ["cpu_k/a.cpp"]']
    return "\n".join(lines) + "\n"


RUST_LANGUAGES = ("rust-cpu",)


def options(placed: dict[tuple[str | int, ...], str]) -> str:
    """The nixgen.toml of the skeleton project: its Rust kernel, linked into [torch]."""
    lines = []
    for name, (language, src) in KERNELS.items():
        if language not in RUST_LANGUAGES:
            continue
        lines += [f"[kernel.{name}]", f'language = "{language}"']
        lines.append(f"cargo-manifest = {toml_string(src[0])}")
        lines.append(f"src = {toml_list(with_extra_of(placed, ('kernel', name, 'src'), src))}")
        if ("kernel", name, "features") in placed:
            lines.append(f"features = {toml_list([placed['kernel', name, 'features']])}")
    return "\n".join(lines) + "\n"


def with_extra_of(
    placed: dict[tuple[str | int, ...], str], path: tuple[str | int, ...], base: list[str]
) -> list[str]:
    return [*base, placed[path]] if path in placed else base


def field_path(
    field: tuple[str | int, ...], placed: dict[tuple[str | int, ...], str]
) -> tuple[str | int, ...]:
    """The key path a problem about the placed value may name (at it or below it)."""
    if field == ("kernel", "<name>"):
        return ("kernel",)  # a bad name, or a name that collides with another kernel's
    if field[-1] in LIST_FIELDS:
        return field  # the list, or its element
    return field


# --------------------------------------------------------------------- the pipeline


class Outcome:
    """What the pipeline did with one document: rejected (problems) or rendered."""

    def __init__(self, text: str, nixgen_toml: str = ""):
        self.text = text
        self.problems: list[Any] = []
        self.build: model.Build | None = None
        self.rendered: render.Rendered | None = None
        try:
            document_ = load.parse(text, Path("build.toml"), "build.toml")
            options_ = load.parse(nixgen_toml, Path("nixgen.toml"), "nixgen.toml")
            _, build, warnings = project.structure(document_, options_)
            problems = document_.locate_all([*warnings, *validate.validate(build, None)])
            if any(p.severity == "error" for p in problems):
                raise ProblemError(problems)
        except ProblemError as exc:
            self.problems = exc.errors
            return
        self.build = build
        self.rendered = render.render(plan.make(build))


def check_rejection(outcome: Outcome, placed: dict[tuple[str | int, ...], str]) -> None:
    assert outcome.problems
    allowed = [field_path(f, placed) for f in placed]
    for problem in outcome.problems:
        assert problem.file in ("build.toml", "nixgen.toml")
        assert problem.line is not None and problem.line >= 1, problem
        assert any(problem.path[: len(a)] == a for a in allowed), (problem.render(), placed)
        line = problem.render()
        assert "\n" not in line and "\x1b" not in line and "\x00" not in line, line


def expected_kernel(build: model.Build, name: str) -> dict[str, Any]:
    """What the kernel file passes on, as the fake environment hands it back."""
    kernel = build.kernels[name]
    pname = f"{build.general.name}-{name}"
    rust = isinstance(kernel, model.RUST_KERNELS)
    library = kernel.library_name(name) if rust else name
    passthru = {
        "kernel": name,
        "library": library,
        "language": kernel.language,
    }
    if isinstance(kernel, model.RustCpuKernel):
        lockfile = kernel.lockfile()
        crate_dir = kernel.manifest().rpartition("/")[0]
        workspace = kernel.workspace_manifest() is not None
        out: dict[str, Any] = {
            "pname": pname,
            "src": {"sources": list(kernel.src)},
            "buildFeatures": list(kernel.features),
            "cargoLock": {"lockFile": "/ROOT/" + lockfile, "allowBuiltinFetchGit": True},
            # The library's shell checks (nix/rust.nix) name them (escaping is the identity here).
            "preBuild": Contains([name, kernel.manifest(), lockfile]),
            "postInstall": Contains([name, f"lib{library}.a"]),
            "passthru": {"nixgen": passthru},
        }
        cargo_root = kernel.lock_dir() if workspace else crate_dir
        if cargo_root:
            out["cargoRoot"] = cargo_root
        return out
    phase: dict[str, Any] = {
        "name": name,
        "sources": list(kernel.src),
        "includes": list(kernel.include),
        "cxxFlags": list(kernel.cxx_flags),
    }
    if isinstance(kernel, model.CppCudaKernel):
        phase["cudaFlags"] = list(kernel.cuda_flags)
        phase["capabilities"] = {
            version: kernels.cuda_capabilities(kernel, version)
            for version in data_tables.cuda_versions()
        }
    if isinstance(kernel, model.CppRocmKernel):
        phase["hipFlags"] = list(kernel.hip_flags)
    if isinstance(kernel, model.CppXpuKernel):
        phase["syclFlags"] = list(kernel.sycl_flags)
    return {
        "pname": pname,
        "src": {"sources": list(kernel.src)},
        "configurePhase": phase,
        "installPhase": {"archive": name},
        "passthru": {
            "nixgen": {
                **passthru,
                "plan": phase,
                **({"capabilities": phase["capabilities"]} if "capabilities" in phase else {}),
            }
        },
    }


def expected_extension(build: model.Build) -> dict[str, Any]:
    fw = build.framework
    assert isinstance(fw, model.Torch)
    return {
        "framework": "torch",
        "moduleDir": model.python_package_dir(build),
        "pyext": list(fw.pyext),
        "bindingSources": list(fw.src),
        "cxxFlags": list(fw.cxx_flags),
        "includes": list(fw.include),
    }


def expected_project(build: model.Build) -> Any:
    data = render.project_data(plan.make(build))
    for name, entry in data["kernels"].items():
        entry["file"] = f"{name}.nix"
    return data


class Contains(list[str]):
    """A wanted string that holds each of these (shell text the library writes)."""


def mismatch(got: Any, want: Any, path: str = "") -> str | None:
    """Where `got` differs from `want` (attributes `want` leaves out are not compared)."""
    if isinstance(want, Contains):
        missing = [part for part in want if not isinstance(got, str) or part not in got]
        return f"{path}: {got!r:.300} lacks {missing!r:.300}" if missing else None
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{path}: {got!r:.200} is not an attribute set"
        for key, value in want.items():
            if key not in got:
                return f"{path}.{key}: missing"
            found = mismatch(got[key], value, f"{path}.{key}")
            if found:
                return found
        return None
    if type(got) is not type(want) or got != want:
        return f"{path}: got {got!r:.300}, want {want!r:.300}"
    return None


#: The fake `callPackage` environment: builders and library functions return their input.
FAKE = r"""
let
  id = x: x;
  # mkDerivation returns its attributes (`finalAttrs: { … }` as the fixed point).
  mk = f: if builtins.isFunction f then (let a = f a; in a) else f;
  # What the library modules read of nixpkgs' lib: the stand-in's functions, and the
  # shell quoting as the identity (as `shell.escapeShellArg` was before).
  stubLib = import STUB_LIB;
  lib = {
    inherit (stubLib) getAttrFromPath splitString getDev getLib getOutput concatStringsSep;
    escapeShellArg = id;
    assertMsg = cond: _: cond;
    unique = id;
    concatMap = builtins.concatMap;
    attrValues = builtins.attrValues;
    platforms.darwin = [ "darwin" ];
  };
  env = {
    inherit lib;
    pkgs = env;
    stdenv.mkDerivation = mk;
    stdenvNoCC.mkDerivation = mk;
    cudaPackages = {
      backendStdenv.mkDerivation = mk;
      cuda_nvcc = "cuda_nvcc";
      cuda_cudart = "cuda_cudart";
      cccl = "cccl";
      libcublas = "libcublas";
      libcusolver = "libcusolver";
      libcusparse = "libcusparse";
      cudaMajorMinorVersion = "12.8";
    };
    rocmPackages = {
      clr = "clr";
      hipcub-devel = "hipcub-devel";
      hipsparselt = "hipsparselt";
      rocprim-devel = "rocprim-devel";
      rocthrust-devel = "rocthrust-devel";
      rocwmma-devel = "rocwmma-devel";
    };
    xpuPackages.sycl-tla = "sycl-tla";
    apple-sdk_26 = "apple-sdk_26";
    rustPlatform.buildRustPackage = mk;
    python3.pkgs.tvm-ffi = "tvm-ffi";
    root = "/ROOT";
    torch = "torch";
    ninja = "ninja";
    kernels = { };
    variant.backend = "cpu";
    projectData = { };
    toolchain = {
      stdenv.mkDerivation = mk;
      compilers = [ ];
      nativeBuildInputs = [ ];
      buildInputs = [ ];
      linkFlags = [ ];
      cxxFamily = "gcc";
      torchFlags = _: { nvcc = [ ]; cxx = [ ]; inputs = [ ]; };
    };
    # Of the library only the kernels' builders are real, over the stand-ins below.
    nixgen = rec {
      kernel = import KERNEL_NIX {
        inherit lib compile cuda sources rust torch tvmFfi extension toolchains;
      };
      sources.select = _: _: sources: { inherit sources; };
      sources.selectWithPackage =
        _: _: sources: moduleDir: pyext: { inherit sources moduleDir pyext; };
      compile = {
        cppCpu = id;
        cppCuda = id;
        cppRocm = id;
        cppXpu = id;
        cppMetal = id;
        configurePhase = id;
        installArchivePhase = archive: { inherit archive; };
        installMetalPhase = { name, sources }: { archive = name; };
        copyPhase = from: to: { inherit from to; };
      };
      cuda.capabilitiesFor = planned: _: planned;
      toolchains.cpu = _: { opsCheck = "ops-check"; };
      torch.includeFlags = _: [ "-Itorch" ];
      torch.abiDefines = _: [ ];
      torch.framework = _: "torch-framework";
      tvmFfi.framework = _: "tvm-ffi-framework";
      tvmFfi.includeFlags = _: [ "-Itvm-ffi" ];
      rust = import RUST_NIX { inherit lib cuda sources compile; };
      extension = {
        archives = _: { whole = [ ]; plain = [ ]; linkFlags = [ ]; };
        archsOf = _: [ ];
        opsName = _: "ops";
        configurePhase = id;
        installPhase = id;
        metadataFile = _: "metadata.json";
        mkExtension = _: args: args;
      };
    };
  };
  call = extra: file:
    let f = import file; in f (builtins.intersectAttrs (builtins.functionArgs f) (env // extra));
  plain = project: project // {
    kernels = builtins.mapAttrs
      (_: k: k // { file = baseNameOf (toString k.file); })
      project.kernels;
  };
  load = dir:
    let project = import (dir + "/project.nix");
    in {
      project = plain project;
      extension = call { inherit (project) headers; } (dir + "/extension.nix");
      kernels = builtins.mapAttrs
        (_: k: call { inherit (project) headers; } k.file)
        project.kernels;
    };
in
map load
"""


def evaluate(outcomes: list[Outcome], work: Path) -> list[Any]:
    """Evaluate every rendered project in `work` with one nix-instantiate call."""
    dirs = []
    for index, outcome in enumerate(outcomes):
        assert outcome.rendered is not None
        directory = work / f"p{index}"
        for rel, data in outcome.rendered.tree.items():
            if rel.startswith("lib/"):
                continue
            path = directory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        dirs.append(f"./p{index}")
    kernel_nix = Path(__file__).resolve().parent.parent / "nix" / "kernel.nix"
    fake = FAKE.replace("KERNEL_NIX", str(kernel_nix))
    fake = fake.replace("STUB_LIB", str(Path(__file__).resolve().parent / "nixpkgs" / "lib"))
    (work / "fake.nix").write_text(fake.replace("RUST_NIX", str(kernel_nix.parent / "rust.nix")))
    (work / "all.nix").write_text("import ./fake.nix [\n" + "\n".join(dirs) + "\n]\n")
    done = subprocess.run(
        [NIX_INSTANTIATE, "--eval", "--strict", "--json", str(work / "all.nix")],
        capture_output=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    return json.loads(done.stdout)


def evaluate_in_scratch(outcomes: list[Outcome]) -> list[Any]:
    """`evaluate` in a scratch directory of its own (one per Hypothesis example)."""
    with tempfile.TemporaryDirectory() as scratch:
        return evaluate(outcomes, Path(scratch))


def check_round_trip(outcomes: list[Outcome], results: list[Any]) -> None:
    assert len(results) == len(outcomes)
    failures = []
    for outcome, got in zip(outcomes, results, strict=True):
        build = outcome.build
        assert build is not None
        want = {
            "project": expected_project(build),
            "extension": expected_extension(build),
            "kernels": {name: expected_kernel(build, name) for name in build.kernels},
        }
        found = mismatch(got["project"], want["project"], "project")
        if found is None and got["project"].keys() != want["project"].keys():
            found = f"project: attributes {sorted(got['project'])} != {sorted(want['project'])}"
        found = found or mismatch(got, want)
        if found:
            failures.append(f"{found}\n{outcome.text}")
    assert not failures, f"{len(failures)} documents did not round-trip; first: {failures[0]}"


# ----------------------------------------------------------------------------- tests


@pytest.mark.slow
def test_hostile_strings_are_rejected_cleanly_or_accepted_without_nul() -> None:
    """A document is rejected with located one-line problems about the placed fields, or
    accepted; a NUL character is never accepted. Both halves of the property are exercised."""
    seen = Counter[str]()

    @settings(PROPERTY, max_examples=600)
    @given(placements)
    def check(placed: dict[tuple[str | int, ...], str]) -> None:
        outcome = Outcome(document(placed), options(placed))
        if outcome.problems:
            check_rejection(outcome, placed)
            seen["rejected"] += 1
        else:
            assert not any("\x00" in v for v in placed.values()), f"NUL accepted: {placed!r}"
            seen["accepted"] += 1

    check()
    assert seen["accepted"] >= 80 and seen["rejected"] >= 100, seen


@needs_nix
@pytest.mark.nix
@settings(PROPERTY, max_examples=40)
@given(st.lists(placements, min_size=1, max_size=20))
def test_accepted_hostile_strings_round_trip_through_nix(
    batch: list[dict[tuple[str | int, ...], str]],
) -> None:
    outcomes = [
        o
        for o in (Outcome(document(placed), options(placed)) for placed in batch)
        if not o.problems
    ]
    if outcomes:
        check_round_trip(outcomes, evaluate_in_scratch(outcomes))


FLAG_FIELDS = [f for f in FIELDS if f[-1] in {"cxx-flags", "cuda-flags", "hip-flags", "sycl-flags"}]
FLAGS_AND_LICENSE = st.dictionaries(
    st.sampled_from([*FLAG_FIELDS, ("general", "license")]),
    hostile_text.filter(lambda s: "\x00" not in s),
    min_size=1,
    max_size=6,
)


@needs_nix
@pytest.mark.nix
@settings(PROPERTY, max_examples=30)
@given(st.lists(FLAGS_AND_LICENSE, min_size=1, max_size=20))
def test_every_flag_and_license_string_round_trips(
    batch: list[dict[tuple[str | int, ...], str]],
) -> None:
    """Flags and the license take any string Nix can carry: all of them must round-trip."""
    outcomes = [Outcome(document(placed), options(placed)) for placed in batch]
    rejected = [o.problems[0].render() for o in outcomes if o.problems]
    assert not rejected, rejected[:3]
    check_round_trip(outcomes, evaluate_in_scratch(outcomes))


@needs_nix
@pytest.mark.nix
def test_very_long_values_round_trip(tmp_path: Path) -> None:
    """100 KB flags and license full of `${`, quotes, backslashes and newlines."""
    chunk = "${x} \"q\" \\ '' ''${ \n\r\t $${y} é😀 "
    big = (chunk * (100_000 // len(chunk) + 1))[:100_000]
    placed = {f: big + str(i) for i, f in enumerate([*FLAG_FIELDS, ("general", "license")])}
    outcome = Outcome(document(placed), options(placed))
    assert not outcome.problems, outcome.problems[:1]
    check_round_trip([outcome], evaluate([outcome], tmp_path))


NAMES = st.one_of(
    st.sampled_from(
        [*sorted(nixlit.KEYWORDS),
         "throw", "import", "true", "false", "null", "builtins", "outPath", "__toString",
         "__functor", "__ignoreNulls", "_", "a-b", "a'b", "-a", "0a", "k0", "cpu_k"]
    ),
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,12}", fullmatch=True),
    hostile_text,
)  # fmt: skip


@needs_nix
@pytest.mark.nix
@settings(PROPERTY, max_examples=25)
@given(st.lists(NAMES, min_size=1, max_size=25))
@example(sorted(nixlit.KEYWORDS))  # every keyword a kernel may be named, quoted in project.nix
def test_kernel_names_are_rejected_or_become_exactly_that_attribute(names: list[str]) -> None:
    """Kernel names become attribute names (quoted when they are keywords), file names and
    library names; a name the schema accepts must come back from Nix unchanged."""
    accepted = []
    for name in names:
        outcome = Outcome(document({("kernel", "<name>"): name}), options({}))
        if outcome.problems:
            check_rejection(outcome, {("kernel", "<name>"): name})
            continue
        assert outcome.rendered is not None
        text = outcome.rendered.tree["project.nix"].decode()
        assert f"\n    {nixlit.attr_name(name)} = {{\n" in text
        if name in nixlit.KEYWORDS:
            assert f'\n    "{name}" = {{\n' in text  # keywords come out quoted
        accepted.append(outcome)
    if accepted:
        check_round_trip(accepted, evaluate_in_scratch(accepted))


@needs_nix
@pytest.mark.nix
@settings(PROPERTY, max_examples=10)
@given(
    st.lists(
        st.one_of(
            NAMES, st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
        ),
        min_size=1,
        max_size=40,
    )
)
def test_the_escaper_on_any_attribute_name(drawn: list[str]) -> None:
    """nixlit.attr_name directly, on names the schema would never let through."""
    # NUL has no Nix string at all; `outPath` and `__toString` change what an attribute
    # set *is* (which is why the schema rejects them as kernel names).
    names = [
        n
        for n in dict.fromkeys(drawn)
        if "\x00" not in n and n not in ("outPath", "__toString", "__functor")
    ]
    source = (
        "[\n"
        + "\n".join(f"(builtins.attrNames {{ {nixlit.attr_name(n)} = 1; }})" for n in names)
        + "\n]\n"
    )
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "names.nix").write_text(source)
        done = subprocess.run(
            [NIX_INSTANTIATE, "--eval", "--strict", "--json", str(Path(scratch) / "names.nix")],
            capture_output=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert json.loads(done.stdout) == [[n] for n in names]
    for name in names:
        bare = nixlit.attr_name(name) == name
        assert bare == (
            name not in nixlit.KEYWORDS and nixlit._IDENTIFIER.fullmatch(name) is not None
        )


# -------------------------------------------------------- never a traceback, any text

TOML_BITS = st.sampled_from(
    ["[", "]", "[[", "]]", "{", "}", "=", ",", ".", '"', "'", '"""', "'''", "\\", "#", "\n",
     "\r\n", " ", "\t", "general", "kernel", "torch", "name", "edition", "6", "5", "1.0",
     "true", "x", "-", "_", "é", "\x00", "\ufeff", "\x1b", "inf", "1979-05-27", "0x1"]
)  # fmt: skip
toml_like = st.lists(st.one_of(TOML_BITS, st.characters()), max_size=60).map("".join)


@settings(PROPERTY, max_examples=1000)
@given(toml_like)
@pytest.mark.slow
def test_any_text_is_either_loaded_or_rejected_with_located_problems(text: str) -> None:
    """Random TOML-like text: the pipeline returns a model or raises ProblemError whose
    problems all name build.toml; nothing else escapes, and nothing loops."""
    try:
        document_ = load.parse(text, Path("build.toml"), "build.toml")
        project.structure(document_)
    except ProblemError as exc:
        assert exc.problems and all(p.file == "build.toml" for p in exc.problems)
        for problem in exc.problems:
            assert "\n" not in problem.render()
    # positions must terminate on any prefix, valid TOML or not
    positions.last_statement(text)


@settings(PROPERTY, max_examples=300)
@given(st.binary(max_size=200))
def test_any_bytes_are_either_loaded_or_rejected(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "build.toml").write_bytes(raw)
        try:
            document_ = load.load(Path(scratch))
            project.structure(document_)
        except ProblemError as exc:
            assert exc.problems[0].file is not None


# ----------------------------------------------------- positions on valid documents

keys = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,8}", fullmatch=True),
    st.text(st.characters(exclude_categories=["Cs"]), min_size=0, max_size=6),
)
leaf = st.one_of(st.integers(-5, 5), st.booleans(), hostile_text.filter(lambda s: "\x00" not in s))
tables = st.recursive(
    st.dictionaries(keys, leaf, max_size=4),
    lambda inner: st.dictionaries(
        keys, st.one_of(leaf, inner, st.lists(leaf, max_size=3)), max_size=4
    ),
    max_leaves=12,
)


def toml_key(key: str) -> str:
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else toml_string(key)


def dump(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> str:
    """Tables as [headers], scalars and arrays as `key = value`, sub-tables after."""
    lines = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
    subtables = {k: v for k, v in data.items() if isinstance(v, dict)}
    if prefix and (scalars or not subtables):
        lines.append("[" + ".".join(toml_key(k) for k in prefix) + "]")
    for key, value in scalars.items():
        lines.append(f"{toml_key(key)} = {toml_value(value)}  # ${{ {key!r} }}")
    for key, value in subtables.items():
        lines.append(dump(value, (*prefix, key)))
    return "\n".join(lines)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    if not value:
        return "[]"
    return "[\n  " + ",\n  ".join(toml_value(v) for v in value) + ",\n]"


def leaves(data: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for key, value in data.items():
        if isinstance(value, dict):
            out += leaves(value, (*prefix, key))
        else:
            out.append((*prefix, key))
    return out


@settings(PROPERTY, max_examples=300)
@given(tables)
@pytest.mark.slow
def test_positions_find_every_key_of_a_valid_document(data: dict[str, Any]) -> None:
    """The scanner (used for every error location) finds each key where its text starts."""
    text = dump(data) + "\n"
    assert tomli.loads(text) == data
    found = positions.scan(text)
    lines = text.split("\n")
    for path in leaves(data):
        where = found.locate(path, at_key=True)
        assert where is not None, (path, text)
        line, column = where
        assert lines[line - 1][column - 1 :].startswith(toml_key(path[-1])), (path, text)
