"""The toolchain stand-in (tests/kernel-builder) against the REAL toolchain files.

``../shared/anchor/huggingface-kernels-8ac69fc5/`` (next to the repository; ``NIXGEN_ANCHOR``
names another copy) holds, unchanged, huggingface/kernels' ``flake.nix``, ``flake.lock`` and
``nix-builder/`` at the revision generated flakes pin. These tests evaluate the real
``nix-builder/overlay.nix`` over the nixpkgs stand-in (tests/nixpkgs), beside the stand-in's
own overlay, with a small shim for the ``callPackage`` arguments the nixpkgs stand-in lacks
(placeholders: only names and kinds are forced, nothing is built), and check:

* every name nixgen reads from the toolchain exists in the real overlay with the same kind
  (set, derivation, function) as in the stand-in;
* the stand-in defines no name the real overlay lacks, at the top level, in the scopes nixgen
  enters (``manylinux_2_28``, ``rocmPackages_X_Y``, ``xpuPackages_X_Y_Z``) and in the Python
  set, beyond ``ALLOWED`` (each entry with its reason);
* ``nix-builder/versions.nix`` equals ``nixgen/data/build-configs.json``;
* the stand-in flake's inputs are the real flake's (``rust-overlay`` following ``nixpkgs``,
  from which ``rust-bin`` comes, as for real).

They are skipped only when the folder is absent (CI has it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .nixtools import have_nix, kernel_builder, make_stub, nix_eval_json

REPO = Path(__file__).resolve().parent.parent
ANCHOR = Path(
    os.environ.get("NIXGEN_ANCHOR")
    or REPO.parent / "shared" / "anchor" / "huggingface-kernels-8ac69fc5"
).resolve()

pytestmark = [
    pytest.mark.nix,
    pytest.mark.skipif(not have_nix(), reason="nix is not installed"),
    pytest.mark.skipif(
        not (ANCHOR / "nix-builder" / "overlay.nix").is_file(),
        reason=f"the real toolchain files are not here ({ANCHOR}; set NIXGEN_ANCHOR to a copy"
        " of huggingface/kernels at 8ac69fc5: flake.nix, flake.lock, nix-builder/)",
    ),
]

#: Names the stand-in defines that the real toolchain lacks, by scope, each with its reason.
ALLOWED: dict[str, dict[str, str]] = {}

#: callPackage arguments the real overlay's packages take that the nixpkgs stand-in lacks:
#: placeholders, so that names and kinds can be forced (a value kept where the stand-in has it).
SHIM = """
final: prev:
let
  placeholder = prev.emptyFile;
  identity = x: x;
