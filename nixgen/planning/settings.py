"""What a project's kernel-builder flake used to add to the toolchain's defaults, as typed
nixgen.toml settings: the ``[backend.<name>]`` tables and ``[test]``::

    [backend.cpu]                  # the CPU builds (AVX2/AVX-512 kernels) ...
    systems = ["x86_64-linux"]     # ... only for these systems
    [backend.xpu]
    torch-minver = "2.9"           # XPU builds only with torch 2.9 or newer
    [backend.cuda.ptxas]           # CUDA 12.6 builds assemble with the ptxas, nvlink and
    "12.6" = "12.8"                #   NVVM of CUDA 12.8
    [test]
    python-depends = ["einops"]    # nixpkgs `python3.pkgs` names in the test environment

kernel-builder's flakes say these through `genKernelFlakeOutputs` arguments
(`torchVersions`, a function over the build-configuration table that drops systems or
rows or sets a row's `ptxasVersion`; `pythonCheckInputs`, the test shell's and the CI
tests' extra Python packages). build.toml's format (edition 6, the `kernels` client's
`kernels-common/src/config/v6.rs`) has no key for any of them, so they live here, beside
nixgen's other options (`nixgen.app.config`), and `nixgen migrate` carries them over from a
recognised flake (`nixgen.app.flakesettings`).

The plan applies them (`nixgen.planning.variants`): a backend's systems and torch bounds
leave out variants (so no package, shell, check or CI row exists for them), and a CUDA
variant carries the toolkit whose ptxas it assembles with (`Variant.ptxas`, which the Nix
library turns into an override of the variant's `cudaPackages.cuda_nvcc`, as the
toolchain's `mk-build-set.nix` does for `ptxasVersion`). The test inputs reach every
shell's and check's Python environment (`nix/project.nix`, `pythonEnv`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from nixgen.core import tables
from nixgen.core.errors import PathPart, Problem, did_you_mean, error, one_of, unknown_key

#: The tables this module reads (nixgen.toml's top-level keys).
KEYS = ("backend", "test")
BACKEND_KEYS = ("ptxas", "systems", "torch-maxver", "torch-minver")
TEST_KEYS = ("python-depends",)

_MAJOR_MINOR = re.compile(r"[0-9]{1,4}\.[0-9]{1,4}")
#: A nixpkgs attribute name of `python3.pkgs` (what `pythonCheckInputs` lists).
_PYTHON_ATTR = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,99}")


@attrs.frozen(kw_only=True)
class BackendSettings:
    """One ``[backend.<name>]`` table (None or empty: not set)."""

    #: The systems the backend builds for (a subset of the build table's).
    systems: tuple[str, ...] | None = None
    #: Torch bounds (inclusive) for this backend's variants, beside build.toml's `[torch]`.
    torch_minver: str | None = None
    torch_maxver: str | None = None
    #: CUDA toolkit version → the CUDA version whose ptxas, nvlink and NVVM it uses.
    ptxas: Mapping[str, str] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.systems is not None:
            out["systems"] = list(self.systems)
        if self.torch_minver is not None:
            out["torch-minver"] = self.torch_minver
        if self.torch_maxver is not None:
            out["torch-maxver"] = self.torch_maxver
        if self.ptxas:
            out["ptxas"] = dict(self.ptxas)
        return out


_NONE = BackendSettings()


@attrs.frozen(kw_only=True)
class ProjectSettings:
    """nixgen.toml's ``[backend.<name>]`` tables and ``[test]`` (empty: the defaults)."""

    backends: Mapping[str, BackendSettings] = attrs.field(factory=dict)
    #: ``[test] python-depends``: `python3.pkgs` names added to the shells and checks.
    test_python: tuple[str, ...] = ()

    def backend(self, name: str) -> BackendSettings:
        return self.backends.get(name, _NONE)

    def allows(self, backend: str, torch: str | None, system: str) -> bool:
        """Whether a build of `backend` with `torch` (None: pure Python) on `system` is
        kept."""
        own = self.backend(backend)
        if own.systems is not None and system not in own.systems:
            return False
        if torch is None:
            return True
        key = tables.version_key(torch)
        if own.torch_minver is not None and key < tables.version_key(own.torch_minver):
            return False
        return own.torch_maxver is None or key <= tables.version_key(own.torch_maxver)

    def ptxas_for(self, backend: str, version: str | None) -> str | None:
        """The CUDA version whose ptxas a `backend` variant of toolkit `version` uses, when
        it is pinned to another one; else None."""
        if backend != "cuda" or version is None:
            return None
        return self.backend("cuda").ptxas.get(version)

    @property
    def empty(self) -> bool:
        return not self.to_json()

    def to_json(self) -> dict[str, Any]:
        """What nixgen.toml sets, in its own key names."""
        out: dict[str, Any] = {}
        backends = {name: s.to_json() for name, s in sorted(self.backends.items())}
        backends = {name: table for name, table in backends.items() if table}
        if backends:
            out["backend"] = backends
        if self.test_python:
            out["test"] = {"python-depends": list(self.test_python)}
        return out


