"""Stage 3 — upgrade: turn a document of any older edition into an edition-6 document.

The result is a plain TOML-shaped dict in edition 6 (kebab-case keys, kernels tagged by
``language``), which the edition-6 schema then structures into the model. Working at the
document level keeps one definition of "what edition 6 looks like", shared with
``nixgen migrate``. Every lossy or guessed step adds a warning.
"""

from __future__ import annotations

from typing import Any

from nixgen.core import tables
from nixgen.core.errors import Problem, warning
from nixgen.reading.convert import to_table
from nixgen.reading.model import default_library
from nixgen.reading.schema.common import DSL_LANGUAGES, Raw

#: `general.license` for files from editions that had none (an SPDX "no assertion").
UNKNOWN_LICENSE = "NOASSERTION"
ALL_LEGACY_BACKENDS = ["cpu", "cuda", "metal", "rocm", "xpu"]
V1_LANGUAGES = {"cuda": "cpp-cuda", "metal": "cpp-metal", "cuda-hipify": "cpp-cuda"}


def table(obj: Any) -> dict[str, Any]:
    """An attrs instance as a TOML table: kebab-case keys, unset (None) fields dropped."""
    out: dict[str, Any] = to_table(obj)
    return out


def _depends(depends: list[str]) -> list[str]:
    renames = tables.legacy_dependency_renames()
    return [renames.get(d, d) for d in depends]


def _tagged_kernel(kernel: Any) -> dict[str, Any]:
    body = table(kernel)
    backend = body.pop("backend")
    body["depends"] = _depends(body["depends"])
    return {"language": f"cpp-{backend}", **body}


#: Keys of the branch's Rust kernels that an edition-5 C++ kernel cannot have.
RUST_KEYS = ("features", "lib-name", "device-manifest", "ptx-dir")


def _dsl_kernel(name: str, kernel: Any) -> dict[str, Any]:
    """An edition-5 kernel of the anchor's support-rust-kernels branch (with `dsl`) in
    edition 6: `dsl = "rust"` on a CPU kernel is `rust-cpu`, `dsl = "cuda-oxide"` is
    `rust-cuda`; impossible combinations name the language to use."""
    body = _tagged_kernel(kernel)
    dsl = body.pop("dsl", "cpp")
    backend = body["language"].removeprefix("cpp-")
    path = ("kernel", name)
    if dsl == "cpp":
        for key in RUST_KEYS:
            if key in body:
                raise UpgradeConflict(
                    Problem(
                        message=f"`{key}` is for Rust kernels: add `dsl = "
                        f'"{"cuda-oxide" if key in ("device-manifest", "ptx-dir") else "rust"}"` '
                        "(in edition 6: `language = "
                        f'"{"rust-cuda" if key in ("device-manifest", "ptx-dir") else "rust-cpu"}"`'
                        ") or remove it",
                        path=(*path, key),
                        at_key=True,
                    )
                )
        return body
    if dsl == "rust" and backend != "cpu":
        raise UpgradeConflict(
            Problem(
                message=f'`dsl = "rust"` on a `{backend}` kernel: edition 6 builds Rust for the '
                'CPU (`language = "rust-cpu"`, `backend = "cpu"` here) and Rust CUDA kernels '
                'through cuda-oxide (`language = "rust-cuda"`, `dsl = "cuda-oxide"` here, '
                "with a `device-manifest`)",
                path=(*path, "dsl"),
            )
        )
    if dsl == "cuda-oxide" and backend != "cuda":
        raise UpgradeConflict(
            Problem(
                message='`dsl = "cuda-oxide"` requires `backend = "cuda"` (in edition 6: '
                '`language = "rust-cuda"`); for Rust on the CPU use `dsl = "rust"` '
                '(`language = "rust-cpu"`)',
                path=(*path, "dsl"),
            )
        )
    if dsl == "rust":
        for key in ("device-manifest", "ptx-dir"):
            if key in body:
                raise UpgradeConflict(
                    Problem(
                        message=f'`{key}` requires `dsl = "cuda-oxide"` on a CUDA kernel (in '
                        'edition 6: `language = "rust-cuda"`); a `dsl = "rust"` kernel '
                        '(`language = "rust-cpu"`) has no device crate',
                        path=(*path, key),
                        at_key=True,
                    )
                )
    elif "device-manifest" not in body:
        raise UpgradeConflict(
            Problem(
                message='`dsl = "cuda-oxide"` requires `device-manifest`: the device crate\'s '
                '`Cargo.toml` (in edition 6: `language = "rust-cuda"` with `device-manifest`)',
                path=path,
            )
        )
    body["language"] = DSL_LANGUAGES[dsl]
    if body.get("lib-name") == default_library(name):
        del body["lib-name"]
    return body


