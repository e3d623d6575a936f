"""Stage 3 — upgrade: each edition's raw classes, converted straight into the model.

Every edition is structured once, against its own schema (``nixgen.reading.schema``), and
its raw classes become `model.Build` here, typed (as the `kernels` client converts each of
its editions into its `Build`). Edition 6 is the model itself. Every lossy or guessed step
adds a warning; what the format refuses and nixgen still reads (editions 1–3, a name with
`_`, the two dialects) adds a warning that says so (`Problem.beyond_format`), naming
``nixgen migrate``, which writes the file in the field's edition 6.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from nixgen.core import tables
from nixgen.core.errors import PathPart, Problem, one_of, warning
from nixgen.reading import model
from nixgen.reading.schema.common import DSL_LANGUAGES, Raw

#: `general.license` for files from editions that had none (an SPDX "no assertion").
UNKNOWN_LICENSE = "NOASSERTION"
ALL_LEGACY_BACKENDS = ["cpu", "cuda", "metal", "rocm", "xpu"]
V1_LANGUAGES = {"cuda": "cpp-cuda", "metal": "cpp-metal", "cuda-hipify": "cpp-cuda"}
#: What converts a file the format refuses into the field's edition 6.
MIGRATE = "`nixgen migrate`"


class UpgradeConflict(Exception):
    """Problems that stop an old file's conversion (located by the caller)."""

    def __init__(self, problems: list[Problem]):
        super().__init__(problems[0].message)
        self.problems = problems

    @property
    def problem(self) -> Problem:
        return self.problems[0]


def beyond(message: str, path: tuple[PathPart, ...]) -> Problem:
    """A warning about what the format refuses and nixgen reads (`Problem.beyond_format`)."""
    return attrs.evolve(warning(message, path), beyond_format=True)


def _make(cls: Any, **values: Any) -> Any:
    """`cls(**values)` without the values that are None (their fields keep their default)."""
    return cls(**{k: v for k, v in values.items() if v is not None})


def _fields(obj: Any, *skip: str) -> dict[str, Any]:
    """The fields of an attrs instance by name, but `skip`."""
    return {f.name: getattr(obj, f.name) for f in attrs.fields(type(obj)) if f.name not in skip}


# ---------------------------------------------------------------------------- general


def _hub(hub: Any) -> model.Hub | None:
    return None if hub is None else model.Hub(repo_id=hub.repo_id, branch=hub.branch)


def _section(cls: Any, raw: Any) -> Any:
    """A `[general.<backend>]` table of an older edition as the model's `cls`."""
    if raw is None:
        return None
    return _make(
        cls, **{k: (list(v) if isinstance(v, list) else v) for k, v in _fields(raw).items()}
    )


def _legacy_name(name: str, warnings: list[Problem]) -> model.ProjectName:
    new = name.replace("_", "-")
    if new != name:
        warnings.append(
            beyond(
                f"name `{name}` becomes `{new}` (the Python module name "
                f"`{new.replace('-', '_')}` is unchanged): the `kernels` tools refuse `_` in "
                f"the name; {MIGRATE} renames it",
                ("general", "name"),
            )
        )
    return model.ProjectName(new)


def _missing_license(license: str | None, warnings: list[Problem]) -> str:
    if license is not None:
        return license
    warnings.append(
        warning(
            f"`license` is missing; using `{UNKNOWN_LICENSE}` (set the real license, "
            "e.g. `Apache-2.0`, or pass `nixgen migrate --license`)",
            ("general", "license"),
        )
    )
    return UNKNOWN_LICENSE


