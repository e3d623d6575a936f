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

from nixgen.building import nixcommand, process
from nixgen.core import bounded, tables
from nixgen.core.errors import NixgenError
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


class EvaluationError(NixgenError):
    """`nix eval` of a variant printed something other than what `APPLY` makes (a
    hand-written flake, or a derivation path that is none)."""


def _shape_error(where: str, what: str) -> EvaluationError:
    return EvaluationError(
        f"`nix eval` of the variant gave {where} {what}: is flake.nix hand-written? "
        "(`nixgen render` writes it)"
    )


def parse(text: str) -> dict[str, Any]:
    """The evaluation `APPLY` printed (JSON, bounded), its shape checked: kernels by name
    and the binding (or null), each part with its objects, compiler wrapper (`cc`, a store
    path; `ccDrv`, a derivation) and inputs (`path`, `drv`). Raises `EvaluationError`."""
    try:
        parts = bounded.json_loads(text)
    except ValueError as exc:
        raise _shape_error("no JSON", f"({exc})") from None
    if not isinstance(parts, dict) or not isinstance(parts.get("kernels"), dict):
        raise _shape_error("no", "set of kernels")
    named = [(f"kernels.{k}", v) for k, v in parts["kernels"].items()]
    if parts.get("binding") is not None:
        named.append(("binding", parts["binding"]))
    for where, part in named:
        if not isinstance(part, dict):
            raise _shape_error(where, "as no set")
        objects, inputs = part.get("objects"), part.get("inputs")
        if not isinstance(objects, list) or not all(
            isinstance(o, dict)
            and all(isinstance(o.get(k), str) for k in ("source", "object", "command"))
            for o in objects
        ):
            raise _shape_error(f"{where}.objects", "as no list of {source, object, command}")
        _store(part.get("cc"), f"{where}.cc", drv=False)
        _store(part.get("ccDrv"), f"{where}.ccDrv", drv=True)
        if not isinstance(inputs, list) or not all(isinstance(i, dict) for i in inputs):
            raise _shape_error(f"{where}.inputs", "as no list of sets")
        for n, item in enumerate(inputs):
            _store(item.get("path"), f"{where}.inputs[{n}].path", drv=False)
            _store(item.get("drv"), f"{where}.inputs[{n}].drv", drv=True)
    return parts


def _not_a_store_path(value: object, where: str, exc: Exception) -> EvaluationError:
    shown = json.dumps(value)[:200]
    return EvaluationError(
        f"`nix eval` of the variant gave {where} = {shown}, {exc}: nothing was built; is "
        "flake.nix hand-written? (`nixgen render` writes it)"
    )


def _store(value: object, where: str, *, drv: bool) -> None:
    """Check `value` with `nixcommand`'s one rule of a store path (or `EvaluationError`)."""
    if drv:
        _derivation(value, where)
        return
    try:
        nixcommand.store_path(value)
    except nixcommand.NotAStorePath as exc:
        raise _not_a_store_path(value, where, exc) from None


def _derivation(value: object, where: str) -> nixcommand.Derivation:
    try:
        return nixcommand.derivation(value)
    except nixcommand.NotAStorePath as exc:
        raise _not_a_store_path(value, where, exc) from None


def drv_paths(parts: dict[str, Any]) -> list[nixcommand.Derivation]:
    """The derivations to realise so that every path the commands name exists: each
    part's compiler wrapper and build inputs, first-seen order, each once, each checked
    (`nixcommand.derivation`: a value the flake evaluates to is data, never an option)."""
    out: dict[str, nixcommand.Derivation] = {}
    for part in _parts(parts):
        for value, where in [
            (part["ccDrv"], "ccDrv"),
            *((item["drv"], "inputs.drv") for item in part["inputs"]),
        ]:
            drv = _derivation(value, where)
            out.setdefault(drv.path, drv)
    return list(out.values())


def _parts(parts: dict[str, Any]) -> list[dict[str, Any]]:
    kernels = [parts["kernels"][name] for name in sorted(parts["kernels"])]
    return [*kernels, *([parts["binding"]] if parts["binding"] is not None else [])]


#: `nix-instantiate --eval` of the Nix library's compiler families (`compile.families`
#: reads none of the library's arguments).
FAMILIES = "(import (/. + {path}) {{ lib = null; cuda = null; sources = null; }}).families"


def gcc_only_flags() -> frozenset[str]:
    """The flags nixgen gives GCC that it gives no clang driver (`compile.families`)."""
    path = os.path.join(tables.PACKAGE, "nixlib", "compile.nix")
    expr = FAMILIES.format(path=nixlit.string(path))
    done = process.run(nixcommand.instantiate_eval(expr), cwd=None, timeout=120)
    if done.code != 0:
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
    try:
        split = shlex.split(text)
    except ValueError as exc:  # unbalanced quotes: no command the plan writes
        raise EvaluationError(f"a planned compile command is no shell text ({exc})") from None
    args = [arg for arg in split if arg not in drop]
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