in
builtins.mapAttrs (name: value: prev.${name} or value) {
  gcc13Stdenv = prev.stdenv;
  gcc14Stdenv = prev.stdenv;
  glibc = placeholder;
  wrapBintoolsWith = identity;
  wrapCCWith = identity;
  makeWrapper = placeholder;
  rsync = placeholder;
  autoPatchelfHook = placeholder;
  rpmextract = placeholder;
  fakeroot = placeholder;
  perl = placeholder;
  ncurses = placeholder;
}
"""

#: What a value is, for comparing the stand-in's names with the real ones.
KIND = """
v:
if builtins.isFunction v then "function"
else if builtins.isAttrs v then (if (v.type or null) == "derivation" then "derivation" else "set")
else builtins.typeOf v
"""


def _build_configs() -> list[dict[str, Any]]:
    configs: list[dict[str, Any]] = json.loads(
        (REPO / "nixgen" / "data" / "build-configs.json").read_text()
    )["configs"]
    return configs


def _underscored(version: str) -> str:
    return version.replace(".", "_")


def _scopes() -> dict[str, list[str]]:
    """The versioned scopes nixgen enters (nix/project.nix `buildSetOverlay`), from the build
    table: `rocmPackages_<major>_<minor>`, `xpuPackages_<full version>`."""
    configs = _build_configs()
    rocm = sorted(
        {f"rocmPackages_{_underscored(c['rocmVersion'])}" for c in configs if "rocmVersion" in c}
    )
    xpu = sorted(
        {f"xpuPackages_{_underscored(c['xpuVersion'])}" for c in configs if "xpuVersion" in c}
    )
    return {"rocm": rocm, "xpu": xpu}


def _reads() -> dict[str, list[str]]:
    """The names nixgen reads from the toolchain, by scope, taken from where nixgen keeps
    them where it can: the C++ dependency table (nix/data/cpp-dependencies.json), the ROCm
    inputs of nix/kernel.nix (`rocmInputs`, read below), the build table's torch versions."""
    deps = json.loads((REPO / "nix" / "data" / "cpp-dependencies.json").read_text())["languages"]
    top = sorted(
        {d for names in deps.values() for d in names if d not in ("torch", "tvm-ffi", "sycl_tla")}
    )
    torch = sorted({f"torch-bin_{_underscored(c['torchVersion'])}" for c in _build_configs()})
    return {
        # nix/toolchains.nix `manylinux`; nix/project.nix `buildSetOverlay`, `torchOverlay`
        # nix/toolchains.nix `abiCheck`: kernel-builder's `check-abi`
        "top": [*top, "kernel-builder", "manylinux_2_28", "pythonPackagesExtensions"],
        # nix/toolchains.nix: stdenv (every Linux compile), cudaBackendStdenv (CUDA)
        "manylinux_2_28": ["stdenv", "cudaBackendStdenv"],
        # nix/toolchains.nix, nix/kernel.nix: clr (hipcc) and `rocmInputs`
        "rocm": [],  # filled from nix/kernel.nix by the fixture
        # nix/toolchains.nix `oneapi-torch-dev`; data/cpp-dependencies.json `attrs` `sycl-tla`
        "xpu": ["oneapi-torch-dev", "sycl-tla"],
        # nix/project.nix `torchOverlay`; nix/extension.nix tvm-ffi
        "python": [*torch, "tvm-ffi"],
    }


#: Values whose kind needs more of nixpkgs than the shim gives, so only their names are
#: checked: each with why.
NAME_ONLY = {
    "manylinux_2_28.cudaBackendStdenv": "the real one is built from nixpkgs' internal `_cuda`"
    " database (nix-builder/pkgs/cuda/backendStdenv), which the stand-in does not model",
    "top.kernel-builder": "the real one is the Rust program built from the repository's"
    " kernel-builder/ crate (its Cargo.toml is read at evaluation), which the snapshot of"
    " flake.nix, flake.lock and nix-builder/ does not hold",
    "python": "the real torch-bin and tvm-ffi call `buildPythonPackage.override` and sixteen"
    " Python packages the stand-in does not model",
}