def _general(g: Any, name: str, backends: list[str], **values: Any) -> model.General:
    """The model's [general] from an older edition's: the keys both have, and `values`."""
    shared = _fields(g)
    general = {
        "name": name,
        "version": shared.get("version"),
        "edition": 6,
        "license": shared.get("license"),
        "backends": backends,
        "upstream": shared.get("upstream"),
        "source": shared.get("source"),
        "python_depends": list(shared.get("python_depends") or []) or None,
        "kernel_depends": list(shared.get("kernel_depends") or []) or None,
        "hub": _hub(shared.get("hub")),
        "cuda": _section(model.CudaGeneral, shared.get("cuda")),
        "xpu": _section(model.XpuGeneral, shared.get("xpu")),
        "neuron": _section(model.NeuronGeneral, shared.get("neuron")),
        "tpu": _section(model.TpuGeneral, shared.get("tpu")),
    }
    return _make(model.General, **(general | values))  # type: ignore[no-any-return]


# ------------------------------------------------------------------------- frameworks


def _framework(table: str | None, raw: Any) -> model.Framework | None:
    """An older edition's framework table as the model's (`None`: none)."""
    if table is None:
        return None
    body = _fields(raw, "universal")
    if table == "tvm-ffi" and body.get("src") == []:
        del body["src"]  # a Rust crate is the binding
    return _make(model.FRAMEWORKS[table], **body)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- kernels


def _cpp_kernel(
    name: str, language: str, body: dict[str, Any], problems: list[Problem], renames: bool
) -> model.Kernel:
    """A C++ kernel of `language` from an older edition's table `body` (its fields but the
    tag): `depends` renamed (editions 1–3) and held to what nixgen builds the language
    against."""
    names = tables.legacy_dependency_renames() if renames else {}
    depends = [names.get(d, d) for d in body.pop("depends", [])]
    allowed = tables.cpp_dependencies(language)
    for index, dep in enumerate(depends):
        if dep not in allowed:
            problems.append(
                attrs.evolve(
                    Problem(
                        message=f"unknown value `{dep}`; expected one of {one_of(allowed)} "
                        f"(nixgen builds `{language}` kernels against {one_of(allowed)} only)",
                        path=("kernel", name, "depends", index),
                    ),
                    beyond_format=True,
                )
            )
    cls = model.KERNEL_CLASSES[language]
    return _make(cls, language=language, depends=depends, **body)  # type: ignore[no-any-return]


def _tagged(name: str, kernel: Any, problems: list[Problem], renames: bool) -> model.Kernel:
    """A kernel tagged by `backend` (editions 2–5)."""
    body = _fields(kernel, "backend")
    return _cpp_kernel(name, f"cpp-{kernel.backend}", body, problems, renames)


def _kernels(
    raw: Raw, convert: Callable[[str, Any, list[Problem]], model.Kernel]
) -> dict[model.KernelName, model.Kernel]:
    problems: list[Problem] = []
    kernels = {name: convert(name, k, problems) for name, k in sorted(raw.kernels.items())}
    if problems:
        raise UpgradeConflict(problems)
    return kernels


def _backends_of(kernels: dict[model.KernelName, model.Kernel]) -> list[str]:
    return sorted({model.backend_of(k) for k in kernels.values()})


#: How the warnings that `nixgen migrate` answers begin (`is_migration_notice`).
_NOTICES = ("this file is ", "edition ")


def is_migration_notice(problem: Problem) -> bool:
    """Whether `problem` is the warning that a file is an old edition or a dialect, which
    ``nixgen migrate`` answers by converting it (`_old_edition`, `dialect_warning`)."""
    return problem.beyond_format and problem.message.startswith(_NOTICES)


def _old_edition(edition: int) -> Problem:
    return beyond(
        f"edition {edition} is no longer read by the `kernels` tools (they send it to "
        f"`kernel-builder update-build`); nixgen reads it, and {MIGRATE} writes it as "
        "edition 6",
        ("general",),
    )


# ---------------------------------------------------------------------------- editions


