"""The data contract between nixgen and its Nix library: `project.nix` carries the format
it was rendered for (`data/format.json`), and the library checks it before reading anything
else, so a project rendered by another nixgen fails with one line saying to render again
instead of a missing attribute deep in the library."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from nixgen import __version__
from nixgen.core import tables
from nixgen.planning import variants

from .conftest import EXAMPLES, copy_out
from .nixtools import nix_env, nix_eval_json
from .projects import render_into

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(
        shutil.which("nix-instantiate") is None, reason="nix-instantiate is not installed"
    ),
]

VARIANTS = "map (v: v.name) ((import ./nix).variants null)"


def _rendered(tmp_path: Path) -> Path:
    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix", "result*")
    render_into(root)
    return root


def _fails(root: Path) -> str:
    done = subprocess.run(
        ["nix-instantiate", "--eval", "--strict", "--expr", VARIANTS],
        cwd=root,
        env=nix_env(),
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    return done.stderr


def test_a_rendered_project_carries_the_librarys_format(tmp_path: Path) -> None:
    root = _rendered(tmp_path)
    text = (root / "nix" / "project.nix").read_text()
    assert f"formatVersion = {tables.FORMAT};" in text
    assert f'nixgenVersion = "{__version__}";' in text
    assert nix_eval_json(VARIANTS, cwd=root)


def test_a_project_of_another_format_fails_saying_to_render_again(tmp_path: Path) -> None:
    root = _rendered(tmp_path)
    data = root / "nix" / "project.nix"
    text = data.read_text()
    data.write_text(
        text.replace(
            f"formatVersion = {tables.FORMAT};", f"formatVersion = {tables.FORMAT + 1};"
        ).replace(f'nixgenVersion = "{__version__}";', 'nixgenVersion = "9.9.9";')
    )
    assert (
        "error: nixgen: this project's nix/project.nix was rendered by nixgen 9.9.9 for library "
        f"format {tables.FORMAT + 1}; this library reads format {tables.FORMAT}: run "
        "`nixgen render`"
    ) in _fails(root)


def test_an_old_project_nix_with_a_new_library_fails_saying_to_render_again(
    tmp_path: Path,
) -> None:
    """A project.nix written before the format existed (no `formatVersion`), read by this
    library, as a flake-input library (`lib.projectOutputs`) would read it."""
    root = _rendered(tmp_path)
    data = root / "nix" / "project.nix"
    old = re.sub(r"\n *(formatVersion|nixgenVersion) = [^;]*;", "", data.read_text())
    assert "formatVersion" not in old
    data.write_text(old)
    assert (
        "this project's nix/project.nix was rendered by an older nixgen with no format "
        f"version; this library reads format {tables.FORMAT}: run `nixgen render`"
    ) in _fails(root)


OVERRIDES = """
let
  p = import ./nix;
  v = builtins.head (builtins.filter (v: v.backend == "cpu" && v.system == "x86_64-linux")
    (p.variants null));
  ext = p.variantPackage { nixpkgs = STUB; kernel-builder = KERNEL_BUILDER; system = v.system; } v;
  ks = ext.passthru.nixgen.kernels;
  cpp = ks.relu_cpu.overrideAttrs (o: { cxxFlags = o.cxxFlags ++ [ "-DNIXGEN_OVERRIDE=1" ]; });
  linked = ext.overrideAttrs (o: {
    passthru = o.passthru // {
      nixgen = o.passthru.nixgen // { kernels = ks // { relu_cpu = cpp; }; };
    };
  });
  crate = ks.leaky_relu_rs.overrideAttrs (o: {
    passthru = o.passthru // { nixgen = o.passthru.nixgen // { library = "renamed_rs"; }; };
  });
