"""``nixgen compdb``: a compilation database (``compile_commands.json``) from a variant's plan.

Every compile command nixgen builds is data in the variant's derivations: each C++
kernel's and the binding's ``passthru.nixgen.plan.objects`` (``{source, object, command}``,
the commands ninja runs in the build; `nix/compile.nix`). One ``nix eval`` of the variant
reads them, with the toolchain's compiler wrapper (``stdenv.cc``) and each derivation's
``buildInputs``; those inputs (torch, Python, the toolchain, the C++ libraries; never the
kernels) are then realised with ``nix build --no-link``, so every store path the commands
name exists: built or substituted, as for ``nixgen shell``.

A command is the build's shell text with the build environment filled in: ``$CXX`` and
``$CC`` are the wrapper's ``bin/c++`` and ``bin/cc`` (every nixpkgs cc-wrapper has both),
``$NIX_BUILD_TOP`` is the project, and each build input's ``include/`` directory is added
as ``-isystem``, as the cc-wrapper's setup hook does inside a build (nixpkgs
``pkgs/build-support/cc-wrapper/setup-hook.sh``: ``ccWrapper_addCVars``). The system
headers are the wrapper's own: clangd reads them with ``--query-driver='/nix/store/**'``.
The database is for clang's tools, so an object compiled by GCC (the plan's ``compiler``)
leaves out the flags of nixgen's GCC family that its clang family has not
(``-fno-gnu-unique``: clang rejects it); the families are the Nix library's
``compile.families``, read from nixgen's own copy of the library (`gcc_only_flags`).
Rust kernels have no compile commands (rust-analyzer reads their ``Cargo.toml``).
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

from nixgen.core import tables
from nixgen.rendering import nixlit

#: `nix eval --apply` on a variant's derivation: the plans, the compiler wrapper and the
#: build inputs of its C++ kernels and of its binding (Rust kernels and a binding without
#: C++ sources have no plan objects).
APPLY = """variant:
let
  inputs = drv: map (i: { path = i.outPath; drv = i.drvPath; })
    (builtins.filter (i: builtins.isAttrs i && i ? drvPath) (drv.buildInputs or [ ]));
  part = drv: {
    objects = (drv.passthru.nixgen.plan or { }).objects or [ ];
    cc = drv.stdenv.cc.outPath;
    ccDrv = drv.stdenv.cc.drvPath;
    inputs = inputs drv;
  };
  binding = variant.passthru.nixgen.binding;
in {
  kernels = builtins.mapAttrs (name: part) variant.passthru.nixgen.kernels;
  binding = if binding == null then null else part binding;
}"""

#: The shell text of nvcc's host compiler in a CUDA command (`compile.cppCuda`).
_NVCC_HOST = '"$(command -v "$CXX")"'


def drv_paths(parts: dict[str, Any]) -> list[str]:
    """The derivations to realise so that every path the commands name exists: each
    part's compiler wrapper and build inputs, first-seen order, each once."""
    out: dict[str, None] = {}
    for part in _parts(parts):
        out[part["ccDrv"]] = None
        for item in part["inputs"]:
            out[item["drv"]] = None
    return list(out)


def _parts(parts: dict[str, Any]) -> list[dict[str, Any]]:
    kernels = [parts["kernels"][name] for name in sorted(parts["kernels"])]
    return [*kernels, *([parts["binding"]] if parts["binding"] is not None else [])]


#: `nix-instantiate --eval` of the Nix library's compiler families (`compile.families`
#: reads none of the library's arguments).
FAMILIES = (
    "(import (/. + {path}) {{ lib = null; shell = null; cuda = null; sources = null; }}).families"
)


def gcc_only_flags() -> frozenset[str]:
    """The flags nixgen gives GCC that it gives no clang driver (`compile.families`)."""
    import subprocess

    path = os.path.join(tables.PACKAGE, "nixlib", "compile.nix")
    expr = FAMILIES.format(path=nixlit.string(path))
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--json", "--expr", expr],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise OSError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed")
    families = json.loads(done.stdout)
    gcc = {f for flags in families["gcc"].values() for f in flags}
    clang = {f for flags in families["clang"].values() for f in flags}
    return frozenset(gcc - clang)


def arguments(
    command: str, part: dict[str, Any], root: Path, drop: frozenset[str] = frozenset()
) -> list[str]:
    """The argument list of one planned compile `command`, with the build environment
    filled in (see the module's docstring), without the flags in `drop`."""
    cxx = shlex.quote(f"{part['cc']}/bin/c++")
    cc = shlex.quote(f"{part['cc']}/bin/cc")
    text = (
        command.replace(_NVCC_HOST, cxx)
        .replace("$CXX", cxx)
        .replace("$CC", cc)
        .replace("$NIX_BUILD_TOP", shlex.quote(str(root)))
    )
    args = [arg for arg in shlex.split(text) if arg not in drop]
    seen = set(args)
    extra: list[str] = []
    for item in part["inputs"]:
        include = f"{item['path']}/include"
        if include not in seen and os.path.isdir(include):
            extra += ["-isystem", include]
            seen.add(include)
    at = args.index("-c") if "-c" in args else len(args)
    return [*args[:at], *extra, *args[at:]]


def database(
    parts: dict[str, Any], root: Path, gcc_only: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The compilation database: one entry per planned object, kernels by name, then the
    binding, each in its plan's order; `gcc_only` (`gcc_only_flags`) is left out of the
    objects GCC compiles."""
    return [
        {
            "directory": str(root),
            "file": str(root / obj["source"]),
            "arguments": arguments(
                obj["command"],
                part,
                root,
                gcc_only if obj.get("compiler") == "gcc" else frozenset(),
            ),
            "output": obj["object"],
        }
        for part in _parts(parts)
        for obj in part["objects"]
    ]


def encode(entries: list[dict[str, Any]]) -> bytes:
    """The file's bytes: the same database gives the same bytes."""
    return (json.dumps(entries, indent=2, ensure_ascii=False) + "\n").encode()


def is_database(data: bytes) -> bool:
    """Whether `data` is a compilation database (a JSON list of objects, each with a
    `directory` and a `file`): what `nixgen compdb` may replace without --force."""
    from nixgen.core import bounded

    try:
        entries = bounded.json_loads(data.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        return False
    return isinstance(entries, list) and all(
        isinstance(e, dict) and isinstance(e.get("directory"), str) and "file" in e for e in entries
    )


def missing_paths(entries: list[dict[str, Any]]) -> list[str]:
    """Store paths the commands name that do not exist (inputs not realised)."""
    found: dict[str, None] = {}
    for entry in entries:
        for arg in entry["arguments"]:
            for piece in arg.split("="):
                if piece.startswith("/nix/store/"):
                    top = "/".join(piece.split("/")[:4])
                    if not os.path.exists(top):
                        found[top] = None
    return list(found)
