"""`nixgen check-abi`: the ABI check every extension build runs, on built variants.

Each Linux extension build ends with two checks (nix/support/abi-check-hook.sh), and this
runs the same two on a directory of variants (`nixgen build`'s ``build/``, or one
downloaded from the Hub):

1. **the toolchain's check**, kernel-builder's `check-abi`: its checker library is the
   crate published on PyPI as `kernel-abi-check` (the `abi` extra of nixgen; the toolchain
   stand-in's `check-abi` runs on it too). Each ``*.so``/``*.pyd`` is held to the manylinux
   policy's symbol versions (ELF) or the minimum macOS (Mach-O), and to Python's limited API
   of the given version. For a variant built against the torch stable ABI, an undefined
   C++ symbol of ``c10::``, ``at::`` or ``torch::`` other than ``torch::stable::`` is not
   stable: the rule of kernel-builder's ``torch_stable_abi`` check that needs no table, read
   from the symbols' mangled namespaces. The torch version that introduced each C shim
   function is checked inside the build only (the toolchain holds torch's table; this
   does not);
2. **nixgen's addition** (nix/support/abi_check.py, the same program the build runs,
   through `building.abicommand`): the libraries each ELF object needs (its ``DT_NEEDED``)
   against the policy's allow-list plus what `data/abi-policies.json`'s ``extension``
   allows (torch, TVM FFI, OpenMP, the variant's backend runtime: the list the build
   uses), and undefined, unversioned glibc symbols newer than the policy's glibc.

Variants are found as kernel-builder finds them: directories holding a ``metadata.json``
in ``DIR/result``, ``DIR/build`` or ``DIR``, or ``DIR`` itself when it is one.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.building import abicommand, process
from nixgen.core import paths, tables
from nixgen.core.errors import EXIT_INVALID, NixgenError

#: kernel-builder's defaults (`check-abi`'s `--manylinux`, `--macos`, `--python-abi`), the
#: ones the build runs with.
MANYLINUX = "manylinux_2_28"
MACOS = "15.0"
PYTHON_ABI = "3.9"
#: The most bytes of a `metadata.json` read.
MAX_METADATA = 1024 * 1024
#: The most shared objects checked in one variant.
MAX_LIBRARIES = 10_000

#: An undefined symbol's mangled name in `c10::`, `at::` or `torch::` (a nested name,
#: const/volatile/ref-qualified or not; a vtable, typeinfo, guard or local name of one),
#: not in `torch::stable::`.
_UNSTABLE = re.compile(r"^_Z(?:T[VIST]|GV|Z)?N[rVKRO]*(?:3c10|2at|5torch(?!6stable))")
_STABLE_ABI_NAME = re.compile(r"^torch-stable-abi(\d)(\d+)-")


class AbiCheckError(NixgenError):
    """No variant to check, or a checker that cannot run."""

    exit_code = EXIT_INVALID


@attrs.frozen(kw_only=True)
class Library:
    """One shared object of a variant and what is wrong with it (nothing: it passes)."""

    path: str
    problems: list[str] = attrs.field(factory=list)


@attrs.frozen(kw_only=True)
class Checked:
    """One variant: its name, backend, the stable ABI it was held to, its libraries."""

    name: str
    path: str
    backend: str | None
    stable_abi: str | None
    libraries: list[Library]

    @property
    def ok(self) -> bool:
        return not any(lib.problems for lib in self.libraries)

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.name,
            "path": self.path,
            "backend": self.backend,
            "torch-stable-abi": self.stable_abi,
            "ok": self.ok,
            "libraries": [{"path": lib.path, "problems": lib.problems} for lib in self.libraries],
        }


def discover(where: Path) -> list[Path]:
    """The variant directories in `where`, by kernel-builder's rule (`discover_variants`:
    ``result/``, ``build/``, then `where` itself), or `where` when it is a variant."""
    if (where / "metadata.json").is_file():
        return [where]
    for candidate in (where / "result", where / "build", where):
        if candidate.is_dir():
            found = sorted(
                p for p in candidate.iterdir() if p.is_dir() and (p / "metadata.json").is_file()
            )
            if found:
                return found
    raise AbiCheckError(
        f"no build variants in {where}/result, {where}/build or {where} (a variant is a "
        "directory with a metadata.json: `nixgen build` links them as build/<variant>)"
    )


def shared_libraries(variant: Path) -> list[Path]:
    """The regular ``*.so*`` and ``*.pyd`` files under `variant` (its root followed when it
    is a link, as `nixgen build` links it; no other link followed)."""
    root = Path(os.path.realpath(variant))
    found = []
    for rel_dir, _, files in paths.walk(root):
        for name in files:
            rel = Path(rel_dir) / name
            path = root / rel
            if re.search(r"\.so(\.\d+)*$|\.pyd$", name) and path.is_file():
                found += [] if path.is_symlink() else [path]
    return sorted(found)[:MAX_LIBRARIES]


def stable_abi_of(name: str) -> str | None:
    """The torch stable ABI version of a variant's name (``torch-stable-abi210-…``: 2.10)."""
    match = _STABLE_ABI_NAME.match(name)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def backend_of(variant: Path) -> str | None:
    """The backend `metadata.json` names (``backend.type``), if it can be read."""
    data = paths.head(variant / "metadata.json", MAX_METADATA)
    try:
        backend = json.loads(data).get("backend", {}).get("type")
    except (ValueError, AttributeError):
        return None
    return backend if isinstance(backend, str) else None


