"""Write ``host.nix`` for the stub nixpkgs: the machine paths its stand-ins link to.

The stub nixpkgs (this directory) never names a machine path itself. Everything it needs
from the machine -- the shell, the PATH to find build tools in, the C/C++ compiler, the Rust
toolchain, the CUDA prefix, the Python interpreter with its include directory and the torch
package directory -- is detected here and written to ``host.nix`` (git-ignored). A tool
that is missing becomes ``null``: evaluation still works, and only a build that needs the
tool fails, with a message naming it.

Standard library only. Usage::

    python tests/nixpkgs/make_host.py [STUB_DIR] [--python PYTHON]

or ``write_host(stub_dir, python=sys.executable)`` from Python.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

NixValue = None | bool | int | str | list["NixValue"] | dict[str, "NixValue"]

_STANDARD_PATH = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")

_PYTHON_PROBE = r"""
import importlib.util, json, platform, re, sys, sysconfig
paths = sysconfig.get_paths()
include = paths.get("include") or sysconfig.get_config_var("INCLUDEPY")
torch_dir = torch_version = None
spec = importlib.util.find_spec("torch")
if spec is not None and spec.submodule_search_locations:
    torch_dir = list(spec.submodule_search_locations)[0]
    try:
        text = open(torch_dir + "/version.py", encoding="utf-8").read()
        m = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
        torch_version = m.group(1) if m else None
    except OSError:
        pass
tvm_ffi_dir = tvm_ffi_version = None
spec = importlib.util.find_spec("tvm_ffi")
if spec is not None and spec.submodule_search_locations:
    tvm_ffi_dir = list(spec.submodule_search_locations)[0]
    try:
        from importlib.metadata import version as _dist_version
        tvm_ffi_version = _dist_version("apache-tvm-ffi")
    except Exception:
        pass
print(json.dumps({
    "tvm_ffi_dir": tvm_ffi_dir,
    "tvm_ffi_version": tvm_ffi_version,
    "version": platform.python_version(),
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "include": include,
    "torch_dir": torch_dir,
    "torch_version": torch_version,
    "tvm_ffi_dir": tvm_ffi_dir,
    "tvm_ffi_version": tvm_ffi_version,
}))
"""


def _run(*args: str) -> str | None:
    """Return the stdout of a command, or None when it cannot run or fails."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _which(name: str, path: str) -> str | None:
    return shutil.which(name, path=path)


def _search_path() -> list[str]:
    dirs: list[str] = []
    for d in [*os.environ.get("PATH", "").split(os.pathsep), *_STANDARD_PATH]:
        if d and os.path.isabs(d) and os.path.isdir(d) and d not in dirs:
            dirs.append(d)
    return dirs


def _detect_cc(path: str) -> dict[str, NixValue] | None:
    gcc, gxx = _which("gcc", path), _which("g++", path)
    if gcc is None or gxx is None:
        return None
    cpp = _which("cpp", path)
    version = (_run(gxx, "-dumpfullversion") or _run(gxx, "-dumpversion") or "0").strip()
    return {
        "gcc": os.path.realpath(gcc),
        "gxx": os.path.realpath(gxx),
        "cpp": os.path.realpath(cpp) if cpp else None,
        "version": version,
    }


def _detect_rust(path: str) -> dict[str, NixValue] | None:
    rustc = _which("rustc", path)
    if rustc is None:
        return None
    sysroot = (_run(rustc, "--print", "sysroot") or "").strip()
    if not sysroot or not os.path.isfile(os.path.join(sysroot, "bin", "cargo")):
        return None
    version_line = _run(os.path.join(sysroot, "bin", "rustc"), "--version") or ""
    m = re.search(r"rustc (\S+)", version_line)
    rustup_home = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
    under_rustup = os.path.realpath(sysroot).startswith(os.path.realpath(rustup_home) + os.sep)
    return {
        "toolchainBin": os.path.join(sysroot, "bin"),
        "rustupHome": rustup_home if under_rustup else None,
        "toolchain": os.path.basename(sysroot) if under_rustup else None,
        "cargoHome": os.environ.get("CARGO_HOME") or os.path.expanduser("~/.cargo"),
        "version": m.group(1) if m else "0",
    }


