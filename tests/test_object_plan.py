"""The per-object split is planned in Python (`KernelPlan.objects`): which kernels build
one derivation per object and each object's key. The rendered kernel file carries it
(`plannedObjects`), and the Nix library's `compile.withObjects` only reads it: a kernel file
without the keys builds in one derivation, however many sources it has.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nixgen.checking import project
from nixgen.planning import kernels as kernels_mod
from nixgen.planning import plan
from nixgen.rendering import render
from tests import nixtools
from tests.projects import write_project


def _kernels(root: Path) -> dict[str, kernels_mod.KernelPlan]:
    return {k.name: k for k in plan.make(project.read(root).build).kernels}


def test_a_kernel_at_the_threshold_is_planned_per_object_with_its_keys(tmp_path: Path) -> None:
    root = tmp_path / "p"
    names = write_project(root, sources=kernels_mod.OBJECT_THRESHOLD)
    kernels = _kernels(root)
    big = kernels["big"]
    assert big.per_object
    # Every compiled source, in build.toml's order; the header is not an object.
    assert big.objects is not None and list(big.objects) == names
    keys = [o.key for o in big.objects.values()]
    assert all(re.fullmatch("[0-9a-f]{16}", k) for k in keys)
    assert len(set(keys)) == len(names)
    # Each object's derivation is named for its kernel and its source's base name.
    assert big.objects["big/s007.cpp"].pname == "shard-big-s007.cpp"
    assert not kernels["small"].per_object
    # The kernel file passes them to the library.
    assert render.kernel_data(big)["plannedObjects"] == {
        s: {"key": o.key, "pname": o.pname} for s, o in big.objects.items()
    }
    assert "plannedObjects" not in render.kernel_data(kernels["small"])


def test_a_kernel_below_the_threshold_builds_in_one_derivation(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write_project(root, sources=kernels_mod.OBJECT_THRESHOLD - 1, small=False)
    assert _kernels(root)["big"].objects is None


def test_a_metal_kernel_with_shaders_is_never_split(tmp_path: Path) -> None:
    """Its objects include the embedded Metal library's header, which the kernel makes."""
    root = tmp_path / "p"
    (root / "m").mkdir(parents=True)
    (root / "torch-ext" / "mk").mkdir(parents=True)
    (root / "torch-ext" / "mk" / "__init__.py").write_text("")
    (root / "torch-ext" / "torch_binding.cpp").write_text("// binding\n")
    sources = [f"m/s{i:02d}.mm" for i in range(kernels_mod.OBJECT_THRESHOLD)]
    for s in [*sources, "m/k.metal"]:
        (root / s).write_text("// x\n")
    listed = ", ".join(f'"{s}"' for s in sources)
    (root / "build.toml").write_text(
        '[general]\nname = "mk"\nversion = 1\nedition = 6\nlicense = "Apache-2.0"\n'
        'backends = ["metal"]\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n\n'
        f'[kernel.m]\nlanguage = "cpp-metal"\nsrc = [{listed}]\n'
    )
    # Without shaders, a Metal kernel is split like any other.
    assert _kernels(root)["m"].per_object
    (root / "build.toml").write_text(
        (root / "build.toml").read_text().replace(f"{listed}]", f'{listed}, "m/k.metal"]')
    )
    assert _kernels(root)["m"].objects is None


@pytest.mark.nix
@pytest.mark.skipif(not nixtools.have_nix(), reason="needs Nix")
def test_the_library_splits_only_what_the_kernel_file_plans(tmp_path: Path) -> None:
    """The rendered 40-source kernel is split, keyed in the flake output `objects` as
    `nixgen matrix --shards` names them; the same kernel file without `plannedObjects` is
    built in one derivation: the library does not decide it again."""
    stub = nixtools.make_stub(tmp_path)
    root = tmp_path / "p"
    write_project(root, sources=40, small=False)
    env = nixtools.nix_env({"PYTHONPATH": str(nixtools.TESTS.parent)})
    subprocess.run(
        [sys.executable, "-m", "nixgen", "render", str(root)], env=env, check=True, timeout=120
    )
    expr = f"""
let
  p = import ./nix;
  v = builtins.head (p.variants "x86_64-linux");
  args = {{
    nixpkgs = {stub};
    kernel-builder = {nixtools.toolchain_input(stub)};
    inherit (v) system;
  }};
  big = (p.variantPackage args v).nixgen.kernels.big;
in {{
  objects = if big.nixgen.objects == null then null else builtins.length big.nixgen.objects;
  keys = builtins.attrNames (p.variantObjects args v).kernels.big or {{ }};
}}
"""
    got = nixtools.nix_eval_json(expr, cwd=root, read_write=True)
    planned = _kernels(root)["big"].objects
    assert planned is not None
    assert got == {"objects": 40, "keys": sorted(o.key for o in planned.values())}
    kernel_file = root / "nix" / "kernels" / "big.nix"
    text = kernel_file.read_text()
    stripped = re.sub(r"\n  plannedObjects = \{.*?\n  \};", "", text, flags=re.S)
    assert stripped != text
    kernel_file.write_text(stripped)
    assert nixtools.nix_eval_json(expr, cwd=root, read_write=True) == {"objects": None, "keys": []}
