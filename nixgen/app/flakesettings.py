"""What a kernel-builder flake's `genKernelFlakeOutputs` arguments say, as nixgen.toml
settings (`nixgen.planning.settings`), or what nixgen could not carry over.

The arguments are read with `nixgen.core.nixexpr` (a closed subset of Nix, evaluated in
Python) and judged by what they do, not by how they are spelled:

- ``torchVersions`` is called with a probe table: every backend of the build table, each
  of its toolkit versions, every torch from 2.0 to 2.30, on every system. What it keeps
  (rows, and systems of each row) and what it sets (``ptxasVersion``) must be exactly what
  ``[backend.<name>]`` ``systems``, ``torch-minver``/``torch-maxver`` and
  ``[backend.cuda.ptxas]`` describe, for each backend build.toml lists; anything else (a
  changed key, a filter on a toolkit version, a pin that varies with torch) is named as
  not carried.
- ``pythonCheckInputs`` is called with a package set whose every attribute is a name: it
  must give a list of them, which become ``[test] python-depends``.
- ``doGetKernelCheck``: ``true`` says nothing; ``false`` switches off kernel-builder's
  get-kernel import check, which nixgen's builds do not run (the flake's checks and
  ``nixgen shell --test`` import the kernel instead), so nothing is lost.
- Anything else (``pythonNativeCheckInputs`` with packages, ``rev``, an argument
  nixgen does not know) is not carried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from nixgen.core import nixexpr, paths, tables
from nixgen.planning import settings as settings_mod

#: What `torchVersions` may change in a row besides dropping it or some of its systems.
_ROW_CHANGES = ("systems", "ptxasVersion")
#: The probe's torch versions: 2.0 … 2.30 and the build table's.
_PROBE_TORCH = tuple(f"2.{minor}" for minor in range(31))
#: A row's backend marker, as the toolchain reads it (nix-builder/lib/torch-version-utils.nix).
_MARKERS = {
    "cpu": ("cpu", True),
    "cuda": ("cudaVersion", None),
    "metal": ("metal", True),
    "rocm": ("rocmVersion", None),
    "tpu": ("tpu", True),
    "xpu": ("xpuVersion", None),
}


@attrs.frozen(kw_only=True)
class Carried:
    """What the flake's arguments come to: the nixgen.toml tables that say the same
    (`settings`, in nixgen.toml's key names), what each argument was carried as
    (`notes`), and what nixgen cannot say (`lost`: one line per argument)."""

    settings: dict[str, Any] = attrs.field(factory=dict)
    notes: list[str] = attrs.field(factory=list)
    lost: list[str] = attrs.field(factory=list)

    def summary(self) -> str:
        """The settings as nixgen.toml key paths and values, on one line."""
        return "; ".join(_flat(self.settings, ()))


def _flat(table: Mapping[str, Any], prefix: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for key, value in table.items():
        if isinstance(value, Mapping) and key != "ptxas":
            out += _flat(value, (*prefix, key))
        else:
            shown = (
                "{ " + ", ".join(f'"{k}" = "{v}"' for k, v in value.items()) + " }"
                if isinstance(value, Mapping)
                else _toml(value)
            )
            out.append(f"[{'.'.join(prefix)}] {key} = {shown}")
    return out


def _toml(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else str(value).lower()


def carry(args: Mapping[str, nixexpr.Expr], backends: Sequence[str]) -> Carried:
    """The nixgen.toml settings the arguments `args` (name → expression, as the flake
    gives them to `genKernelFlakeOutputs`) come to, for a project of `backends`."""
    out = Carried()
    for name, expr in args.items():
        try:
            reader = _READERS.get(name)
            if reader is None:
                out.lost.append(f"`{name}`: not an argument nixgen knows how to carry over")
                continue
            reader(expr, backends, out)
        except nixexpr.Unsupported as exc:
            out.lost.append(f"`{name}`: nixgen cannot read it ({exc})")
    if out.settings:
        _, problems = settings_mod.parse(out.settings)
        if problems:  # the derivation made what the reader refuses: say so, carry nothing
            out.lost.append(
                "the settings read from the flake are not valid nixgen.toml: "
                + "; ".join(p.message for p in problems)
            )
            out.settings.clear()
    return out


def _function(expr: nixexpr.Expr, what: str) -> tuple[Any, nixexpr.Evaluator]:
    evaluator = nixexpr.Evaluator()
    value = nixexpr.evaluate(expr, evaluator)
    if not isinstance(value, (nixexpr.Lambda, nixexpr.Builtin)):
        raise nixexpr.Unsupported(f"expected {what}")
    return value, evaluator


# ---------------------------------------------------------------------- torchVersions


def probe_rows() -> list[dict[str, Any]]:
    """The table `torchVersions` is called with: one row per backend, toolkit version and
    torch, each on every system of the build table."""
    systems = list(settings_mod.build_systems())
    versions: dict[str, set[str]] = {}
    torches = set(_PROBE_TORCH)
    for row in tables.build_configs():
        torches.add(row["torchVersion"])
        for backend, (key, flag) in _MARKERS.items():
            if flag is None and row.get(key):
                versions.setdefault(backend, set()).add(row[key])
    rows = []
    for backend, (key, flag) in _MARKERS.items():
        marks = (
            [flag]
            if flag is not None
            else sorted(versions.get(backend, ()), key=tables.version_key)
        )
        for mark in marks:
            for torch in sorted(torches, key=tables.version_key):
                rows.append(
                    {
                        "torchVersion": torch,
                        key: mark,
                        "systems": systems,
                        "bundleBuild": True,
                    }
                )
    return rows


def backend_of(row: Mapping[str, Any]) -> str:
    """The backend of a row, by the toolchain's rule (`backend` in
    nix-builder/lib/torch-version-utils.nix)."""
    for backend, (key, flag) in _MARKERS.items():
        if (row.get(key) is True) if flag is not None else (key in row):
            return backend
    return "?"


def _identity(row: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, repr(v)) for k, v in row.items() if k not in _ROW_CHANGES))


def _torch_versions(expr: nixexpr.Expr, backends: Sequence[str], out: Carried) -> None:
    function, evaluator = _function(expr, "a function of the build-configuration table")
    probes = probe_rows()
    result = nixexpr.apply(function, probes, evaluator)
    if not isinstance(result, list) or not all(isinstance(r, dict) for r in result):
        raise nixexpr.Unsupported("it does not give a list of build configurations")
    index = {_identity(row): i for i, row in enumerate(probes)}
    kept: dict[int, set[str]] = {}
    ptxas: dict[int, Any] = {}
    for row in result:
        at = index.get(_identity(row))
        if at is None or at in kept:
            changed = sorted(set(row) - set(_ROW_CHANGES) - {"torchVersion", "bundleBuild"})
            out.lost.append(
                "`torchVersions`: it changes or adds build configurations (not only their "
                f"`systems` or `ptxasVersion`: {', '.join(changed) or 'a row'}), which "
                "nixgen.toml cannot say"
            )
            return
        systems = row.get("systems")
        if not isinstance(systems, list) or not set(systems) <= set(probes[at]["systems"]):
            out.lost.append("`torchVersions`: it sets `systems` to more than a row's own systems")
            return
        kept[at] = set(systems)
        if "ptxasVersion" in row:
            ptxas[at] = row["ptxasVersion"]
    tables_out: dict[str, dict[str, Any]] = {}
    lost_before = len(out.lost)
    for backend in backends:
        if backend not in _MARKERS:
            continue
        table = _backend_settings(backend, probes, kept, ptxas, out)
        if table:
            tables_out[backend] = table
    if len(out.lost) > lost_before:
        return
    if tables_out:
        out.settings.setdefault("backend", {}).update(tables_out)
        out.notes.append("`torchVersions` → " + "; ".join(_flat({"backend": tables_out}, ())))
    else:
        out.notes.append(
            "`torchVersions`: changes nothing for the backends build.toml lists, so nothing "
            "to carry"
        )


def _backend_settings(
    backend: str,
    probes: list[dict[str, Any]],
    kept: Mapping[int, set[str]],
    ptxas: Mapping[int, Any],
    out: Carried,
) -> dict[str, Any]:
    rows = [i for i, row in enumerate(probes) if backend_of(row) == backend]
    systems = set().union(*(kept.get(i, set()) for i in rows))
    if not systems:
        out.lost.append(
            f"`torchVersions`: it builds nothing for backend `{backend}` (remove it from "
            "general.backends in build.toml instead)"
        )
        return {}
    torches = sorted(
        {probes[i]["torchVersion"] for i in rows if kept.get(i)}, key=tables.version_key
    )
    every = sorted({probes[i]["torchVersion"] for i in rows}, key=tables.version_key)
    low, high = torches[0], torches[-1]
    for i in rows:
        torch = probes[i]["torchVersion"]
        inside = tables.version_key(low) <= tables.version_key(torch) <= tables.version_key(high)
        expected = (systems & set(probes[i]["systems"])) if inside else set()
        if expected != kept.get(i, set()):
            where = ", ".join(
                f"{k} {v}" for k, v in probes[i].items() if k not in ("systems", "bundleBuild")
            )
            out.lost.append(
                f"`torchVersions`: what it keeps of backend `{backend}` is not one list of "
                f"systems and one torch range (for {where} it keeps "
                f"{', '.join(sorted(kept.get(i, set()))) or 'nothing'}), which nixgen.toml "
                "cannot say"
            )
            return {}
    table: dict[str, Any] = {}
    all_systems = settings_mod.build_systems()
    if systems != set(all_systems):
        table["systems"] = [s for s in all_systems if s in systems]
    if low != every[0]:
        table["torch-minver"] = low
    if high != every[-1]:
        table["torch-maxver"] = high
    if backend == "cuda":
        pins = _ptxas_pins(rows, probes, ptxas, kept, out)
        if pins is None:
            return {}
        if pins:
            table["ptxas"] = pins
    return table


def _ptxas_pins(
    rows: list[int],
    probes: list[dict[str, Any]],
    ptxas: Mapping[int, Any],
    kept: Mapping[int, set[str]],
    out: Carried,
) -> dict[str, str] | None:
    """The ptxas pin of each CUDA version of the build table, when every kept row of that
    version has the same one; None (and a lost line) otherwise."""
    known = set(settings_mod.cuda_versions())
    pins: dict[str, str] = {}
    for version in sorted({probes[i]["cudaVersion"] for i in rows}, key=tables.version_key):
        values = [
            ptxas.get(i, version)
            for i in rows
            if probes[i]["cudaVersion"] == version and kept.get(i)
        ]
        if len({repr(v) for v in values}) > 1:
            out.lost.append(
                f"`torchVersions`: the `ptxasVersion` of CUDA {version} varies with torch or "
                "system, which nixgen.toml cannot say"
            )
            return None
        if not values:
            continue
        pinned = values[0]
        if pinned == version:
            continue
        if not isinstance(pinned, str):
            out.lost.append(f"`torchVersions`: `ptxasVersion` of CUDA {version} is not a string")
            return None
        if version in known:
            pins[version] = pinned
    return pins


# ---------------------------------------------------------------------- the others


def _python_check_inputs(expr: nixexpr.Expr, backends: Sequence[str], out: Carried) -> None:
    names = _package_names(expr, "pythonCheckInputs", out)
    if names is None:
        return
    if names:
        out.settings.setdefault("test", {})["python-depends"] = names
        out.notes.append(f"`pythonCheckInputs` → [test] python-depends = {_toml(names)}")


def _python_native_check_inputs(expr: nixexpr.Expr, backends: Sequence[str], out: Carried) -> None:
    names = _package_names(expr, "pythonNativeCheckInputs", out)
    if names:
        out.lost.append(
            f"`pythonNativeCheckInputs` ({', '.join(names)}): nixgen's test environment "
            "has no separate build-platform tools"
        )


def _package_names(expr: nixexpr.Expr, name: str, out: Carried) -> list[str] | None:
    function, evaluator = _function(expr, "a function of the Python package set")
    result = nixexpr.apply(function, nixexpr.PackageSet(), evaluator)
    if not isinstance(result, list) or not all(isinstance(p, nixexpr.Opaque) for p in result):
        out.lost.append(f"`{name}`: it does not give a list of packages of the set it is given")
        return None
    names = []
    for package in result:
        if package.name not in names:
            names.append(package.name)
    return names


def _get_kernel_check(expr: nixexpr.Expr, backends: Sequence[str], out: Carried) -> None:
    value = nixexpr.evaluate(expr)
    if not isinstance(value, bool):
        raise nixexpr.Unsupported("expected `true` or `false`")
    if not value:
        out.notes.append(
            "`doGetKernelCheck = false`: nixgen's builds run no get-kernel import check "
            "(its checks and `nixgen shell --test` import the kernel), so nothing to carry"
        )


_READERS = {
    "torchVersions": _torch_versions,
    "pythonCheckInputs": _python_check_inputs,
    "pythonNativeCheckInputs": _python_native_check_inputs,
    "doGetKernelCheck": _get_kernel_check,
}


# ---------------------------------------------------------------------- nixgen.toml


def conflicts(carried: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """The keys the `carried` settings set to another value than nixgen.toml's `current`
    ones (both in nixgen.toml's key names), as key paths."""
    found: list[str] = []

    def walk(new: Mapping[str, Any], old: Any, path: tuple[str, ...]) -> None:
        for key, value in new.items():
            here = (*path, key)
            before = old.get(key) if isinstance(old, Mapping) else None
            if isinstance(value, Mapping) and key != "ptxas":
                walk(value, before, here)
            elif before is not None and before != value:
                found.append(".".join(here))

    walk(carried, current, ())
    return found


def in_effect(carried: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether nixgen.toml's `current` settings already say all of `carried`."""

    def covered(new: Mapping[str, Any], old: Any) -> bool:
        for key, value in new.items():
            before = old.get(key) if isinstance(old, Mapping) else None
            if isinstance(value, Mapping) and key != "ptxas":
                if not covered(value, before):
                    return False
            elif before != value:
                return False
        return True

    return covered(carried, current)


def merged(carried: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """nixgen.toml's whole document `current` with the `carried` tables added."""
    out = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in current.items()}
    for key, value in carried.items():
        if isinstance(value, Mapping) and key != "ptxas":
            inner = out.get(key)
            out[key] = merged(value, inner if isinstance(inner, Mapping) else {})
        else:
            out[key] = value
    return out


def nixgen_toml(root: Path, carried: Carried) -> tuple[bytes | None, bytes]:
    """nixgen.toml of the project at `root` before (None: absent) and after the `carried`
    settings are added, its comments and layout kept (`nixgen.core.tomledit`). Raises
    `ProblemError` for a nixgen.toml that is not valid, `OutputError` when it already
    sets a carried key to another value (nothing is written either way)."""
    import tomli

    from nixgen.app import config
    from nixgen.core import tomledit
    from nixgen.core.errors import OutputError

    config.read(root)  # a file with problems is reported, located, before any change
    path = root / config.FILE
    found = paths.read_file(path, limit=MAX_TOML)
    if isinstance(found, paths.Blocked):
        raise OutputError(f"{path}: {found}; nothing was migrated")
    old = found
    text = old.decode("utf-8") if old is not None else _HEADER
    current = tomli.loads(text)
    clash = conflicts(carried.settings, current)
    if clash:
        raise OutputError(
            f"{path}: sets {', '.join(f'`{k}`' for k in clash)} to another value than "
            f"flake.nix says ({carried.summary()}); make them agree, then migrate again "
            "(nothing was migrated)"
        )
    try:
        new = tomledit.rewrite(text, merged(carried.settings, current))
    except tomledit.ReadBackError:
        raise OutputError(
            f"internal error: {path} with the flake's settings does not read back; nothing "
            "was migrated (this is a bug in nixgen, please report it)"
        ) from None
    return old, new.encode("utf-8")


#: The largest nixgen.toml read here (real ones are a few lines).
MAX_TOML = 1024 * 1024

_HEADER = (
    "# nixgen's own options for this project (see nixgen's README, \"nixgen.toml\");\n"
    "# every verb reads them, and an option on the command line wins.\n"
    "# The [backend.*] and [test] tables say what kernel-builder's flake.nix said (moved\n"
    "# here by `nixgen migrate`).\n"
)


def diff(old: bytes | None, new: bytes) -> str:
    """A unified diff of nixgen.toml from `old` (None: absent) to `new`."""
    import difflib

    before = old.decode("utf-8").splitlines(keepends=True) if old is not None else []
    lines = difflib.unified_diff(
        before,
        new.decode("utf-8").splitlines(keepends=True),
        fromfile="a/nixgen.toml" if old is not None else "/dev/null",
        tofile="b/nixgen.toml",
    )
    return "".join(line if line.endswith("\n") else f"{line}\n" for line in lines)
