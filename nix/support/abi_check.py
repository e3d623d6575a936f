"""nixgen's addition to the toolchain's ABI check: what `kernel-builder check-abi` lacks.

Run by the ABI check hook (abi-check-hook.sh) after `kernel-builder check-abi`:

    python3 abi_check.py --policy policy.json [--glibc LIBRARY]... PATH...

The toolchain's check (manylinux, Python abi3, torch stable ABI, macOS minimum) reads the
versions of the symbols an object needs. It does not read two things this one does, for
Linux shared objects (`*.so*` under a directory PATH, or PATH itself):

1. every library in the object's DT_NEEDED entries must match one of the policy's
   `libraries` globs (PEP 600's allow-list, plus torch, TVM FFI and the backend runtime);
2. no undefined symbol may be UNVERSIONED while it names a glibc symbol that the policy's
   glibc (`glibc`, e.g. "2.28") does not define: such a symbol (`__libc_single_threaded`,
   GLIBC_2.32; `__isoc23_strtol`, GLIBC_2.38) comes from compiling against newer glibc
   headers than the C library linked against, carries no version for the toolchain's check
   to read, and fails to load where only the policy's glibc is. Which glibc symbols exist,
   and since which version, is read from a newer glibc: the `--glibc` libraries, by default
   the C libraries this interpreter runs on (in a Nix build, nixpkgs' glibc, the one whose
   headers can leak in).

`policy.json` is `{ "name", "glibc", "libraries": [glob, ...] }`. The ELF data comes from
`readelf` (`$READELF`, else `readelf` on PATH). Exit status 1 lists every violation, each
naming the library or the symbol; 0 prints one line per file checked.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")
_GLIBC = re.compile(r"^GLIBC_([0-9]+(?:\.[0-9]+)*)$")
#: The libraries of glibc whose symbols carry GLIBC_ versions.
_GLIBC_LIBRARY = re.compile(
    r"^(libc|libm|libmvec|libpthread|libdl|librt|libresolv|ld-linux[-\w.]*)\.so"
)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _readelf(path: Path, *flags: str) -> str:
    tool = os.environ.get("READELF") or "readelf"
    result = subprocess.run(
        [tool, "-W", *flags, str(path)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise RuntimeError(f"{tool} {' '.join(flags)} {path}: {result.stderr.strip()}")
    return result.stdout


def needed_libraries(dynamic: str) -> list[str]:
    """The DT_NEEDED entries of `readelf -d` output."""
    return _NEEDED.findall(dynamic)


def dynamic_symbols(symbols: str) -> list[tuple[str, str, bool]]:
    """`(name, version, undefined)` of each dynamic symbol in `readelf --dyn-syms` output;
    version is "" for an unversioned symbol."""
    out = []
    for line in symbols.splitlines():
        fields = line.split()
        if len(fields) < 8 or not fields[0].endswith(":") or not fields[0][:-1].isdigit():
            continue
        name, _, version = fields[7].partition("@")
        out.append((name, version.lstrip("@"), fields[6] == "UND"))
    return out


def unversioned_undefined(symbols: str) -> list[str]:
    """The undefined symbols without a version (an empty name is the null symbol)."""
    return [n for n, v, undefined in dynamic_symbols(symbols) if undefined and not v and n]


def glibc_introduced(libraries: list[Path]) -> dict[str, tuple[int, ...]]:
    """glibc symbol -> the oldest GLIBC_ version that defines it, from glibc's libraries."""
    oldest: dict[str, tuple[int, ...]] = {}
    for library in libraries:
        for name, version, undefined in dynamic_symbols(_readelf(library, "--dyn-syms")):
            match = _GLIBC.match(version)
            if undefined or match is None:
                continue
            number = _version(match.group(1))
            if name not in oldest or number < oldest[name]:
                oldest[name] = number
    return oldest


def running_glibc() -> list[Path]:
    """The glibc libraries this interpreter has mapped (Linux `/proc/self/maps`)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    found = {}
    for line in maps.splitlines():
        path = line.split(None, 5)[5] if len(line.split(None, 5)) == 6 else ""
        name = os.path.basename(path)
        if path.startswith("/") and _GLIBC_LIBRARY.match(name) and name not in found:
            found[name] = Path(path)
    return sorted(found.values())


def violations(
    policy: dict[str, Any],
    needed: list[str],
    unversioned: list[str],
    introduced: dict[str, tuple[int, ...]],
) -> list[str]:
    """What breaks `policy` (see the module docstring), one message per problem."""
    name = policy.get("name", "the policy")
    problems = []
    allowed = policy.get("libraries", [])
    for library in needed:
        if not any(fnmatch.fnmatchcase(library, pattern) for pattern in allowed):
            problems.append(
                f"needs library {library}, which {name} does not allow "
                f"(allowed: {', '.join(allowed)})"
            )
    glibc = _version(policy["glibc"])
    for symbol in sorted(set(unversioned)):
        since = introduced.get(symbol)
        if since is not None and since > glibc:
            shown = ".".join(map(str, since))
            problems.append(
                f"symbol `{symbol}` is undefined and unversioned, and glibc defines it only "
                f"from GLIBC_{shown}, newer than glibc {policy['glibc']} of {name} (compiled "
                f"against newer glibc headers than it was linked with)"
            )
    return problems


def check_file(
    policy: dict[str, Any], path: Path, introduced: dict[str, tuple[int, ...]]
) -> list[str]:
    """Violations of one shared object."""
    return violations(
        policy,
        needed_libraries(_readelf(path, "-d")),
        unversioned_undefined(_readelf(path, "--dyn-syms")),
        introduced,
    )


def shared_objects(paths: list[Path]) -> list[Path]:
    """The shared objects among `paths` (directories searched, symlinks not followed)."""
    found = []
    for path in paths:
        if path.is_dir():
            found += sorted(
                p
                for p in path.rglob("*.so*")
                if p.is_file() and not p.is_symlink() and re.search(r"\.so(\.[0-9]+)*$", p.name)
            )
        else:
            found.append(path)
    return found


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", required=True, type=Path)
    parser.add_argument("--glibc", action="append", type=Path, default=[])
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    policy = json.loads(args.policy.read_text())
    label = policy.get("name", "the policy")
    references = args.glibc or running_glibc()
    try:
        introduced = glibc_introduced(references)
    except RuntimeError as error:
        print(f"nixgen ABI check: cannot read glibc: {error}", file=sys.stderr)
        return 1
    if not introduced:
        print(
            "nixgen ABI check: found no glibc to read symbol versions from (pass --glibc)",
            file=sys.stderr,
        )
        return 1
    failed = False
    for path in shared_objects(args.paths):
        try:
            problems = check_file(policy, path, introduced)
        except RuntimeError as error:
            problems = [str(error)]
        for problem in problems:
            print(f"nixgen ABI check: {path.name}: {problem}", file=sys.stderr)
        failed = failed or bool(problems)
        if not problems:
            print(
                f"nixgen ABI check: {path.name}: libraries and unversioned symbols keep to {label}"
            )
    if failed:
        print(
            f"nixgen ABI check failed: the extension would not load everywhere {label} promises",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
