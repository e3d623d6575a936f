"""Check that Linux shared objects keep to a binary-compatibility policy (nixgen).

Run by the ABI check hook after a framework extension is installed:

    python3 abi_check.py --policy policy.json PATH...

`policy.json` is `{ "name", "maxVersions": {family: version}, "extraVersions": [...],
"libraries": [glob, ...] }`: every library a shared object needs must match one of
`libraries`, and every symbol version it needs from a system library (GLIBC_, GLIBCXX_,
CXXABI_, GCC_) must be at most its family's maximum, or be listed in `extraVersions`.
PATH is a shared object or a directory searched for `*.so*`. The ELF data comes from
`readelf` (`$READELF`, else `readelf` on PATH). Exit status 1 lists every violation, each
naming the symbol or library; 0 prints one line per file checked.
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

_FAMILY = re.compile(r"^(GLIBC|GLIBCXX|CXXABI|GCC)_([0-9]+(?:\.[0-9]+)*)$")
_NEEDED = re.compile(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]")
_FILE = re.compile(r"^\s*(?:0x)?[0-9a-f]+: Version: \d+\s+File: (\S+)\s+Cnt: \d+")
_NAME = re.compile(r"^\s*0x[0-9a-f]+:\s+Name: (\S+)\s+Flags: .*Version: (\d+)")


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


def version_needs(versions: str) -> dict[str, str]:
    """Required symbol versions of `readelf -V` output: version name -> library."""
    needs: dict[str, str] = {}
    library = None
    in_needs = False
    for line in versions.splitlines():
        if line.startswith("Version needs section"):
            in_needs = True
            continue
        if line.startswith("Version ") or line.startswith("Version symbols"):
            in_needs = False
        if not in_needs:
            continue
        file_match = _FILE.match(line)
        if file_match:
            library = file_match.group(1)
            continue
        name_match = _NAME.match(line)
        if name_match and library is not None:
            needs[name_match.group(1)] = library
    return needs


def undefined_symbols(symbols: str) -> dict[str, list[str]]:
    """Undefined versioned dynamic symbols of `readelf --dyn-syms` output: version -> names."""
    out: dict[str, list[str]] = {}
    for line in symbols.splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[6] != "UND":
            continue
        name, _, version = fields[7].partition("@")
        version = version.lstrip("@")
        if version:
            out.setdefault(version, []).append(name)
    return out


def violations(
    policy: dict[str, Any], needed: list[str], needs: dict[str, str], symbols: dict[str, list[str]]
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
    maxima = {family: _version(v) for family, v in policy.get("maxVersions", {}).items()}
    extra = set(policy.get("extraVersions", []))
    for version in sorted(needs):
        if version in extra:
            continue
        match = _FAMILY.match(version)
        if match is None:
            if version.split("_")[0] in maxima or version == "GLIBC_PRIVATE":
                bad = f"needs symbol version {version}, which {name} does not allow"
            else:
                continue  # a version of a non-system library (torch, CUDA): not policed
        else:
            family, number = match.groups()
            if family not in maxima or _version(number) <= maxima[family]:
                continue
            bad = (
                f"needs {version} (from {needs[version]}), newer than "
                f"{family} {policy['maxVersions'][family]} allowed by {name}"
            )
        users = sorted(set(symbols.get(version, [])))
        shown = ", ".join(f"`{u}`" for u in users[:5]) + (" …" if len(users) > 5 else "")
        problems.append(f"symbol {shown} {bad}" if users else bad)
    return problems


def check_file(policy: dict[str, Any], path: Path) -> list[str]:
    """Violations of one shared object."""
    return violations(
        policy,
        needed_libraries(_readelf(path, "-d")),
        version_needs(_readelf(path, "-V")),
        undefined_symbols(_readelf(path, "--dyn-syms")),
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
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)
    policy = json.loads(args.policy.read_text())
    files = shared_objects(args.paths)
    failed = False
    for path in files:
        try:
            problems = check_file(policy, path)
        except RuntimeError as error:
            problems = [str(error)]
        for problem in problems:
            print(f"nixgen ABI check: {path.name}: {problem}", file=sys.stderr)
        failed = failed or bool(problems)
        if not problems:
            print(f"nixgen ABI check: {path.name}: keeps to {policy.get('name', 'the policy')}")
    if failed:
        print(
            f"nixgen ABI check failed: the extension would not load everywhere "
            f"{policy.get('name', 'the policy')} promises",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
