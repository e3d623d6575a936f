"""What the CUDA build tests share: the unpacked CUDA and torch wheels the stand-ins build
with (scripts/cuda_wheels.py, host.nix `cudaWheels`), cuobjdump, and the check that a CUDA
extension's symbols resolve against the real torch CUDA libraries (no GPU needed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .nixtools import make_host

#: The unpacked wheels by set ("13.0", "13.2", "12.6", "torch", "cutlass"), as host.nix has them
#: (`host_facts()["cudaWheels"]`, read here from the manifest alone: no tool runs at import).
WHEELS: dict[str, Any] = make_host.detect_cuda_wheels() or {}
#: The stand-ins can build CUDA 13.0 and 13.2 variants (their nvcc, and torch's CUDA build).
HAVE_WHEELS = all("cuda_nvcc" in WHEELS.get(v, {}) for v in ("13.0", "13.2")) and (
    "torch" in WHEELS
)
SKIP_REASON = "the CUDA wheels are not unpacked on this machine (python scripts/cuda_wheels.py)"
needs_wheels = pytest.mark.skipif(not HAVE_WHEELS, reason=SKIP_REASON)

#: Symbols a shared object may leave undefined for the loader or the interpreter.
_FROM_ELSEWHERE = {"__gmon_start__", "_ITM_deregisterTMCloneTable", "_ITM_registerTMCloneTable"}


def prefix(set_name: str, component: str) -> Path:
    """The unpacked tree of a component (`bin/`, `include/`, `lib/`)."""
    return Path(WHEELS[set_name][component]["prefix"])


def cuobjdump() -> str:
    """cuobjdump 13.2 from its unpacked wheel (PyPI has none for 13.0)."""
    return str(prefix("13.2", "cuda_cuobjdump") / "bin" / "cuobjdump")


def is_cuda12(cuda_version: str | None) -> bool:
    """Variants of CUDA 12.x evaluate but cannot build here (no CUDA 12 compiler on PyPI)."""
    return bool(cuda_version) and str(cuda_version).startswith("12.")


def dynamic_symbols(library: Path, *, defined: bool) -> set[str]:
    """`nm -D` names (with `@VERSION` where the symbol has one)."""
    flag = "--defined-only" if defined else "--undefined-only"
    done = subprocess.run(["nm", "-D", flag, str(library)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}


def needed(library: Path) -> list[str]:
    done = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", done.stdout)


def torch_cuda_symbols() -> set[str]:
    """What torch 2.11's CUDA build defines in c10, torch_cpu, c10_cuda and torch_cuda."""
    lib = prefix("torch", "torch") / "lib"
    found: set[str] = set()
    for name in ("c10", "torch_cpu", "c10_cuda", "torch_cuda"):
        found |= {s.split("@")[0] for s in dynamic_symbols(lib / f"lib{name}.so", defined=True)}
    return found


def unresolved(library: Path, *providers: set[str]) -> list[str]:
    """The unversioned undefined symbols of `library` that none of `providers` defines,
    besides the Python C API (the interpreter's) and the loader's weak ones. Versioned ones
    (glibc, libstdc++, libcudart) are the ABI check's."""
    return sorted(
        s
        for s in dynamic_symbols(library, defined=False)
        if "@" not in s
        and not s.startswith("Py")
        and s not in _FROM_ELSEWHERE
        and not any(s in p for p in providers)
    )


def demangle(symbols: list[str]) -> list[str]:
    return subprocess.run(
        ["c++filt"], input="\n".join(symbols), capture_output=True, text=True, check=True
    ).stdout.splitlines()