def from_v1(raw: Raw, warnings: list[Problem]) -> model.Build:
    warnings.append(_old_edition(1))
    problems: list[Problem] = []
    kernels: dict[model.KernelName, model.Kernel] = {}
    for name, kernel in sorted(raw.kernels.items()):
        body = _fields(kernel, "language")
        language = kernel.language
        rocm_archs = body.pop("rocm_archs", None)
        if language == "cuda-hipify":
            rocm_name = model.KernelName(f"{name}_rocm")
            # The file's own kernel that the twin's library name collides with (`relu-rocm`
            # and `relu_rocm` both build `relu_rocm`), named as the file spells it.
            clash = next((k for k in raw.kernels if _library(k) == _library(rocm_name)), None)
            if clash is not None:
                raise _conflict(name, rocm_name, clash)
            rocm = {k: v for k, v in body.items() if k != "cuda_capabilities"}
            kernels[rocm_name] = _cpp_kernel(
                name, "cpp-rocm", {**rocm, "rocm_archs": rocm_archs}, problems, True
            )
        elif rocm_archs is not None:
            warnings.append(
                warning(
                    "`rocm-archs` only applies to `cuda-hipify` kernels in edition 1; dropped",
                    ("kernel", name, "rocm-archs"),
                )
            )
        if language == "metal":
            body.pop("cuda_capabilities", None)
        kernels[name] = _cpp_kernel(name, V1_LANGUAGES[language], body, problems, True)
    if problems:
        raise UpgradeConflict(problems)
    universal = bool(raw.framework is not None and raw.framework.universal)
    general = _make(
        model.General,
        name=_legacy_name(raw.general.name, warnings),
        version=1,
        edition=6,
        license=_missing_license(None, warnings),
        backends=ALL_LEGACY_BACKENDS if universal else _backends_of(kernels),
    )
    framework = _framework(raw.framework_table, raw.framework)
    if universal and not kernels and isinstance(framework, model.Torch) and not framework.src:
        framework = model.TorchNoarch(pyext=framework.pyext)
    return model.Build(general=general, framework=framework, kernels=kernels)


def from_v2(raw: Raw, warnings: list[Problem]) -> model.Build:
    warnings.append(_old_edition(2))
    kernels = _kernels(raw, lambda name, k, problems: _tagged(name, k, problems, True))
    g = raw.general
    python = list(g.python_depends or [])
    cuda_python = []
    if "nvidia-cutlass-dsl" in python:
        cuda_python = ["nvidia-cutlass-dsl"]
        python.remove("nvidia-cutlass-dsl")
    cuda = None
    if g.cuda_minver is not None or g.cuda_maxver is not None or cuda_python:
        cuda = _make(
            model.CudaGeneral,
            minver=g.cuda_minver,
            maxver=g.cuda_maxver,
            python_depends=cuda_python or None,
        )
    general = _make(
        model.General,
        name=_legacy_name(g.name, warnings),
        version=1,
        edition=6,
        license=_missing_license(None, warnings),
        backends=ALL_LEGACY_BACKENDS if g.universal else _backends_of(kernels),
        python_depends=python or None,
        hub=_hub(g.hub),
        cuda=cuda,
    )
    framework = _framework(raw.framework_table, raw.framework)
    if g.universal and not kernels and isinstance(framework, model.Torch) and not framework.src:
        framework = model.TorchNoarch(pyext=framework.pyext)
    if framework is None and (g.universal or not kernels):
        framework = model.TorchNoarch()
    return model.Build(general=general, framework=framework, kernels=kernels)


def from_v3_to_v5(raw: Raw, warnings: list[Problem], edition: int) -> model.Build:
    if edition == 3:
        warnings.append(_old_edition(3))
    kernels = _kernels(raw, lambda name, k, problems: _tagged(name, k, problems, edition <= 3))
    g = raw.general
    name = _legacy_name(g.name, warnings) if edition <= 4 else g.name
    version = g.version
    if version is None:
        version = 1
        warnings.append(warning("`version` is missing; using 1", ("general", "version")))
    general = _general(
        g,
        name,
        list(g.backends),
        **(
            {"version": version, "license": _missing_license(g.license, warnings)}
            if edition <= 3
            else {}
        ),
    )
    framework = _framework(raw.framework_table, raw.framework)
    if framework is None and not kernels:
        framework = model.TorchNoarch()
    return model.Build(general=general, framework=framework, kernels=kernels)