in {
  ext = ext.drvPath;
  linked = linked.drvPath;
  cppOut = "${cpp}";
  oldCppOut = "${ks.relu_cpu}";
  linkedConfigure = linked.configurePhase;
  linkedInputs = map (d: d.drvPath or null) linked.buildInputs;
  cpp = cpp.drvPath;
  crate = crate.drvPath;
  oldCrate = ks.leaky_relu_rs.drvPath;
  cratePostInstall = crate.postInstall;
}
"""


def test_an_override_of_the_extension_and_of_a_rust_kernel_changes_what_is_built(
    tmp_path: Path,
) -> None:
    """The extension and the Rust kernel builder are fixed points: an extension whose
    `passthru.nixgen.kernels` holds an overridden kernel links that kernel, and a Rust
    kernel whose planned library is renamed checks for the renamed archive."""
    from .nixtools import kernel_builder, make_stub

    root = tmp_path / "relu-mixed"
    copy_out(EXAMPLES / "relu-mixed", root, "nix", "result*", "target")
    render_into(root)
    stub = make_stub(tmp_path / "stub")
    got = nix_eval_json(
        OVERRIDES.replace("STUB", str(stub)).replace("KERNEL_BUILDER", str(kernel_builder(stub))),
        cwd=root,
        read_write=True,
    )
    assert got["linked"] != got["ext"]
    assert got["cpp"] in got["linkedInputs"]
    assert got["cppOut"] in got["linkedConfigure"]
    assert got["oldCppOut"] not in got["linkedConfigure"]
    assert got["crate"] != got["oldCrate"]
    assert "librenamed_rs.a" in got["cratePostInstall"]


def test_each_flag_field_of_the_kernel_data_is_the_tables() -> None:
    """The kernel data's backend flag fields are named as `data/languages.json` names them
    (the field a language's flags go to is the table's build.toml key)."""
    import attrs

    from nixgen.core import tables
    from nixgen.planning.kernels import KernelPlan

    fields = {f.name: f.metadata.get("nix", f.name) for f in attrs.fields(KernelPlan)}
    for toml, nix in tables.LANGUAGE_FLAGS.values():
        assert fields[toml.replace("-", "_")] == nix


@pytest.mark.parametrize("language", ["cpp-cpu", "cpp-cuda", "cpp-metal", "cpp-rocm", "cpp-xpu"])
def test_a_kernels_backend_flags_are_the_field_the_table_names(language: str) -> None:
    """`model.kernel_backend_flags` (typed, one `isinstance` per language) reads the field
    `data/languages.json` names for the language, and none for a language without one: the
    table and the classes agree."""
    from nixgen.reading import model

    flags = tables.LANGUAGE_FLAGS.get(language)
    extra = {flags[0].replace("-", "_"): ["-DFROM_THE_TABLE"]} if flags else {}
    kernel = model.KERNEL_CLASSES[language](language=language, depends=[], src=["k.cpp"], **extra)
    assert model.kernel_backend_flags(kernel) == (["-DFROM_THE_TABLE"] if flags else [])


def test_a_variant_holds_every_key_the_library_reads() -> None:
    """Variants are written whole (no key left to a Nix `or` default), by the library's
    names."""

    variant = variants.Variant(
        name="torch-cpu",
        system="x86_64-linux",
        backend="cpu",
        framework="torch-noarch",
        torch=None,
        backend_version=None,
        tvm_ffi=None,
        stable_abi=None,
        bundle=False,
        kernels=(),
    )
    assert variant.to_json() == {
        "name": "torch-cpu",
        "system": "x86_64-linux",
        "backend": "cpu",
        "framework": "torch-noarch",
        "torch": None,
        "backendVersion": None,
        "tvmFfi": None,
        "stableAbi": None,
        "bundle": False,
        "kernels": [],
        "ptxasVersion": None,
    }


RELINKED = """
let
  p = import ./nix;
  v = builtins.head (builtins.filter (v: v.backend == "cpu") (p.variants "x86_64-linux"));
  ext = p.variantPackage { nixpkgs = STUB; kernel-builder = KERNEL_BUILDER; system = v.system; } v;
  ks = ext.passthru.nixgen.kernels;
  kernel = ks.relu_cpu.overrideAttrs (o: { cxxFlags = o.cxxFlags ++ [ "-DNIXGEN_OVERRIDDEN=1" ]; });
in
ext.overrideAttrs (o: {
  passthru = o.passthru // {
    nixgen = o.passthru.nixgen // { kernels = ks // { relu_cpu = kernel; }; };
  };
})
"""


@pytest.mark.build
def test_an_extension_overridden_with_an_overridden_kernel_builds_with_it(
    tmp_path: Path,
) -> None:
    """A real build through the stand-ins: relu-cpu's kernel source `#error`s unless
    `NIXGEN_OVERRIDDEN` is defined, so the extension builds only if it links the kernel
    whose `cxxFlags` the override extended."""
    from .nixtools import kernel_builder, make_stub, nix_build

    if shutil.which("g++") is None:
        pytest.skip("needs g++")
    root = tmp_path / "relu-cpu"
    copy_out(EXAMPLES / "relu-cpu", root, "nix", "result*")
    source = root / "relu_cpu" / "relu_cpu.cpp"
    source.write_text(
        "#ifndef NIXGEN_OVERRIDDEN\n#error built without the override\n#endif\n"
        + source.read_text()
    )
    render_into(root)
    stub = make_stub(tmp_path / "stub")
    expr = RELINKED.replace("STUB", str(stub)).replace("KERNEL_BUILDER", str(kernel_builder(stub)))
    out = nix_build(expr, cwd=root, timeout=1500)
    assert list(out.glob("*.abi3.so")), sorted(p.name for p in out.iterdir())
