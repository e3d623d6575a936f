"""Fetch, once, the NVIDIA and PyTorch wheels the test stand-ins build CUDA kernels with.

The stub nixpkgs (tests/nixpkgs) builds its CUDA package sets from NVIDIA's own PyPI wheels
instead of one host toolkit: `cudaPackages_13_0` and `cudaPackages_13_2` from the 13.x
wheels of their own version (nvcc, NVVM, the runtime, CCCL, cuBLAS, cuSPARSE, cuSOLVER, …),
`cudaPackages_12_6` from the `-cu12` library wheels (PyPI has no CUDA 12 compiler). The CUDA
variants' torch is torch's default Linux wheel from PyPI, a CUDA build (real
`libtorch_cuda.so`, `libc10_cuda.so`, CUDA headers), never installed into a virtual
environment: it is only unpacked.

Each component (one nixpkgs package name, one or more wheels unpacked together) lands in
`<cache>/<set>/<component>/`; `<cache>/manifest.json` records what is there and where, and
`tests/nixpkgs/make_host.py` copies it into `host.nix` (`cudaWheels`). A component whose
directory holds a `.complete` stamp naming the same wheels is not fetched again, so running
this twice costs nothing. Wheels are fetched with `pip download --no-deps` (pip's configured
indexes and find-links first: a wheel already on this machine is copied, not downloaded),
unpacked, and deleted. Standard library only.

Usage: python scripts/cuda_wheels.py [--cache DIR] [--only SET ...] [--list]
The cache is $NIXGEN_CUDA_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/nixgen/cuda.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

#: The pins, by set and component: tests/nixpkgs/cuda-wheels.json (the stand-ins read the
#: versions there too).
PINS = Path(__file__).resolve().parent.parent / "tests" / "nixpkgs" / "cuda-wheels.json"
SETS: dict[str, dict[str, list[str]]] = json.loads(PINS.read_text(encoding="utf-8"))["sets"]

#: Where each component's files sit inside its unpacked wheels.
_CU13 = "nvidia/cu13"
_CU12 = {
    "cuda_cudart": "nvidia/cuda_runtime",
    "cccl": "nvidia/cuda_cccl",
    "libcublas": "nvidia/cublas",
    "libcusparse": "nvidia/cusparse",
    "libcusolver": "nvidia/cusolver",
    "cuda_nvtx": "nvidia/nvtx",
}


def default_cache() -> Path:
    if os.environ.get("NIXGEN_CUDA_CACHE"):
        return Path(os.environ["NIXGEN_CUDA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "nixgen" / "cuda"


def _prefix(set_name: str, component: str) -> str:
    if set_name == "torch":
        return "torch"
    if set_name == "cutlass":
        return "cutlass_library/source"
    if set_name.startswith("12."):
        return _CU12[component]
    return _CU13


def _version(pin: str) -> str:
    return pin.split("==", 1)[1]


def _unpack(wheel: Path, target: Path) -> int:
    """Extract a wheel into `target`, keeping executable bits; return the bytes written."""
    total = 0
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            path = target / info.filename
            if not path.resolve().is_relative_to(target.resolve()):
                raise ValueError(f"{wheel.name}: member {info.filename!r} leaves the target")
            if info.is_dir():
                path.mkdir(parents=True, exist_ok=True)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(path, "wb") as dest:
                shutil.copyfileobj(source, dest, 1 << 20)
            mode = (info.external_attr >> 16) & 0o777
            if mode & stat.S_IXUSR:
                path.chmod(0o755)
            total += info.file_size
    return total


def _download(pins: list[str], into: Path, pip: list[str]) -> list[Path]:
    done = subprocess.run(
        [
            *pip,
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--no-cache-dir",
            "--progress-bar",
            "off",
            "--quiet",
            "-d",
            str(into),
            *pins,
        ],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip download {' '.join(pins)} failed:\n{done.stderr.strip()}")
    return sorted(into.glob("*.whl"))


def fetch_component(
    cache: Path, set_name: str, component: str, pins: list[str], pip: list[str]
) -> dict[str, object]:
    """Fetch and unpack one component (skipped when its stamp names the same pins)."""
    root = cache / set_name / component
    stamp = root / ".complete"
    record: dict[str, object] = {
        "root": str(root),
        "prefix": str(root / _prefix(set_name, component)),
        "version": _version(pins[0]),
        "wheels": pins,
    }
    if stamp.is_file() and json.loads(stamp.read_text()).get("wheels") == pins:
        return {**json.loads(stamp.read_text()), "cached": True}
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache, prefix=".download-") as tmp:
        wheels = _download(pins, Path(tmp), pip)
        downloaded = sum(w.stat().st_size for w in wheels)
        unpacked = sum(_unpack(w, root) for w in wheels)
    record.update(
        downloadBytes=downloaded,
        unpackedBytes=unpacked,
        seconds=round(time.monotonic() - started, 1),
    )
    stamp.write_text(json.dumps(record, indent=1) + "\n")
    return record


def fetch(cache: Path, only: list[str] | None = None, pip: list[str] | None = None) -> Path:
    """Fetch every pinned set (or `only` those) and write `<cache>/manifest.json`."""
    pip = pip or [sys.executable, "-m", "pip"]
    cache.mkdir(parents=True, exist_ok=True)
    manifest_path = cache / "manifest.json"
    manifest: dict[str, dict[str, object]] = {}
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
    for set_name, components in SETS.items():
        if only and set_name not in only:
            continue
        entry: dict[str, object] = {}
        for component, pins in components.items():
            record = fetch_component(cache, set_name, component, pins, pip)
            cached = record.pop("cached", False)
            entry[component] = record
            what = (
                "already unpacked"
                if cached
                else f"{int(str(record['downloadBytes'])) >> 20} MiB fetched,"
                f" {int(str(record['unpackedBytes'])) >> 20} MiB unpacked, {record['seconds']} s"
            )
            print(f"{set_name} {component} {record['version']}: {what}", file=sys.stderr)
        manifest[set_name] = entry
        tmp = manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        tmp.replace(manifest_path)
    return manifest_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=default_cache())
    parser.add_argument("--only", nargs="+", choices=sorted(SETS), help="fetch these sets only")
    parser.add_argument("--list", action="store_true", help="print the pins and exit")
    args = parser.parse_args(argv)
    if args.list:
        for set_name, components in SETS.items():
            for component, pins in components.items():
                print(set_name, component, " ".join(pins))
        return 0
    try:
        print(fetch(args.cache, args.only))
    except (RuntimeError, OSError, ValueError) as error:
        print(f"cuda_wheels: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