def _backends_of(kernels: dict[str, dict[str, Any]]) -> list[str]:
    return sorted({tables.LANGUAGE_BACKEND[k["language"]] for k in kernels.values()})


def _legacy_name(name: str, warnings: list[Problem]) -> str:
    new = name.replace("_", "-")
    if new != name:
        warnings.append(
            warning(
                f"name `{name}` becomes `{new}` in edition 6 (the Python module name "
                f"`{new.replace('-', '_')}` is unchanged)",
                ("general", "name"),
            )
        )
    return new


def _missing_license(general: dict[str, Any], warnings: list[Problem]) -> None:
    if general.get("license") is None:
        general["license"] = UNKNOWN_LICENSE
        warnings.append(
            warning(
                f"`license` is missing; using `{UNKNOWN_LICENSE}` (set the real license, "
                "e.g. `Apache-2.0`, or pass `nixgen migrate --license`)",
                ("general", "license"),
            )
        )


def _ordered_general(general: dict[str, Any]) -> dict[str, Any]:
    """Put the identity keys first, the way edition-6 files are written."""
    first = ["name", "version", "edition", "license", "backends"]
    return {k: general[k] for k in first if k in general} | {
        k: v for k, v in general.items() if k not in first
    }


def _framework(raw: Raw, general_universal: bool, kernels: dict[str, Any]) -> dict[str, Any]:
    if raw.framework_table is None:
        return {}
    body = table(raw.framework)
    if raw.framework_table == "torch":
        universal = body.pop("universal", False) or general_universal
        if universal and not kernels and not body.get("src"):
            noarch = {k: body[k] for k in ("pyext",) if k in body}
            return {"torch-noarch": noarch}
    if raw.framework_table == "torch-noarch":
        body = {k.replace("_", "-"): v for k, v in body.items()}
    if raw.framework_table == "tvm-ffi" and body.get("src") == []:
        del body["src"]  # a Rust crate is the binding (edition 6's default)
    return {raw.framework_table: body}


def from_v1(raw: Raw, warnings: list[Problem]) -> dict[str, Any]:
    kernels: dict[str, dict[str, Any]] = {}
    for name, kernel in sorted(raw.kernels.items()):
        body = table(kernel)
        language = body.pop("language", "cuda")
        rocm_archs = body.pop("rocm-archs", None)
        body["depends"] = _depends(body["depends"])
        if language == "cuda-hipify":
            rocm_name = f"{name}_rocm"
            # The file's own kernel that the twin's library name collides with (`relu-rocm`
            # and `relu_rocm` both build `relu_rocm`), named as the file spells it.
            clash = next((k for k in raw.kernels if _library(k) == _library(rocm_name)), None)
            if clash is not None:
                raise _conflict(name, rocm_name, clash)
            rocm = {k: v for k, v in body.items() if k != "cuda-capabilities"}
            if rocm_archs is not None:
                rocm["rocm-archs"] = rocm_archs
            kernels[rocm_name] = {"language": "cpp-rocm", **rocm}
        elif rocm_archs is not None:
            warnings.append(
                warning(
                    "`rocm-archs` only applies to `cuda-hipify` kernels in edition 1; dropped",
                    ("kernel", name, "rocm-archs"),
                )
            )
        if language == "metal":
            body.pop("cuda-capabilities", None)
        kernels[name] = {"language": V1_LANGUAGES[language], **body}
    universal = bool(raw.framework is not None and raw.framework.universal)
    general = {
        "name": _legacy_name(raw.general.name, warnings),
        "version": 1,
        "edition": 6,
        "backends": ALL_LEGACY_BACKENDS if universal else _backends_of(kernels),
    }
    _missing_license(general, warnings)
    return {
        "general": _ordered_general(general),
        **_framework(raw, False, kernels),
        "kernel": kernels,
    }


