"""The static Nix library (`nix/`), tested with `nix-instantiate --eval`.

Every module `nix/<module>.nix` has its nix-unit style tests in ``nix/tests/<module>.nix``
(``{ testName = { expr; expected; }; }``, or ``expectedError = true;`` for an expression
that must fail), found from the directory: a module without a test file fails
`test_every_library_module_has_tests`. Each file is evaluated in one `nix-instantiate`
call and reported one pytest test per Nix test. The tests that need something besides Nix
live here: shell quoting through a real ``sh -c``, the ```` ```nix ```` examples of the
library's doc comments, the Metal header script, and a real build showing that
`overrideAttrs` on a kernel's `cxxFlags` reaches the compiler.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nixgen.rendering import nixlit

from .nixtools import (
    NixError,
    commit_all,
    copy_worktree,
    flake_eval,
    make_stub,
    nix_env,
    nix_eval_json,
)

REPO = Path(__file__).resolve().parent.parent
NIX_TESTS = REPO / "nix" / "tests"
NIX_TEST_FILES = sorted(NIX_TESTS.glob("*.nix"))
HAVE_NIX = shutil.which("nix-instantiate") is not None
#: The nixpkgs stand-in's `lib` (tests/nixpkgs/lib), which the library is given here.
STAND_IN_LIB = REPO / "tests" / "nixpkgs" / "lib"

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(not HAVE_NIX, reason="nix-instantiate is not installed"),
]

# Each test is evaluated on its own, so one failing expression does not hide the others
# (`tryEval` catches `throw` and failed `assert`s).
_RUNNER = """
let
  tests = import FILE;
  force = v: builtins.deepSeq v v;
  run = name: t:
    if t ? expectedError then
      { ok = !(builtins.tryEval (force t.expr)).success; }
    else
      let r = builtins.tryEval (force t.expr); in
      if !r.success then { ok = false; error = "evaluation failed (throw or assert)"; }
      else { ok = r.value == t.expected; expr = r.value; inherit (t) expected; };