def _expr(stub: Path, reads: dict[str, list[str]], scopes: dict[str, list[str]]) -> str:
    toolchain = kernel_builder(stub)

    def nix_list(names: list[str]) -> str:
        return "[ " + " ".join(json.dumps(n) for n in names) + " ]"

    rocm_scopes = nix_list(scopes["rocm"])
    xpu_scopes = nix_list(scopes["xpu"])
    return f"""
      let
        shim = {SHIM};
        kind = {KIND};
        n = builtins.attrNames;
        base = import {stub} {{
          system = "x86_64-linux"; config.allowUnfree = true; overlays = [ shim ];
        }};
        overlays = {{
          real = import {ANCHOR}/nix-builder/overlay.nix {{ }};
          stand = import {toolchain}/nix-builder/overlay.nix {{ }};
        }};
        of = overlay:
          let
            p = base.appendOverlays [ overlay ];
            own = overlay base base;
            extensions = builtins.genList
              (i: builtins.elemAt own.pythonPackagesExtensions
                (i + builtins.length base.pythonPackagesExtensions))
              (builtins.length own.pythonPackagesExtensions
                - builtins.length base.pythonPackagesExtensions);
            kinds = set: names: builtins.listToAttrs (map (name: {{
              inherit name;
              value = if set ? ${{name}} then kind set.${{name}} else "absent";
            }}) names);
          in {{
            top = n own;
            python = builtins.concatMap
              (e: n (e p.python3.pkgs p.python3.pkgs)) extensions;
            scopes = builtins.listToAttrs (map (name: {{ inherit name; value = n p.${{name}}; }})
              ([ "manylinux_2_28" ] ++ {rocm_scopes} ++ {xpu_scopes}))
              // builtins.listToAttrs (map (name: {{
                name = "${{name}}.llvm"; value = n p.${{name}}.llvm; }}) {rocm_scopes});
            kinds = {{
              top = kinds p {nix_list([t for t in reads["top"] if "top." + t not in NAME_ONLY])};
              manylinux_2_28 = kinds p.manylinux_2_28 [ "stdenv" ];
            }}
            // builtins.listToAttrs (map (name: {{
              inherit name; value = kinds p.${{name}} {nix_list(reads["rocm"])}; }}) {rocm_scopes})
            // builtins.listToAttrs (map (name: {{
              inherit name; value = kinds p.${{name}} {nix_list(reads["xpu"])}; }}) {xpu_scopes});
          }};
      in builtins.mapAttrs (_: of) overlays
    """


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    stub = make_stub(tmp_path_factory.mktemp("real-toolchain"))
    reads, scopes = _reads(), _scopes()
    rocm_inputs: list[str] = nix_eval_json(f"(import {REPO}/nix).kernel.rocmInputs")
    reads["rocm"] = sorted({"clr", *rocm_inputs})
    got: dict[str, Any] = nix_eval_json(_expr(stub, reads, scopes), timeout=300)
    got["reads"] = reads
    got["scopes"] = scopes
    return got


def _extra(evaluated: dict[str, Any], where: str, stand: list[str], real: list[str]) -> list[str]:
    allowed = ALLOWED.get(where, {})
    return sorted(set(stand) - set(real) - set(allowed))


def test_every_name_nixgen_reads_is_in_the_real_overlay_with_the_stand_ins_kind(
    evaluated: dict[str, Any],
) -> None:
    real, stand, reads = evaluated["real"], evaluated["stand"], evaluated["reads"]
    for name in reads["top"]:
        assert name in real["top"], f"nixgen reads `{name}`, which the real overlay lacks"
    for name in reads["manylinux_2_28"]:
        assert name in real["scopes"]["manylinux_2_28"], f"manylinux_2_28.{name}"
    for scope in [*evaluated["scopes"]["rocm"], *evaluated["scopes"]["xpu"]]:
        which = "rocm" if scope.startswith("rocm") else "xpu"
        for name in reads[which]:
            assert name in real["scopes"][scope], (
                f"nixgen reads {scope}.{name}; the real one lacks it"
            )
    for name in reads["python"]:
        assert name in real["python"], (
            f"nixgen reads python3.pkgs.{name}; the real overlay lacks it"
        )
    # Kinds, where the shim lets them be forced (NAME_ONLY says which are not, and why).
    for where, kinds in real["kinds"].items():
        for name, kind in kinds.items():
            assert kind != "absent", f"{where}.{name} is absent from the real overlay"
            assert stand["kinds"][where][name] == kind, (
                f"{where}.{name}: the real overlay's is a {kind},"
                f" the stand-in's a {stand['kinds'][where][name]}"
            )


