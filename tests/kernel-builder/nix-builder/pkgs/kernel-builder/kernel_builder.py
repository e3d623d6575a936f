"""Stand-in (test only) of the kernels toolchain's `kernel-builder` program.

The real program is Rust (huggingface/kernels `kernel-builder/`, crate `hf-kernel-builder`,
at 8ac69fc5); this one has its `check-abi` subcommand only, with the same command line
(`kernel-builder/src/check_abi.rs`):

    kernel-builder check-abi [KERNEL_DIR] [-m|--manylinux VERSION] [--macos VERSION]
                             [-p|--python-abi VERSION] [--torch-stable-abi VERSION]

and the same behaviour: KERNEL_DIR (default: the working directory) holds build variants,
directories with a `metadata.json`, looked for in `KERNEL_DIR/result`, `KERNEL_DIR/build`
and `KERNEL_DIR` in that order (`kernel-builder/src/util.rs` `discover_variants`); every
regular `*.so`/`*.pyd` file under each variant is checked: an ELF object against the
manylinux policy, a Mach-O one against the minimum macOS version, both against the Python
limited API version, and, with `--torch-stable-abi`, against the torch stable ABI. Any
violation fails the command (exit status 1), naming the symbol.

The manylinux, macOS and Python checks are the toolchain's own library, the PyPI
`kernel-abi-check` package (the same crate as the real program links, `kernel-abi-check/`).
Its Python binding has no torch stable ABI check, so that one is done here by the same rule
as the crate's `torch_stable_abi` module: an undefined C++ symbol of `c10::`, `at::` or
`torch::` other than `torch::stable::` is not stable ABI, and an undefined C shim function
(`aoti_torch_*`, `torch_*`) is not allowed before the torch version that introduced it. The
crate embeds torch's `shim_function_versions.txt`; here the versions are read from the torch
headers themselves (`$KERNEL_BUILDER_TORCH_INCLUDE`, the shim headers' `#if
TORCH_FEATURE_VERSION >= TORCH_VERSION_X_Y_Z` blocks), and `c++filt` demangles.

The default manylinux policy is `manylinux_2_28` as in the real program, unless
`$KERNEL_BUILDER_MANYLINUX` names another (the stand-in package sets it: default.nix).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import kernel_abi_check as abi
except ImportError:  # pragma: no cover - reported at run time
    abi = None


def _version(text: str) -> tuple[int, ...]:
    """A version as a comparable tuple: "2.10" and "2.10.0" are the same version."""
    parts = text.split(".")
    if not all(p.isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"invalid version `{text}`")
    numbers = [int(p) for p in parts]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers)


def _show(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version + (0,) * (2 - len(version))))


def discover_variants(kernel_dir: Path) -> list[Path]:
    """The build variant directories (with a `metadata.json`), as the real program finds them."""
    candidates = [kernel_dir / "result", kernel_dir / "build", kernel_dir]
    for candidate in candidates:
        if not candidate.is_dir():
            continue
        variants = sorted(
            p for p in candidate.iterdir() if p.is_dir() and (p / "metadata.json").is_file()
        )
        if variants:
            return variants
    raise SystemExit(
        "Error: No build variants found in "
        + ", ".join(f"`{c}`" for c in candidates[:2])
        + f", or `{candidates[2]}`"
    )


def shared_libraries(variant: Path) -> list[Path]:
    """Regular files named *.so or *.pyd under a variant (the root is followed if a link)."""
    found = []
    for top, _dirs, files in os.walk(variant):
        for name in files:
            path = Path(top) / name
            if path.suffix in (".so", ".pyd") and path.is_file() and not path.is_symlink():
                found.append(path)
    return sorted(found)


# ------------------------------------------------------------------ torch stable ABI

_GUARD = re.compile(r"#\s*if\s+TORCH_FEATURE_VERSION\s*>=\s*TORCH_VERSION_(\d+)_(\d+)_(\d+)\b")
_EXPORT = re.compile(r"AOTI_TORCH_EXPORT\b[^;{]*?\b([A-Za-z_]\w*)\s*\(", re.S)
_SHIM_HEADERS = (
    "torch/csrc/stable/c",
    "torch/csrc/inductor/aoti_torch/c",
    "torch/csrc/inductor/aoti_torch/generated",
)


def shim_versions(include: Path) -> dict[str, tuple[int, ...]]:
    """C shim function -> the torch version that introduced it, from torch's shim headers:
    a function declared inside `#if TORCH_FEATURE_VERSION >= TORCH_VERSION_X_Y_Z` needs X.Y.Z
    (functions outside every such block are older than the stable ABI's first version)."""
    versions: dict[str, tuple[int, ...]] = {}
    for sub in _SHIM_HEADERS:
        directory = include / sub
        if not directory.is_dir():
            continue
        for header in sorted(directory.glob("*.h")):
            stack: list[tuple[int, ...] | None] = []
            chunks: list[tuple[tuple[int, ...] | None, str]] = []
            for line in header.read_text(errors="replace").splitlines():
                stripped = line.strip()
                guard = _GUARD.match(stripped)
                if guard:
                    stack.append(_version(".".join(guard.groups())))
                elif re.match(r"#\s*if", stripped):
                    stack.append(None)
                elif re.match(r"#\s*endif", stripped):
                    if stack:
                        stack.pop()
                elif not stripped.startswith("#"):
                    current = next((v for v in reversed(stack) if v is not None), None)
                    chunks.append((current, line))
            # Join declarations that span lines, each with the guard of its first line.
            text_by_version: dict[tuple[int, ...] | None, list[str]] = {}
            for version, line in chunks:
                text_by_version.setdefault(version, []).append(line)
            for version, lines in text_by_version.items():
                if version is None:
                    continue
                for match in _EXPORT.finditer("\n".join(lines)):
                    name = match.group(1)
                    if name not in versions or version < versions[name]:
                        versions[name] = version
    return versions


def undefined_symbols(path: Path, macho: bool) -> list[str]:
    """The undefined symbols of an object (ELF: `readelf`, Mach-O: `llvm-nm`/`nm`)."""
    if macho:
        tool = shutil.which("llvm-nm") or next(
            (
                t
                for t in ("llvm-nm-19", "llvm-nm-16", "llvm-nm-15", "llvm-nm-14")
                if shutil.which(t)
            ),
            "nm",
        )
        out = subprocess.run(
            [tool, "-u", "-j", str(path)], capture_output=True, text=True, check=True
        ).stdout
        return [s[1:] if s.startswith("_") else s for s in out.split()]
    out = subprocess.run(
        [os.environ.get("READELF") or "readelf", "-W", "--dyn-syms", str(path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = []
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[6] == "UND":
            names.append(fields[7].split("@")[0])
    return names


def demangle(names: list[str]) -> dict[str, str]:
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {}
    out = subprocess.run(
        ["c++filt"], input="\n".join(mangled) + "\n", capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return dict(zip(mangled, out, strict=True))


def torch_stable_abi_violations(
    path: Path, macho: bool, version: tuple[int, ...], shims: dict[str, tuple[int, ...]]
) -> tuple[list[str], list[str]]:
    """(shim functions newer than `version` as `name: added`, non-stable C++ symbols)."""
    names = undefined_symbols(path, macho)
    newer = sorted(
        f"{n}: {_show(shims[n])}" for n in set(names) if n in shims and shims[n] > version
    )
    demangled = demangle([n for n in names if n not in shims])
    unstable = sorted(
        {
            d
            for d in demangled.values()
            if not d.startswith("torch::stable::")
            and (d.startswith("c10::") or d.startswith("at::") or d.startswith("torch::"))
        }
    )
    return newer, unstable


# ------------------------------------------------------------------------- check-abi


def check_library(path: Path, args: argparse.Namespace, shims: dict[str, tuple[int, ...]]) -> bool:
    """Check one shared library; print what is wrong; True when it keeps to every policy."""
    assert abi is not None
    obj = abi.ObjectFile(str(path))
    form = obj.format()
    ok = True
    if form == abi.BinaryFormat.ELF:
        print(
            f"🐍 Checking for compatibility with {args.manylinux} and Python ABI version "
            f"{_show(args.python_abi)}: {path}",
            file=sys.stderr,
        )
        manylinux = obj.check_manylinux(args.manylinux)
        if manylinux:
            ok = False
            print(f"\n⛔ Symbols incompatible with `{args.manylinux}` found:\n", file=sys.stderr)
            for v in sorted(manylinux, key=lambda v: (v.name, v.dep, v.version)):
                print(f"{v.name}_{v.dep}: {v.version}", file=sys.stderr)
    elif form == abi.BinaryFormat.MACH_O:
        print(
            f"🐍 Checking for compatibility with macOS {_show(args.macos)}, and Python ABI "
            f"version {_show(args.python_abi)}: {path}",
            file=sys.stderr,
        )
        for v in obj.check_macos(_show(args.macos)):
            ok = False
            if isinstance(v, abi.MissingMacOSVersion):
                print("\n⛔ shared library does not contain minimum macOS version", file=sys.stderr)
            else:
                print(
                    f"\n⛔ shared library requires macOS version {v.version}, which is newer "
                    f"than {_show(args.macos)}",
                    file=sys.stderr,
                )
    else:
        print(f"Error: Unsupported file format: {form}: {path}", file=sys.stderr)
        return False

    python = obj.check_python_abi(_show(args.python_abi))
    newer = sorted(
        f"{v.name}: {v.version_added}" for v in python if isinstance(v, abi.IncompatibleAbi3Symbol)
    )
    non_abi3 = sorted(v.name for v in python if isinstance(v, abi.NonAbi3Symbol))
    if newer:
        ok = False
        print(f"\n⛔ Symbols >= Python ABI {_show(args.python_abi)} found:\n", file=sys.stderr)
        print("\n".join(newer), file=sys.stderr)
    if non_abi3:
        ok = False
        print("\n⛔ Non-ABI3 symbols found:\n", file=sys.stderr)
        print("\n".join(non_abi3), file=sys.stderr)

    if args.torch_stable_abi is not None:
        version = args.torch_stable_abi
        print(
            f"🔥 Checking for compatibility with Torch stable ABI version {_show(version)}",
            file=sys.stderr,
        )
        too_new, unstable = torch_stable_abi_violations(
            path, form == abi.BinaryFormat.MACH_O, version, shims
        )
        if too_new or unstable:
            ok = False
            print(
                "\n⛔ Non-stable Torch ABI symbols found (incompatible with Torch stable ABI "
                f"{_show(version)}):\n",
                file=sys.stderr,
            )
            print("\n".join(too_new + unstable), file=sys.stderr)

    if ok:
        print("✅ No compatibility issues found", file=sys.stderr)
    else:
        print("Compatibility issues found", file=sys.stderr)
    return ok


def check_abi(args: argparse.Namespace) -> int:
    if abi is None:
        print(
            "Error: kernel-builder stand-in: the Python package `kernel-abi-check` is not "
            f"installed for {sys.executable} (pip install kernel-abi-check==0.14.1)",
            file=sys.stderr,
        )
        return 1
    kernel_dir = args.kernel_dir if args.kernel_dir is not None else Path.cwd()
    if not kernel_dir.is_dir():
        print(f"Error: `{kernel_dir}` is not a directory", file=sys.stderr)
        return 1
    shims: dict[str, tuple[int, ...]] = {}
    if args.torch_stable_abi is not None:
        include = os.environ.get("KERNEL_BUILDER_TORCH_INCLUDE")
        if include:
            shims = shim_versions(Path(include))
        if not shims:
            print(
                "Error: kernel-builder stand-in: no torch shim headers to read the stable ABI "
                "versions from ($KERNEL_BUILDER_TORCH_INCLUDE)",
                file=sys.stderr,
            )
            return 1
    failed = False
    for variant in discover_variants(kernel_dir.resolve()):
        for library in shared_libraries(variant):
            try:
                failed |= not check_library(library, args, shims)
            except (OSError, ValueError, subprocess.CalledProcessError) as error:
                print(f"Error: {library}: {error}", file=sys.stderr)
                failed = True
    if failed:
        print("Error: ABI compatibility issues found", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kernel-builder",
        description="kernel-builder stand-in (test only): the check-abi subcommand",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "check-abi", help="Check the ABI compatibility of a kernel extension"
    )
    check.add_argument("kernel_dir", nargs="?", type=Path, help="Directory with kernels")
    check.add_argument(
        "-m",
        "--manylinux",
        metavar="VERSION",
        default=os.environ.get("KERNEL_BUILDER_MANYLINUX") or "manylinux_2_28",
    )
    check.add_argument("--macos", metavar="VERSION", type=_version, default=_version("15.0"))
    check.add_argument(
        "-p", "--python-abi", metavar="VERSION", type=_version, default=_version("3.9")
    )
    check.add_argument("--torch-stable-abi", metavar="VERSION", type=_version)
    known = {"check-abi"}
    if argv is None:
        argv = sys.argv[1:]
    if argv and not argv[0].startswith("-") and argv[0] not in known:
        print(
            f"Error: kernel-builder stand-in: `{argv[0]}` is a subcommand of the real "
            "kernel-builder that this stand-in does not provide (only check-abi)",
            file=sys.stderr,
        )
        return 2
    args = parser.parse_args(argv)
    return check_abi(args)


if __name__ == "__main__":
    sys.exit(main())