NO_SETTINGS = ProjectSettings()


def build_systems() -> tuple[str, ...]:
    """The systems of the build table, in its order of first appearance."""
    seen: dict[str, None] = {}
    for row in tables.build_configs():
        for system in row["systems"]:
            seen.setdefault(system, None)
    return tuple(seen)


def cuda_versions() -> tuple[str, ...]:
    """The CUDA toolkit versions of the build table, oldest first."""
    found = {row["cudaVersion"] for row in tables.build_configs() if row.get("cudaVersion")}
    return tuple(sorted(found, key=tables.version_key))


# ---------------------------------------------------------------------- parsing


def parse(data: Mapping[str, Any]) -> tuple[ProjectSettings, list[Problem]]:
    """The settings of nixgen.toml's ``backend`` and ``test`` tables in `data` (the whole
    file), and every problem with them, located by key path. A bad value is left unset."""
    problems: list[Problem] = []
    backends: dict[str, BackendSettings] = {}
    table = data.get("backend", {})
    if not isinstance(table, Mapping):
        problems.append(error("expected a table (`[backend.<name>]`)", ("backend",)))
        table = {}
    for name, value in table.items():
        path: tuple[PathPart, ...] = ("backend", name)
        if name not in tables.BUILD_SET_BACKENDS:
            problems.append(
                attrs.evolve(
                    error(
                        f"unknown backend `{name}`{did_you_mean(name, tables.BUILD_SET_BACKENDS)}"
                        f"; expected one with a build set: {one_of(tables.BUILD_SET_BACKENDS)}",
                        path,
                    ),
                    at_key=True,
                )
            )
            continue
        backends[name] = _backend(name, value, path, problems)
    test_python: tuple[str, ...] = ()
    test = data.get("test", {})
    if not isinstance(test, Mapping):
        problems.append(error("expected a table (`[test]`)", ("test",)))
    else:
        _unknown_keys(test, TEST_KEYS, ("test",), problems)
        test_python = _python_names(test.get("python-depends"), problems)
    chosen = ProjectSettings(backends=dict(sorted(backends.items())), test_python=test_python)
    return chosen, problems


def _backend(
    name: str, data: Any, path: tuple[PathPart, ...], problems: list[Problem]
) -> BackendSettings:
    if not isinstance(data, Mapping):
        problems.append(error(f"expected a table with {one_of(BACKEND_KEYS)}", path))
        return _NONE
    _unknown_keys(data, BACKEND_KEYS, path, problems)
    systems = _systems(data.get("systems"), (*path, "systems"), problems)
    low = _version(data.get("torch-minver"), (*path, "torch-minver"), problems, "a torch")
    high = _version(data.get("torch-maxver"), (*path, "torch-maxver"), problems, "a torch")
    if low and high and tables.version_key(low) > tables.version_key(high):
        problems.append(
            error(f"torch-minver {low} is newer than torch-maxver {high}", (*path, "torch-minver"))
        )
        low = high = None
    ptxas: dict[str, str] = {}
    if "ptxas" in data:
        if name != "cuda":
            problems.append(
                attrs.evolve(
                    error(
                        "`ptxas` pins a CUDA tool: it belongs in [backend.cuda]",
                        (*path, "ptxas"),
                    ),
                    at_key=True,
                )
            )
        else:
            ptxas = _ptxas(data["ptxas"], (*path, "ptxas"), problems)
    return BackendSettings(systems=systems, torch_minver=low, torch_maxver=high, ptxas=ptxas)