def _detect_cuda(path: str) -> dict[str, NixValue] | None:
    nvcc = _which("nvcc", path)
    prefix = None
    if nvcc is not None:
        # nvcc reports where its real binary lives; wrappers (a script that execs it) and
        # symlinks both resolve this way.
        dry = subprocess.run(
            [nvcc, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
            capture_output=True,
            text=True,
            check=False,
        )
        m = re.search(r"^#\$ _HERE_=(\S+)$", dry.stdout + dry.stderr, re.MULTILINE)
        if m:
            prefix = os.path.realpath(os.path.dirname(m.group(1)))
        else:
            prefix = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    else:
        for var in ("CUDA_HOME", "CUDA_PATH"):
            if os.environ.get(var) and os.path.isfile(os.path.join(os.environ[var], "bin", "nvcc")):
                prefix = os.path.realpath(os.environ[var])
                break
    if prefix is None or not os.path.isfile(os.path.join(prefix, "bin", "nvcc")):
        return None
    version_text = _run(os.path.join(prefix, "bin", "nvcc"), "--version") or ""
    m = re.search(r"V(\d+\.\d+\.\d+)", version_text)
    return {"prefix": prefix, "version": m.group(1) if m else "0"}


def _detect_hip(path: str) -> dict[str, NixValue] | None:
    """Debian's hipcc (ROCm 5.2, HIP_PLATFORM=amd) with the HIP headers and runtime library
    it compiles and links against, or None (the toolchain stand-in's ROCm `clr` wraps it)."""
    hipcc, hipconfig, gcc = _which("hipcc", path), _which("hipconfig", path), _which("gcc", path)
    if hipcc is None or hipconfig is None or gcc is None:
        return None
    prefix = (_run(hipconfig, "--path") or "").strip()
    library = (_run(gcc, "-print-file-name=libamdhip64.so") or "").strip()
    if not os.path.isdir(os.path.join(prefix, "include", "hip")) or not os.path.isfile(library):
        return None
    return {
        "hipcc": hipcc,
        "include": os.path.join(prefix, "include"),
        "lib": os.path.dirname(os.path.realpath(library)),
        "version": (_run(hipconfig, "--version") or "0").strip(),
    }


def _detect_python(python: str) -> tuple[NixValue, NixValue]:
    """The interpreter (with its tvm_ffi, the PyPI `apache-tvm-ffi`) and its torch, or None."""
    out = _run(python, "-c", _PYTHON_PROBE)
    if out is None:
        return None, None
    info = json.loads(out)
    include = info["include"] if info["include"] and os.path.isdir(info["include"]) else None
    py = {
        "executable": os.path.abspath(python),
        "version": info["version"],
        "include": include,
        # The installation (a venv) and the one it was made from: interpreter, standard
        # library and site-packages, which a build reads (sandbox_paths binds them).
        "prefixes": sorted(
            {os.path.realpath(info["prefix"]), os.path.realpath(info["base_prefix"])}
        ),
    }
    torch = None
    if info["torch_dir"] and os.path.isdir(os.path.join(info["torch_dir"], "include")):
        torch = {"dir": os.path.realpath(info["torch_dir"]), "version": info["torch_version"]}
    py["tvmFfi"] = None
    tvm = info.get("tvm_ffi_dir")
    if tvm and all(os.path.isdir(os.path.join(tvm, d)) for d in ("include", "lib")):
        py["tvmFfi"] = {"dir": os.path.realpath(tvm), "version": info.get("tvm_ffi_version")}
    return py, torch


def _newest_versions(library: str | None, family: str) -> str | None:
    """The newest `<family>_<version>` a shared library's bytes name (its version nodes)."""
    if not library or not os.path.isfile(library):
        return None
    with open(library, "rb") as handle:
        data = handle.read()
    found = [
        tuple(int(p) for p in m.group(1).split(b"."))
        for m in re.finditer(rb"\b" + family.encode() + rb"_([0-9]+(?:\.[0-9]+)*)\b", data)
    ]
    return ".".join(map(str, max(found))) if found else None


def _detect_abi(path: str) -> dict[str, NixValue] | None:
    """The newest symbol versions the host C and C++ runtimes define: the binary-compatibility
    policy programs built with the host compilers can meet (the stand-in toolchain's)."""
    cxx = _which("g++", path)
    if cxx is None:
        return None
    libs = {
        name: (_run(cxx, f"-print-file-name={name}") or "").strip()
        for name in ("libstdc++.so.6", "libgcc_s.so.1", "libc.so.6")
    }
    libs = {k: os.path.realpath(v) if v and os.path.isabs(v) else None for k, v in libs.items()}
    glibc = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else None
    versions = {
        "GLIBC": glibc.split()[-1] if glibc else None,
        "GLIBCXX": _newest_versions(libs["libstdc++.so.6"], "GLIBCXX"),
        "CXXABI": _newest_versions(libs["libstdc++.so.6"], "CXXABI"),
        "GCC": _newest_versions(libs["libgcc_s.so.1"], "GCC"),
    }
    return {k: v for k, v in versions.items() if v is not None} or None


def cuda_wheel_cache() -> Path:
    """Where scripts/cuda_wheels.py unpacks NVIDIA's and torch's wheels (same rule)."""
    if os.environ.get("NIXGEN_CUDA_CACHE"):
        return Path(os.environ["NIXGEN_CUDA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base) / "nixgen" / "cuda"


def detect_cuda_wheels() -> dict[str, NixValue] | None:
    """The unpacked wheel trees of scripts/cuda_wheels.py's manifest: per CUDA set ("13.0",
    "13.2", "12.6") and "torch", each component's `prefix` (its files: bin/, include/, lib/,
    nvvm/) and `version`. Components whose tree is gone are left out; None without a
    manifest (the CUDA stand-ins then fail to build, naming the script)."""
    manifest = cuda_wheel_cache() / "manifest.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found: dict[str, NixValue] = {}
    for set_name, components in sorted(data.items()):
        kept: dict[str, NixValue] = {
            name: {"prefix": str(c["prefix"]), "version": str(c["version"])}
            for name, c in sorted(components.items())
            if os.path.isdir(str(c.get("prefix", ""))) and c.get("version")
        }
        if kept:
            found[set_name] = kept
    return found or None


def detect(python: str = sys.executable) -> dict[str, NixValue]:
    """Detect the host tools; missing ones are None."""
    dirs = _search_path()
    path = os.pathsep.join(dirs)
    shell = _which("bash", path)
    shell = os.path.realpath(shell) if shell else None
    py, torch = _detect_python(python)
    icpx = _which("icpx", path)
    return {
        "shell": shell,
        "path": dirs,
        "cc": _detect_cc(path),
        "rust": _detect_rust(path),
        "cuda": _detect_cuda(path),
        "hip": _detect_hip(path),
        "cudaWheels": detect_cuda_wheels(),
        "python": py,
        "torch": torch,
        "icpx": os.path.realpath(icpx) if icpx else None,
        "abi": _detect_abi(path),
    }


#: The host directories every stand-in build reads: the shell (`shell`), the C/C++ compilers
#: with their headers and libraries (`cc`, `abi`), Debian's hipcc and ROCm (`hip`) and the host
#: tools found on `path` (tests/nixpkgs/tools.nix), all under /usr, /bin and /lib; and
#: /etc/alternatives, through which Debian's `cc`, `c++` and `ld` resolve.
SYSTEM_DIRS = ("/bin", "/lib", "/lib64", "/usr", "/etc/alternatives")


def system_dirs() -> list[str]:
    """`SYSTEM_DIRS` as this machine needs them bound. On a merged-/usr system `/bin` is a
    link to `usr/bin`: Nix recreates it as that link, and a Nix whose own `sandbox-paths` holds
    `/bin/sh=…` (Debian 13's, the upstream installer's) then fails every build ("creating
    directory '…/root/bin'"). There the shell alone is bound, at `/bin/sh` (ninja and make run
    their commands with it; everything else is reached through `/usr`)."""
    if os.path.islink("/bin"):
        return ["/bin/sh" if d == "/bin" else d for d in SYSTEM_DIRS]
    return list(SYSTEM_DIRS)


def sandbox_paths(facts: dict[str, NixValue]) -> list[str]:
    """The host paths the stand-ins' builds read, for Nix's `extra-sandbox-paths`: the one
    place each is declared, next to the detection that found it. Only what ``facts``
    (``detect``) names and this machine has; a directory inside another listed one is left
    out (its parent's bind already holds it). A build that reads any other host path fails
    in the sandbox, as it would on a machine without that path."""

    def get(value: NixValue, *keys: str) -> NixValue:
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    found: list[NixValue] = [*system_dirs()]
    # tests/nixpkgs/rust.nix: the rustup toolchain (RUSTUP_HOME) or a bare one (its sysroot).
    found += [get(facts, "rust", "rustupHome"), get(facts, "rust", "cargoHome")]
    toolchain_bin = get(facts, "rust", "toolchainBin")
    if isinstance(toolchain_bin, str):
        found.append(os.path.dirname(toolchain_bin))
    # The host CUDA prefix (`cuda`), and NVIDIA's and torch's unpacked wheels
    # (tests/nixpkgs/cuda-wheels.nix, python.nix's CUDA torch, the toolchain's CUTLASS).
    found.append(get(facts, "cuda", "prefix"))
    wheels = facts.get("cudaWheels")
    if isinstance(wheels, dict):
        found += [
            get(c, "prefix") for s in wheels.values() if isinstance(s, dict) for c in s.values()
        ]
    # tests/kernel-builder/nix-builder/rocm-hip.nix: hipcc, the HIP headers and runtime.
    hipcc = get(facts, "hip", "hipcc")
    found += [get(facts, "hip", "include"), get(facts, "hip", "lib")]
    if isinstance(hipcc, str):
        found.append(os.path.dirname(hipcc))
    # tests/nixpkgs/python.nix: the interpreter's installations, include directory, torch and
    # tvm_ffi (realpaths: a venv's packages may live elsewhere).
    prefixes = get(facts, "python", "prefixes")
    found += prefixes if isinstance(prefixes, list) else []
    found += [
        get(facts, "python", "include"),
        get(facts, "python", "tvmFfi", "dir"),
        get(facts, "torch", "dir"),
    ]
    executable = get(facts, "python", "executable")
    if isinstance(executable, str):
        found.append(os.path.dirname(os.path.dirname(executable)))
    dirs = [d for d in dict.fromkeys(f for f in found if isinstance(f, str)) if os.path.exists(d)]
    return [d for d in dirs if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in dirs)]


def _nix_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("${", "\\${") + '"'


def _nix_name(key: str) -> str:
    """An attribute name: bare when it is a Nix identifier, else quoted ("13.0")."""
    return key if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_'-]*", key) else _nix_string(key)


def to_nix(value: NixValue, indent: int = 0) -> str:
    """Render a JSON-like value as a Nix expression."""
    pad = "  " * (indent + 1)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _nix_string(value)
    if isinstance(value, list):
        if not value:
            return "[ ]"
        inner = "\n".join(pad + to_nix(v, indent + 1) for v in value)
        return "[\n" + inner + "\n" + "  " * indent + "]"
    if isinstance(value, dict):
        if not value:
            return "{ }"
        inner = "\n".join(
            f"{pad}{_nix_name(k)} = {to_nix(v, indent + 1)};" for k, v in sorted(value.items())
        )
        return "{\n" + inner + "\n" + "  " * indent + "}"
    raise TypeError(f"cannot render {type(value).__name__} as Nix")


def write_host(stub_dir: str | os.PathLike[str], python: str = sys.executable) -> Path:
    """Detect the host tools and write ``<stub_dir>/host.nix``; return its path."""
    target = Path(stub_dir) / "host.nix"
    text = (
        "# Written by tests/nixpkgs/make_host.py for this machine. Do not commit.\n"
        + to_nix(detect(python))
        + "\n"
    )
    tmp = target.with_suffix(".nix.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stub_dir", nargs="?", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--python", default=sys.executable, help="interpreter to take torch from")
    args = parser.parse_args(argv)
    print(write_host(args.stub_dir, python=args.python))
    return 0


if __name__ == "__main__":
    sys.exit(main())
