"""Sub-tables that several older editions share (so an edition's module only defines
what is its own, and reading one edition never builds another's classes)."""

from __future__ import annotations

import attrs

from nixgen.reading import model


@attrs.frozen(kw_only=True)
class Hub:
    repo_id: model.RepoId | None = None
    branch: model.HubBranch | None = None


@attrs.frozen(kw_only=True)
class Torch:
    """``[torch]`` of editions 2 and 3 (editions 4 and 5 add keys)."""

    src: list[model.RelPath] = attrs.field(factory=list)
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None
    minver: model.Version | None = None
    maxver: model.Version | None = None


@attrs.frozen(kw_only=True)
class CudaGeneral:
    minver: model.Version | None = None
    maxver: model.Version | None = None
    python_depends: list[model.CudaPythonDep] | None = None


@attrs.frozen(kw_only=True)
class XpuGeneral:
    python_depends: list[model.XpuPythonDep] | None = None


@attrs.frozen(kw_only=True)
class NeuronGeneral:
    python_depends: list[model.NeuronPythonDep] | None = None


@attrs.frozen(kw_only=True)
class TorchNoarch:
    """``[torch-noarch]``: its keys are spelt with `_` in every edition the format has."""

    pyext: list[model.Extension] | None = None
    cuda_capabilities: list[model.CudaCapability] | None = attrs.field(
        default=None, metadata={"key": "cuda_capabilities"}
    )
    rocm_archs: list[model.RocmArch] | None = attrs.field(
        default=None, metadata={"key": "rocm_archs"}
    )


@attrs.frozen(kw_only=True)
class TvmFfi:
    """``[tvm-ffi]`` of editions 4 and 5: `src` is required."""

    src: list[model.RelPath]
    include: list[model.RelDir] | None = None
    pyext: list[model.Extension] | None = None
    cxx_flags: list[model.Flag] | None = None