# ---------------------------------------------------------------- the anchor's Rust branch


#: Keys of the branch's Rust kernels that an edition-5 C++ kernel cannot have.
RUST_KEYS = ("features", "lib_name", "device_manifest", "ptx_dir")


def _key(field: str) -> str:
    return field.replace("_", "-")


def _crate_manifest(src: list[str]) -> str | None:
    """The crate's `Cargo.toml` by the convention of nixgen's earlier edition 6 and the
    branch: the one listed in `src`, or (a workspace) the one that is not next to the
    lock file."""
    manifests = [p for p in src if p.rsplit("/", 1)[-1] == "Cargo.toml"]
    locks = [p for p in src if p.rsplit("/", 1)[-1] == "Cargo.lock"]
    if len(manifests) > 1 and len(locks) == 1:
        lock_dir = locks[0].rpartition("/")[0]
        members = [m for m in manifests if m.rpartition("/")[0] != lock_dir]
        if len(members) == 1:
            return members[0]
    if len(manifests) == 2 and not locks:
        # a workspace's manifest and its member's, below it (the lock is found later)
        top, member = sorted(manifests, key=lambda m: m.count("/"))
        root = top.rpartition("/")[0]
        if not root or member.startswith(root + "/"):
            return member
    return manifests[0] if len(manifests) == 1 else None


def _rust_kernel(
    name: str, language: str, body: dict[str, Any], problems: list[Problem]
) -> model.Kernel | None:
    """A Rust kernel of an earlier dialect (`body`: its fields by model name): the crate's
    manifest found by convention in `src`, `lib-name` kept as the library name."""
    src = list(body["src"])
    # the device crate of a cuda-oxide kernel is not the kernel's crate
    device = body.get("device_manifest")
    manifest = _crate_manifest([p for p in src if p != device])
    if manifest is None:
        manifests = [p for p in src if p.rsplit("/", 1)[-1] == "Cargo.toml"]
        problems.append(
            Problem(
                message=f"a {language} kernel lists its crate's `Cargo.toml` in `src`"
                + (
                    f" (one, or a workspace's and one member's next to `Cargo.lock`; found "
                    f"{one_of(manifests)})"
                    if manifests
                    else ""
                ),
                path=("kernel", name, "src"),
            )
        )
        return None
    values = {
        "cargo_manifest": manifest,
        "src": src,
        "features": list(body.get("features") or []) or None,
        "library": body.get("lib_name"),
    }
    if language == "rust-cuda-oxide":
        values |= {
            "cuda_capabilities": body.get("cuda_capabilities"),
            "device_manifest": body.get("device_manifest"),
            "ptx_dir": body.get("ptx_dir"),
        }
    return _make(model.KERNEL_CLASSES[language], language=language, **values)  # type: ignore[no-any-return]