def from_v2(raw: Raw, warnings: list[Problem]) -> dict[str, Any]:
    kernels: dict[str, dict[str, Any]] = {
        name: _tagged_kernel(k) for name, k in sorted(raw.kernels.items())
    }
    g = raw.general
    general: dict[str, Any] = {
        "name": _legacy_name(g.name, warnings),
        "version": 1,
        "edition": 6,
        "backends": ALL_LEGACY_BACKENDS if g.universal else _backends_of(kernels),
    }
    _missing_license(general, warnings)
    cuda: dict[str, Any] = {}
    if g.cuda_minver is not None:
        cuda["minver"] = g.cuda_minver
    if g.cuda_maxver is not None:
        cuda["maxver"] = g.cuda_maxver
    python = list(g.python_depends or [])
    if "nvidia-cutlass-dsl" in python:
        cuda["python-depends"] = ["nvidia-cutlass-dsl"]
        python.remove("nvidia-cutlass-dsl")
    if python:
        general["python-depends"] = python
    if g.hub is not None:
        general["hub"] = table(g.hub)
    if cuda:
        general["cuda"] = cuda
    framework = _framework(raw, g.universal, kernels)
    if not framework and (g.universal or not kernels):
        framework = {"torch-noarch": {}}
    return {"general": _ordered_general(general), **framework, "kernel": kernels}


def from_v3_to_v5(raw: Raw, warnings: list[Problem], edition: int) -> dict[str, Any]:
    kernels: dict[str, dict[str, Any]]
    if edition == 5:
        kernels = {name: _dsl_kernel(name, k) for name, k in sorted(raw.kernels.items())}
    else:
        kernels = {name: _tagged_kernel(k) for name, k in sorted(raw.kernels.items())}
    general = table(raw.general)
    if edition <= 4:
        general["name"] = _legacy_name(general["name"], warnings)
    if edition <= 3:
        if "version" not in general:
            general["version"] = 1
            warnings.append(warning("`version` is missing; using 1", ("general", "version")))
        _missing_license(general, warnings)
    general["edition"] = 6
    framework = _framework(raw, False, kernels)
    if not framework and not kernels:
        framework = {"torch-noarch": {}}
    return {"general": _ordered_general(general), **framework, "kernel": kernels}


def to_edition6(raw: Raw, edition: int) -> tuple[dict[str, Any], list[Problem]]:
    """The edition-6 document for `raw` (read as `edition`), and the upgrade's warnings."""
    warnings: list[Problem] = []
    if edition == 1:
        document = from_v1(raw, warnings)
    elif edition == 2:
        document = from_v2(raw, warnings)
    elif edition in (3, 4, 5):
        document = from_v3_to_v5(raw, warnings, edition)
    else:  # pragma: no cover - edition 6 is never upgraded
        raise ValueError(f"edition {edition} needs no upgrade")
    if not document["kernel"]:
        del document["kernel"]
    return document, warnings


class UpgradeConflict(Exception):
    def __init__(self, problem: Problem):
        super().__init__(problem.message)
        self.problem = problem


def _library(name: str) -> str:
    """A kernel's library name: what two kernel names must not share."""
    return name.replace("-", "_").lower()


def _conflict(name: str, rocm_name: str, clash: str) -> UpgradeConflict:
    same = (
        "a kernel of that name already exists"
        if clash == rocm_name
        else f"kernel `{clash}` already builds that library (`-` becomes `_`)"
    )
    return UpgradeConflict(
        Problem(
            message=f"`cuda-hipify` kernel `{name}` expands into a ROCm kernel `{rocm_name}`, "
            f"but {same}; rename one of them",
            path=("kernel", name, "language"),
        )
    )