def policy(manylinux: str, backend: str | None) -> dict[str, Any] | None:
    """nixgen's addition's policy for a variant of `backend` (None: the table has no
    `manylinux` policy, so the addition is not run)."""
    table = tables.table("abi-policies.json")
    base = table.get(manylinux)
    if not isinstance(base, dict) or manylinux.startswith("_") or manylinux == "extension":
        return None
    extension = table["extension"]
    runtime = extension["runtime"].get(backend or "", [])
    return {
        "name": manylinux,
        "glibc": base["glibc"],
        "libraries": [*base["libraries"], *extension["libraries"], *runtime],
    }


def check(
    where: Path,
    *,
    manylinux: str = MANYLINUX,
    macos: str = MACOS,
    python_abi: str = PYTHON_ABI,
    torch_stable_abi: str | None = None,
) -> list[Checked]:
    """Check every variant in `where` (`discover`); `torch_stable_abi` None: each
    variant's own (from its name), else that version for all."""
    try:
        import kernel_abi_check as abi
    except ImportError:
        raise AbiCheckError(
            "the ABI checker library is not installed: `pip install 'nixgen[abi]'` (the PyPI "
            "package kernel-abi-check, the crate of kernel-builder's check-abi)"
        ) from None
    out = []
    for variant in discover(where):
        backend = backend_of(variant)
        stable = torch_stable_abi or stable_abi_of(variant.name)
        libraries = shared_libraries(variant)
        problems: dict[Path, list[str]] = {lib: [] for lib in libraries}
        for lib in libraries:
            problems[lib] += _toolchain_check(abi, lib, manylinux, macos, python_abi, stable)
        elf = [lib for lib in libraries if _is_elf(lib)]
        wanted = policy(manylinux, backend)
        if elf and wanted is not None:
            for lib, found in _addition(wanted, elf).items():
                problems[lib] += found
        out.append(
            Checked(
                name=variant.name,
                path=str(variant),
                backend=backend,
                stable_abi=stable,
                libraries=[
                    Library(path=os.path.relpath(lib, os.path.realpath(variant)), problems=p)
                    for lib, p in problems.items()
                ],
            )
        )
    return out


def _is_elf(path: Path) -> bool:
    return paths.head(path, 4) == b"\x7fELF"


def _toolchain_check(
    abi: Any, path: Path, manylinux: str, macos: str, python_abi: str, stable: str | None
) -> list[str]:
    """kernel-builder's checks of one object, through its library."""
    try:
        obj = abi.ObjectFile(str(path))
        form = obj.format()
        out = []
        if form == abi.BinaryFormat.ELF:
            for v in sorted(obj.check_manylinux(manylinux), key=lambda v: (v.name, v.version)):
                out.append(
                    f"symbol `{v.name}` needs {v.dep} {v.version}, newer than {manylinux} allows"
                )
        elif form == abi.BinaryFormat.MACH_O:
            for v in obj.check_macos(macos):
                if isinstance(v, abi.MissingMacOSVersion):
                    out.append("records no minimum macOS version")
                else:
                    out.append(f"needs macOS {v.version}, newer than {macos}")
        else:
            return [f"not an ELF or Mach-O shared object ({form})"]
        for v in obj.check_python_abi(python_abi):
            if isinstance(v, abi.IncompatibleAbi3Symbol):
                out.append(
                    f"Python symbol `{v.name}` is in the limited API only from "
                    f"{v.version_added}, newer than {python_abi}"
                )
            elif isinstance(v, abi.NonAbi3Symbol):
                out.append(f"Python symbol `{v.name}` is not in the limited API (abi3)")
    except (OSError, ValueError, RuntimeError) as exc:
        return [f"cannot be read: {exc}"]
    if stable is not None:
        out += [
            f"symbol `{name}` is torch's C++ API, not its stable ABI {stable} "
            "(only torch::stable:: and the C shim are)"
            for name in _unstable_symbols(path)
        ]
    return out