def _systems(
    value: Any, path: Sequence[PathPart], problems: list[Problem]
) -> tuple[str, ...] | None:
    if value is None:
        return None
    known = build_systems()
    if not isinstance(value, list) or not value:
        problems.append(
            error(
                f"expected a non-empty list of systems ({one_of(known)}); to build a backend for "
                "no system, remove it from general.backends in build.toml",
                path,
            )
        )
        return None
    before = len(problems)
    for index, system in enumerate(value):
        if not isinstance(system, str) or system not in known:
            shown = system if isinstance(system, str) else repr(system)
            suffix = did_you_mean(system, known) if isinstance(system, str) else ""
            problems.append(
                error(f"unknown system `{shown}`{suffix}; expected {one_of(known)}", (*path, index))
            )
        elif system in value[:index]:
            problems.append(error(f"`{system}` is listed twice", (*path, index)))
    if len(problems) != before:
        return None
    return tuple(s for s in known if s in value)


def _version(
    value: Any, path: Sequence[PathPart], problems: list[Problem], what: str
) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _MAJOR_MINOR.fullmatch(value):
        problems.append(error(f'expected {what} version as MAJOR.MINOR (`"2.9"`)', path))
        return None
    return value


def _ptxas(value: Any, path: tuple[PathPart, ...], problems: list[Problem]) -> dict[str, str]:
    known = cuda_versions()
    if not isinstance(value, Mapping):
        problems.append(
            error(
                "expected a table from CUDA toolkit to the CUDA version whose ptxas it uses "
                '(`{ "12.6" = "12.8" }`)',
                path,
            )
        )
        return {}
    out: dict[str, str] = {}
    for toolkit, pinned in value.items():
        where = (*path, toolkit)
        if toolkit not in known:
            problems.append(
                attrs.evolve(
                    error(
                        f"CUDA {toolkit} is not a toolkit of the build table"
                        f"{did_you_mean(toolkit, known)}; expected {one_of(known)}",
                        where,
                    ),
                    at_key=True,
                )
            )
            continue
        found = _version(pinned, where, problems, "a CUDA")
        if found is None:
            continue
        if tables.version_key(found) <= tables.version_key(toolkit):
            problems.append(
                error(
                    f"expected a CUDA version newer than {toolkit}: the pin takes ptxas from a "
                    "newer toolkit",
                    where,
                )
            )
            continue
        out[toolkit] = found
    return dict(sorted(out.items(), key=lambda item: tables.version_key(item[0])))


def _python_names(value: Any, problems: list[Problem]) -> tuple[str, ...]:
    path: tuple[PathPart, ...] = ("test", "python-depends")
    if value is None:
        return ()
    if not isinstance(value, list):
        problems.append(error('expected a list of python3.pkgs names (`["einops"]`)', path))
        return ()
    before = len(problems)
    for index, name in enumerate(value):
        if not isinstance(name, str) or not _PYTHON_ATTR.fullmatch(name):
            problems.append(
                error(
                    "expected a nixpkgs python3.pkgs attribute name (letters, digits, `_`, `-`)",
                    (*path, index),
                )
            )
        elif name in value[:index]:
            problems.append(error(f"`{name}` is listed twice", (*path, index)))
    return tuple(value) if len(problems) == before else ()


def _unknown_keys(
    data: Mapping[str, Any],
    allowed: Sequence[str],
    path: Sequence[PathPart],
    problems: list[Problem],
) -> None:
    for key in data:
        if key not in allowed:
            problems.append(unknown_key(key, allowed, path))