in builtins.mapAttrs run tests
"""


#: A test's name in a test file's body (after the file's one top-level `in`): an attribute
#: at two spaces' indentation, as every file in nix/tests/ writes them.
_TEST_NAME = re.compile(r"^  ([A-Za-z_][A-Za-z0-9_'-]*) =", re.MULTILINE)


def listed_tests(path: Path) -> list[str]:
    """The names of the tests in `path`, read from its text without running Nix (so `-k`
    selects before anything is evaluated); `test_each_file_lists_the_tests_nix_finds` holds
    this listing to what Nix evaluates."""
    parts = re.split(r"^in\n", path.read_text(), maxsplit=1, flags=re.MULTILINE)
    return sorted(_TEST_NAME.findall(parts[-1]))


def _evaluate(path: Path) -> dict[str, Any] | str:
    """Every test of `path` run in one `nix-instantiate`: its results by name, or the
    error output when the file does not evaluate."""
    done = subprocess.run(
        [
            "nix-instantiate",
            "--eval",
            "--strict",
            "--json",
            "--read-write-mode",
            "--expr",
            _RUNNER.replace("FILE", str(path)),
        ],
        env=nix_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        return f"{path.name} does not evaluate:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture(scope="session")
def nix_results() -> Callable[[Path], dict[str, Any]]:
    """The results of a test file's Nix tests, each file evaluated once a session and only
    when one of its tests runs; a file that does not evaluate fails each of its tests."""

    @functools.cache
    def evaluated(path: Path) -> dict[str, Any] | str:
        return _evaluate(path)

    def results(path: Path) -> dict[str, Any]:
        found = evaluated(path)
        if isinstance(found, str):
            pytest.fail(found)
        return found

    return results


#: Modules of `nix/` without a `nix/tests/<module>.nix`, each with the reason (none today).
UNTESTED: dict[str, str] = {}


def test_every_library_module_has_tests() -> None:
    """Each module of the library has a test file (or a reason in `UNTESTED`), and each
    test file tests a module that exists."""
    modules = {p.stem for p in (REPO / "nix").glob("*.nix")}
    tested = {p.stem for p in NIX_TEST_FILES}
    assert len(modules) >= 10, modules
    assert not modules - tested - UNTESTED.keys(), (
        "library modules without tests in nix/tests/ (add <module>.nix there, or the "
        f"reason to UNTESTED): {sorted(modules - tested - UNTESTED.keys())}"
    )
    assert not tested - modules, f"nix/tests/ files of no module: {sorted(tested - modules)}"
    assert not UNTESTED.keys() - (modules - tested), (
        f"UNTESTED names modules that have tests or do not exist: {sorted(UNTESTED)}"
    )
    empty = [p.name for p in NIX_TEST_FILES if not listed_tests(p)]
    assert not empty, f"test files without a test: {empty}"


@pytest.mark.parametrize("path", NIX_TEST_FILES, ids=lambda p: p.stem)
def test_each_file_lists_the_tests_nix_finds(
    path: Path, nix_results: Callable[[Path], dict[str, Any]]
) -> None:
    """The cheap listing `test_nix` is parametrised by names every test Nix runs: a test
    written so that the listing misses it would otherwise never run."""
    assert listed_tests(path) == sorted(nix_results(path))


@pytest.mark.parametrize(
    ("path", "name"),
    [
        pytest.param(path, name, id=f"{path.stem}::{name}")
        for path in NIX_TEST_FILES
        for name in listed_tests(path)
    ],
)
def test_nix(path: Path, name: str, nix_results: Callable[[Path], dict[str, Any]]) -> None:
    result = nix_results(path)[name]
    if "error" in result:
        pytest.fail(f"{path.name}: {name}: {result['error']}")
    assert result["ok"], (
        f"{path.name}: {name}\n"
        f"expected: {json.dumps(result.get('expected'), indent=2)}\n"
        f"got:      {json.dumps(result.get('expr'), indent=2)}"
    )


# ------------------------------------------------- the same tests as a flake check


@pytest.fixture(scope="module")
def worktree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository as a commit holds it, outside any git work tree."""
    return copy_worktree(tmp_path_factory.mktemp("worktree") / "nixgen")


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_stub(tmp_path_factory.mktemp("stub"))


def test_the_root_flakes_check_runs_every_library_test(worktree: Path, stub: Path) -> None:
    """`checks.<system>.lib-tests` of the repository's flake.nix evaluates every test of
    nix/tests/ (the ones `test_nix` runs one by one), through the stand-ins; evaluating it
    passes only when all of them pass."""
    ran = flake_eval(
        worktree, "checks.x86_64-linux.lib-tests", stub=stub, apply="check: check.tests"
    )
    assert sorted(ran) == sorted(
        f"{path.name}: {name}" for path in NIX_TEST_FILES for name in listed_tests(path)
    )