def _unstable_symbols(path: Path) -> list[str]:
    """Undefined dynamic symbols of an ELF object outside torch's stable ABI (`_UNSTABLE`);
    none for another format. The file is mapped, not read: a CUDA extension with device
    code for many capabilities runs to hundreds of MiB."""
    try:
        with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
            names = undefined_symbols(data)
    except (OSError, ValueError):
        return []
    return sorted({n for n in names if _UNSTABLE.match(n)})


def undefined_symbols(data: bytes | mmap.mmap) -> list[str]:
    """The names of the undefined symbols of an ELF object's dynamic symbol table
    (``.dynsym``, ``st_shndx`` 0), read from its bytes; none when it is no ELF object or is
    cut short."""
    if data[:4] != b"\x7fELF" or len(data) < 64 or data[4] not in (1, 2) or data[5] not in (1, 2):
        return []
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    try:
        if wide:
            (shoff,) = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x3A)
        else:
            (shoff,) = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(order + "HH", data, 0x2E)
        sections = []
        for i in range(shnum):
            at = shoff + i * shentsize
            if wide:
                _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
                    order + "IIQQQQIIQQ", data, at
                )
            else:
                _, kind, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
                    order + "IIIIIIIIII", data, at
                )
            sections.append((kind, offset, size, link, entsize))
        names = []
        for kind, offset, size, link, entsize in sections:
            if kind != 11 or not entsize or link >= len(sections):  # SHT_DYNSYM
                continue
            strings = sections[link]
            for at in range(offset, offset + size - entsize + 1, entsize):
                if wide:
                    name, _, _, shndx = struct.unpack_from(order + "IBBH", data, at)
                else:
                    name, _, _, _, _, shndx = struct.unpack_from(order + "IIIBBH", data, at)
                if shndx != 0 or not name:
                    continue
                start = strings[1] + name
                end = data.find(b"\0", start, strings[1] + strings[2])
                if end < 0:
                    return []
                names.append(bytes(data[start:end]).decode("ascii", "replace"))
        return names
    except (struct.error, ValueError):
        return []


def _addition(wanted: dict[str, Any], libraries: Sequence[Path]) -> dict[Path, list[str]]:
    """nixgen's addition (nix/support/abi_check.py) over `libraries`: its problems, by
    library (it names each by its file name)."""
    if process.find("readelf") is None:
        raise AbiCheckError(
            "`readelf` is not on PATH: install binutils (nixgen's addition to the ABI check "
            "reads ELF data with it)"
        )
    # The policy reaches the checker on its standard input: nothing is written.
    done = process.run(
        abicommand.addition(Path("/dev/stdin"), libraries),
        cwd=None,
        input=json.dumps(wanted),
        timeout=600,
    )
    by_name = {lib.name: lib for lib in libraries}
    out: dict[Path, list[str]] = {lib: [] for lib in libraries}
    prefix = "nixgen ABI check: "
    for line in done.stderr.splitlines():
        if not line.startswith(prefix):
            continue
        name, _, message = line[len(prefix) :].partition(": ")
        if name in by_name and message:
            out[by_name[name]].append(message)
        elif done.code != 0 and not line.startswith("nixgen ABI check failed"):
            raise AbiCheckError(f"nixgen's addition to the ABI check failed: {line}")
    if done.code != 0 and not any(out.values()):
        raise AbiCheckError(
            f"nixgen's addition to the ABI check failed (exit {done.code}): "
            + (done.stderr.strip().splitlines() or ["no message"])[-1]
        )
    return out
