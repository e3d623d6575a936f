"""The flags the kernels toolchain's build of a torch extension takes from torch, read from
one torch when a derivation builds (`nixgen.torch.buildFlags`).

The kernels toolchain builds a torch extension with a CMake project that calls
`find_package(Torch)` and links the `torch` target; every compile of its sources then gets

1. what torch's CMake config gives them (`cmake-flags.cmake`, beside this file, runs those
   files with CMake itself): the usage requirements of `torch` and every target it links
   (compile definitions, compile options) and, for a CUDA build of torch, the flags
   `share/cmake/Caffe2/public/cuda.cmake` appends to CMAKE_CUDA_FLAGS;
2. for a CUDA compile, the toolchain's own `get_torch_gpu_compiler_flags`: torch's
   `torch.utils.cpp_extension.COMMON_NVCC_FLAGS` (read here from `utils/cpp_extension.py`
   as the Python literal it is, without importing torch), less the four
   `-D__CUDA_NO_*` definitions it removes, plus `-DENABLE_FP8` (CUDA 11.8 and newer).

Written into OUT:

- `nvcc`: nvcc's flags, one per line, for `nvcc --options-file`, in the order CMake puts
  them on a CUDA compile: the definitions of (1), CMAKE_CUDA_FLAGS (then the Release
  build's), the options of (1), then (2);
- `cxx`: a C++ compiler's flags, one per line, for `@file`: the definitions of (1),
  CMAKE_CXX_FLAGS (then the Release build's), the options of (1);
- `flags.json`: the same, with where each part came from.

Every flag must be one word without quotes or backslashes (torch's own cuda.cmake refuses a
flag with a space): anything else fails, naming it, as a response file could not hold it
unchanged.

Usage: python build_flags.py --torch DIR --script cmake-flags.cmake [--cmake CMAKE]
       [--cuda MAJOR.MINOR] --out DIR
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

#: The definitions the kernels toolchain removes from COMMON_NVCC_FLAGS, and what it adds
#: (for CUDA 11.8 and newer): its `get_torch_gpu_compiler_flags` (utils.cmake).
REMOVED_NVCC_FLAGS = (
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
)
FP8_FLAG = "-DENABLE_FP8"
FP8_FROM = (11, 8)

#: What a flag in a response file may hold: one word, no quoting needed.
_WORD = re.compile(r"[A-Za-z0-9_+,.:=/%@^~-]+")

#: The kinds of line cmake-flags.cmake writes.
KINDS = (
    "cuda-flags",
    "cuda-release-flags",
    "cxx-flags",
    "cxx-release-flags",
    "definition",
    "option",
    "external",
    "found",
    "absent",
)


class FlagsError(Exception):
    """Torch's configuration could not be read into flags."""


def read_cmake(torch: Path, script: Path, cmake: str, cuda: str | None) -> dict[str, list[str]]:
    """What cmake-flags.cmake reads from torch's CMake config, by kind."""
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "flags.txt"
        done = subprocess.run(
            [
                cmake,
                f"-DTORCH_DIR={torch}",
                f"-DNIXGEN_CUDA_VERSION={cuda or ''}",
                f"-DNIXGEN_OUT={out}",
                f"-DNIXGEN_WORK={work}",
                "-P",
                str(script),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0 or not out.is_file():
            raise FlagsError(
                f"reading torch's CMake config under {torch} failed:\n"
                + (done.stderr.strip() or done.stdout.strip())
            )
        found: dict[str, list[str]] = {kind: [] for kind in KINDS}
        for line in out.read_text().splitlines():
            kind, _, value = line.partition("\t")
            if kind not in found:
                raise FlagsError(f"cmake-flags.cmake wrote a line of unknown kind: {line!r}")
            found[kind].append(value)
        return found


def common_nvcc_flags(torch: Path) -> list[str]:
    """`COMMON_NVCC_FLAGS` of torch's `utils/cpp_extension.py`: a module-level list of
    string literals, read without running torch."""
    path = torch / "utils" / "cpp_extension.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError) as error:
        raise FlagsError(f"cannot read {path}: {error}") from error
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "COMMON_NVCC_FLAGS"
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as error:
                raise FlagsError(
                    f"{path}:{node.lineno}: COMMON_NVCC_FLAGS is not a literal list"
                ) from error
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise FlagsError(
                    f"{path}:{node.lineno}: COMMON_NVCC_FLAGS is not a list of strings"
                )
            return value
    raise FlagsError(f"{path}: no module-level COMMON_NVCC_FLAGS")


def gpu_flags(common: list[str], cuda: str) -> list[str]:
    """The kernels toolchain's CUDA flags from torch's COMMON_NVCC_FLAGS."""
    major, minor = (int(part) for part in cuda.split(".")[:2])
    flags = list(common)
    if (major, minor) >= FP8_FROM:
        flags.append(FP8_FLAG)
        flags = [flag for flag in flags if flag not in REMOVED_NVCC_FLAGS]
    return flags


def check_words(kind: str, flags: list[str]) -> None:
    for flag in flags:
        if not _WORD.fullmatch(flag):
            raise FlagsError(
                f"torch gives the {kind} compile the flag {flag!r}, which a response file "
                "cannot hold as one word"
            )


class Flags:
    """What one torch gives: `cxx` flags, `nvcc` flags (a CUDA build, else None) and
    `record`, the parts and where each came from (`flags.json`)."""

    def __init__(self, cxx: list[str], nvcc: list[str] | None, record: dict[str, object]):
        self.cxx = cxx
        self.nvcc = nvcc
        self.record = record


def build_flags(torch: Path, script: Path, cmake: str, cuda: str | None) -> Flags:
    """The flags of one torch; `cuda` the toolkit's version for a CUDA build, else None."""
    found = read_cmake(torch, script, cmake, cuda)
    definitions = [f"-D{d}" for d in found["definition"]]
    # In the order CMake writes a compile: definitions, the language's flags (the build
    # type's after), the target's options.
    cxx = definitions + found["cxx-flags"] + found["cxx-release-flags"] + found["option"]
    check_words("C++", cxx)
    record: dict[str, object] = {"cmake": found, "cxx": cxx}
    nvcc = None
    if cuda:
        if "CUDA" not in found["found"]:
            raise FlagsError(
                f"the torch under {torch} is not a CUDA build: its CMake config "
                "(share/cmake/Caffe2/Caffe2Config.cmake) does not look for CUDA"
            )
        common = common_nvcc_flags(torch)
        gpu = gpu_flags(common, cuda)
        nvcc = (
            definitions + found["cuda-flags"] + found["cuda-release-flags"] + found["option"] + gpu
        )
        check_words("CUDA", nvcc)
        record.update(cuda=cuda, commonNvccFlags=common, gpuFlags=gpu, nvcc=nvcc)
    return Flags(cxx, nvcc, record)


def _lines(flags: list[str]) -> str:
    return "".join(f"{flag}\n" for flag in flags)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--torch", type=Path, required=True, help="the torch package directory")
    parser.add_argument("--script", type=Path, required=True, help="cmake-flags.cmake")
    parser.add_argument("--cmake", default="cmake")
    parser.add_argument("--cuda", help="the CUDA toolkit's major.minor (a CUDA build of torch)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        flags = build_flags(args.torch, args.script, args.cmake, args.cuda)
    except FlagsError as error:
        print(f"nixgen torch build flags: {error}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cxx").write_text(_lines(flags.cxx))
    if flags.nvcc is not None:
        (args.out / "nvcc").write_text(_lines(flags.nvcc))
    (args.out / "flags.json").write_text(json.dumps(flags.record, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