def test_a_failing_library_test_fails_the_root_flakes_check(
    worktree: Path, stub: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "nixgen"
    shutil.copytree(worktree, broken, symlinks=True)
    test_file = broken / "nix" / "tests" / NIX_TEST_FILES[0].name
    name = listed_tests(NIX_TEST_FILES[0])[0]
    text = test_file.read_text()
    parts = re.split(r"^in\n", text, maxsplit=1, flags=re.MULTILINE)
    parts[-1] = parts[-1].replace(
        f"  {name} =", f"  {name}_broken = {{ expr = 1; expected = 2; }};\n  {name} =", 1
    )
    test_file.write_text("in\n".join(parts))
    commit_all(broken)
    with pytest.raises(NixError) as failed:
        flake_eval(broken, "checks.x86_64-linux.lib-tests", stub=stub, apply="check: check.tests")
    assert f"nixgen library tests failed: {test_file.name}: {name}_broken" in failed.value.stderr


# ------------------------------------------------------------------ shell round trip


def _compile_commands(flags: list[list[str]]) -> list[str]:
    """The compile command the library writes for a `cpp-cpu` kernel with each list of
    `cxx-flags` (one evaluation): the quoting every build.toml value gets on its way to
    ninja's `/bin/sh -c` (nixpkgs' `escapeShellArgs`, here the stand-in's copy)."""
    expr = (
        f"let compile = ((import {REPO / 'nix'}).withLib (import {STAND_IN_LIB})).compile; "
        f"flags = {nixlit.value(flags)}; in "
        'map (f: (builtins.head (compile.cppCpu { name = "k"; sources = [ "k/a.cpp" ]; '
        "includes = [ ]; cxxFlags = f; }).objects).command) flags"
    )
    return list(nix_eval_json(expr))


def _through_sh(command_line: str) -> list[str]:
    """The argv a POSIX shell passes to `printf` for `printf '%s\\0' <command_line>`.

    Runs in an empty scratch directory: if quoting ever broke, a payload could only
    create files there."""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run(
            ["sh", "-c", f"printf '%s\\0' {command_line}"],
            cwd=scratch,
            capture_output=True,
            check=True,
        )
        assert not os.listdir(scratch), f"a payload escaped its quotes: {command_line}"
    return done.stdout.decode().split("\0")[:-1]


NASTY = [
    "",
    " ",
    "a b",
    "it's",
    "''",
    "'\\''",
    '"',
    "\\",
    "\\\\n",
    "$HOME",
    "${HOME}",
    '${builtins.abort "pwned"}',
    "`id`",
    "$(id)",
    '-DX="a b"; touch pwned',
    "a\nb",
    "\n",
    "\t",
    "*",
    "?",
    "[a]",
    "~",
    "~root",
    "#comment",
    "a#b",
    "!",
    "&&",
    "|",
    ">out",
    "<in",
    "-n",
    "--",
    "é ü 中文 🙂",
    "%s",
    "x=y",
    "{a,b}",
]


def _flags_through_sh(command: str, count: int) -> list[str]:
    """The `count` flags a POSIX shell passes on in a compile command (they come right
    before `-c <source> -o <object>`)."""
    argv = _through_sh(command)
    assert argv[-4:-2] == ["-c", "k/a.cpp"], argv
    return argv[-4 - count : -4]


def test_escape_shell_arg_round_trips_through_sh() -> None:
    """Each hostile flag, alone and all together, reaches the compiler as it was written."""
    commands = _compile_commands([[flag] for flag in NASTY] + [NASTY])
    for original, command in zip(NASTY, commands, strict=False):
        assert _flags_through_sh(command, 1) == [original], command
    assert _flags_through_sh(commands[-1], len(NASTY)) == NASTY


@settings(
    max_examples=5,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    st.lists(
        st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00")),
        min_size=1,
        max_size=40,
    )
)
def test_escape_shell_args_round_trips_any_text(args: list[str]) -> None:
    # Single quotes keep every byte, control characters and CR included.
    assert _flags_through_sh(_compile_commands([args])[0], len(args)) == args


# ------------------------------------------------ documentation examples are true

#: Examples that illustrate rather than compute (their result is prose or needs a project).
ILLUSTRATIVE = {("sources.nix", "select lib ./.")}
_ATTR = {"tvm-ffi": "tvmFfi"}


def _doc_examples() -> list[tuple[str, str, str]]:
    """`(file, expression, result)` of every ```nix … => … ``` example in `nix/*.nix`."""
    examples = []
    for path in sorted((REPO / "nix").glob("*.nix")):
        for block in re.finditer(r"```nix\n(.*?)\n\s*```", path.read_text(), re.S):
            expression: list[str] = []
            for line in (line.strip() for line in block.group(1).splitlines()):
                if not line.startswith("=>"):
                    expression.append(line)
                    continue
                expr = " ".join(expression)
                expression = []
                if not any(path.name == f and expr.startswith(p) for f, p in ILLUSTRATIVE):
                    examples.append((path.name, expr, line[2:].strip()))
    return examples


def test_documentation_examples_hold() -> None:
    """Every `=>` in the library's doc comments is what the function really returns."""
    examples = _doc_examples()
    assert len(examples) >= 20
    checks = " ".join(
        f"(let m = nixgen.{_ATTR.get(Path(f).stem, Path(f).stem)} or "
        f"(import {REPO / 'nix' / f}); in builtins.tryEval (with m; ({e}) == ({r})))"
        for f, e, r in examples
    )
    expr = (
        f"let nixgen = (import {REPO / 'nix' / 'default.nix'}).withLib (import {STAND_IN_LIB});"
        f" in [ {checks} ]"
    )
    results = nix_eval_json(expr)
    wrong = [
        f"{f}: {e}  =>  {r}  ({'false' if res['success'] else 'does not evaluate'})"
        for (f, e, r), res in zip(examples, results, strict=True)
        if not (res["success"] and res["value"])
    ]
    assert not wrong, "documentation examples that do not hold:\n" + "\n".join(wrong)


def test_metallib_header_embeds_the_library_under_the_kernel_namespace(tmp_path: Path) -> None:
    """nix/support/metal/metallib-header.py writes what a Metal kernel includes through
    EMBEDDED_METALLIB_HEADER: the bytes, their length and `createLibrary`, in `<name>_metal`."""
    script = Path(__file__).parent.parent / "nix" / "support" / "metal" / "metallib-header.py"
    data = bytes(range(40))
    (tmp_path / "relu.metallib").write_bytes(data)
    for _ in range(2):
        subprocess.run(
            [sys.executable, str(script), "relu.metallib", "relu_metallib.h", "relu"],
            cwd=tmp_path,
            check=True,
        )
    text = (tmp_path / "relu_metallib.h").read_text()
    assert "namespace relu_metal {" in text
    assert "metallib_data_len = 40;" in text
    assert "createLibrary(\n        id<MTLDevice> device, NSError** error" in text
    body = text.split("metallib_data[] = {")[1].split("};")[0]
    assert [int(b, 16) for b in body.replace(",", " ").split()] == list(data)


# ------------------------------------------- overrideAttrs reaches the real compiler

_OVERRIDE_SOURCE = """\
#ifndef NIXGEN_OVERRIDE
#error "built without the flag that overrideAttrs adds"
#endif
#if NIXGEN_OVERRIDE != 7
#error "NIXGEN_OVERRIDE is not the overridden value"
#endif
extern "C" int nixgen_override(void) { return NIXGEN_OVERRIDE; }
"""


@pytest.mark.build
def test_override_attrs_flag_reaches_the_compiler(tmp_path: Path) -> None:
    """A C++ kernel whose source `#error`s without `-DNIXGEN_OVERRIDE=7` fails to build as
    declared, and builds once `overrideAttrs` appends the flag to its `cxxFlags`: the
    build.ninja follows the derivation's attributes, not the arguments it was made from."""
    from .nixtools import NixError, make_stub, nix_build

    stub = make_stub(tmp_path / "stub")
    project = tmp_path / "project"
    (project / "k").mkdir(parents=True)
    (project / "k" / "k.cpp").write_text(_OVERRIDE_SOURCE)
    kernel = f"""
      let
        pkgs = import {stub} {{ system = "x86_64-linux"; }};
        nixgen = (import {REPO / "nix" / "default.nix"}).withLib pkgs.lib;
      in
      nixgen.kernel.cpp
        {{
          inherit pkgs; root = ./.; headers = [ ];
          toolchain = {{ inherit (pkgs) stdenv; cxxFamily = "gcc"; }};
        }}
        {{
          name = "k"; pname = "override-k"; version = "1"; language = "cpp-cpu";
          sources = [ "k/k.cpp" ]; includes = [ ]; cxxFlags = [ "-DUNRELATED" ];
        }}
    """
    with pytest.raises(NixError) as plain:
        nix_build(kernel, cwd=project)
    assert "built without the flag that overrideAttrs adds" in plain.value.stderr
    overridden = (
        f"({kernel}).overrideAttrs (old: {{ cxxFlags = old.cxxFlags ++ [ "
        '"-DNIXGEN_OVERRIDE=7" ]; })'
    )
    out = nix_build(overridden, cwd=project)
    assert (out / "lib" / "libk.a").is_file()