def _branch_kernel(name: str, kernel: Any, problems: list[Problem]) -> model.Kernel | None:
    """An edition-5 kernel of the anchor's support-rust-kernels branch (with `dsl`):
    `dsl = "rust"` on a CPU kernel is `rust-cpu`, `dsl = "cuda-oxide"` is
    `rust-cuda-oxide`; impossible combinations name the language to use."""
    body = _fields(kernel, "backend")
    dsl = body.pop("dsl", None) or "cpp"
    backend = kernel.backend
    path: tuple[PathPart, ...] = ("kernel", name)
    rust_keys = [k for k in RUST_KEYS if body.get(k) is not None]
    if dsl == "cpp":
        for key in rust_keys:
            cuda = key in ("device_manifest", "ptx_dir")
            problems.append(
                Problem(
                    message=f"`{_key(key)}` is for Rust kernels: add `dsl = "
                    f'"{"cuda-oxide" if cuda else "rust"}"` (in edition 6: `language = '
                    f'"{"rust-cuda-oxide" if cuda else "rust-cpu"}"`) or remove it',
                    path=(*path, _key(key)),
                    at_key=True,
                )
            )
        for key in RUST_KEYS:
            body.pop(key, None)
        return _cpp_kernel(name, f"cpp-{backend}", body, problems, False)
    # a C++ kernel's keys (compiler flags, includes) have no meaning for a crate
    cpp_keys = [
        k
        for k, v in body.items()
        if k not in (*RUST_KEYS, "src", "depends", "cuda_capabilities") and v not in (None, [])
    ]
    for key in cpp_keys:
        language = DSL_LANGUAGES.get(dsl, "rust-cpu")
        problems.append(
            Problem(
                message=f'`{_key(key)}` is for C++ kernels: a `dsl = "{dsl}"` kernel '
                f'(`language = "{language}"` in edition 6) builds its crate with Cargo; remove '
                "it (the crate's own settings go in its Cargo.toml)",
                path=(*path, _key(key)),
                at_key=True,
            )
        )
    if cpp_keys:
        return None
    if dsl == "rust" and backend != "cpu":
        problems.append(
            Problem(
                message=f'`dsl = "rust"` on a `{backend}` kernel: edition 6 builds Rust for the '
                'CPU (`language = "rust-cpu"`, `backend = "cpu"` here) and Rust CUDA kernels '
                'through cuda-oxide (`language = "rust-cuda-oxide"`, `dsl = "cuda-oxide"` '
                "here, with a `device-manifest`)",
                path=(*path, "dsl"),
            )
        )
        return None
    if dsl == "cuda-oxide" and backend != "cuda":
        problems.append(
            Problem(
                message='`dsl = "cuda-oxide"` requires `backend = "cuda"` (in edition 6: '
                '`language = "rust-cuda-oxide"`); for Rust on the CPU use `dsl = "rust"` '
                '(`language = "rust-cpu"`)',
                path=(*path, "dsl"),
            )
        )
        return None
    if dsl == "rust":
        for key in ("device_manifest", "ptx_dir"):
            if body.get(key) is not None:
                problems.append(
                    Problem(
                        message=f'`{_key(key)}` requires `dsl = "cuda-oxide"` on a CUDA kernel '
                        '(in edition 6: `language = "rust-cuda-oxide"`); a `dsl = "rust"` '
                        'kernel (`language = "rust-cpu"`) has no device crate',
                        path=(*path, _key(key)),
                        at_key=True,
                    )
                )
        if any(body.get(k) is not None for k in ("device_manifest", "ptx_dir")):
            return None
    elif body.get("device_manifest") is None:
        problems.append(
            Problem(
                message='`dsl = "cuda-oxide"` requires `device-manifest`: the device crate\'s '
                "`Cargo.toml`",
                path=path,
            )
        )
        return None
    return _rust_kernel(name, DSL_LANGUAGES[dsl], body, problems)


def from_v5_branch(raw: Raw, warnings: list[Problem]) -> model.Build:
    """An edition-5 file of the anchor's support-rust-kernels branch."""
    problems: list[Problem] = []
    kernels: dict[model.KernelName, model.Kernel] = {}
    for name, kernel in sorted(raw.kernels.items()):
        converted = _branch_kernel(name, kernel, problems)
        if converted is not None:
            kernels[name] = converted
    if problems:
        raise UpgradeConflict(problems)
    g = raw.general
    general = _general(g, g.name, list(g.backends))
    framework = _framework(raw.framework_table, raw.framework)
    if framework is None and not kernels:
        framework = model.TorchNoarch()
    return model.Build(general=general, framework=framework, kernels=kernels)


# ----------------------------------------------------------- nixgen's earlier edition 6


