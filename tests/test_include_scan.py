"""The unlisted-`#include` warning: conditionals no compile of the file takes hide it, an
undecided one is named in it, and the headers nixgen supplies to a binding need no listing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from nixgen.app import scaffold
from nixgen.checking import conditionals
from nixgen.cmdline.cli import main
from nixgen.core import tables

CUDA = {"CUDA_KERNEL": "1", "USE_CUDA": "1", "USE_ROCM": None, "ROCM_KERNEL": None}


def taken(text: str, *compiles: dict[str, str | None]) -> dict[int, bool | None]:
    reached = conditionals.reach(text.encode(), list(compiles) or [CUDA])
    return {line: r.taken for line, r in reached.items()}


def test_a_branch_of_another_backend_is_not_reached() -> None:
    text = "#ifdef USE_ROCM\nA\n#else\nB\n#endif\nC\n"
    got = taken(text)
    assert 2 not in got and got[4] is True and got[6] is True


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("#if defined(USE_ROCM)", False),
        ("#if defined USE_ROCM || defined(ROCM_KERNEL)", False),
        ("#if !defined(USE_ROCM)", True),
        ("#ifndef USE_ROCM", True),
        ("#if USE_CUDA == 1 && !USE_ROCM", True),
        ("#if USE_ROCM", False),  # an undefined name is 0
        ("#if defined(MY_OWN)", None),
        ("#if defined(MY_OWN) && defined(USE_ROCM)", False),
        ("#if defined(MY_OWN) || defined(CUDA_KERNEL)", True),
        ("#if MY_VERSION >= 3", None),
        ("#if 0", False),
        ("#if 0x10 > 010", True),
        ("#if sizeof(int) == 4", None),  # not a preprocessor expression this reads
    ],
)
def test_conditions_in_three_values(condition: str, expected: bool | None) -> None:
    got = taken(f"{condition}\nX\n#endif\n")
    assert got.get(2, False) == expected


def test_elif_and_else_chains() -> None:
    text = (
        "#if defined(USE_ROCM)\nR\n"
        "#elif defined(CUDA_KERNEL)\nC\n"
        "#else\nE\n#endif\n"
        "#if defined(MINE)\nM\n#elif defined(CUDA_KERNEL)\nMC\n#else\nME\n#endif\n"
    )
    got = taken(text)
    assert 2 not in got and got[4] is True and 6 not in got
    # After an undecided branch, a branch true by itself may still be skipped; an `#else`
    # after a condition that is true for certain is not reached.
    assert got[9] is None and got[11] is None and 13 not in got


def test_nesting_continuations_and_comments() -> None:
    text = "#ifndef USE_ROCM // not ROCm\n#if defined(USE_ROCM) \\\n  || 0\nX\n#endif\nY\n#endif\n"
    got = taken(text)
    assert 4 not in got and got[6] is True


def test_a_line_any_compile_takes_is_taken() -> None:
    rocm = {"CUDA_KERNEL": None, "USE_CUDA": None, "USE_ROCM": "1", "ROCM_KERNEL": "1"}
    got = taken("#ifdef USE_ROCM\nX\n#endif\n", CUDA, rocm)
    assert got[2] is True


def test_flags_and_the_projects_own_defines() -> None:
    every = ["CUDA_KERNEL", "USE_CUDA", "ROCM_KERNEL", "USE_ROCM"]
    known = conditionals.known_macros(
        ["-DCUDA_KERNEL", "-DUSE_CUDA=1"], every, ["-D", "EXTRA=2", "-UUSE_CUDA"], ["ROCM_KERNEL"]
    )
    assert known["CUDA_KERNEL"] == "1" and known["EXTRA"] == "2" and known["USE_CUDA"] is None
    assert known["USE_ROCM"] is None and "ROCM_KERNEL" not in known
    assert conditionals.defined_names(b"#define A 1\n  # undef B\n#ifdef C\n") == {"A", "B"}


# ----------------------------------------------------------------- through `nixgen validate`


@pytest.fixture
def cuda_project(tmp_path: Path) -> Path:
    """A CUDA-only project whose kernel includes a header it does not list."""
    root = tmp_path / "relu"
    scaffold.create(root, "relu", ["cpp-cuda"])
    (root / "relu_cuda" / "rocm_compat.h").write_text("#pragma once\n")
    return root


def include_under(root: Path, guard: str, flags: str = "") -> str:
    source = root / "relu_cuda" / "relu_cuda.cu"
    include = '#include "rocm_compat.h"\n'
    block = f"{guard}\n{include}#endif\n" if guard else include
    source.write_text(block + source.read_text())
    if flags:
        toml = root / "build.toml"
        toml.write_text(
            toml.read_text().replace(
                'src = ["relu_cuda/relu_cuda.cu"]', f'src = ["relu_cuda/relu_cuda.cu"]\n{flags}'
            )
        )
    done = CliRunner().invoke(main, ["validate", str(root)])
    assert done.exit_code == 0, done.output
    return done.stderr


def test_a_header_under_another_backends_guard_gets_no_warning(cuda_project: Path) -> None:
    assert "rocm_compat.h" not in include_under(cuda_project, "#ifdef USE_ROCM")


def test_a_header_the_kernel_compiles_keeps_its_warning(cuda_project: Path) -> None:
    err = include_under(cuda_project, "#ifndef USE_ROCM")
    assert '`#include "rocm_compat.h"` names `relu_cuda/rocm_compat.h`, which no `src`' in err
    assert "under `" not in err


def test_a_flag_that_defines_the_guard_makes_it_compiled(cuda_project: Path) -> None:
    err = include_under(cuda_project, "#ifdef USE_ROCM", 'cuda-flags = ["-DUSE_ROCM"]')
    assert "names `relu_cuda/rocm_compat.h`" in err


def test_an_undecided_guard_is_named_in_the_warning(cuda_project: Path) -> None:
    err = include_under(cuda_project, "#if defined(WITH_COMPAT)")
    assert re.search(
        r"relu_cuda/relu_cuda\.cu:2: .*names `relu_cuda/rocm_compat\.h`.* \(under "
        r"`#if defined\(WITH_COMPAT\)`, line 1: when that branch is compiled\)",
        err,
    ), err


def test_a_guard_the_project_defines_itself_is_undecided(cuda_project: Path) -> None:
    header = cuda_project / "relu_cuda" / "config.cuh"
    header.write_text("#pragma once\n#define USE_ROCM 1\n")
    toml = cuda_project / "build.toml"
    toml.write_text(
        toml.read_text().replace(
            'src = ["relu_cuda/relu_cuda.cu"]',
            'src = ["relu_cuda/relu_cuda.cu", "relu_cuda/config.cuh"]',
        )
    )
    assert "under `#ifdef USE_ROCM`" in include_under(cuda_project, "#ifdef USE_ROCM")


def test_the_binding_needs_no_registration_h_of_its_own(tmp_path: Path) -> None:
    """A project that keeps kernel-builder's `torch-ext/registration.h` beside its binding:
    the binding's include path has nixgen's, so nothing asks to list it."""
    root = tmp_path / "relu"
    scaffold.create(root, "relu", ["cpp-cpu"])
    assert "registration.h" in tables.binding_headers()
    (root / "torch-ext" / "registration.h").write_text("#pragma once\n")
    binding = (root / "torch-ext" / "torch_binding.cpp").read_text()
    assert '#include "registration.h"' in binding
    done = CliRunner().invoke(main, ["validate", str(root)])
    assert done.exit_code == 0 and "registration.h" not in done.stderr, done.stderr
    # A kernel's own include path has no such header: there it is still the project's.
    kernel = next((root / "relu_cpu").glob("*.cpp"))
    kernel.write_text('#include "../torch-ext/registration.h"\n' + kernel.read_text())
    done = CliRunner().invoke(main, ["validate", str(root)])
    assert "names `torch-ext/registration.h`, which no `src` list names" in done.stderr


def test_the_library_puts_the_binding_headers_on_the_include_path() -> None:
    """`tables.BINDING_INCLUDE_DIR` is the directory the Nix library passes with -I."""
    extension = (Path(tables.PACKAGE) / "nixlib" / "extension.nix").read_text()
    assert f'"-I${{./{tables.BINDING_INCLUDE_DIR}}}"' in extension
