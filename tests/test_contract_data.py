"""`nixgen.core.contract`: a class's fields are written by the library's names, an optional
one is left out when unset, a skipped one never, and a flattened plan's fields beside its
parent's; a kernel's plan is its kernel file's data as it is."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from nixgen.checking import project
from nixgen.core import contract
from nixgen.planning import plan
from nixgen.rendering import render

from .conftest import EXAMPLES


@attrs.frozen(kw_only=True)
class Inner:
    crate: str = attrs.field(metadata=contract.nix("crateDir"))
    extra: str | None = attrs.field(default=None, metadata=contract.nix(omit=True))


@attrs.frozen(kw_only=True)
class Outer:
    name: str
    index: str = attrs.field(metadata=contract.nix(skip=True))
    flags: tuple[str, ...] | None = attrs.field(
        default=None, metadata=contract.nix("cxxFlags", omit=True)
    )
    inner: Inner | None = attrs.field(default=None, metadata=contract.nix(flatten=True))


@attrs.frozen(kw_only=True)
class Clash:
    crateDir: str  # the library's name, as a field
    inner: Inner = attrs.field(metadata=contract.nix(flatten=True))


def test_names_omission_skip_and_flatten() -> None:
    assert contract.unstructure(Outer(name="k", index="cpu")) == {"name": "k"}
    assert contract.unstructure(
        Outer(name="k", index="cpu", flags=("-O2",), inner=Inner(crate="c"))
    ) == {"name": "k", "cxxFlags": ["-O2"], "crateDir": "c"}


def test_a_flattened_field_may_not_repeat_its_parents() -> None:
    with pytest.raises(ValueError, match=r"Clash.inner repeats \['crateDir'\]"):
        contract.unstructure(Clash(crateDir="a", inner=Inner(crate="b")))


@pytest.mark.parametrize(
    ("example", "kernel", "present", "absent"),
    [
        ("relu-cpu", "relu_cpu", {"includes", "cxxFlags", "depends", "linkFlags"}, {"library"}),
        ("relu-rust", "relu_rs", {"library", "manifest", "lockfile", "copyLock"}, {"cxxFlags"}),
    ],
)
def test_a_kernels_plan_is_its_files_data(
    example: str, kernel: str, present: set[str], absent: set[str]
) -> None:
    """The C++ fields for a C++ kernel, the crate's for a Rust one; never the project
    index's `backend` and CUDA bound."""
    build = project.read(Path(EXAMPLES / example)).build
    planned = {k.name: k for k in plan.make(build).kernels}[kernel]
    data = render.kernel_data(planned)
    assert present <= data.keys() and not absent & data.keys(), sorted(data)
    assert {"name", "pname", "version", "language", "sources"} <= data.keys()
    assert not {"backend", "cudaMinver", "rust", "objects"} & data.keys()


def test_the_extension_and_the_python_package_are_planned_with_their_names() -> None:
    """`extension.nix` and `noarch.nix` carry the plan's `ExtensionPlan` and `NoarchPlan` as
    they are, and `nixgen build`'s labels name the same derivations."""
    planned = plan.make(project.read(Path(EXAMPLES / "relu-cpu")).build)
    assert planned.extension is not None
    extension = contract.unstructure(planned.extension)
    assert extension["pname"] == "relu-cpu-torch-ext"
    assert extension["bindingPname"] == "relu-cpu-torch-binding"
    assert {"framework", "moduleDir", "pyext", "bindingSources", "cxxFlags", "includes"} <= set(
        extension
    )
    noarch = contract.unstructure(planned.noarch)
    assert noarch["language"] == "noarch" and noarch["pname"] == "relu-cpu-noarch"
    version = planned.noarch.version
    assert planned.labels[f"relu-cpu-torch-ext-{version}"] == "extension"
    assert planned.labels[f"relu-cpu-torch-binding-{version}"] == "extension binding"
    assert planned.labels[f"relu-cpu-noarch-{version}"] == "python package"
    rendered = render.render(planned)
    assert b'bindingPname = "relu-cpu-torch-binding";' in rendered.tree["extension.nix"]
