"""The package-set builder and the provenance of nix/project.nix beside the REAL kernels
toolchain's (huggingface/kernels at 8ac69fc5, ``../shared/anchor/``; ``NIXGEN_ANCHOR``):
review r4 §3 row 14. Each test evaluates the anchor's own file, so a flag the anchor adds
for a backend, a change of its provenance rule, or an overlay it starts to export fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

from nixgen.core import tables

from .nixtools import nix_eval_json
from .test_real_toolchain import ANCHOR, REPO, pytestmark  # noqa: F401  (the same skips)

LIB = f"(import {REPO}/nix/default.nix).withLib (import {REPO}/tests/nixpkgs/lib)"

#: Every backend of the table (data/languages.json), with and without a build set.
BACKENDS = sorted(tables.BACKENDS)


def _nix_list(names: list[str]) -> str:
    return "[ " + " ".join(json.dumps(n) for n in names) + " ]"


def test_each_backends_nixpkgs_config_is_the_anchors_mk_build_set(tmp_path: Path) -> None:
    """`project.backendConfig` of every backend is the `config` the anchor's
    nix-builder/lib/mk-build-set.nix imports nixpkgs with (`tpuSupport` for tpu, …), and a
    backend the anchor has no build set for (neuron, cann) fails on both sides."""
    nixpkgs = tmp_path / "nixpkgs.nix"
    nixpkgs.write_text("args: args\n")
    got = nix_eval_json(
        f"""
        let
          l = {LIB};
          # The anchor's builder with a nixpkgs whose `import` returns its arguments:
          # `pkgs.config` is then the config it passes, and nothing else is evaluated.
          mk = import {ANCHOR}/nix-builder/lib/mk-build-set.nix {{
            nixpkgs = {{ outPath = {nixpkgs}; lib = {{ }}; }};
            rust-overlay = {{ overlays.default = null; }};
          }};
          real = backend: (mk {{
            inherit backend; torchVersion = "2.13"; system = "x86_64-linux";
          }}).pkgs.config;
          try = f: backend: let r = builtins.tryEval (builtins.deepSeq (f backend) (f backend));
            in if r.success then r.value else "fails";
        in builtins.listToAttrs (map (b: {{
          name = b;
          value = {{ anchor = try real b; nixgen = try l.project.backendConfig b; }};
        }}) {_nix_list(BACKENDS)})
        """
    )
    for backend in BACKENDS:
        assert got[backend]["nixgen"] == got[backend]["anchor"], backend
    assert got["tpu"]["anchor"] == {"allowUnfree": True, "tpuSupport": True}
    with_set = {b for b in BACKENDS if got[b]["anchor"] != "fails"}
    assert with_set == set(tables.BUILD_SET_BACKENDS)
    assert {"neuron", "cann"} <= set(BACKENDS) - with_set


def test_the_toolchains_provenance_is_the_anchors_flake_provenance() -> None:
    """`project.builderProvenance` (nixgen's one rule, `provenance.fromSelf`) gives what the
    anchor's nix-builder/lib/flake-provenance.nix gives for the same flake `self`."""
    cases = [
        '{ rev = "8ac69fc5"; }',
        '{ dirtyRev = "8ac69fc5-dirty"; }',
        '{ dirtyRev = "8ac69fc5"; }',
        '{ rev = "a"; dirtyRev = "b-dirty"; }',
        '{ narHash = "sha256-x"; }',
    ]
    got = nix_eval_json(
        f"""
        let
          l = {LIB};
          real = import {ANCHOR}/nix-builder/lib/flake-provenance.nix {{
            lib = import {REPO}/tests/nixpkgs/lib;
          }};
        in map (self: {{ anchor = real self; nixgen = l.project.builderProvenance self; }})
          [ {" ".join(f"({c})" for c in cases)} ]
        """
    )
    for case, row in zip(cases, got, strict=True):
        assert row["nixgen"] == row["anchor"], case
    assert got[1]["anchor"] == {"sha": "8ac69fc5", "dirty": True}


def test_the_toolchain_flake_exports_no_overlay() -> None:
    """nix/project.nix imports the toolchain's `nix-builder/overlay.nix` by its path
    because the flake's public outputs hold no overlay: the real flake.nix's outputs, with
    its inputs stood in, are `checks devShells formatter lib packages`. When it exports
    `overlays`, this fails: take that output instead (`project.toolchainOverlays`)."""
    names = nix_eval_json(
        f"""
        let
          flake = import {ANCHOR}/flake.nix;
          systems = [ "aarch64-darwin" "aarch64-linux" "x86_64-linux" ];
          # numtide/flake-utils' eachSystem: `<output>.<system>` of each system's outputs.
          eachSystem = ss: f: builtins.foldl' (acc: s: let r = f s; in acc
            // builtins.mapAttrs (n: v: (acc.${{n}} or {{ }}) // {{ ${{s}} = v; }}) r) {{ }} ss;
          outputs = flake.outputs {{
            self = {{ }};
            nixpkgs = {{ lib = import {REPO}/tests/nixpkgs/lib; legacyPackages = {{ }}; }};
            flake-compat = {{ }};
            flake-utils.lib = {{
              inherit eachSystem;
              system = builtins.listToAttrs (map (s: {{ name = s; value = s; }}) systems);
            }};
            rust-overlay = {{ }};
          }};
        in {{
          outputs = builtins.attrNames outputs;
          lib = builtins.attrNames outputs.lib;
        }}
        """
    )
    assert "overlays" not in names["outputs"]
    assert "overlay" not in names["outputs"]
    assert names["outputs"] == ["checks", "devShells", "formatter", "lib", "packages"]
    # Nor a function that builds one package set (mk-build-set.nix is internal).
    assert "mkBuildSet" not in names["lib"] and "mkBuildSets" not in names["lib"]
    assert (ANCHOR / "nix-builder" / "overlay.nix").is_file()