def test_the_stand_in_defines_no_name_the_real_overlay_lacks(evaluated: dict[str, Any]) -> None:
    real, stand = evaluated["real"], evaluated["stand"]
    lies: dict[str, list[str]] = {}
    for where in ("top", "python"):
        extra = _extra(evaluated, where, stand[where], real[where])
        if extra:
            lies[where] = extra
    for scope, names in stand["scopes"].items():
        assert scope in real["scopes"], f"the real overlay has no scope `{scope}`"
        extra = _extra(evaluated, scope, names, real["scopes"][scope])
        if extra:
            lies[scope] = extra
    assert not lies, (
        "the toolchain stand-in (tests/kernel-builder) defines names the real overlay"
        f" ({ANCHOR}/nix-builder/overlay.nix) lacks: {json.dumps(lies)}; remove them, or add"
        " them to ALLOWED with the reason"
    )


def test_allowed_names_are_still_needed(evaluated: dict[str, Any]) -> None:
    """An allow-list entry the real overlay now has, or the stand-in no longer defines, goes."""
    real, stand = evaluated["real"], evaluated["stand"]
    for scope, names in ALLOWED.items():
        for name in names:
            assert name in stand["scopes"][scope], f"{scope}.{name} is allowed but not defined"
            assert name not in real["scopes"][scope], f"the real {scope} now has {name}"


def test_the_scopes_nixgen_enters_have_the_real_names(evaluated: dict[str, Any]) -> None:
    """The versioned scopes of the build table exist in both overlays, and the real
    overlay's top-level names are a superset of the scopes nixgen selects."""
    real, stand = evaluated["real"], evaluated["stand"]
    for scope in [*evaluated["scopes"]["rocm"], *evaluated["scopes"]["xpu"]]:
        assert scope in real["top"] and scope in stand["top"], scope
        assert scope in real["scopes"] and scope in stand["scopes"], scope


def test_versions_nix_equals_the_build_table() -> None:
    real = nix_eval_json(f"import {ANCHOR}/nix-builder/versions.nix")
    assert real == _build_configs()


def test_the_stand_in_flake_has_the_real_flakes_inputs() -> None:
    expr = f"""
      let
        inputs = f: let i = (import f).inputs; in builtins.mapAttrs (name: v: {{
          follows = (v.inputs or {{ }}).nixpkgs.follows or null;
        }}) i;
        real = import {ANCHOR}/flake.nix;
        stand = import {REPO}/tests/kernel-builder/flake.nix;
      in {{
        real = inputs {ANCHOR}/flake.nix;
        stand = inputs {REPO}/tests/kernel-builder/flake.nix;
        nixpkgs = [ real.inputs.nixpkgs.url stand.inputs.nixpkgs.url ];
        outputs = [
          (builtins.attrNames (builtins.functionArgs real.outputs))
          (builtins.attrNames (builtins.functionArgs stand.outputs))
        ];
      }}
    """
    got = nix_eval_json(expr)
    assert got["stand"] == got["real"]
    assert got["real"]["rust-overlay"] == {"follows": "nixpkgs"}
    real_url, stand_url = got["nixpkgs"]
    assert stand_url == real_url
    assert got["outputs"][0] == got["outputs"][1]
    lock = json.loads((ANCHOR / "flake.lock").read_text())
    assert sorted(lock["nodes"]["root"]["inputs"]) == sorted(got["real"])


def test_rust_bin_comes_from_the_rust_overlay_input_only(evaluated: dict[str, Any]) -> None:
    """As for real: the toolchain overlay has no `rust-bin`; the `rust-overlay` input's
    `overlays.default` (the stand-in flake in tests/kernel-builder/rust-overlay) does."""
    assert "rust-bin" not in evaluated["real"]["top"]
    assert "rust-bin" not in evaluated["stand"]["top"]
    got = nix_eval_json(
        f"let o = (import {REPO}/tests/kernel-builder/rust-overlay/flake.nix).outputs"
        " { self = null; nixpkgs = null; }; in"
        " { outputs = builtins.attrNames o.overlays;"
        " names = builtins.attrNames (o.overlays.default { } { }); }"
    )
    assert got == {"outputs": ["default"], "names": ["rust-bin"]}