def from_nixgen6(raw: Raw, warnings: list[Problem]) -> model.Build:
    """A file of nixgen's earlier edition 6 (`nixgen.reading.schema.nixgen6`)."""
    problems: list[Problem] = []
    tvm_ffi = raw.framework_table == "tvm-ffi"
    kernels: dict[model.KernelName, model.Kernel] = {}
    for name, kernel in sorted(raw.kernels.items()):
        body = _fields(kernel, "language")
        if kernel.language in tables.CPP_LANGUAGES:
            depends = list(body.pop("depends"))
            if "tvm-ffi" in depends and not tvm_ffi:
                problems.append(
                    Problem(
                        message="`tvm-ffi` applies to kernels of a [tvm-ffi] project (this "
                        f"project is `{raw.framework_table or 'torch-noarch'}`); remove it or "
                        "bind the kernels with [tvm-ffi]",
                        path=("kernel", name, "depends", depends.index("tvm-ffi")),
                    )
                )
            # a [tvm-ffi] project's kernels see the tvm-ffi headers whether listed or not
            body["depends"] = [d for d in depends if d != "tvm-ffi"]
            kernels[name] = _cpp_kernel(name, kernel.language, body, problems, False)
            continue
        body.pop("depends", None)
        language = "rust-cuda-oxide" if kernel.language == "rust-cuda" else kernel.language
        converted = _rust_kernel(name, language, body, problems)
        if converted is not None:
            kernels[name] = converted
    if problems:
        raise UpgradeConflict(problems)
    g = raw.general
    general = _general(g, g.name, list(g.backends))
    framework = (
        None
        if raw.framework_table is None
        else model.TorchNoarch(**{k: v for k, v in _fields(raw.framework).items() if v is not None})
        if raw.framework_table == "torch-noarch"
        else raw.framework
    )
    if framework is None and not kernels:
        framework = model.TorchNoarch()
    # Rust crates linked into a [torch] extension: the format cannot say them.
    extra = frozenset(
        name for name, k in kernels.items() if isinstance(k, model.RUST_KERNELS) and not tvm_ffi
    )
    return model.Build(general=general, framework=framework, kernels=kernels, nixgen_kernels=extra)


def dialect_warning(edition: int, differences: list[Problem]) -> Problem:
    """The one warning of a file in a dialect (`schema.DIALECT_EDITIONS`), located at its
    first difference from the format (`differences`: the format's problems with it)."""
    first = differences[0] if differences else Problem(message="", path=("general", "edition"))
    keys = list(dict.fromkeys(p.key for p in differences if p.path))
    shown = one_of(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
    what = (
        "nixgen's earlier edition 6"
        if edition == 6
        else "edition 5 of the anchor's unreleased support-rust-kernels branch"
    )
    return attrs.evolve(
        beyond(
            f"this file is {what}, which the `kernels` tools refuse (here: {shown}); nixgen "
            f"reads it, and {MIGRATE} rewrites it as the field's edition 6"
            + (" with nixgen.toml" if edition == 6 else ""),
            first.path,
        ),
        at_key=first.at_key,
    )


# ------------------------------------------------------------------------------ entry


def to_model(raw: Raw, edition: int, *, dialect: bool = False) -> tuple[model.Build, list[Problem]]:
    """The model of `raw` (read as `edition`, or its dialect), and the conversion's warnings.

    Raises `UpgradeConflict` when the file cannot be converted."""
    warnings: list[Problem] = []
    if edition == 6 and not dialect:
        build = model.Build(general=raw.general, framework=raw.framework, kernels=dict(raw.kernels))
    elif edition == 6:
        build = from_nixgen6(raw, warnings)
    elif edition == 5 and dialect:
        build = from_v5_branch(raw, warnings)
    elif edition == 1:
        build = from_v1(raw, warnings)
    elif edition == 2:
        build = from_v2(raw, warnings)
    else:
        build = from_v3_to_v5(raw, warnings, edition)
    return build, warnings


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
        [
            Problem(
                message=f"`cuda-hipify` kernel `{name}` expands into a ROCm kernel "
                f"`{rocm_name}`, but {same}; rename one of them",
                path=("kernel", name, "language"),
            )
        ]
    )
