"""Render stage: golden files, determinism, and safety of every string that reaches Nix.

Golden files pin each template's output for small synthetic edition-6 projects covering
every language and framework (the examples' renders are committed in ``examples/`` and
pinned by tests/test_examples.py). Each case is a directory ``tests/golden/<case>/``: its
input ``build.toml`` (the sources it lists are made empty when the case is rendered) beside
the files rendered from it, at the path each has in a project (``nix/kernels/x.nix``,
``flake.nix``), with ``FILES`` listing every generated path. The static library copies
(``nix/lib/``) are not duplicated there: they are compared byte for byte with ``nix/``.

Update goldens only through the flag, never by hand::

    NIXGEN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_render.py -k golden
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from nixgen import __version__
from nixgen.app.pipeline import prepare
from nixgen.checking import project
from nixgen.core import marker, tables
from nixgen.core.errors import ProblemError
from nixgen.core.marker import MARKER
from nixgen.planning import kernels, plan
from nixgen.reading import model
from nixgen.reading.model import shared_headers
from nixgen.rendering import render, workflow
from nixgen.rendering.library import LIB_DATA, LIB_FILES
from nixgen.writing import write

from .conftest import EXAMPLES, materialize
from .goldens import GOLDEN, GOLDEN_INPUT, GOLDEN_INPUTS, SYNTHETIC
from .nixtools import kernel_builder, make_stub, needs_nix, nix_eval_json, nix_parse
from .tiers import starts_processes

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
UPDATE = os.environ.get("NIXGEN_UPDATE_GOLDEN") == "1"
REGENERATE = "NIXGEN_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_render.py -k golden"

# ------------------------------------------------------------------------ the cases

TORCH = """
[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
"""


def _general(name: str, backends: str, extra: str = "") -> str:
    return f"""[general]
name = "{name}"
version = 3
edition = 6
license = "Apache-2.0"
backends = {backends}
{extra}"""


EXAMPLE_CASES = {
    f"example-{p.name}": p for p in sorted(EXAMPLES.iterdir()) if (p / "build.toml").is_file()
}
CASES = sorted([*EXAMPLE_CASES, *SYNTHETIC])
#: Golden files pin the synthetic cases; the examples' renders are committed in
#: examples/<name>/ and pinned there (tests/test_examples.py), not copied here.
GOLDEN_CASES = sorted(SYNTHETIC)


def case_root(case: str, tmp: Path) -> Path:
    """The project directory of a case (examples are read in place)."""
    if case in EXAMPLE_CASES:
        return EXAMPLE_CASES[case]
    return materialize(SYNTHETIC[case], tmp / case)


def render_case(case: str, tmp: Path) -> render.Rendered:
    prepared = prepare(case_root(case, tmp))
    rendered, problems = prepared.rendered, prepared.problems
    assert not [p for p in problems if p.severity == "error"]
    return rendered


def all_files(rendered: render.Rendered) -> dict[str, bytes]:
    """Every generated file, by its path relative to the project root."""
    files = {f"{rendered.out_dir}/{k}": v for k, v in rendered.tree.items()}
    files.update(rendered.root)
    return dict(sorted(files.items()))


def pinned(rendered: render.Rendered) -> dict[str, bytes]:
    """The files golden files pin: everything but the static library copies."""
    return {k: v for k, v in all_files(rendered).items() if not k.startswith("nix/lib/")}


@pytest.fixture(scope="module")
@starts_processes  # git: the examples render in place (until nixgen.toml names their library)
def rendered_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, render.Rendered]:
    tmp = tmp_path_factory.mktemp("cases")
    return {case: render_case(case, tmp) for case in CASES}


# ---------------------------------------------------------------------- golden files


def _golden_files(case: str) -> dict[str, bytes]:
    """The rendered files pinned for `case` (not its inputs, `build.toml` and
    `nixgen.toml`, nor `FILES`)."""
    directory = GOLDEN / case
    inputs = {directory / name for name in GOLDEN_INPUTS}
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != "FILES" and p not in inputs
    }


def _manifest(rendered: render.Rendered) -> bytes:
    return ("\n".join(all_files(rendered)) + "\n").encode()


def _write_golden(case: str, rendered: render.Rendered) -> None:
    """Replace the golden files of `case` by `rendered`, keeping its inputs."""
    directory = GOLDEN / case
    for old in directory.iterdir():
        if old.name in GOLDEN_INPUTS:
            continue
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    for rel, data in pinned(rendered).items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (directory / "FILES").write_bytes(_manifest(rendered))


def _mismatch_report(case: str, want: dict[str, bytes], got: dict[str, bytes]) -> str:
    lines = [f"golden files of `{case}` differ from what nixgen renders:"]
    for rel in sorted(set(want) | set(got)):
        if want.get(rel) == got.get(rel):
            continue
        before = want.get(rel, b"").decode().splitlines(keepends=True)
        after = got.get(rel, b"").decode().splitlines(keepends=True)
        lines.append(
            "".join(
                difflib.unified_diff(
                    before,
                    after,
                    fromfile=f"golden/{case}/{rel}" if rel in want else "/dev/null",
                    tofile=f"rendered/{rel}" if rel in got else "/dev/null",
                )
            )
        )
    lines.append(f"If the change is intended, regenerate the golden files with:\n  {REGENERATE}")
    return "\n".join(lines)


@pytest.mark.parametrize("case", GOLDEN_CASES)
def test_golden(case: str, rendered_cases: dict[str, render.Rendered]) -> None:
    rendered = rendered_cases[case]
    if UPDATE:
        _write_golden(case, rendered)
    got = {**pinned(rendered), "FILES": _manifest(rendered)}
    want = _golden_files(case) if (GOLDEN / case).is_dir() else {}
    if (GOLDEN / case / "FILES").is_file():
        want["FILES"] = (GOLDEN / case / "FILES").read_bytes()
    if want != got:
        pytest.fail(_mismatch_report(case, want, got), pytrace=False)


def test_golden_has_no_stale_cases() -> None:
    """Every directory of tests/golden/ is a case: its input `build.toml` beside the files
    rendered from it."""
    stale = sorted(p.name for p in GOLDEN.iterdir() if p.is_dir() and p.name not in GOLDEN_CASES)
    if UPDATE:
        for name in stale:
            shutil.rmtree(GOLDEN / name)
        return
    assert not stale, (
        f"golden cases without an input {GOLDEN_INPUT}: {stale}; add one, or regenerate to "
        f"drop them: {REGENERATE}"
    )


def test_golden_cases_cover_every_language_and_framework(tmp_path: Path) -> None:
    languages, frameworks = set(), set()
    for case in CASES:
        build = project.read(case_root(case, tmp_path)).build
        languages |= {k.language for k in build.kernels.values()}
        frameworks.add(build.framework_table)
    assert languages == set(model.KERNEL_CLASSES)
    assert frameworks == set(model.FRAMEWORKS)


@needs_nix
def test_golden_nix_files_parse() -> None:
    files = sorted(GOLDEN.rglob("*.nix"))
    assert len(files) >= 40
    for path in files:
        nix_parse(path.read_text())


@needs_nix
def test_static_library_parses() -> None:
    for path in sorted((REPO / "nix").rglob("*.nix")):
        nix_parse(path.read_text())


# ------------------------------------------------------------- the static library copy


def test_library_copy_is_the_static_library_byte_for_byte(
    rendered_cases: dict[str, render.Rendered],
) -> None:
    header = f"{MARKER} {__version__} (a copy of its static library); do not edit."
    expected: dict[str, bytes] = {}
    for name in LIB_FILES:
        source = (REPO / "nix" / name).read_bytes()
        comment = "//" if name.endswith(".h") else "#"
        expected[f"lib/{name}"] = f"{comment} {header}\n".encode() + source
    for name in LIB_DATA:
        data = json.loads((REPO / "nixgen" / "data" / name).read_text())
        assert list(json.loads(json.dumps(data))) == list(data)
    for case, rendered in rendered_cases.items():
        library = {k: v for k, v in rendered.tree.items() if k.startswith("lib/")}
        if case in EXAMPLE_CASES:
            # An example's nixgen.toml names the repository's nix/: imported in place.
            assert not library, case
            assert b"(import ../../../nix).project.entry" in rendered.tree["default.nix"]
            continue
        code = {k: v for k, v in library.items() if not k.startswith("lib/data/")}
        assert code == expected, case
        for name in LIB_DATA:
            stamped = json.loads(library[f"lib/data/{name}"])
            assert stamped.pop("_generated").startswith(MARKER)
            assert stamped == json.loads((REPO / "nixgen" / "data" / name).read_text())


# ------------------------------------------------------------------- reproducibility


ABSOLUTE = re.compile(r"(/home|/tmp|/nix/store|/work|/root|/usr|/var|/private)\b")
TIMESTAMP = re.compile(
    r"\b(19|20)\d\d-[01]\d-[0-3]\d\b|\b[0-2]\d:[0-5]\d:[0-5]\d\b|"
    r"\b(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d|\b1[5-9]\d{8}\b"
)


@pytest.mark.parametrize("case", CASES)
def test_output_has_no_absolute_path_or_timestamp(
    case: str, rendered_cases: dict[str, render.Rendered]
) -> None:
    for rel, data in all_files(rendered_cases[case]).items():
        text = data.decode()
        assert not ABSOLUTE.search(text), (rel, ABSOLUTE.search(text))
        assert not TIMESTAMP.search(text), (rel, TIMESTAMP.search(text))


@pytest.mark.parametrize("case", CASES)
def test_every_file_carries_the_header_core_marker_reads_back(
    case: str, rendered_cases: dict[str, render.Rendered]
) -> None:
    """Every kind of generated file (kernel, extension, noarch, project, entry point and
    flake files; the library's Nix, C and JSON copies; the CI workflow) starts with the
    header `marker.parse` reads: this nixgen's version and what the file is."""
    files = all_files(rendered_cases[case])
    files[workflow.GITHUB_WORKFLOW] = workflow.github_workflow(
        "relu", nixgen_version=__version__, pairs=[("x86_64-linux", "cpu")]
    )
    kinds: dict[str, str] = {}
    for rel, data in files.items():
        header = marker.parse(data)
        assert header is not None, (rel, data[:200])
        assert header.version == __version__, rel
        kinds[rel] = header.what
    out = rendered_cases[case].out_dir
    assert kinds[f"{out}/project.nix"] == "project data"
    assert kinds[f"{out}/default.nix"] == "entry point"
    assert kinds["flake.nix"] == "flake"
    assert kinds[f"{out}/noarch.nix"] == "pure-Python variants"
    assert kinds[workflow.GITHUB_WORKFLOW] == "GitHub Actions workflow"
    for rel in (k for k in kinds if k.startswith(f"{out}/kernels/")):
        name = rel.rpartition("/")[2].removesuffix(".nix")
        # a kernel of nixgen.toml (a [torch] project's Rust kernel) says where it is
        assert kinds[rel].removeprefix("nixgen.toml's ").startswith(f"kernel.{name}, "), rel
    assert kinds[f"{out}/extension.nix"] in {"[torch]", "[tvm-ffi]", "no compiled extension"}
    if case.startswith("example-"):
        # The examples name the repository's own nix/ (nixgen.toml): no copy to carry a header.
        assert not [k for k in kinds if k.startswith(f"{out}/lib/")]
        return
    assert {kinds[k] for k in kinds if k.startswith(f"{out}/lib/data/")} == {""}
    assert {kinds[k] for k in kinds if k.startswith(f"{out}/lib/") and "/data/" not in k} == {
        marker.LIBRARY_COPY
    }


def test_a_header_edited_by_hand_is_not_read_as_nixgens() -> None:
    text = marker.header("1.2.3", "project data").encode() + b"{ }\n"
    assert marker.parse(text) == marker.Header("1.2.3", "project data")
    assert marker.parse(text.replace(b"Do not edit", b"Edit freely")) is None
    assert marker.parse(b"# a hand-written file\n" + text) is None


@pytest.mark.parametrize("case", CASES)
def test_rendering_twice_gives_identical_bytes(
    case: str, rendered_cases: dict[str, render.Rendered], tmp_path: Path
) -> None:
    assert all_files(render_case(case, tmp_path)) == all_files(rendered_cases[case])


def test_output_does_not_depend_on_where_the_project_is(tmp_path: Path) -> None:
    text = SYNTHETIC["cpp-cuda"]
    here = materialize(text, tmp_path / "a")
    there = materialize(text, tmp_path / "deeper" / "elsewhere" / "b")
    assert all_files(prepare(here).rendered) == all_files(prepare(there).rendered)


_DIGEST = """
import hashlib, sys
from pathlib import Path
from nixgen.app.pipeline import prepare
rendered = prepare(Path(sys.argv[1])).rendered
files = {**{"nix/" + k: v for k, v in rendered.tree.items()}, **rendered.root}
h = hashlib.sha256()
for k in sorted(files):
    h.update(k.encode() + b"\\0" + files[k] + b"\\0")
print(h.hexdigest())
"""


@pytest.mark.slow
def test_output_does_not_depend_on_hash_seed(tmp_path: Path) -> None:
    """Set and dict iteration order change with PYTHONHASHSEED; output must not."""
    root = materialize(SYNTHETIC["tvm-ffi"], tmp_path)
    digests = set()
    for seed in ("1", "2", "3"):
        done = subprocess.run(
            [sys.executable, "-c", _DIGEST, str(root)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(done.stdout.strip())
    expected = hashlib.sha256()
    files = all_files(prepare(root).rendered)
    for k in sorted(files):
        expected.update(k.encode() + b"\0" + files[k] + b"\0")
    assert digests == {expected.hexdigest()}


def test_invalid_output_directory_is_refused() -> None:
    build = project.read(EXAMPLES / "relu-cpu").build
    for bad in ("/abs", "../up", "a/../b", "", "a//b", "a b", 'x"y'):
        with pytest.raises(ValueError, match="invalid output directory"):
            render.render(plan.make(build), out_dir=bad)
    assert (
        render.render(plan.make(build), out_dir="gen/nix").root["flake.nix"].count(b"./gen/nix")
        == 1
    )


def test_cuda_kernel_without_any_buildable_capability_is_an_error_naming_it(
    tmp_path: Path,
) -> None:
    text = (
        _general("no-caps", '["cuda"]')
        + TORCH
        + (
            '\n[kernel.old_gpu]\nlanguage = "cpp-cuda"\nsrc = ["k.cu"]\n'
            'cuda-capabilities = ["7.0", "7.2"]\n'
        )
    )
    root = materialize(text, tmp_path)
    with pytest.raises(ProblemError) as info:
        prepare(root)
    messages = [p.render() for p in info.value.errors]
    assert any("kernel `old_gpu`" in m and "CUDA 13.0" in m for m in messages), messages
    assert any(p.key == "kernel.old_gpu.cuda-capabilities" for p in info.value.errors)


# ---------------------------------------------------------------- hostile strings

#: Strings that would break out of a Nix string or a shell word if not escaped. The
#: build phases are really run with these: a payload that escaped its quoting only ever
#: creates a `pwned-*` file in the scratch directory, which the test looks for.
NASTY_FLAGS = [
    '-DX="a b"; touch pwned-semicolon',
    '${builtins.abort "pwned"}',
    "''${builtins.abort \"pwned\"}''",
    "'' + builtins.abort \"pwned\" + ''",
    "$(touch pwned-subshell)",
    "`touch pwned-backtick`",
    "a && touch pwned-and || touch pwned-or",
    "a\ntouch pwned-newline",
    "back\\slash\\\\n",
    "it's",
    "line\nbreak",
    "cr\rlf",
    "tab\there",
    "$HOME",
    "$${x}",
    "\\${x}",
    "",
    " ",
    "-DEMPTY=",
    "é🙂",
    # Line breaks to str.splitlines(), not to Nix or a shell; and a trailing blank.
    "vt\x0bff\x0cnel\x85ls\u2028ps\u2029",
    "trailing blank ",
]
#: Paths may not contain glob characters (`{}` included) or backslashes, but everything
#: else a shell or Nix treats specially.
NASTY_DIRS = ['we"ird', "it's dir", "a''b", "dollar$x", "semi;colon & pipe|", "#hash ~tilde"]


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in values) + "]"


NASTY_LICENSE = 'MIT "or" ${builtins.abort "pwned"} \\ ' + "''x''\nsecond line"
#: Git URLs forbid whitespace, but not quotes or interpolation.
NASTY_UPSTREAM = "git@github.com:org/re\"po${builtins.abort\"pwned\"}''\\'"
NASTY_SOURCE = "https://example.com/${x}/''/$HOME\\"


def hostile_build_toml() -> str:
    d = NASTY_DIRS
    flags = _toml_list(NASTY_FLAGS)
    return f"""[general]
name = "hostile"
version = 1
edition = 6
license = {json.dumps(NASTY_LICENSE, ensure_ascii=False)}
upstream = {json.dumps(NASTY_UPSTREAM)}
source = {json.dumps(NASTY_SOURCE)}
backends = ["cpu", "cuda", "rocm", "xpu"]

[torch]
src = {_toml_list([f"{d[0]}/binding $1.cpp", "torch-ext/binding.h"])}
include = {_toml_list([d[1]])}
cxx-flags = {flags}

[kernel.cpu-k]
language = "cpp-cpu"
depends = ["torch"]
src = {_toml_list([f"{d[0]}/k.cpp", f"{d[1]}/it's.cpp", f"{d[2]}/x.h"])}
include = {_toml_list([d[1], d[3]])}
cxx-flags = {flags}

[kernel.cuda_k]
language = "cpp-cuda"
src = {_toml_list([f"{d[3]}/k.cu", f"{d[4]}/host.cpp"])}
include = {_toml_list([d[4]])}
cxx-flags = {flags}
cuda-flags = {flags}
cuda-capabilities = ["8.0", "9.0a"]

[kernel.rocm_k]
language = "cpp-rocm"
src = {_toml_list([f"{d[5]}/k.hip"])}
include = {_toml_list([d[5]])}
cxx-flags = {flags}
hip-flags = {flags}
rocm-archs = ["gfx942"]

[kernel.xpu_k]
language = "cpp-xpu"
src = {_toml_list([f"{d[2]}/k.cpp"])}
include = {_toml_list([d[2]])}
cxx-flags = {flags}
sycl-flags = {flags}

[kernel.or]
language = "cpp-cpu"
src = ["or/or.cpp"]

[kernel.inherit]
language = "cpp-cpu"
src = ["inherit/__curPos.cpp"]
"""


def hostile_nixgen_toml() -> str:
    """nixgen.toml's Rust kernel of the hostile project (a [torch] project's Rust kernel is
    nixgen's own: the format binds Rust kernels with [tvm-ffi])."""
    d = NASTY_DIRS
    return f"""[kernel.rs]
language = "rust-cpu"
cargo-manifest = {json.dumps(f"{d[1]}/Cargo.toml")}
src = {_toml_list([f"{d[1]}/src/lib.rs", "Cargo.lock"])}
features = ["a+b", "x.y", "serde/std"]
"""


CARGO_LOCK = '# test\nversion = 3\n\n[[package]]\nname = "rs"\nversion = "0.1.0"\n'


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, model.Build]:
    root = tmp_path_factory.mktemp("hostile") / "p"
    root.mkdir()
    (root / "nixgen.toml").write_text(hostile_nixgen_toml())
    # the crate's manifest names its library (its directory's name is no identifier)
    (root / NASTY_DIRS[1]).mkdir()
    (root / NASTY_DIRS[1] / "Cargo.toml").write_text('[package]\nname = "rs"\n')
    (root / "Cargo.lock").write_text(CARGO_LOCK)
    root = materialize(hostile_build_toml(), root)
    loaded = project.read(root)
    write.write(root, render.render(plan.make(loaded.build)))
    return root, loaded.build


def test_hostile_project_is_valid_and_renders(hostile: tuple[Path, model.Build]) -> None:
    root, build = hostile
    # Nix keywords are fine kernel names: quoted where an attribute name is needed.
    assert set(build.kernels) == {"cpu-k", "cuda_k", "rocm_k", "xpu_k", "rs", "or", "inherit"}
    assert build.kernels["cpu-k"].cxx_flags == NASTY_FLAGS
    generated = [p.read_text() for p in (root / "nix").glob("**/*.nix")]
    # Interpolation only ever appears escaped (`\${`), never as live Nix code.
    assert any("\\${builtins.abort" in text for text in generated)
    assert not any(re.search(r"(?<!\\)\$\{builtins\.abort", text) for text in generated)


@needs_nix
def test_hostile_project_renders_files_nix_parses(hostile: tuple[Path, model.Build]) -> None:
    root, _ = hostile
    for path in (root / "nix").glob("**/*.nix"):
        nix_parse(path.read_text())


def test_paths_with_nix_interpolation_are_rejected_before_rendering(
    make_project: Any,
) -> None:
    text = (
        _general("xx", '["cpu"]')
        + TORCH
        + (
            '\n[kernel.k]\nlanguage = "cpp-cpu"\ndepends = []\n'
            'src = ["${builtins.abort \\"x\\"}.cpp"]\n'
        )
    )
    with pytest.raises(ProblemError) as info:
        project.read(make_project(text, files=False), check_files=False)
    assert "glob character" in info.value.errors[0].message


# Every argument a template passes on, captured by calling the generated files with
# stand-ins that return their arguments (no nixpkgs; of the library only `kernel.nix`, the
# C++ kernels' builder, over stand-ins of the modules it calls).
_CAPTURE = """
let
  lib = import TESTS/nixpkgs/lib;
  same = x: x;
  # mkDerivation returns its attributes (`finalAttrs: { … }` as the fixed point).
  builder.mkDerivation = f: if builtins.isFunction f then (let a = f a; in a) else f;
  nixgen = rec {
    kernel = import LIB/kernel.nix {
      inherit lib compile cuda sources rust torch tvmFfi extension toolchains;
    };
    sources.select = lib: root: files: { select = files; };
    sources.selectWithPackage = lib: root: files: dir: exts: { inherit files dir exts; };
    compile = {
      cppCpu = same; cppCuda = same; cppRocm = same; cppXpu = same; cppMetal = same;
      configurePhase = same;
      installArchivePhase = name: { install = name; };
      installMetalPhase = { name, sources }: { install = name; };
      copyPhase = from: to: { copy = [ from to ]; };
    };
    cuda.capabilitiesFor = planned: version: planned;
    toolchains.cpu = pkgs: { opsCheck = "OPS-CHECK"; };
    torch = {
      includeFlags = torch: [ "TORCH-FLAGS" ]; abiDefines = variant: [ ]; framework = same;
    };
    tvmFfi = { framework = same; includeFlags = tvmFfi: [ "TVM-FFI-FLAGS" ]; };
    rust = import LIB/rust.nix {
      inherit cuda sources compile;
      lib = lib // { escapeShellArg = same; };
    };
    extension = {
      archives = kernels: { whole = [ ]; plain = [ ]; linkFlags = [ ]; };
      archsOf = kernels: [ ];
      opsName = args: "OPS";
      configurePhase = same;
      installPhase = same;
      metadataFile = args: "METADATA";
      mkExtension = deps: args: args // { deps = builtins.attrNames deps; };
    };
  };
  args = {
    inherit lib nixgen;
    pkgs = args;
    root = "ROOT";
    stdenv = builder;
    stdenvNoCC = builder;
    cudaPackages = {
      backendStdenv = builder;
      cuda_nvcc = "cuda_nvcc"; cuda_cudart = "cuda_cudart"; cccl = "cccl";
      libcublas = "libcublas"; libcusolver = "libcusolver"; libcusparse = "libcusparse";
      cudaMajorMinorVersion = "13.0";
    };
    rocmPackages = {
      clr = "clr"; hipcub-devel = "h"; hipsparselt = "h"; rocprim-devel = "r";
      rocthrust-devel = "r"; rocwmma-devel = "r";
    };
    xpuPackages.sycl-tla = "sycl-tla";
    rustPlatform.buildRustPackage = builder.mkDerivation;
    python3 = { pkgs.tvm-ffi = "tvm-ffi"; };
    torch = "torch";
    ninja = "ninja";
    toolchain = {
      stdenv = builder; compilers = [ ]; nativeBuildInputs = [ ]; buildInputs = [ ];
      linkFlags = [ ]; cxxFamily = "gcc";
      torchFlags = _: { nvcc = [ ]; cxx = [ ]; inputs = [ ]; };
    };
    kernels = { };
    variant = { backend = "cpu"; };
    projectData = { };
    headers = (import OUT/project.nix).headers;
  };
  call = file:
    let fn = import file;
    in fn (builtins.intersectAttrs (builtins.functionArgs fn) args);
  project = import OUT/project.nix;
in {
  kernels = builtins.mapAttrs (name: k: call k.file) project.kernels;
  extension = call OUT/extension.nix;
  project = project // {
    kernels = builtins.mapAttrs (n: k: removeAttrs k [ "file" ]) project.kernels;
  };
}
"""


@needs_nix
def test_every_string_reaches_nix_unchanged(hostile: tuple[Path, model.Build]) -> None:
    root, build = hostile
    expr = (
        _CAPTURE.replace("TESTS", str(TESTS))
        .replace("LIB", str(REPO / "nix"))
        .replace("OUT", str(root / "nix"))
    )
    got = nix_eval_json(expr)
    for name, kernel in build.kernels.items():
        args = got["kernels"][name]
        assert args["pname"] == f"hostile-{name}"
        # Its own sources, then every header other lists name (inputs, never compiled).
        others = [h for h in shared_headers(build) if h not in kernel.src]
        if isinstance(kernel, model.RustCpuKernel):
            # its sources and its crate's manifest, which `src` need not list
            assert args["src"] == {"select": kernel.sources()}
        else:
            assert args["src"] == {"select": kernel.src + others}
        if isinstance(kernel, model.RustCpuKernel):
            assert args["buildFeatures"] == kernel.features
            assert args["cargoLock"] == {
                "lockFile": "ROOT/Cargo.lock",
                "allowBuiltinFetchGit": True,
            }
            # The library's checks (nix/rust.nix) get the names as they are (the shell
            # escaping stand-in is the identity here).
            assert f"lib{kernel.library_name(name)}.a" in args["postInstall"]
            for value in (name, kernel.manifest(), kernel.lockfile()):
                assert value in args["preBuild"]
            assert args["prePatch"] == {"copy": ["Cargo.lock", f"{NASTY_DIRS[1]}/Cargo.lock"]}
            assert args["cargoRoot"] == args["buildAndTestSubdir"] == NASTY_DIRS[1]
            continue
        phase = args["configurePhase"]
        assert args["passthru"]["nixgen"]["plan"] == phase
        assert phase["name"] == name
        # The plan sees the shared headers too (object derivations copy them).
        assert phase["sources"] == kernel.src + others
        assert phase["includes"] == kernel.include
        assert phase["cxxFlags"] == kernel.cxx_flags
        for field, key in (("cuda_flags", "cudaFlags"), ("hip_flags", "hipFlags")):
            if hasattr(kernel, field):
                assert phase[key] == getattr(kernel, field)
        if isinstance(kernel, model.CppXpuKernel):
            assert phase["syclFlags"] == kernel.sycl_flags
        if isinstance(kernel, model.CppCudaKernel):
            assert phase["capabilities"] == {
                version: kernels.cuda_capabilities(kernel, version)
                for version in tables.cuda_versions()
            }
        assert args["installPhase"] == {"install": name}
        assert args["passthru"]["nixgen"]["kernel"] == name
    torch = build.framework
    assert isinstance(torch, model.Torch)
    ext = got["extension"]
    # The file passes its arguments on (what callPackage injected) and the table as data.
    common = "lib python3 ninja nixgen root headers kernels variant projectData toolchain"
    assert ext["deps"] == sorted([*common.split(), "torch"])
    assert ext["framework"] == "torch"
    assert ext["moduleDir"] == "torch-ext/hostile"
    assert ext["pyext"] == ["py", "pyi"]
    assert ext["bindingSources"] == torch.src
    assert ext["cxxFlags"] == torch.cxx_flags == NASTY_FLAGS
    assert ext["includes"] == torch.include
    data = render.project_data(plan.make(build))
    data["kernels"] = {
        k: {kk: vv for kk, vv in v.items() if kk != "file"} for k, v in data["kernels"].items()
    }
    assert got["project"] == json.loads(json.dumps(data))
    assert got["project"]["license"] == build.general.license == NASTY_LICENSE
    assert got["project"]["upstream"] == NASTY_UPSTREAM
    assert got["project"]["source"] == NASTY_SOURCE


# The configure phases, run by a real shell, then the build.ninja they write, run by a real
# ninja with recording stand-ins for the compilers: every flag and path must arrive as
# exactly one argument.
_RECORDER = """#!/bin/bash
for a in TAG "$@"; do printf '%s\\0' "$a"; done >> "$LOG"; printf '\\1\\0' >> "$LOG"
"""
_TOOLS = {"cxx": "CXX", "cc": "CC", "nvcc": "NVCC", "hipcc": "HIPCC", "icpx": "ICPX", "ar": "AR"}


def _run_phase(phase: str, tmp: Path, sources: list[str]) -> list[list[str]]:
    """Run a configure phase, then ninja, in a fresh directory holding `sources`."""
    bin_dir = tmp / "bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        for tool, tag in _TOOLS.items():
            (bin_dir / tool).write_text(_RECORDER.replace("TAG", tag))
            (bin_dir / tool).chmod(0o755)
    work = Path(tempfile.mkdtemp(dir=tmp, prefix="phase"))
    for source in sources:
        (work / source).parent.mkdir(parents=True, exist_ok=True)
        (work / source).write_text("")
    log = tmp / "argv"
    log.write_bytes(b"")
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "LOG": str(log)}
    script = "runHook() { :; }\nexport CXX=cxx CC=cc NIX_BUILD_TOP=/build NIX_BUILD_CORES=1\n"
    subprocess.run(
        ["bash", "-euc", script + phase + "\nninja -j1 >/dev/null"], cwd=work, env=env, check=True
    )
    assert not list(work.glob("pwned*"))
    calls, current = [], []
    for item in log.read_bytes().decode().split("\0")[:-1]:
        if item == "\1":
            calls.append(current)
            current = []
        else:
            current.append(item)
    return calls


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


_PHASES = """
let
  p = import ./nix;
  nixpkgs = STUB;
  kernel-builder = KERNEL_BUILDER;
  pick = backend:
    builtins.head (builtins.filter (v: v.backend == backend) (p.variants "x86_64-linux"));
  ext = backend:
    p.variantPackage { inherit nixpkgs kernel-builder; system = "x86_64-linux"; } (pick backend);
  phases = backend:
    builtins.mapAttrs (n: k: k.configurePhase or null) (ext backend).nixgen.kernels;
in {
  cpu = phases "cpu"; cuda = phases "cuda"; rocm = phases "rocm"; xpu = phases "xpu";
  binding = (ext "cpu").nixgen.binding.configurePhase;
  bindingOut = "${(ext "cpu").nixgen.binding}";
  extension = (ext "cpu").configurePhase;
}
"""


@needs_nix
def test_build_phases_pass_each_hostile_string_as_one_argument(
    hostile: tuple[Path, model.Build], tmp_path: Path
) -> None:
    root, build = hostile
    stub = make_stub(tmp_path)
    phases = nix_eval_json(
        _PHASES.replace("STUB", str(stub)).replace("KERNEL_BUILDER", str(kernel_builder(stub))),
        cwd=root,
        # The toolchain's overlay is imported from the store: the evaluation copies it there.
        read_write=True,
    )
    work = tmp_path / "work"
    work.mkdir()
    compilers = {"cpu-k": "CXX", "cuda_k": "NVCC", "rocm_k": "HIPCC", "xpu_k": "ICPX"}
    for backend, name in (
        ("cpu", "cpu-k"),
        ("cuda", "cuda_k"),
        ("rocm", "rocm_k"),
        ("xpu", "xpu_k"),
    ):
        kernel = build.kernels[name]
        calls = _run_phase(phases[backend][name], work, kernel.src)
        assert not list(work.glob("pwned*")), name
        compiled = [c for c in calls if c[0] != "AR"]
        archive = [c for c in calls if c[0] == "AR"]
        sources = [s for s in kernel.src if not s.endswith((".h", ".hpp"))]
        assert [c[c.index("-c") + 1] for c in compiled] == sources, name
        assert len(archive) == 1 and archive[0][1:3] == ["rcsD", f"lib{name}.a"]
        for call in compiled:
            tail = call[: call.index("-c")]
            includes = [f"-I{d}" for d in kernel.include]
            assert _contains_run(tail, includes), (name, call)
            own = {
                "CXX": kernel.cxx_flags,
                "CC": kernel.cxx_flags,
                "NVCC": getattr(kernel, "cuda_flags", None),
                "HIPCC": getattr(kernel, "hip_flags", None),
                "ICPX": [*kernel.cxx_flags, *getattr(kernel, "sycl_flags", [])],
            }[call[0]]
            # The kernel's own flags come last, so they override nixgen's defaults.
            assert tail[len(tail) - len(own) :] == own, (name, call[0])
        if compilers[name] == "NVCC":
            nvcc = next(c for c in calls if c[0] == "NVCC")
            assert "-gencode=arch=compute_90a,code=sm_90a" in nvcc
        if compilers[name] == "HIPCC":
            assert "--offload-arch=gfx942" in next(c for c in calls if c[0] == "HIPCC")
    torch = build.framework
    assert isinstance(torch, model.Torch)
    binding_calls = _run_phase(phases["binding"], work, torch.src)
    binding = next(c for c in binding_calls if "-c" in c)
    assert binding[binding.index("-c") + 1] == torch.src[0]
    assert binding[: binding.index("-c")][-len(NASTY_FLAGS) :] == NASTY_FLAGS
    # The extension only links: the binding's objects come from its derivation's output
    # (here a directory standing in for it), one argument each.
    objects = work / "binding-out"
    compiled = [s for s in torch.src if s.endswith(".cpp")]
    names = [s.replace("%", "%25").replace("/", "%2F") + ".o" for s in compiled]
    link_phase = phases["extension"].replace(phases["bindingOut"], str(objects))
    ext_calls = _run_phase(link_phase, work, [str(objects / n) for n in names])
    assert [c for c in ext_calls if "-c" in c] == []
    link = next(c for c in ext_calls if "-shared" in c)
    assert [str(objects / n) for n in names] == [a for a in link if a.startswith(str(objects))]
    assert not list(work.glob("pwned*"))
